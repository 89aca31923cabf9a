"""_lib.py: finds and loads libsuperopt.so through ctypes and declares the C
API of include/superopt/superopt.h (docs/api.md).

The library is looked for, in order: $SUPEROPT_LIB (the .so itself), the
copy bundled into this package at install (superopt/_native/lib/), an install
prefix $SUPEROPT_PREFIX (lib/libsuperopt.so), the prefix of a `superopt`
binary on PATH (../lib/), then the system's library path. The library finds
its own data (rules, cost tables) relative to itself or through
$SUPEROPT_DATA."""
import ctypes
import ctypes.util
import numbers
import os
import shutil

from .errors import SuperoptError

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join(HERE, "_native")


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 1024)]


# api_progress_fn: (user pointer, stage, done, total, elapsed seconds)
ProgressFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p,
                              ctypes.c_int, ctypes.c_int, ctypes.c_double)


class OptimizeOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("rules", ctypes.c_char_p),
                ("db", ctypes.c_char_p), ("alpha", ctypes.c_double),
                ("budget", ctypes.c_int), ("patience", ctypes.c_int),
                ("max_depth", ctypes.c_int), ("time_limit", ctypes.c_double),
                ("batch", ctypes.c_int), ("check", ctypes.c_int),
                ("allow_unproven", ctypes.c_int), ("mutants", ctypes.c_int),
                ("fuse", ctypes.c_int), ("passes", ctypes.c_int),
                ("progress", ProgressFn), ("progress_u", ctypes.c_void_p),
                ("region_size", ctypes.c_int), ("merge", ctypes.c_int),
                ("fuse_candidates", ctypes.c_int),
                ("mutants_estimated", ctypes.c_int),
                ("no_rules", ctypes.c_int), ("dtype", ctypes.c_char_p)]


class Report(ctypes.Structure):
    _fields_ = [("cost_before_us", ctypes.c_double),
                ("cost_after_us", ctypes.c_double),
                ("estimated", ctypes.c_int), ("nodes_before", ctypes.c_int),
                ("nodes_after", ctypes.c_int), ("rules", ctypes.c_int),
                ("rules_applied", ctypes.c_int), ("expanded", ctypes.c_int),
                ("bn_folded", ctypes.c_int), ("acts_fused", ctypes.c_int),
                ("merged", ctypes.c_int), ("seconds", ctypes.c_double),
                ("max_rel_error", ctypes.c_double),
                ("mutants_applied", ctypes.c_int),
                ("mutants_saved_us", ctypes.c_double),
                ("pass_rules_applied", ctypes.c_int),
                ("acts_unfused", ctypes.c_int),
                ("fused_nodes", ctypes.c_int),
                ("attention_nodes", ctypes.c_int),
                ("fused_ops", ctypes.c_int), ("moved", ctypes.c_int),
                ("cost_unfused_us", ctypes.c_double),
                ("rules_seconds", ctypes.c_double),
                ("fuse_seconds", ctypes.c_double),
                ("check_seconds", ctypes.c_double),
                ("rules_reproved", ctypes.c_int),
                ("rules_demoted", ctypes.c_int)] + [
                    (f, ctypes.c_int) for f in (
                        "rules_read", "cse", "scales_folded",
                        "acts_fused_by_rules", "merged_by_rules",
                        "splits_merged", "generated", "duplicates",
                        "rejected", "queue_peak", "regions",
                        "stopped_by_patience", "fuse_chosen",
                        "stopped_by_time", "inst_proven", "inst_refused",
                        "mutants_considered", "mutants_not_cheaper",
                        "mutants_overlapping", "mutants_refused",
                        "mutants_unmeasured", "fuse_recomputed",
                        "fuse_rejected")] + [
                    ("fuse_cost_before_us", ctypes.c_double),
                    ("fuse_cost_after_us", ctypes.c_double),
                    ("rules_unproven", ctypes.c_int),
                    ("check_rounds", ctypes.c_int),
                    ("check_compared", ctypes.c_longlong),
                    ("check_worst", ctypes.c_double)] + [
                    (f, ctypes.c_int) for f in (
                        "moves_removed", "rmsnorms", "rotates_folded",
                        "identities_dropped", "lower_epilogues",
                        "lower_moves", "lower_se", "lower_shuffles",
                        "row_attention", "move_nodes", "move_node_ops",
                        "patch_embeddings", "fuse_peeled")]


# api_dtype
F32, I64, BOOL, I32 = 0, 1, 2, 3
# api_passes: optimize's passes= (none: the default; rules, hand: ablation)
PASSES = {"none": 0, "hand": 1, "rules": 2}


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("data", ctypes.c_void_p),
                ("nbytes", ctypes.c_size_t)]


class ImportOptions(ctypes.Structure):
    _fields_ = [("input_shapes", ctypes.POINTER(ctypes.c_char_p)),
                ("ninput_shapes", ctypes.c_int),
                ("data_inputs", ctypes.POINTER(ctypes.c_char_p)),
                ("ndata_inputs", ctypes.c_int),
                ("dims", ctypes.POINTER(ctypes.c_char_p)),
                ("ndims", ctypes.c_int)]


class ExportOptions(ctypes.Structure):
    _fields_ = [("like", ctypes.c_char_p)]


class ExportReport(ctypes.Structure):
    _fields_ = [("opset", ctypes.c_int), ("like_opset", ctypes.c_int),
                ("opset_why", ctypes.c_char * 160), ("renamed", ctypes.c_int),
                ("folded", ctypes.c_int), ("at_load", ctypes.c_int)]


# api_gen_progress_fn: (user pointer, stage, done, total)
GenProgressFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_double, ctypes.c_double)


class GenOptions(ctypes.Structure):
    _fields_ = [("max_ops", ctypes.c_int), ("ops", ctypes.c_char_p),
                ("pairs", ctypes.c_char_p), ("threads", ctypes.c_int),
                ("z3_timeout_ms", ctypes.c_int),
                ("keep_unproven", ctypes.c_int),
                ("no_normal_form", ctypes.c_int), ("split", ctypes.c_int),
                ("checkpoint", ctypes.c_char_p),
                ("progress", GenProgressFn), ("progress_u", ctypes.c_void_p)]


class GenReport(ctypes.Structure):
    _fields_ = [(f, ctypes.c_longlong) for f in (
        "graphs", "buckets", "pairs", "pruned", "proven", "unproven",
        "written")] + [("seconds", ctypes.c_double)]


class RulesExportReport(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int) for f in (
        "exported", "not_proven", "duplicates", "other_format",
        "unsupported")]


class RunOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("threads", ctypes.c_int),
                ("seed", ctypes.c_uint64), ("fp32_strict", ctypes.c_int),
                ("streams", ctypes.c_int)]


def _candidates():
    env = os.environ.get("SUPEROPT_LIB")
    if env:
        yield env
    yield os.path.join(NATIVE, "lib", "libsuperopt.so")
    prefix = os.environ.get("SUPEROPT_PREFIX")
    if prefix:
        yield os.path.join(prefix, "lib", "libsuperopt.so")
    exe = shutil.which("superopt")
    if exe:
        yield os.path.join(os.path.dirname(os.path.realpath(exe)), "..", "lib",
                           "libsuperopt.so")
    found = ctypes.util.find_library("superopt")
    if found:
        yield found


def library_path():
    """The path of the libsuperopt.so this package uses."""
    tried = []
    for c in _candidates():
        if os.path.isabs(c) and not os.path.exists(c):
            tried.append(c)
            continue
        return c
    raise SuperoptError(
        2, "libsuperopt.so not found; looked in: %s (set SUPEROPT_LIB to "
        "the library or SUPEROPT_PREFIX to an install prefix)" %
        (", ".join(tried) or "(nowhere)"))


P = ctypes.POINTER
_SIGNATURES = {
    "api_version": (ctypes.c_char_p, []),
    "api_build_info": (ctypes.c_char_p, []),
    "api_cuda_available": (ctypes.c_int, []),
    "api_graph_load": (ctypes.c_int, [ctypes.c_char_p, P(ctypes.c_void_p),
                                      P(Error)]),
    "api_graph_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                       ctypes.c_char_p, P(ctypes.c_void_p),
                                       P(Error)]),
    "api_graph_load_onnx": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                           ctypes.c_char_p,
                                           P(ctypes.c_void_p), P(Error)]),
    "api_graph_free": (None, [ctypes.c_void_p]),
    "api_graph_nnodes": (ctypes.c_int, [ctypes.c_void_p]),
    "api_graph_ninputs": (ctypes.c_int, [ctypes.c_void_p]),
    "api_graph_noutputs": (ctypes.c_int, [ctypes.c_void_p]),
    "api_graph_input_name": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]),
    "api_graph_output_name": (ctypes.c_char_p, [ctypes.c_void_p,
                                                ctypes.c_int]),
    "api_graph_input_shape": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                             P(ctypes.c_int64), ctypes.c_int]),
    "api_graph_output_shape": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                              P(ctypes.c_int64),
                                              ctypes.c_int]),
    "api_graph_print": (ctypes.c_void_p, [ctypes.c_void_p]),
    "api_graph_save": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                      P(Error)]),
    "api_graph_export_onnx": (ctypes.c_int, [ctypes.c_void_p,
                                             P(ctypes.c_void_p),
                                             P(ctypes.c_size_t), P(Error)]),
    "api_optimize_options_default": (None, [P(OptimizeOptions)]),
    "api_optimize": (ctypes.c_int, [ctypes.c_void_p, P(OptimizeOptions),
                                    P(ctypes.c_void_p), P(Report), P(Error)]),
    "api_run_options_default": (None, [P(RunOptions)]),
    "api_runner_new": (ctypes.c_int, [ctypes.c_void_p, P(RunOptions),
                                      P(ctypes.c_void_p), P(Error)]),
    "api_runner_run": (ctypes.c_int, [ctypes.c_void_p,
                                      P(ctypes.c_void_p), P(ctypes.c_void_p),
                                      P(Error)]),
    "api_runner_run_device": (ctypes.c_int, [ctypes.c_void_p,
                                             P(ctypes.c_void_p),
                                             P(ctypes.c_void_p), P(Error)]),
    "api_runner_free": (None, [ctypes.c_void_p]),
    "api_data_path": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.c_size_t, P(Error)]),
    "api_graph_load_ex": (ctypes.c_int, [ctypes.c_char_p, P(ImportOptions),
                                         P(ctypes.c_void_p), P(Error)]),
    "api_graph_load_onnx_ex": (ctypes.c_int, [
        ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, P(ImportOptions),
        P(ctypes.c_void_p), P(Error)]),
    "api_graph_input_dtype": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    "api_graph_output_dtype": (ctypes.c_int, [ctypes.c_void_p,
                                              ctypes.c_int]),
    "api_graph_nweights": (ctypes.c_int, [ctypes.c_void_p]),
    "api_graph_weight_name": (ctypes.c_char_p, [ctypes.c_void_p,
                                                ctypes.c_int]),
    "api_graph_weight_shape": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                              P(ctypes.c_int64),
                                              ctypes.c_int]),
    "api_graph_weight_dtype": (ctypes.c_int, [ctypes.c_void_p,
                                              ctypes.c_int]),
    "api_graph_weight_has_values": (ctypes.c_int, [ctypes.c_void_p,
                                                   ctypes.c_int]),
    "api_graph_set_weight": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_char_p, P(Tensor), P(ctypes.c_int64),
        ctypes.c_int, P(Error)]),
    "api_graph_load_weights": (ctypes.c_int, [ctypes.c_void_p,
                                              ctypes.c_char_p, P(Error)]),
    "api_graph_save_onnx": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_char_p, P(ExportOptions), P(ExportReport),
        P(Error)]),
    "api_graph_export_onnx_ex": (ctypes.c_int, [
        ctypes.c_void_p, P(ExportOptions), P(ctypes.c_void_p),
        P(ctypes.c_size_t), P(ExportReport), P(Error)]),
    "api_runner_run_typed": (ctypes.c_int, [ctypes.c_void_p, P(Tensor),
                                            P(Tensor), P(Error)]),
    "api_runner_set_weight": (ctypes.c_int, [
        ctypes.c_void_p, ctypes.c_char_p, P(Tensor), P(ctypes.c_int64),
        ctypes.c_int, P(Error)]),
    "api_gen_options_default": (None, [P(GenOptions)]),
    "api_gen_rules": (ctypes.c_int, [P(GenOptions), ctypes.c_char_p,
                                     P(GenReport), P(Error)]),
    "api_export_rules": (ctypes.c_int, [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
        P(RulesExportReport), P(Error)]),
    "api_export_rules_mem": (ctypes.c_int, [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, P(ctypes.c_void_p),
        P(ctypes.c_size_t), P(RulesExportReport), P(Error)]),
}

_lib = None
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]


def lib():
    """The loaded library (loaded on first use), with its signatures."""
    global _lib
    if _lib is None:
        path = library_path()
        try:
            so = ctypes.CDLL(path)
        except OSError as e:
            raise SuperoptError(2, "cannot load %s: %s" % (path, e)) from None
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(so, name)
            fn.restype = res
            fn.argtypes = args
        _lib = so
    return _lib


def free(ptr):
    _libc.free(ptr)


def cstr(value, what):
    """value (str, bytes or os.PathLike) as the bytes of a C string. A NUL
    inside would end the string early in C (save("x.graph\\0.onnx") wrote
    x.graph): ValueError instead."""
    b = os.fsencode(value)
    if b"\0" in b:
        raise ValueError("%s contains a NUL character: %r" % (what, value))
    return b


INT_MIN, INT_MAX = -2**31, 2**31 - 1


def cint(value, what):
    """value as a C int: an integer (not a bool or a float) that fits
    (ctypes would keep only its low 32 bits: 2**32 + 5 became 5), else
    SuperoptError 1 (usage); the library checks the option's own range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SuperoptError(1, "%s must be an integer, not %r" % (what, value))
    if not INT_MIN <= int(value) <= INT_MAX:
        raise SuperoptError(1, "%s is out of range: %d" % (what, value))
    return int(value)


def check(code, err):
    """Raises SuperoptError with the C message when code is not API_OK."""
    if code:
        raise SuperoptError(code, err.message.decode("utf-8", "replace"))
