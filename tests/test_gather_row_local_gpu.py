"""The 2-D gather walk with a block a row over every column (runtime/ops/gather_row_local.cpp): index_select,
take (negative values wrapping) and torch.gather's full index along x's contiguous rows, random and sorted
picks, rows and picks that fill no pass evenly. Against numpy, bit for bit, the output poisoned first; a
bad value's position is still the first one."""

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, index_checks_synced, poisoned_like, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
ROW_LOCAL = "2-D, a block a row over every column"
# (dtype, rows, row length): rows of 4-24 KB, over 1.5 waves of blocks on an H100 or H200
SHAPES = [("float32", 1901, 1024), ("int32", 2003, 1531), ("float64", 1777, 2048), ("int64", 1600, 3001),
          ("complex64", 1999, 777), ("complex128", 1601, 300)]


def row_local(fn, *args, **kwargs):
    return jitops.explain(fn, *args, **kwargs)[0]["regime"] == ROW_LOCAL


def picks(rng, length, dtype, order, index_dtype):
    sectors = -(-length * np.dtype(dtype).itemsize // 32)  # 8 picks a 32-byte sector of the row, and a few more
    values = rng.integers(0, length, 8 * sectors + 37)
    return (np.sort(values) if order == "sorted" else values).astype(index_dtype)


@pytest.mark.parametrize("order", ["random", "sorted"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype,rows,length", SHAPES)
def test_index_select_and_take_along_rows(dtype, rows, length, index_dtype, order):
    rng = np.random.default_rng([21, len(dtype), rows, len(index_dtype), len(order)])
    host = random_host(rng, (rows, length), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    idx_host = picks(rng, length, dtype, order, index_dtype)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert row_local(jitops.index_select, x, 1, idx)
    expected = np.take(host, idx_host, axis=1)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    assert jitops.index_select(x, 1, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), expected)
    wrapped = idx_host.astype(np.int64) - length * rng.integers(0, 2, idx_host.size)  # negative values wrap
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.take(x, torch.from_numpy(wrapped).to(DEVICE), axis=1, out=out)
    assert_same_bits(to_numpy(torch, out), expected)


@pytest.mark.parametrize("order", ["random", "sorted"])
@pytest.mark.parametrize("dtype,rows,length", SHAPES)
def test_full_index_gather_along_rows(dtype, rows, length, order):
    rng = np.random.default_rng([22, len(dtype), rows, len(order)])
    host = random_host(rng, (rows, length), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    n = picks(rng, length, dtype, order, "int64").size
    idx_host = rng.integers(0, length, (rows - 3, n))
    if order == "sorted":
        idx_host.sort(axis=1)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert row_local(jitops.gather, x, 1, idx)
    out = poisoned_like(torch, idx_host.shape, x.dtype, DEVICE)
    assert jitops.gather(x, 1, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), np.take_along_axis(host[: rows - 3], idx_host, axis=1))


def test_bad_values_report_the_first_position():
    rng = np.random.default_rng(23)
    x = torch.from_numpy(rng.standard_normal((1901, 1024)).astype(np.float32)).to(DEVICE)
    idx_host = rng.integers(0, 1024, 1100)
    idx_host[[700, 1090]] = [1024, -5]
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert row_local(jitops.index_select, x, 1, idx)
    with index_checks_synced(), pytest.raises(IndexError, match=r"^index_select: index holds 1024 at position 700 "):
        jitops.index_select(x, 1, idx)
    full = torch.from_numpy(rng.integers(0, 1024, (1901, 1100))).to(DEVICE)
    full[1500, 3], full[1700, 0] = 2000, -1
    assert row_local(jitops.gather, x, 1, full)
    with index_checks_synced(), pytest.raises(IndexError, match=rf"^gather: index holds 2000 at position {1500 * 1100 + 3} "):
        jitops.gather(x, 1, full)
    idx_host[[700, 1090]] = [3, 4]
    good = torch.from_numpy(idx_host).to(DEVICE)
    assert torch.equal(jitops.index_select(x, 1, good), torch.index_select(x, 1, good))
