"""The 2-D gather walked rows first (blocks of one column range over every index value before the next
range): index_select and take of repeated values over an x larger than a quarter of L2, and of a transposed
x; torch.gather's full index walked rows first within bands of column ranges; and many random values along
x's rows, one row group a block. Against numpy, bit for bit,
the output poisoned first; a bad index's position is still the first one."""

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, index_checks_synced, poisoned_like, random_host, to_numpy, to_torch

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
    with index_checks_synced(), pytest.raises(IndexError, match=r"index_select: index holds 16 at position 23 "):
        jitops.index_select(x, 0, idx)
    idx_host[[23, 31]] = [1, 2]
    got = jitops.index_select(x, 0, torch.from_numpy(idx_host).to(DEVICE))
    assert torch.equal(got, x[torch.from_numpy(idx_host).to(DEVICE)])


def in_bands(fn, *args, **kwargs):
    return jitops.explain(fn, *args, **kwargs)[0]["regime"] == "2-D, rows first in bands of column ranges"


# torch.gather with a full index along dim 0 over an x past half of L2 (the bands' rule in
# runtime/ops/gather_block_order.cpp): odd column counts leave a partial column range and a partial
# last band, odd index rows a partial row group; the last case's ranges are so tall that a band is one.
FULL_INDEX_CASES = [
    ("uint8", 64, (1 << 20) + 77, 41),
    ("float16", 64, (1 << 19) + 3, 40),
    ("bfloat16", 96, 1 << 19, 33),
    ("float32", 64, 262144 + 100, 41),
    ("int64", 64, 131072 + 5, 40),
    ("float64", 64, 131072, 39),
    ("complex64", 80, 131072 + 9, 40),
    ("float32", 4096, 8192 + 1, 301),
]


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype,rows,cols,index_rows", FULL_INDEX_CASES)
def test_full_index_gather_in_bands(dtype, rows, cols, index_rows, index_dtype):
    rng = np.random.default_rng([10, len(dtype), rows, index_rows, len(index_dtype)])
    host = random_host(rng, (rows, cols), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    idx_host = rng.integers(0, rows, (index_rows, cols)).astype(index_dtype)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert in_bands(jitops.gather, x, 0, idx)
    out = poisoned_like(torch, (index_rows, cols), x.dtype, DEVICE)
    assert jitops.gather(x, 0, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), np.take_along_axis(host, idx_host.astype(np.int64), axis=0))


def test_full_index_gather_in_bands_reports_the_first_bad_position():
    rng = np.random.default_rng(11)
    x = torch.from_numpy(rng.standard_normal((64, 262144)).astype(np.float32)).to(DEVICE)
    idx_host = rng.integers(0, 64, (40, 262144))
    idx_host[17, 5000], idx_host[30, 9] = 64, -1
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert in_bands(jitops.gather, x, 0, idx)
    position = 17 * 262144 + 5000  # the first of the two bad values in C order
    with index_checks_synced(), pytest.raises(IndexError, match=rf"^gather: index holds 64 at position {position} "):
        jitops.gather(x, 0, idx)
    idx_host[17, 5000], idx_host[30, 9] = 3, 4
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert torch.equal(jitops.gather(x, 0, idx), torch.gather(x, 0, idx))


# index_select / take along dim 1 of an x whose rows are 8 MB, through random values (more than a row has
# sectors), so that blocks walking several row groups would span more of x than half of L2: one row group a
# block (gather_row_passes in runtime/ops/gather_block_order.cpp). A group's rows with the index would pass
# half of L2 too at 4 rows: 2 rows a thread and a group, and 1 for the float32 rows of 16 MB; 23 rows leave a
# partial group, 9 rows of one a group none.
ROW_PASS_CASES = [("uint8", 24, 8 << 20, 2 << 20), ("float16", 23, 4 << 20, (2 << 20) + 1),
                  ("float32", 24, 2 << 20, (1 << 20) + 3), ("int64", 48, 1 << 20, (1 << 19) + 7),
                  ("float32", 9, 4 << 20, (2 << 20) + 5)]


@pytest.mark.parametrize("dtype,rows,axis,n", ROW_PASS_CASES)
def test_many_random_values_along_large_rows_one_row_group_a_block(dtype, rows, axis, n):
    rng = np.random.default_rng([12, len(dtype), rows])
    host = random_host(rng, (rows, axis), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    idx_host = rng.integers(0, axis, n).astype(np.int32)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    assert jitops.explain(jitops.index_select, x, 1, idx)[0]["regime"] == "2-D, one row group a block"
    expected = np.take(host, idx_host, axis=1)
    out = poisoned_like(torch, (rows, n), x.dtype, DEVICE)
    assert jitops.index_select(x, 1, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), expected)
    del out
    wrapped = idx_host.astype(np.int64) - axis * (np.arange(n) % 2)  # negative values wrap, as numpy.take's
    got = jitops.take(x, torch.from_numpy(wrapped).to(DEVICE), axis=1)
    assert_same_bits(to_numpy(torch, got), expected)


# torch.gather's full index along x's inner axis, rows of 4-16 MB: each row reads its own random values, so
# one row group a block keeps x's rows in flight within L2 without the index having to stay there (seed
# 1838's float32 (153x698389), NOTES 102). 4, 2 and 1 rows a thread; 9 rows leave a partial group.
FULL_INDEX_CASES = [("float32", 24, 1 << 20, (1 << 20) + 3, 4), ("float32", 16, 1 << 21, (1 << 21) + 5, 2),
                    ("float64", 9, 1 << 21, (1 << 21) + 5, 1)]


@pytest.mark.parametrize("dtype,rows,axis,n,unroll", FULL_INDEX_CASES)
def test_full_index_along_large_rows_one_row_group_a_block(dtype, rows, axis, n, unroll):
    rng = np.random.default_rng([13, len(dtype), rows])
    host = random_host(rng, (rows, axis), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    idx_host = rng.integers(0, axis, (rows, n)).astype(np.int32)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    (k,) = jitops.explain(jitops.gather, x, 1, idx)
    assert k["regime"] == "2-D, one row group a block" and k["spec"]["unroll"] == unroll
    out = poisoned_like(torch, (rows, n), x.dtype, DEVICE)
    assert jitops.gather(x, 1, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), np.take_along_axis(host, idx_host.astype(np.int64), axis=1))
