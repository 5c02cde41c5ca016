"""The 2-D gather walk with a block a row over every column (runtime/ops/gather_row_local.cpp), planned
for sm_90 with no GPU: taken where each output row makes many picks (8 a sector or more) from a contiguous
row of x of 4-24 KB in units of 4 bytes or more, over 1.5 waves of rows; the column-range walk elsewhere."""

import pytest

import jitops
from jitops import VirtualArray as V

ROW_LOCAL = "2-D, a block a row over every column"


def plan(fn, *args, **kwargs):
    return jitops.explain(fn, *args, arch="sm_90", **kwargs)[0]


def test_a_take_along_rows_of_16_kb_is_row_local():
    # seed 1807's float64 take: 6069 picks from each of 5086 rows of 2048
    p = plan(jitops.take, V([1, 2543, 2, 2048], "float64"), V([6069], "int64"), axis=3)
    assert p["regime"] == ROW_LOCAL
    assert "row_local=1" in p["kernel"] and "unroll=4" in p["kernel"] and "reuse=1" in p["kernel"]
    assert p["grid"] == (1, 5086, 1) and p["block"] == (256, 1, 1)


@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "complex64", "complex128"])
def test_index_select_and_full_index_gather_of_wide_units_are_row_local(dtype):
    cols = 1024 if dtype in ("float32", "int32") else 512
    x = V([2000, cols], dtype)
    assert plan(jitops.index_select, x, 1, V([8 * cols], "int32"))["regime"] == ROW_LOCAL
    assert plan(jitops.gather, x, 1, V([1999, 8 * cols + 3], "int64"))["regime"] == ROW_LOCAL


@pytest.mark.parametrize("x,picks,why", [
    (V([16384, 1024], "float16"), 4096, "2-byte units: the walk's rows share an index load"),
    (V([16384, 1024], "uint8"), 4096, "1-byte units"),
    (V([16384, 512], "float32"), 4096, "rows of 2 KB"),
    (V([4096, 8192], "float32"), 16384, "rows of 32 KB"),
    (V([16384, 1024], "float32"), 1000, "fewer than 8 picks a sector"),
    (V([1500, 1024], "float32"), 4096, "under 1.5 waves of rows"),
    (V([16384, 1024], "float32", strides=[1, 16384]), 4096, "x's rows not contiguous (a transposed x)"),
])
def test_the_walk_stays_elsewhere(x, picks, why):
    assert plan(jitops.index_select, x, 1, V([picks], "int64"))["regime"] != ROW_LOCAL, why
