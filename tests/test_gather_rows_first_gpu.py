"""The 2-D gather walked rows first (blocks of one column range over every index value before the next
range): index_select and take of repeated values over an x larger than a quarter of L2, and of a transposed
x, against numpy, bit for bit, the output poisoned first; a bad index's position is still the first one."""

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, poisoned_like, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"


def rows_first(fn, *args, **kwargs):
    return jitops.explain(fn, *args, **kwargs)[0]["regime"] == "2-D, rows first"


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "int64"])
def test_repeated_values_over_a_large_x(dtype, index_dtype):
    rng = np.random.default_rng([7, len(dtype), len(index_dtype)])
    row_bytes = 1 << 20
    rows, n = 24, 61  # 61 values of 24: repeats
    host = random_host(rng, (rows, 3, row_bytes // 3 // np.dtype(dtype).itemsize + 1), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    idx_host = rng.integers(0, rows, n).astype(index_dtype)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert rows_first(jitops.index_select, x, 0, idx)
    out = poisoned_like(torch, (n,) + tuple(x.shape[1:]), x.dtype, DEVICE)
    assert jitops.index_select(x, 0, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), np.take(host, idx_host, axis=0))
    got = jitops.take(x, idx, axis=0)
    assert_same_bits(to_numpy(torch, got), np.take(host, idx_host, axis=0))


@pytest.mark.parametrize("dtype", ["int8", "bfloat16", "float32", "float64"])
def test_transposed_x(dtype):
    rng = np.random.default_rng([8, len(dtype)])
    host = random_host(rng, (12289, 2049), dtype)  # stored (12289, 2049): x = its transpose, rows adjacent
    base = to_torch(torch, host, dtype, DEVICE)
    x, x_host = base.t(), host.T
    idx_host = rng.integers(-2049, 2049, 301)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert rows_first(jitops.index_select, x, 0, idx.remainder(2049))
    got = jitops.index_select(x, 0, idx.remainder(2049))
    assert_same_bits(to_numpy(torch, got), np.take(x_host, idx_host % 2049, axis=0))
    out = poisoned_like(torch, (301, 12289), x.dtype, DEVICE)
    jitops.take(x, idx, axis=0, out=out)  # negative values wrap, as numpy.take's
    assert_same_bits(to_numpy(torch, out), np.take(x_host, idx_host, axis=0))


def test_bad_index_reports_the_first_position():
    rng = np.random.default_rng(9)
    x = torch.from_numpy(rng.standard_normal((16, 1 << 20)).astype(np.float32)).to(DEVICE)
    idx_host = rng.integers(0, 16, 40)
    idx_host[[23, 31]] = [16, 99]
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert rows_first(jitops.index_select, x, 0, idx)
    jitops.set_index_checks("sync")
    try:
        with pytest.raises(IndexError, match=r"index_select: index holds 16 at position 23 "):
            jitops.index_select(x, 0, idx)
    finally:
        jitops.set_index_checks("async")
    idx_host[[23, 31]] = [1, 2]
    got = jitops.index_select(x, 0, torch.from_numpy(idx_host).to(DEVICE))
    assert torch.equal(got, x[torch.from_numpy(idx_host).to(DEVICE)])
