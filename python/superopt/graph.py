"""graph.py: Graph (a handle on a libsuperopt graph), its optimization report
and Runner (a graph prepared for repeated runs on the CPU or a CUDA GPU)."""
import ctypes
import dataclasses
import numbers

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
    moved: int  # shortcuts the node order moved
    cost_unfused_us: float  # the search's result, before fusion
    rules_seconds: float  # reading and compiling the rules
    fuse_seconds: float
    check_seconds: float
    rules_reproved: int  # applied rules the verifier proved again
    rules_demoted: int  # labelled proven but not proven: not applied

    @property
    def speedup(self):
        return (self.cost_before_us / self.cost_after_us
                if self.cost_after_us > 0 else 1.0)


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

    def text(self):
        """The graph in canonical .graph form."""
        p = self._lib.api_graph_print(self._handle())
        if not p:
            raise SuperoptError(3, "out of memory")
        try:
            return ctypes.string_at(p).decode()
        finally:
            _lib.free(p)

    def save(self, path):
        """Writes the graph: ONNX when path ends in .onnx, else .graph."""
        err = _lib.Error()
        _lib.check(self._lib.api_graph_save(self._handle(),
                                            _lib.cstr(path, "path"), err), err)

    def export_onnx_bytes(self):
        """The graph as a serialized ONNX ModelProto (opset 17)."""
        err, data, n = _lib.Error(), ctypes.c_void_p(), ctypes.c_size_t()
        _lib.check(self._lib.api_graph_export_onnx(self._handle(), data, n,
                                                   err), err)
        try:
            return ctypes.string_at(data, n.value)
        finally:
            _lib.free(data)

    def export_onnx(self):
        """The graph as an onnx.ModelProto, weights as initializers."""
        import onnx
        return onnx.load_from_string(self.export_onnx_bytes())

    def optimize(self, device="h100", rules=None, alpha=None, budget=None,
                 patience=None, max_depth=None, time_limit=None, batch=None,
                 check=True, allow_unproven=False, db=None, mutants=True,
                 fuse=True, passes="rules", progress=None):
        """Optimizes with proven rules on device's cost model (h100, h200,
        h100-tf32, h200-tf32, cpu) through the same pipeline as `superopt
        optimize` (same graph, same counts); returns (graph,
        OptimizeReport). rules: a rule file (default: $SUPEROPT_RULES, else
        the installed default.rules). None keeps the CLI's default for the
        other options. check: compare with the original on the CPU
        executor, raise if they differ. mutants: let partially equivalent
        mutants with corrections join the search (verified by the box
        argument, not proven); False: proven rules only. fuse: element-wise
        chains and attention into fused nodes (False for a graph to export
        as ONNX, which has no fused operator, as the CLI does for an .onnx
        output). passes: "rules" (the pass rules) or "hand" (the
        hand-written passes). progress: a callable(stage, done, total,
        elapsed_s) called at each stage and before each region searched
        (docs/python.md); an exception it raises is raised by optimize
        once the pipeline returns."""
        if passes not in ("rules", "hand"):
            raise SuperoptError(1, "passes must be 'rules' or 'hand', not %r"
                                % (passes,))
        o = _lib.OptimizeOptions()
        self._lib.api_optimize_options_default(o)
        keep = []  # the encoded strings live until the call returns
        for name, v in (("device", device), ("rules", rules), ("db", db)):
            if v is not None:
                keep.append(_lib.cstr(v, name))
                setattr(o, name, keep[-1])
        for name, v in (("alpha", alpha), ("time_limit", time_limit)):
            if v is not None:
                setattr(o, name, float(v))  # the library checks the range
        for name, v in (("budget", budget), ("patience", patience),
                        ("max_depth", max_depth), ("batch", batch)):
            if v is not None:
                setattr(o, name, _lib.cint(v, name))
        o.check, o.allow_unproven = int(bool(check)), int(bool(allow_unproven))
        o.mutants, o.fuse = int(bool(mutants)), int(bool(fuse))
        o.hand_passes = int(passes == "hand")
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
        if fields["max_rel_error"] < 0:
            fields["max_rel_error"] = None
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
        for (name, shape), x in zip(self.inputs, inputs):
            a = np.ascontiguousarray(x, dtype=np.float32)
            if tuple(a.shape) != tuple(shape):
                raise SuperoptError(1, "input %s: shape %s, expected %s" %
                                    (name, tuple(a.shape), tuple(shape)))
            arrays.append(a)
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
        """inputs: a list (graph input order) or a dict by name of arrays
        (converted to contiguous float32). Returns the outputs as a list of
        float32 NumPy arrays, in output order."""
        if not self._h.value:
            raise SuperoptError(1, "the runner was closed")
        arrays = self._arrays(inputs)
        outs = [np.empty(shape, dtype=np.float32) for _, shape in self.outputs]
        pin = (ctypes.c_void_p * max(1, len(arrays)))(
            *[a.ctypes.data for a in arrays])
        pout = (ctypes.c_void_p * max(1, len(outs)))(
            *[o.ctypes.data for o in outs])
        err = _lib.Error()
        _lib.check(self._lib.api_runner_run(self._h, pin, pout, err), err)
        return outs
