"""superopt: Python API of the superopt tensor-graph superoptimizer (ctypes
over libsuperopt.so; docs/python.md).

    import superopt
    g = superopt.load_onnx("model.onnx")          # or an onnx.ModelProto
    h, report = g.optimize(device="h100", alpha=1.05, budget=1000)
    model = h.export_onnx()                        # onnx.ModelProto
    outputs = h.run([x], device="cpu")             # NumPy in, NumPy out

TASO's spelling works too: superopt.optimize(graph, alpha, budget),
superopt.export_onnx(graph). After `import torch; import superopt` (or
with the package installed), torch.compile(model, backend="superopt") uses
superopt.torch_backend. Errors raise SuperoptError
with the library's message."""
import ctypes
import dataclasses
import os
import sys
import tempfile

from . import _lib
from .errors import SuperoptError
from .graph import ExportReport, Graph, OptimizeReport, Runner

__all__ = ["Graph", "OptimizeReport", "ExportReport", "GenReport",
           "RulesExportReport", "Runner", "SuperoptError", "load",
           "load_onnx", "parse", "optimize", "export_onnx", "gen_rules",
           "export_rules", "version", "build_info", "cuda_available",
           "data_path"]
__version__ = "0.1.0"


def _new(fn, *args):
    h, err = _lib.ctypes.c_void_p(), _lib.Error()
    _lib.check(fn(*args, h, err), err)
    return Graph(h.value)


def _strings(v, what, keep):
    """A list of strings as a ctypes char* array (kept alive in keep)."""
    b = [_lib.cstr(x, what) for x in v or []]
    arr = (ctypes.c_char_p * max(1, len(b)))(*b)
    keep.append(arr)
    return ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)), len(b)


def _import_options(input_shapes, data_inputs, dims, keep):
    """`superopt import`'s --input-shape, --data-input and --dim as
    api_import_options (None when none is given). input_shapes: a dict
    name -> shape, or "NAME=1x3x224x224" strings; data_inputs: names;
    dims: a dict name -> size, or "NAME=SIZE" strings."""
    if not input_shapes and not data_inputs and not dims:
        return None
    if isinstance(input_shapes, dict):
        input_shapes = ["%s=%s" % (n, "x".join(str(int(d)) for d in shape))
                        for n, shape in input_shapes.items()]
    if isinstance(data_inputs, (str, bytes)):
        data_inputs = [data_inputs]
    if isinstance(dims, dict):
        dims = ["%s=%d" % (n, int(v)) for n, v in dims.items()]
    elif isinstance(dims, (str, bytes)):
        dims = [dims]
    o = _lib.ImportOptions()
    o.input_shapes, o.ninput_shapes = _strings(input_shapes, "input_shapes",
                                               keep)
    o.data_inputs, o.ndata_inputs = _strings(data_inputs, "data_inputs", keep)
    o.dims, o.ndims = _strings(dims, "dims", keep)
    return o


def load(path, input_shapes=None, data_inputs=None, dims=None):
    """A .graph file, or an ONNX model when path ends in .onnx, with
    `superopt import`'s options for ONNX: input_shapes (--input-shape: a
    dict name -> shape for inputs the model leaves dynamic, or a list of
    "NAME=1x3x224x224"), data_inputs (--data-input: the inputs that are
    data; every other float input becomes a weight), dims (--dim: a dict
    dimension name -> size binding the model's named dynamic dimension
    (its dim_param) in every input, e.g. {"seq": 128}, or a list of
    "NAME=SIZE")."""
    keep = []
    o = _import_options(input_shapes, data_inputs, dims, keep)
    return _new(_lib.lib().api_graph_load_ex, _lib.cstr(path, "path"), o)


def parse(text, name="<text>"):
    """.graph text."""
    b = text.encode()
    return _new(_lib.lib().api_graph_parse, b, len(b),
                _lib.cstr(name, "name"))


def load_onnx(model, name=None, input_shapes=None, data_inputs=None,
              dims=None):
    """An ONNX model: a path, serialized bytes, or an onnx.ModelProto;
    input_shapes, data_inputs and dims as for load()."""
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            data = f.read()
        name = name or os.fspath(model)
    elif isinstance(model, (bytes, bytearray)):
        data = bytes(model)
    else:  # a ModelProto (or anything with SerializeToString)
        data = model.SerializeToString()
    keep = []
    o = _import_options(input_shapes, data_inputs, dims, keep)
    return _new(_lib.lib().api_graph_load_onnx_ex, data, len(data),
                _lib.cstr(name or "<onnx>", "name"), o)


def optimize(graph, alpha=None, budget=None, **kw):
    """TASO's taso.optimize(graph, alpha, budget): the optimized graph."""
    return graph.optimize(alpha=alpha, budget=budget, **kw)[0]


def export_onnx(graph, like=None):
    """TASO's taso.export_onnx(graph): an onnx.ModelProto (like: the
    original model, see Graph.export_onnx_bytes)."""
    return graph.export_onnx(like)


def version():
    return _lib.lib().api_version().decode()


def build_info():
    """Version, commit, backends (with CUDA library versions)."""
    return _lib.lib().api_build_info().decode()


def cuda_available():
    return bool(_lib.lib().api_cuda_available())


def data_path(rel=""):
    """Where the library finds data file rel (e.g. "rules/default.rules")."""
    buf, err = _lib.ctypes.create_string_buffer(4096), _lib.Error()
    _lib.check(_lib.lib().api_data_path(_lib.cstr(rel, "rel"), buf, 4096,
                                        err), err)
    return buf.value.decode()


@dataclasses.dataclass
class GenReport:
    """The counts of gen-rules' summary."""
    graphs: int  # enumerated
    buckets: int  # fingerprint buckets
    pairs: int  # candidate pairs
    pruned: int  # pairs left after pruning
    proven: int
    unproven: int
    written: int
    seconds: float


@dataclasses.dataclass
class RulesExportReport:
    """The counts `superopt export-rules` prints."""
    exported: int
    not_proven: int  # left out (all=False)
    duplicates: int
    other_format: int  # the other Tensat format writes them
    unsupported: int  # the format cannot express them


def gen_rules(max_ops=3, ops=None, output=None, threads=None,
              z3_timeout_ms=None, pairs=None, keep_unproven=False,
              no_normal_form=False, split=None, checkpoint=None,
              progress=None, report=False):
    """Discovers and proves rules of up to max_ops operators over ops (a list
    of operator names or a comma-separated string; None: the default set),
    as `superopt gen-rules` (the library's gen_rules, the same file for the
    same options). Writes them atomically to output (default: a temporary
    file) and returns its path, or (path, GenReport) when report.
    progress: a callable(stage, done, total)."""
    o = _lib.GenOptions()
    L = _lib.lib()
    L.api_gen_options_default(o)
    keep = []
    o.max_ops = _lib.cint(max_ops, "max_ops")
    if ops:
        keep.append(_lib.cstr(ops if isinstance(ops, str) else ",".join(ops),
                              "ops"))
        o.ops = keep[-1]
    for name, v in (("pairs", pairs), ("checkpoint", checkpoint)):
        if v is not None:
            keep.append(_lib.cstr(v, name))
            setattr(o, name, keep[-1])
    for name, v in (("threads", threads), ("z3_timeout_ms", z3_timeout_ms),
                    ("split", split)):
        if v is not None:
            setattr(o, name, _lib.cint(v, name))
    o.keep_unproven = int(bool(keep_unproven))
    o.no_normal_form = int(bool(no_normal_form))
    raised = []
    if progress is not None:
        def tell(_u, stage, done, total):
            if not raised:
                try:
                    progress(stage.decode(), done, total)
                except BaseException as e:  # noqa: BLE001: re-raised below
                    raised.append(e)
        o.progress = _lib.GenProgressFn(tell)
        keep.append(o.progress)
    made = output is None
    if made:
        fd, output = tempfile.mkstemp(prefix="superopt-", suffix=".rules")
        os.close(fd)
    out = _lib.cstr(output, "output")
    rep, err = _lib.GenReport(), _lib.Error()
    rc = L.api_gen_rules(o, out, rep, err)
    if (rc or raised) and made:
        os.unlink(output)
    if raised:
        raise raised[0]
    _lib.check(rc, err)
    path = os.fsdecode(out)
    if not report:
        return path
    return path, GenReport(**{f: getattr(rep, f)
                              for f, _ in _lib.GenReport._fields_})


def export_rules(rules, format, output=None, all=False):
    """`superopt export-rules RULES --format FORMAT -o OUTPUT [--all]`: the
    proven rules of the rule file rules (every rule when all) as format
    "taso-pb", "tensat", "tensat-multi" or "json". With output, written
    there atomically and returns a RulesExportReport; without, returns
    (bytes, RulesExportReport)."""
    L, rep, err = _lib.lib(), _lib.RulesExportReport(), _lib.Error()
    r = _lib.cstr(rules, "rules")
    f = _lib.cstr(format, "format")
    if output is not None:
        _lib.check(L.api_export_rules(r, f, int(bool(all)),
                                      _lib.cstr(output, "output"), rep, err),
                   err)
        data = None
    else:
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(L.api_export_rules_mem(r, f, int(bool(all)), p, n, rep,
                                          err), err)
        try:
            data = ctypes.string_at(p, n.value)
        finally:
            _lib.free(p)
    res = RulesExportReport(**{k: getattr(rep, k)
                               for k, _ in _lib.RulesExportReport._fields_})
    return res if data is None else (data, res)


def _register_torch_backend():
    """Registers backend="superopt" with torch.compile when torch is already
    imported (importing it here would slow every `import superopt`); an
    installed package is also found through its torch_dynamo_backends entry
    point, or call superopt.torch_backend.register()."""
    if "torch" not in sys.modules:
        return
    try:
        from . import torch_backend
        torch_backend.register()
    except ImportError:
        pass


_register_torch_backend()
