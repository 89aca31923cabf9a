"""test_torch_backend.py: torch.compile(model, backend="superopt"): outputs
match eager (TF32 tolerance on CUDA), an unsupported graph falls back to
PyTorch with a warning saying why. Skips without torch; the CUDA tests skip
without a GPU or a CUDA build of libsuperopt."""
import warnings

import pytest

torch = pytest.importorskip("torch")
import superopt  # noqa: E402
from superopt import torch_backend  # noqa: E402

torch_backend.register()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3)))


def rel_err(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp(min=1e-6)).item()


def compiled_matches(device, tol):
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = Net().eval().to(device)
    x = torch.randn(2, 3, 16, 16, device=device)
    with torch.no_grad():
        ref = net(x)
        opt = torch.compile(net, backend="superopt")
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback
            got = opt(x)
            got2 = opt(x * 2)
        ref2 = net(x * 2)
    assert got.device == ref.device and got.shape == ref.shape
    assert rel_err(got, ref) <= tol and rel_err(got2, ref2) <= tol


def test_cpu():
    compiled_matches("cpu", 1e-4)


def test_cuda():
    if not torch.cuda.is_available() or not superopt.cuda_available():
        pytest.skip("no GPU or no CUDA build of libsuperopt")
    compiled_matches("cuda", 1e-2)  # TF32


def test_fallback_says_why():
    torch._dynamo.reset()

    def f(x):
        return torch.cumsum(x, dim=0) * 2  # no CumSum in the importer

    x = torch.randn(5, 3)
    with pytest.warns(RuntimeWarning, match="running this graph with PyTorch"):
        got = torch.compile(f, backend="superopt")(x)
    assert torch.allclose(got, f(x))
    assert torch_backend.last_fallback
