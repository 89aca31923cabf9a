"""torch_backend.py: torch.compile(model, backend="superopt").

Each graph TorchDynamo captures is exported to ONNX (torch.onnx.export), its
parameters and buffers frozen into initializers, imported into superopt,
optimized with the proven rules on the GPU's cost model (h100 or h200) and run
by superopt's CUDA executor (or the CPU reference executor for CPU tensors)
with the caller's tensors: on CUDA the inputs are read from and the outputs
written to torch tensors' device memory (api_runner_run_device), on the
runner's own stream, after synchronizing torch's current stream.

When a graph cannot be handled (dynamic shapes, non-float32 tensors, autograd,
an ONNX operator the importer lacks, a failed export or check) the graph runs
with PyTorch unchanged and a RuntimeWarning says why; the last reason is kept
in superopt.torch_backend.last_fallback.

Inference only: weights are frozen when a graph is compiled (TorchDynamo
recompiles only on guards, not on new weight values), and no gradients flow.

Options (torch.compile(..., options={...})): device (cost model; default from
the GPU's name), budget (200), alpha (1.05), time_limit (60 s), check (True:
compare with the original on the CPU executor), rules (default.rules and
extended.rules; a path, a ':'-separated list or a list of paths),
fp32_strict (False: TF32 like PyTorch's cuDNN default), verbose (False, or the
environment variable SUPEROPT_VERBOSE=1: also the optimizer's stages and
regions on stderr), progress (None: a callable(stage, done, total, elapsed_s)
as Graph.optimize takes). The graph is optimized by the same pipeline as
`superopt optimize` with its defaults (no pass before the search: the rules
alone; mutants, fusion, check).
"""
import os
import sys
import tempfile
import warnings

import torch
import torch.utils._pytree as pytree

from .errors import SuperoptError

last_fallback = None  # the reason the last graph fell back to PyTorch

_DEFAULTS = {"budget": 200, "alpha": 1.05, "time_limit": 60.0, "check": True,
             "rules": None, "device": None, "fp32_strict": False,
             "verbose": bool(os.environ.get("SUPEROPT_VERBOSE")),
             "progress": None}


class Unsupported(Exception):
    """A graph the backend does not take (the message says why)."""


def _say(opts, msg):
    if opts["verbose"]:
        print("superopt: " + msg, file=sys.stderr)


def _is_constant(node, value):
    """Parameters and buffers that TorchDynamo lifted to graph inputs
    (inline_inbuilt_nn_modules): frozen into the ONNX model."""
    name = str(node.target)
    return isinstance(value, torch.nn.Parameter) or "_parameters_" in name \
        or "_buffers_" in name


class _Frozen(torch.nn.Module):
    """gm with its constant inputs as buffers: forward takes the user inputs
    only, so the exporter writes the constants as initializers."""

    def __init__(self, gm, n, user_idx, consts):
        super().__init__()
        self.gm, self.n, self.user_idx = gm, n, list(user_idx)
        self.const_idx = sorted(consts)
        for i in self.const_idx:
            self.register_buffer("c%d" % i, consts[i].detach(),
                                 persistent=False)

    def forward(self, *user):
        args = [None] * self.n
        for i, x in zip(self.user_idx, user):
            args[i] = x
        for i in self.const_idx:
            args[i] = getattr(self, "c%d" % i)
        return self.gm(*args)


def _export(module, inputs, path):
    names_in = ["input%d" % i for i in range(len(inputs))]
    errors = []
    for kw in ({"dynamo": False, "opset_version": 17},
               {"dynamo": True, "opset_version": 20,
                "external_data": False}):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(module, tuple(inputs), path,
                                  input_names=names_in,
                                  do_constant_folding=True, **kw)
            return names_in
        except TypeError as e:  # an exporter without that keyword
            errors.append(str(e))
        except Exception as e:  # noqa: BLE001: reported in the fallback
            errors.append("%s: %s" % (type(e).__name__, e))
    raise Unsupported("ONNX export failed: " + " | ".join(errors))


def _progress(opts):
    """The progress callable: the option's, else with verbose one printing
    each stage and region to stderr."""
    if opts["progress"] is not None or not opts["verbose"]:
        return opts["progress"]

    def say(stage, done, total, elapsed):
        where = " region %d of %d" % (done + 1, total) if total else ""
        print("superopt: [%.1f s] %s%s" % (elapsed, stage, where),
              file=sys.stderr)
    return say


def _cost_device(opts, dev):
    if opts["device"]:
        return opts["device"]
    if dev.type == "cuda" and "H200" in torch.cuda.get_device_name(dev):
        return "h200"
    return "h100"


class _Compiled:
    def __init__(self, gm, example_inputs, opts):
        import superopt
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise Unsupported("graph inputs do not match the example inputs")
        user_idx, consts = [], {}
        for i, (node, x) in enumerate(zip(placeholders, example_inputs)):
            if not isinstance(x, torch.Tensor):
                raise Unsupported("dynamic shapes (symbolic input %s)" % node)
            if x.dtype != torch.float32:
                raise Unsupported("input %s is %s (float32 only)" %
                                  (node.target, x.dtype))
            if _is_constant(node, x):
                consts[i] = x
            else:
                user_idx.append(i)
        if not user_idx:
            raise Unsupported("no tensor inputs")
        user = [example_inputs[i] for i in user_idx]
        self.dev = user[0].device
        if any(x.device != self.dev for x in example_inputs):
            raise Unsupported("inputs on several devices")
        if self.dev.type == "cuda" and (self.dev.index or 0) != 0:
            raise Unsupported("superopt runs on cuda:0 only")
        if torch.is_grad_enabled() and any(x.requires_grad
                                           for x in example_inputs):
            raise Unsupported("autograd is not supported (use torch.no_grad "
                              "or torch.inference_mode)")
        with torch.no_grad():
            ref = gm(*example_inputs)
        flat, self.spec = pytree.tree_flatten(ref)
        if not flat or not all(isinstance(t, torch.Tensor) and
                               t.dtype == torch.float32 for t in flat):
            raise Unsupported("outputs are not all float32 tensors")
        self.user_idx = user_idx
        self.in_shapes = [tuple(x.shape) for x in user]
        frozen = _Frozen(gm, len(example_inputs), user_idx, consts).eval()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "graph.onnx")
            names_in = _export(frozen, user, path)
            try:
                g = superopt.load_onnx(path)
            except SuperoptError as e:
                raise Unsupported("ONNX import: " + e.message) from None
        self._bind(g, names_in, flat)
        try:
            h, rep = g.optimize(device=_cost_device(opts, self.dev),
                                budget=opts["budget"], alpha=opts["alpha"],
                                time_limit=opts["time_limit"],
                                check=opts["check"], rules=opts["rules"],
                                progress=_progress(opts))
        except SuperoptError as e:
            raise Unsupported("optimize: " + e.message) from None
        _say(opts, "graph of %d operators -> %d, cost %.1f -> %.1f us "
             "(%d rewrites, %.1f s)" % (rep.nodes_before, rep.nodes_after,
                                        rep.cost_before_us, rep.cost_after_us,
                                        rep.rules_applied, rep.seconds))
        self._bind(h, names_in, flat)
        device = "cuda" if self.dev.type == "cuda" else "cpu"
        try:
            self.runner = h.runner(device, fp32_strict=opts["fp32_strict"])
        except SuperoptError as e:
            raise Unsupported("runner: " + e.message) from None
        self.report = rep

    def _bind(self, g, names_in, flat):
        """Order of g's inputs among the user inputs; output shapes."""
        names = [n for n, _ in g.inputs]
        if sorted(names) != sorted(names_in):
            raise Unsupported("imported inputs %s, expected %s" %
                              (names, names_in))
        self.in_order = [names_in.index(n) for n in names]
        outs = g.outputs
        if len(outs) != len(flat):
            raise Unsupported("%d outputs imported, %d expected" %
                              (len(outs), len(flat)))
        for (name, shape), t in zip(outs, flat):
            if tuple(shape) != tuple(t.shape):
                raise Unsupported("output %s has shape %s, expected %s" %
                                  (name, shape, tuple(t.shape)))
        self.out_shapes = [tuple(s) for _, s in outs]

    def __call__(self, *args):
        user = [args[i] for i in self.user_idx]
        xs = [user[k].detach() for k in self.in_order]
        if self.dev.type == "cuda":
            xs = [x.contiguous() for x in xs]
            outs = [torch.empty(s, device=self.dev, dtype=torch.float32)
                    for s in self.out_shapes]
            torch.cuda.current_stream(self.dev).synchronize()
            self.runner.run_device([x.data_ptr() for x in xs],
                                   [o.data_ptr() for o in outs])
        else:
            res = self.runner.run([x.cpu().numpy() for x in xs])
            outs = [torch.from_numpy(r) for r in res]
        return pytree.tree_unflatten(outs, self.spec)


def superopt_backend(gm, example_inputs, options=None, **kw):
    """The TorchDynamo backend: a callable running gm's graph on superopt, or
    gm.forward (PyTorch) with a RuntimeWarning saying why not."""
    global last_fallback
    opts = dict(_DEFAULTS)
    opts.update(options or {})
    opts.update(kw)
    try:
        return _Compiled(gm, example_inputs, opts)
    except (Unsupported, SuperoptError) as e:
        last_fallback = str(e)
    except Exception as e:  # noqa: BLE001: never break the user's model
        last_fallback = "%s: %s" % (type(e).__name__, e)
    warnings.warn("superopt: running this graph with PyTorch: " +
                  last_fallback, RuntimeWarning, stacklevel=2)
    return gm.forward


def register():
    """Registers backend="superopt" (done by `import superopt` when torch
    is importable; the package's entry point covers torch's lookup)."""
    from torch._dynamo import list_backends, register_backend
    if "superopt" not in list_backends(exclude_tags=()):
        register_backend(superopt_backend, name="superopt")
