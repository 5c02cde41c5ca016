"""The index innermost in the 2-D walk (runtime/ops/scatter_index_inner.cpp): index_add_ and index_copy_
into a transposed self on the GPU against numpy, the planner's own plans for every dtype (few rows added
into a self past half the L2, with repeated indices; copies within and past the L2). The every-case
suites run with the order forced in test_scatter_index_inner_forced_gpu.py."""

import numpy as np
import pytest

import jitops

torch = pytest.importorskip("torch")
import test_scatter_gpu as scatter  # noqa: E402 - after the skip: it needs torch
from test_scatter_spec import walk  # noqa: E402

pytestmark = pytest.mark.gpu

SELF_BYTES = 40 << 20  # past half of an H100's or H200's L2 (50 / 60 MB)


def transposed_self(rng, rows, cols, dtype):
    """A random (rows x cols) self whose dim 0 is innermost in memory."""
    return scatter.device_tensor(rng, (cols, rows), dtype, "contiguous").t()


def index_of(idx, index_dtype):
    return torch.from_numpy(idx.astype(index_dtype)).to(scatter.DEVICE)


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", scatter.DTYPES)
def test_few_rows_added_into_a_transposed_self_past_the_l2(dtype, index_dtype):
    """30 rows, repeated indices among them, into (64 x cols) transposed (seed 1839's layout), alpha 3:
    the planner walks the index innermost (a warp a column); every element against numpy."""
    rng = np.random.default_rng(scatter.seed("index inner add", dtype, index_dtype))
    rows = 64
    cols = SELF_BYTES // (rows * np.dtype(dtype if dtype != "bfloat16" else "float16").itemsize) + 7
    self_t = transposed_self(rng, rows, cols, dtype)
    idx = rng.integers(0, rows, 30)
    idx[:4] = idx[4]  # a destination taking five terms at least
    src_t = scatter.device_tensor(rng, (30, cols), dtype, "contiguous")
    alpha = 3 if dtype not in scatter.EPS else 0.75
    args = (self_t, 0, index_of(idx, index_dtype), src_t)
    plan = jitops.explain(jitops.index_add_, *args, alpha=alpha)[-1]
    assert walk(plan)[1] == [rows, 0], "the index innermost, a column a warp"
    before, src_h = scatter.host(self_t), scatter.host(src_t)
    jitops.index_add_(*args, alpha=alpha)
    if dtype in scatter.EPS:
        terms = src_h * (scatter.round_to(alpha, dtype) if alpha != 1 else 1)
        ref, mag, count = before.copy(), np.abs(before), np.zeros(before.shape)
        for k, i in enumerate(idx):
            ref[i] += terms[k]
            mag[i] += np.abs(terms[k])
            count[i] += 1
        scatter.check_float(self_t, ref, 2 * (count + 1) * scatter.EPS[dtype] * mag + 1e-300, dtype)
    else:
        ref = before.copy()
        for k, i in enumerate(idx):
            ref[i] += (src_h[k] * alpha).astype(dtype)
        np.testing.assert_array_equal(scatter.host(self_t), ref)


@pytest.mark.parametrize("dtype", scatter.DTYPES)
def test_copies_into_a_transposed_self_within_and_past_the_l2(dtype):
    """index_copy_ of 2048 rows into a self within the L2 (4 MB or less), and of 40 rows into one past it:
    the planner walks the index innermost in both; every element against numpy (untouched ones kept)."""
    rng = np.random.default_rng(scatter.seed("index inner copy", dtype))
    itemsize = np.dtype(dtype if dtype != "bfloat16" else "float16").itemsize
    for rows, n, cols in ((4096, 2048, (4 << 20) // (4096 * itemsize)), (96, 40, SELF_BYTES // (96 * itemsize))):
        self_t = transposed_self(rng, rows, cols, dtype)
        idx = rng.permutation(rows)[:n]
        src_t = scatter.device_tensor(rng, (n, cols), dtype, "contiguous")
        args = (self_t, 0, index_of(idx, "int64"), src_t)
        assert walk(jitops.explain(jitops.index_copy_, *args)[-1])[1] == [rows, 0]
        ref = scatter.host(self_t).copy()
        ref[idx] = scatter.host(src_t)
        jitops.index_copy_(*args)
        np.testing.assert_array_equal(scatter.host(self_t), ref)
