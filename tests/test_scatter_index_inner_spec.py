"""The index innermost in the 2-D walk (runtime/ops/scatter_index_inner.cpp) for index_add_ and index_copy_
into a self whose indexed dim lies innermost in memory: where the planner takes it, where it keeps the
column-wise walk, and the development knob. Plans only (no GPU): explain for sm_90 (H100's 50 MB L2)."""

import pytest

import jitops
from jitops import VirtualArray as V
from test_scatter_spec import walk


@pytest.fixture
def index_inner_mode():
    before = jitops._core._index_inner()
    yield jitops._core._set_index_inner
    jitops._core._set_index_inner(before)


def transposed(rows, cols, dtype):
    """A (rows x cols) self whose dim 0 is innermost in memory."""
    return V([rows, cols], dtype, strides=[1, rows])


def plan(op, self_, n, dtype, index_dtype="int64", **kwargs):
    cols = self_.shape[1]
    args = (self_, 0, V([n], index_dtype), V([n, cols], dtype))
    return jitops.explain(getattr(jitops, op), *args, arch="sm_90", **kwargs)[-1]


def test_few_rows_added_into_a_transposed_self_past_the_l2_go_a_warp_a_column(index_inner_mode):
    """Seed 1839's int64 index_add_ of 30 rows into (64x1885291) transposed (965 MB): each warp takes one
    column's 30 terms (the index innermost, its lanes writing one 512-byte row of self); with the knob off
    the rows go outermost, a column's terms `unroll` at a time a grid of blocks apart."""
    self_ = transposed(64, 1885291, "int64")
    r = plan("index_add_", self_, 30, "int64", alpha=2)
    assert walk(r) == ([1885291, 30], [64, 0]) and r["block"][0] == 32, r["block"]
    index_inner_mode(0)
    r = plan("index_add_", self_, 30, "int64", alpha=2)
    assert walk(r) == ([30, 1885291], [0, 64])


def test_adds_keep_the_column_wise_walk_past_a_warp_of_rows_or_within_the_l2():
    """Adds take it only with at most 32 rows (more depend on the index's values: hot repeated ones ran
    up to 3.4x slower) and only into a self past half the L2."""
    assert walk(plan("index_add_", transposed(64, 1885291, "int64"), 33, "int64"))[1] == [0, 64]
    within = plan("index_add_", transposed(64, 16384, "float32"), 30, "float32")  # 4 MB
    assert walk(within) == ([30, 16384], [0, 64])


def test_copies_go_a_warp_a_column_up_to_2048_rows_within_the_l2_and_any_past_it():
    within = transposed(4096, 1024, "float32")  # 16 MB
    assert walk(plan("index_copy_", within, 2048, "float32"))[1] == [4096, 0]
    assert walk(plan("index_copy_", within, 2049, "float32"))[1] == [0, 4096]
    past = transposed(8192, 4096, "float32")  # 128 MB
    assert walk(plan("index_copy_", past, 5000, "float32"))[1] == [8192, 0]


def test_small_calls_and_selfs_dense_along_the_columns_keep_the_column_wise_walk(index_inner_mode):
    """Under 64K units a call is about its launch; a self whose columns lie under a sector apart (index_add_
    along dim 0 of a contiguous self) writes side by side already, and the knob cannot force it there."""
    assert walk(plan("index_copy_", transposed(4096, 1000, "float32"), 60, "float32"))[1] == [0, 4096]
    index_inner_mode(1)
    dense = V([64, 1885291], "int64")
    assert walk(plan("index_add_", dense, 30, "int64"))[1] == [0, 1]
    forced = plan("index_add_", transposed(64, 16384, "float32"), 30, "float32")
    assert walk(forced) == ([16384, 30], [64, 0])
