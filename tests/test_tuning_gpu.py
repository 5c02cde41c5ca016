"""Tuning on the GPU: jitops.tune times the heuristic and every candidate of
the call's kernels, checks each result against the heuristic's, keeps the
fastest, restores in-place inputs, and persists; autotuning does the same at
the first call of a new point. Also: `python -m jitops bench` end to end."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jitops
from jitops import _core, tuning

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"


@pytest.fixture
def fresh_tuning(fresh_cache):
    _core.clear_tuned()
    yield fresh_cache
    _core.clear_tuned()


def check_result(result):
    assert result.chosen is not None
    configs = [r["config"] for r in result]
    assert "heuristic" in configs and len(configs) == len(set(configs)) >= 5
    timed = [r for r in result if r["median_us"] is not None]
    assert all(r["median_us"] > 0 for r in timed)
    assert not [r for r in result if r["error"] and "differs" in r["error"]], result
    best = min(timed, key=lambda r: r["median_us"])
    assert best["config"] == result.chosen and result.best_us <= result.default_us
    return timed


def test_tune_index_select_and_use_the_result(fresh_tuning):
    rng = np.random.default_rng(1)
    xh = rng.standard_normal((3000, 96)).astype(np.float32)
    ih = rng.integers(0, 3000, 700)
    x, idx = torch.from_numpy(xh).to(DEVICE), torch.from_numpy(ih).to(DEVICE)
    result = jitops.tune(jitops.index_select, x, 0, idx, reps=5)
    check_result(result)
    (report,) = jitops.explain(jitops.index_select, x, 0, idx)
    expected_config = report["config"] if result.chosen == "heuristic" else result.chosen
    assert report["config_origin"] == "tuned" and report["config"] == expected_config
    out = jitops.index_select(x, 0, idx)
    np.testing.assert_array_equal(out.cpu().numpy(), xh[ih])
    lines = open(tuning.tuning_file(0)).read().splitlines()
    assert sum(line.startswith(report["tuning_point"]) for line in lines) == len(
        [r for r in result if r["median_us"] is not None])


def test_tune_restores_in_place_self(fresh_tuning):
    rng = np.random.default_rng(2)
    self_h = rng.standard_normal((512, 64)).astype(np.float32)
    src_h = rng.standard_normal((300, 64)).astype(np.float32)
    ih = rng.integers(0, 512, 300)
    t = torch.from_numpy(self_h).to(DEVICE)
    src, idx = torch.from_numpy(src_h).to(DEVICE), torch.from_numpy(ih).to(DEVICE)
    check_result(jitops.tune(jitops.index_add_, t, 0, idx, src, reps=3))
    np.testing.assert_array_equal(t.cpu().numpy(), self_h)  # as before tuning, bit for bit
    jitops.index_add_(t, 0, idx, src)
    expected = self_h.copy()
    np.add.at(expected, ih, src_h)
    np.testing.assert_allclose(t.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_tune_numpy_histc_and_elementwise_kernel(fresh_tuning):
    rng = np.random.default_rng(3)
    xh = rng.standard_normal(1 << 16).astype(np.float32)
    timed = check_result(jitops.tune(jitops.histc, xh, bins=50, reps=3))
    assert any(r["config"] != "heuristic" for r in timed)
    k = jitops.ElementwiseKernel("T x, T y", "T z", "z = z + x * y", "fma_acc")
    a, b = (torch.from_numpy(rng.standard_normal(4096).astype(np.float32)).to(DEVICE) for _ in range(2))
    z0 = torch.from_numpy(rng.standard_normal(4096).astype(np.float32)).to(DEVICE)
    z = z0.clone()
    check_result(jitops.tune(k, a, b, z, reps=3))
    assert torch.equal(z, z0)  # the output it accumulates into was restored


def test_autotune_on_first_call(fresh_tuning):
    rng = np.random.default_rng(4)
    xh, yh = (rng.standard_normal(12345).astype(np.float16) for _ in range(2))
    x, y = torch.from_numpy(xh).to(DEVICE), torch.from_numpy(yh).to(DEVICE)
    jitops.set_autotune(True)
    try:
        got = jitops.mul(x, y)
        (report,) = jitops.explain(jitops.mul, x, y)
        assert report["config_origin"] == "tuned"
        path = tuning.tuning_file(0)
        before = os.stat(path).st_mtime_ns
        again = jitops.mul(x, y)  # the point has a result now: no second tuning
        jitops.synchronize()
        assert os.stat(path).st_mtime_ns == before
    finally:
        jitops.set_autotune(False)
    np.testing.assert_array_equal(got.cpu().numpy(), (xh.astype(np.float32) * yh).astype(np.float16))
    assert torch.equal(got, again)


def test_autotune_on_the_first_call_that_needs_a_gradient(fresh_tuning):
    """A product whose operands need a gradient is tuned on its first call as a plain one is (its forward
    takes the plain call while autotuning is on), and its gradient is PyTorch's."""
    x = torch.randn(23456, device=DEVICE, requires_grad=True)
    y = torch.randn(23456, device=DEVICE, requires_grad=True)
    jitops.set_autotune(True)
    try:
        z = jitops.mul(x, y)
        (report,) = jitops.explain(jitops.mul, x.detach(), y.detach())
        assert report["config_origin"] == "tuned"
    finally:
        jitops.set_autotune(False)
    assert z.grad_fn is not None
    torch.testing.assert_close(z, x * y)
    gx, gy = torch.autograd.grad(z.sum(), [x, y])
    torch.testing.assert_close(gx, y.detach())
    torch.testing.assert_close(gy, x.detach())


def test_autotune_elementwise_kernel(fresh_tuning):
    k = jitops.ElementwiseKernel("T x", "T y", "y = y * 2 + x", "double_add")
    x = torch.randn(77777, device=DEVICE)
    y0 = torch.randn(77777, device=DEVICE)
    y = y0.clone()
    jitops.set_autotune(True)
    try:
        k(x, y)
        (report,) = k.explain(x, y)
    finally:
        jitops.set_autotune(False)
    assert report["config_origin"] == "tuned"
    torch.testing.assert_close(y, y0 * 2 + x)  # one application: tuning restored y after its runs


def test_time_call_measures_kernels():
    x = torch.randn(1 << 22, device=DEVICE)
    device, stream = _core.call_stream(x)
    times = _core.time_call(lambda: jitops.mul(x, 2.0), None, device, stream, 5, 1, 1 << 20)
    assert len(times) == 5 and all(t > 0 for t in times)


def test_bench_end_to_end(tmp_path):
    out, plot = tmp_path / "bench.json", tmp_path / "bench.png"
    proc = subprocess.run([sys.executable, "-m", "jitops", "bench", "--reps", "3", "--no-jit-costs", "--out", str(out),
                           "--plot", str(plot), "--markdown", str(tmp_path / "bench.md")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    from jitops.bench.cases import CASES

    expected = sum(2 if c.indexed else 1 for c in CASES)
    assert len(report["cases"]) == expected and all(r["correct"] for r in report["cases"])
    assert {r["case"] for r in report["cases"]} == {c.name for c in CASES}
    try:
        import cupy  # noqa: F401

        assert any(r["cupy_us"] for r in report["cases"])
    except ImportError:
        pass
    try:
        import matplotlib  # noqa: F401

        assert plot.stat().st_size > 1000
    except ImportError:
        pass
