"""jitops' PyTorch extension (jitops._torch_autograd, built where PyTorch is
importable at build time): in use where it was built, and the Python paths it
stands in for (tensor access through attributes, autograd through
gradients.py) still giving PyTorch's results where it is switched off
(JITOPS_TORCH_EXTENSION=0), in a fresh process."""

import importlib.util
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import jitops  # noqa: E402
from jitops import _core  # noqa: E402

pytestmark = pytest.mark.gpu

BUILT = importlib.util.find_spec("jitops._torch_autograd") is not None

# Forward results, an out= write's version bump, a side stream, in-place writes and gradients against
# PyTorch's, on random data; prints one line per check.
CHECKS = r"""
import torch, jitops
from jitops import _core
F = torch.nn.functional
g = torch.Generator(device="cuda").manual_seed(4)
x = torch.randn(40, 24, device="cuda", generator=g)
y = torch.randn(24, device="cuda", generator=g)
idx = torch.randint(-40, 40, (17,), device="cuda", generator=g)
img = torch.randn(2, 3, 7, 5, device="cuda", generator=g)
print("active", _core._cpp_autograd_active())
print("index_select", torch.equal(jitops.index_select(x.t(), 1, idx % 40), torch.index_select(x.t(), 1, idx % 40)))
print("mul", torch.allclose(jitops.mul(x, y), x * y))
out = torch.full((40, 24), float("nan"), device="cuda")
v = out._version
jitops.add(x, 1.5, out=out)
print("out", torch.allclose(out, x + 1.5) and out._version == v + 1)
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    up = jitops.upsample_nearest2d(img, scale_factor=3)
side.synchronize()
print("stream", torch.equal(up, F.interpolate(img, scale_factor=3, mode="nearest")))
acc = torch.zeros(40, 24, device="cuda")
jitops.index_add_(acc, 0, idx % 40, torch.ones(17, 24, device="cuda"))
print("index_add_", torch.equal(acc, torch.zeros(40, 24, device="cuda").index_add_(0, idx % 40,
                                                                                   torch.ones(17, 24, device="cuda"))))
a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
a2, b2 = x.clone().requires_grad_(), y.clone().requires_grad_()
jitops.mul(jitops.index_select(a, 0, idx % 40), b).square().sum().backward()
(torch.index_select(a2, 0, idx % 40) * b2).square().sum().backward()
print("grad", torch.allclose(a.grad, a2.grad, atol=1e-4) and torch.allclose(b.grad, b2.grad, atol=1e-3))
"""


def _run(env_extra):
    env = dict(os.environ, **env_extra)
    proc = subprocess.run([sys.executable, "-c", CHECKS], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())


@pytest.mark.skipif(not BUILT, reason="jitops._torch_autograd was not built (PyTorch not importable at build time)")
def test_the_extension_is_in_use_where_it_was_built():
    x = torch.randn(8, 3, device="cuda", requires_grad=True)
    assert _core._cpp_autograd_active()
    assert jitops.index_select(x, 0, torch.tensor([1, 7], device="cuda")).grad_fn.name() == (
        "jitops::IndexSelectBackward")
    results = _run({})
    assert results.pop("active") == "True"
    assert all(v == "True" for v in results.values()), results


def test_the_python_paths_give_pytorchs_results_without_the_extension():
    results = _run({"JITOPS_TORCH_EXTENSION": "0"})
    assert results.pop("active") == "False"
    assert all(v == "True" for v in results.values()), results
