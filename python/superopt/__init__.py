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
import os
import subprocess
import sys
import tempfile

from . import _lib
from .errors import SuperoptError
from .graph import Graph, OptimizeReport, Runner

__all__ = ["Graph", "OptimizeReport", "Runner", "SuperoptError", "load",
           "load_onnx", "parse", "optimize", "export_onnx", "gen_rules",
           "version", "build_info", "cuda_available", "data_path"]
__version__ = "0.1.0"


def _new(fn, *args):
    h, err = _lib.ctypes.c_void_p(), _lib.Error()
    _lib.check(fn(*args, h, err), err)
    return Graph(h.value)


def load(path):
    """A .graph file, or an ONNX model when path ends in .onnx."""
    return _new(_lib.lib().api_graph_load, _lib.cstr(path, "path"))


def parse(text, name="<text>"):
    """.graph text."""
    b = text.encode()
    return _new(_lib.lib().api_graph_parse, b, len(b),
                _lib.cstr(name, "name"))


def load_onnx(model, name=None):
    """An ONNX model: a path, serialized bytes, or an onnx.ModelProto."""
    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            data = f.read()
        name = name or os.fspath(model)
    elif isinstance(model, (bytes, bytearray)):
        data = bytes(model)
    else:  # a ModelProto (or anything with SerializeToString)
        data = model.SerializeToString()
    return _new(_lib.lib().api_graph_load_onnx, data, len(data),
                _lib.cstr(name or "<onnx>", "name"))


def optimize(graph, alpha=None, budget=None, **kw):
    """TASO's taso.optimize(graph, alpha, budget): the optimized graph."""
    return graph.optimize(alpha=alpha, budget=budget, **kw)[0]


def export_onnx(graph):
    """TASO's taso.export_onnx(graph): an onnx.ModelProto."""
    return graph.export_onnx()


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


def gen_rules(max_ops=3, ops=None, output=None, threads=None,
              z3_timeout_ms=None, pairs=None):
    """Discovers and proves rules of up to max_ops operators over ops (a list
    of operator names; None: the default set), like `superopt gen-rules`.
    Writes them to output (default: a temporary file) and returns its path;
    the stage summary goes to stderr. Runs the superopt binary installed
    beside the library (the library has no generation call yet)."""
    cmd = [_lib.binary_path(), "gen-rules", "--max-ops", str(int(max_ops))]
    if ops:
        cmd += ["--ops", ",".join(ops) if not isinstance(ops, str) else ops]
    if threads:
        cmd += ["--threads", str(int(threads))]
    if z3_timeout_ms:
        cmd += ["--z3-timeout", str(int(z3_timeout_ms))]
    if pairs:
        cmd += ["--pairs", pairs]
    made = output is None
    if made:
        fd, output = tempfile.mkstemp(prefix="superopt-", suffix=".rules")
        os.close(fd)
    cmd += ["-o", os.fsdecode(_lib.cstr(output, "output"))]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode:
        if made:
            os.unlink(output)
        raise SuperoptError(p.returncode, _gen_rules_reason(p))
    return os.fspath(output)


def _gen_rules_reason(p):
    """The error of a failed gen-rules run: its stderr without the progress
    lines and the usage hint (the last line of a usage error is "(see
    'superopt gen-rules --help')", which lost the reason)."""
    lines = []
    for ln in p.stderr.replace("\r", "\n").splitlines():
        ln = ln.strip()
        if ln and not ln.startswith(("stage:", "(see '")) and \
                " ETA " not in ln:
            lines.append(ln)
    return "; ".join(lines[-3:]) if lines else \
        "gen-rules exited %d" % p.returncode


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
