"""The 2-D walk's block fitted to its columns (runtime/ops/scatter_fitted_lanes.cpp) on the GPU against
numpy: warps that span rows of 9, 10 and 35 columns, for every dtype, with sorted, repeated and random
indices (runs and repeated destinations that the warps combine by destination, whatever the row)."""

import numpy as np
import pytest

import jitops

torch = pytest.importorskip("torch")
import test_scatter_gpu as scatter  # noqa: E402 - after the skip: it needs torch

pytestmark = pytest.mark.gpu

KINDS = ["sorted", "repeated", "random"]


def index_values(rng, kind, high, n):
    if kind == "sorted":
        return np.sort(rng.integers(0, high, n))
    if kind == "repeated":
        return rng.choice(rng.integers(0, high, 2), n)
    return rng.integers(0, high, n)


def scatter_plan(op, *args):
    (r,) = [p for p in jitops.explain(op, *args) if p["family"] == "scatter"]
    return r


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", scatter.DTYPES)
def test_index_add_of_ten_columns_a_warp_over_rows(dtype, kind):
    """index_add_ along dim 1 of (50000x3) by 10 columns (seed 478's layout): 10 lanes a row."""
    rng = np.random.default_rng(scatter.seed("fitted add", dtype, kind))
    self_t = scatter.device_tensor(rng, (50000, 3), dtype, "contiguous")
    src_t = scatter.device_tensor(rng, (50000, 10), dtype, "contiguous")
    idx = index_values(rng, kind, 3, 10)
    index = torch.from_numpy(idx).to(scatter.DEVICE)
    assert scatter_plan(jitops.index_add_, self_t, 1, index, src_t)["block"][0] == 10
    before, src_h = scatter.host(self_t), scatter.host(src_t)
    jitops.index_add_(self_t, 1, index, src_t)
    if dtype in scatter.EPS:
        ref, bound = scatter.accumulate_reference(before.T, idx, src_h.T, dtype)
        scatter.check_float(self_t, ref.T, bound.T, dtype)
    else:
        ref = before.copy()
        np.add.at(ref.T, idx, src_h.T)
        np.testing.assert_array_equal(scatter.host(self_t), ref)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", scatter.DTYPES)
def test_scatter_add_through_a_full_index_of_35_columns(dtype, kind):
    """scatter_add_ along dim 1 of (20000x28) through a full (20000x35) index (seed 641's layout): 35 lanes
    a row, not 64; 8-bit adds, compare-and-swap loops through a full index, keep a warp a row (32 lanes)."""
    rng = np.random.default_rng(scatter.seed("fitted scatter_add", dtype, kind))
    self_t = scatter.device_tensor(rng, (20000, 28), dtype, "contiguous")
    src_t = scatter.device_tensor(rng, (20000, 35), dtype, "contiguous")
    idx = np.stack([index_values(rng, kind, 28, 35) for _ in range(20000)])
    index = torch.from_numpy(idx).to(scatter.DEVICE)
    lanes = 32 if dtype in ("int8", "uint8") else 35
    assert scatter_plan(jitops.scatter_add_, self_t, 1, index, src_t)["block"][0] == lanes
    before = scatter.host(self_t)
    jitops.scatter_add_(self_t, 1, index, src_t)
    scatter.expect_reduced(self_t, before, scatter.scatter_positions(idx, 1), scatter.host(src_t), "sum", True,
                           dtype)


@pytest.mark.parametrize("dtype", scatter.DTYPES)
def test_index_copy_of_nine_columns_a_warp_over_rows(dtype):
    """index_copy_ along dim 2 of (4096x5x19) from 9 distinct columns: 9 lanes a row; the untouched
    elements keep their values."""
    rng = np.random.default_rng(scatter.seed("fitted copy", dtype))
    self_t = scatter.device_tensor(rng, (4096, 5, 19), dtype, "contiguous")
    src_t = scatter.device_tensor(rng, (4096, 5, 9), dtype, "contiguous")
    idx = rng.permutation(19)[:9]
    index = torch.from_numpy(idx).to(scatter.DEVICE)
    assert scatter_plan(jitops.index_copy_, self_t, 2, index, src_t)["block"][0] == 9
    ref = scatter.host(self_t).copy()
    ref[:, :, idx] = scatter.host(src_t)
    jitops.index_copy_(self_t, 2, index, src_t)
    np.testing.assert_array_equal(scatter.host(self_t), ref)
