"""graph.py: Graph (a handle on a libsuperopt graph), its optimization report
and Runner (a graph prepared for repeated runs on the CPU or a CUDA GPU)."""
import ctypes
import dataclasses
import numbers
import os

import numpy as np

from . import _lib
from .errors import SuperoptError


@dataclasses.dataclass
class OptimizeReport:
    """What api_optimize reports (costs in microseconds, on the device's
    cost model: measured where the cost tables have the shape, else scaled
    roofline estimates)."""
    cost_before_us: float
    cost_after_us: float
    estimated: bool
    nodes_before: int
    nodes_after: int
    rules: int
    rules_applied: int
    expanded: int
    bn_folded: int
    acts_fused: int
    merged: int
    seconds: float
    max_rel_error: float  # of the end-to-end check; None when not checked
    mutants_applied: int  # mutants taken (verified by the box argument)
    mutants_saved_us: float  # their saving, included in cost_after_us
    pass_rules_applied: int  # of rules_applied, uses of pass rules
    acts_unfused: int  # activations a pass rule used backward took out
    fused_nodes: int  # made by fusion
    attention_nodes: int
    fused_ops: int  # operators the fused nodes replace
    moved: int  # shortcuts the lower stage moved ahead of their chain
    cost_unfused_us: float  # the search's result, before fusion
    rules_seconds: float  # reading and compiling the rules
    fuse_seconds: float
    check_seconds: float
    rules_reproved: int  # applied rules the verifier proved again
    rules_demoted: int  # labelled proven but not proven: not applied
    # the rest of the counts `superopt optimize` prints
    rules_read: int  # "N rules" of the model line (pass rules too)
    cse: int
    scales_folded: int
    acts_fused_by_rules: int
    merged_by_rules: int
    splits_merged: int
    generated: int
    duplicates: int
    rejected: int
    queue_peak: int
    regions: int
    stopped_by_patience: int
    fuse_chosen: int
    stopped_by_time: bool
    inst_proven: int
    inst_refused: int
    mutants_considered: int
    mutants_not_cheaper: int
    mutants_overlapping: int
    mutants_refused: int
    mutants_unmeasured: int
    fuse_recomputed: int
    fuse_rejected: int
    fuse_cost_before_us: float
    fuse_cost_after_us: float
    rules_unproven: int
    check_rounds: int
    check_compared: int
    check_worst: float  # share of the tolerance; None when not checked
    moves_removed: int  # passes: movement operators removed
    rmsnorms: int  # RMSNorms formed
    rotates_folded: int  # rotate_halves folded into projections
    identities_dropped: int  # identities dropped after the search
    lower_epilogues: int  # lower: residual, bias, clip, relu folds
    lower_moves: int  # act= on concat/split parts, pad+slice
    lower_se: int  # squeeze-and-excitation nodes
    lower_shuffles: int  # channel shuffles made graph nodes
    row_attention: int  # attention in the row layout (heads=)
    move_nodes: int  # groups of movement operators made move nodes
    move_node_ops: int  # the movement operators they replace
    patch_embeddings: int  # patch embeddings made matmuls
    fuse_peeled: int  # products' bias and residual moved into a layer norm

    @property
    def speedup(self):
        return (self.cost_before_us / self.cost_after_us
                if self.cost_after_us > 0 else 1.0)


@dataclasses.dataclass
class ExportReport:
    """What an ONNX export did (the line `superopt export` prints)."""
    opset: int  # written
    like_opset: int  # the original model's; 0 without like
    opset_why: str  # why opset > like_opset ("" when not raised)
    renamed: int  # names given back from the original
    folded: int  # weight preprocessing computed into initializers
    at_load: int  # kept as nodes (their weights have no values)


# api_dtype <-> NumPy
_NP = {_lib.F32: np.dtype(np.float32), _lib.I64: np.dtype(np.int64),
       _lib.BOOL: np.dtype(np.bool_), _lib.I32: np.dtype(np.int32)}


def _np_dtype(code):
    return _NP[code] if code in _NP else None


def _buffer(a, graph_dtype):
    """a as a contiguous array for a tensor of type graph_dtype (api_dtype)
    and its api_dtype code: float tensors take any array (converted to
    float32, as before); integer and bool tensors take integer arrays
    (int32 as it is, other integers as int64) and bool arrays; anything
    else goes as float32, which the library refuses naming the tensor."""
    a = np.asarray(a)
    if graph_dtype == _lib.F32:
        return np.ascontiguousarray(a, dtype=np.float32), _lib.F32
    if a.dtype == np.bool_:
        return np.ascontiguousarray(a), _lib.BOOL
    if a.dtype == np.int32:
        return np.ascontiguousarray(a), _lib.I32
    if a.dtype.kind in "iu":
        return np.ascontiguousarray(a, dtype=np.int64), _lib.I64
    return np.ascontiguousarray(a, dtype=np.float32), _lib.F32


def _tensor(a, code):
    return _lib.Tensor(code, a.ctypes.data, a.nbytes)


def _like_path(like, keep):
    """like (a path, bytes or an onnx.ModelProto) as a path; bytes and
    models are written to a temporary file, whose name goes into keep."""
    import os
    import tempfile
    if like is None or isinstance(like, (str, os.PathLike)):
        return like
    data = bytes(like) if isinstance(like, (bytes, bytearray)) \
        else like.SerializeToString()
    fd, path = tempfile.mkstemp(prefix="superopt-like-", suffix=".onnx")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    keep.append(path)
    return path


def _export_options(like, keep):
    o = _lib.ExportOptions()
    path = _like_path(like, keep)
    if path is not None:
        o.like = _lib.cstr(path, "like")
    return o


def _export_report(r):
    return ExportReport(r.opset, r.like_opset,
                        r.opset_why.decode("utf-8", "replace"), r.renamed,
                        r.folded, r.at_load)


def _shape(fn, h, i):
    dims = (ctypes.c_int64 * 16)()
    rank = fn(h, i, dims, 16)
    return tuple(dims[k] for k in range(min(rank, 16)))


class Graph:
    """A tensor graph. Made by load(), load_onnx() or parse(); freed when
    garbage-collected (or by close())."""

    def __init__(self, handle):
        self._h = ctypes.c_void_p(handle)
        self._lib = _lib.lib()

    def __del__(self):
        self.close()

    def close(self):
        if getattr(self, "_h", None) and self._h.value:
            self._lib.api_graph_free(self._h)
            self._h = ctypes.c_void_p()

    def _handle(self):
        if not self._h.value:
            raise SuperoptError(1, "the graph was closed")
        return self._h

    @property
    def num_nodes(self):
        return self._lib.api_graph_nnodes(self._handle())

    @property
    def inputs(self):
        """[(name, shape)] of the graph inputs (weights excluded)."""
        h, L = self._handle(), self._lib
        return [(L.api_graph_input_name(h, i).decode(),
                 _shape(L.api_graph_input_shape, h, i))
                for i in range(L.api_graph_ninputs(h))]

    @property
    def outputs(self):
        """[(name, shape)] of the graph outputs, in order."""
        h, L = self._handle(), self._lib
        return [(L.api_graph_output_name(h, i).decode(),
                 _shape(L.api_graph_output_shape, h, i))
                for i in range(L.api_graph_noutputs(h))]

    @property
    def input_dtypes(self):
        """NumPy dtypes of the graph inputs (float32, int64 or bool)."""
        h, L = self._handle(), self._lib
        return [_np_dtype(L.api_graph_input_dtype(h, i))
                for i in range(L.api_graph_ninputs(h))]

    @property
    def output_dtypes(self):
        h, L = self._handle(), self._lib
        return [_np_dtype(L.api_graph_output_dtype(h, i))
                for i in range(L.api_graph_noutputs(h))]

    @property
    def weights(self):
        """[(name, shape, dtype, has_values)] of the graph's weights."""
        h, L = self._handle(), self._lib
        return [(L.api_graph_weight_name(h, i).decode(),
                 _shape(L.api_graph_weight_shape, h, i),
                 _np_dtype(L.api_graph_weight_dtype(h, i)),
                 bool(L.api_graph_weight_has_values(h, i)))
                for i in range(L.api_graph_nweights(h))]

    def set_weight(self, name, value):
        """Gives weight name the values of array value (its shape and type
        are checked; runners made after use them, and so do save and
        export)."""
        _set_weight(self._lib.api_graph_set_weight, self._handle(), name,
                    value, self._weight_dtype(name))

    def _weight_dtype(self, name):
        for n, _, dt, _ in self.weights:
            if n == name:
                return {v: k for k, v in _NP.items()}[dt]
        return _lib.F32  # the library names the missing weight

    def load_weights(self, path):
        """Weight values from a safetensors file (the .graph sidecar)."""
        err = _lib.Error()
        _lib.check(self._lib.api_graph_load_weights(
            self._handle(), _lib.cstr(path, "path"), err), err)

    def text(self):
        """The graph in canonical .graph form."""
        p = self._lib.api_graph_print(self._handle())
        if not p:
            raise SuperoptError(3, "out of memory")
        try:
            return ctypes.string_at(p).decode()
        finally:
            _lib.free(p)

    def save(self, path, like=None):
        """Writes the graph: ONNX when path ends in .onnx (as `superopt
        export -o path [--like like]`; returns an ExportReport), else
        .graph with its weights' sidecar (returns None)."""
        import os
        err, keep = _lib.Error(), []
        p = _lib.cstr(path, "path")
        if not p.endswith(b".onnx"):
            if like is not None:
                raise SuperoptError(1, "like is for an .onnx output")
            _lib.check(self._lib.api_graph_save(self._handle(), p, err), err)
            return None
        try:
            o, rep = _export_options(like, keep), _lib.ExportReport()
            _lib.check(self._lib.api_graph_save_onnx(self._handle(), p, o,
                                                     rep, err), err)
            return _export_report(rep)
        finally:
            for k in keep:
                os.unlink(k)

    def export_onnx_bytes(self, like=None, report=False):
        """The graph as a serialized ONNX ModelProto, as `superopt export
        [--like like]`: like, the original model (a path, bytes or an
        onnx.ModelProto), gives back its input, output and initializer
        names and its opset where the operators allow (docs/onnx.md);
        without it, IR names and opset 17. Fused and attention nodes are
        written as ONNX operators. report: return (bytes, ExportReport)."""
        import os
        err, data, n = _lib.Error(), ctypes.c_void_p(), ctypes.c_size_t()
        keep, rep = [], _lib.ExportReport()
        try:
            o = _export_options(like, keep)
            _lib.check(self._lib.api_graph_export_onnx_ex(
                self._handle(), o, data, n, rep, err), err)
        finally:
            for k in keep:
                os.unlink(k)
        try:
            b = ctypes.string_at(data, n.value)
        finally:
            _lib.free(data)
        return (b, _export_report(rep)) if report else b

    def export_onnx(self, like=None):
        """The graph as an onnx.ModelProto, weights as initializers; like:
        see export_onnx_bytes."""
        import onnx
        return onnx.load_from_string(self.export_onnx_bytes(like))

    def optimize(self, device="h100", rules=None, alpha=None, budget=None,
                 patience=None, max_depth=None, time_limit=None, batch=None,
                 check=True, allow_unproven=False, db=None, mutants=True,
                 fuse=True, passes="none", progress=None, region_size=None,
                 merge=True, fuse_candidates=None, mutants_estimated=False,
                 no_rules=False, dtype=None):
        """Optimizes with proven rules on device's cost model (h100, h200,
        h100-tf32, h200-tf32, cpu) through the same pipeline as `superopt
        optimize` (same graph, same counts); returns (graph,
        OptimizeReport). rules: a rule file, or a list of them read in
        order as one set (--rules F1 --rules F2; a str may also separate
        paths by ':'; default: $SUPEROPT_RULES, else the installed
        default.rules and extended.rules). None keeps the CLI's default for the
        other options. check: compare with the original on the CPU
        executor, raise if they differ. mutants: let partially equivalent
        mutants with corrections join the search (verified by the box
        argument, not proven); False: proven rules only. fuse: element-wise
        chains and attention into fused nodes (False for a graph to export
        as ONNX, which has no fused operator, as the CLI does for an .onnx
        output). passes: "none" (the default: no pass before the search,
        the rules alone), or the ablation: "rules" (the pass rules, the
        old default) or "hand" (the hand-written passes). progress: a
        callable(stage, done, total,
        elapsed_s) called at each stage and before each region searched
        (docs/python.md); an exception it raises is raised by optimize
        once the pipeline returns. region_size, merge, fuse_candidates,
        mutants_estimated, no_rules: optimize's --region-size, --no-merge,
        --fuse-candidates, --mutants-estimated, --no-rules. dtype: "f16"
        or "bf16", the result in that type (--dtype; docs/half.md); None:
        the model's own."""
        if passes not in _lib.PASSES:
            raise SuperoptError(
                1, "passes must be 'none', 'rules' or 'hand', not %r"
                % (passes,))
        if isinstance(rules, (list, tuple)):
            rules = ":".join(os.fsdecode(r) for r in rules)
        o = _lib.OptimizeOptions()
        self._lib.api_optimize_options_default(o)
        keep = []  # the encoded strings live until the call returns
        for name, v in (("device", device), ("rules", rules), ("db", db),
                        ("dtype", dtype)):
            if v is not None:
                keep.append(_lib.cstr(v, name))
                setattr(o, name, keep[-1])
        for name, v in (("alpha", alpha), ("time_limit", time_limit)):
            if v is not None:
                setattr(o, name, float(v))  # the library checks the range
        for name, v in (("budget", budget), ("patience", patience),
                        ("max_depth", max_depth), ("batch", batch),
                        ("region_size", region_size),
                        ("fuse_candidates", fuse_candidates)):
            if v is not None:
                setattr(o, name, _lib.cint(v, name))
        o.check, o.allow_unproven = int(bool(check)), int(bool(allow_unproven))
        o.mutants, o.fuse = int(bool(mutants)), int(bool(fuse))
        o.passes = _lib.PASSES[passes]
        o.merge, o.no_rules = int(bool(merge)), int(bool(no_rules))
        o.mutants_estimated = int(bool(mutants_estimated))
        raised = []
        if progress is not None:
            def tell(_u, stage, done, total, elapsed):
                if raised:
                    return
                try:
                    progress(stage.decode(), done, total, elapsed)
                except BaseException as e:  # noqa: BLE001: re-raised below
                    raised.append(e)
            o.progress = _lib.ProgressFn(tell)
            keep.append(o.progress)
        out, rep, err = ctypes.c_void_p(), _lib.Report(), _lib.Error()
        rc = self._lib.api_optimize(self._handle(), o, out, rep, err)
        if raised:
            if not rc:
                self._lib.api_graph_free(out)
            raise raised[0]
        _lib.check(rc, err)
        fields = {f: getattr(rep, f) for f, _ in _lib.Report._fields_}
        fields["estimated"] = bool(fields["estimated"])
        fields["stopped_by_time"] = bool(fields["stopped_by_time"])
        for f in ("max_rel_error", "check_worst"):
            if fields[f] < 0:
                fields[f] = None
        return Graph(out.value), OptimizeReport(**fields)

    def runner(self, device="cpu", threads=0, seed=1, fp32_strict=False,
               streams=0):
        """A Runner: the graph prepared for repeated runs on device.
        streams (CUDA): independent branches side by side on up to this
        many streams, 0..8 (0: up to 8 where faster; 1: one stream)."""
        return Runner(self, device, threads, seed, fp32_strict, streams)

    def run(self, inputs, device="cpu", **kw):
        """Runs the graph once; see Runner.run."""
        r = self.runner(device, **kw)
        try:
            return r.run(inputs)
        finally:
            r.close()


class Runner:
    """A graph compiled for one device ("cpu" or "cuda"). Weights keep their
    values (ONNX initializers), or seeded random ones."""

    def __init__(self, graph, device, threads, seed, fp32_strict,
                 streams=0):
        self._lib = _lib.lib()
        self._h = ctypes.c_void_p()
        o = _lib.RunOptions()
        self._lib.api_run_options_default(o)
        dev = _lib.cstr(device, "device")
        o.device, o.threads = dev, _lib.cint(threads, "threads")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) \
                or not 0 <= int(seed) < 2**64:
            raise SuperoptError(1, "seed must be an integer 0..2**64-1, not "
                                "%r" % (seed,))
        o.seed = int(seed)
        o.fp32_strict = int(bool(fp32_strict))
        o.streams = _lib.cint(streams, "streams")
        err = _lib.Error()
        _lib.check(self._lib.api_runner_new(graph._handle(), o, self._h, err),
                   err)
        self.inputs, self.outputs = graph.inputs, graph.outputs
        self._in_types = [graph._lib.api_graph_input_dtype(graph._handle(), i)
                          for i in range(len(self.inputs))]
        self._out_types = [graph._lib.api_graph_output_dtype(graph._handle(),
                                                             i)
                           for i in range(len(self.outputs))]
        self._weight_types = {n: {v: k for k, v in _NP.items()}[dt]
                              for n, _, dt, _ in graph.weights}

    def __del__(self):
        self.close()

    def close(self):
        if getattr(self, "_h", None) and self._h.value:
            self._lib.api_runner_free(self._h)
            self._h = ctypes.c_void_p()

    def _arrays(self, inputs):
        if isinstance(inputs, dict):
            missing = [n for n, _ in self.inputs if n not in inputs]
            if missing:
                raise SuperoptError(1, "missing inputs: %s" % ", ".join(missing))
            inputs = [inputs[n] for n, _ in self.inputs]
        inputs = list(inputs)
        if len(inputs) != len(self.inputs):
            raise SuperoptError(1, "expected %d inputs, got %d" %
                                (len(self.inputs), len(inputs)))
        arrays = []
        for (name, shape), t, x in zip(self.inputs, self._in_types, inputs):
            a, code = _buffer(x, t)
            if tuple(a.shape) != tuple(shape):
                raise SuperoptError(1, "input %s: shape %s, expected %s" %
                                    (name, tuple(a.shape), tuple(shape)))
            arrays.append((a, code))
        return arrays

    def run_device(self, input_ptrs, output_ptrs):
        """CUDA runners: inputs and outputs as device pointers (ints, e.g.
        torch's data_ptr(); float32, contiguous, the graph's shapes), in
        graph order. The caller's stream must be synchronized before; the
        outputs are complete on return."""
        if not self._h.value:
            raise SuperoptError(1, "the runner was closed")
        if len(input_ptrs) != len(self.inputs) or \
                len(output_ptrs) != len(self.outputs):
            raise SuperoptError(1, "expected %d inputs and %d outputs" %
                                (len(self.inputs), len(self.outputs)))
        pin = (ctypes.c_void_p * max(1, len(input_ptrs)))(*input_ptrs)
        pout = (ctypes.c_void_p * max(1, len(output_ptrs)))(*output_ptrs)
        err = _lib.Error()
        _lib.check(self._lib.api_runner_run_device(self._h, pin, pout, err),
                   err)

    def run(self, inputs):
        """inputs: a list (graph input order) or a dict by name of arrays:
        float32 inputs take any numbers (converted to float32); int64
        inputs (token ids) integer arrays (int32 kept, other integers
        converted to int64; floats are refused), bool inputs bool arrays
        (Graph.input_dtypes). Returns the outputs as NumPy arrays of their
        types (Graph.output_dtypes), in output order."""
        if not self._h.value:
            raise SuperoptError(1, "the runner was closed")
        arrays = self._arrays(inputs)
        outs = [np.empty(shape, dtype=_np_dtype(t))
                for (_, shape), t in zip(self.outputs, self._out_types)]
        pin = (_lib.Tensor * max(1, len(arrays)))(
            *[_tensor(a, code) for a, code in arrays])
        pout = (_lib.Tensor * max(1, len(outs)))(
            *[_tensor(o, t) for o, t in zip(outs, self._out_types)])
        err = _lib.Error()
        _lib.check(self._lib.api_runner_run_typed(self._h, pin, pout, err),
                   err)
        return outs

    def set_weight(self, name, value):
        """Gives weight name (Graph.weights) the values of array value for
        the runs after (shape and type checked by the library). CPU
        runners; for CUDA, set it on the graph before making the runner."""
        if not self._h.value:
            raise SuperoptError(1, "the runner was closed")
        _set_weight(self._lib.api_runner_set_weight, self._h, name, value,
                    self._weight_types.get(name, _lib.F32))


def _set_weight(fn, handle, name, value, graph_dtype):
    a, code = _buffer(value, graph_dtype)
    dims = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
    err = _lib.Error()
    _lib.check(fn(handle, _lib.cstr(name, "name"), _tensor(a, code), dims,
                  a.ndim, err), err)
