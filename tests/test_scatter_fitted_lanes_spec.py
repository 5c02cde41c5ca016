"""The 2-D walk's block fitted to its columns (runtime/ops/scatter_fitted_lanes.cpp): where powers of two
leave over a quarter of the lanes idle, adds and copies take the columns in the fewest equal parts. Plans
only (no GPU): explain for sm_90."""

import pytest

import jitops
from jitops import VirtualArray as V
from test_scatter_spec import index_walk  # noqa: F401 - a fixture: fills through the index walk


@pytest.fixture
def fitted_lanes_mode():
    yield jitops._core._set_fitted_lanes
    jitops._core._set_fitted_lanes(-1)


def block(op, *args, **kwargs):
    plans = jitops.explain(getattr(jitops, op), *args, arch="sm_90", **kwargs)
    (r,) = [p for p in plans if p["family"] == "scatter" and p["spec"]["dims"] == 2]
    return r["block"]


def test_short_index_rows_take_a_block_as_wide_as_the_row(fitted_lanes_mode):
    """Seed 478's float16 index_add_ of 10 columns along dim 1 of (262144x3): 10 lanes a row, 25 rows a
    block, rather than 16 lanes with 6 idle; with the knob off, the power of two."""
    args = (V([262144, 3], "float16"), 1, V([10], "int64"), V([262144, 10], "float16"))
    assert block("index_add_", *args) == (10, 25, 1)
    fitted_lanes_mode(0)
    assert block("index_add_", *args) == (16, 16, 1)


def test_copies_and_rows_past_a_warp_fit_too():
    copy = (V([65536, 5, 19], "bfloat16"), 2, V([9], "int64"), V([65536, 5, 9], "bfloat16"))
    assert block("index_copy_", *copy) == (9, 28, 1)
    # 41 columns: 41 lanes rather than 64 (two warps, the second 9 lanes at work)
    wide = (V([2, 512, 256, 16], "float32"), 3, V([41], "int64"), V([2, 512, 256, 41], "float32"))
    before = jitops._core._set_owned_rows(0)  # the rule takes this layout to self's rows in shared memory (NOTES 117)
    try:
        assert block("index_add_", *wide) == (41, 6, 1)
    finally:
        jitops._core._set_owned_rows(before)
    assert jitops.explain("index_add_", *wide, arch="sm_90")[0]["spec"]["owned"] == 3


def test_fills_warps_of_a_row_and_a_quarter_idle_keep_their_blocks(index_walk):
    """index_fill_ through the index walk keeps the power of two (1.00x measured); 45 columns in 32 lanes keep their warp along one
    row (fitted, 23 lanes, the warp spans rows and its runs no longer combine); 12 columns in 16 lanes leave
    only a quarter idle."""
    assert block("index_fill_", V([262144, 3], "float16"), 1, V([10], "int64"), 1.5)[0] == 16
    full = (V([45, 15, 15], "bfloat16"), 2, V([45, 15, 45], "int64"), V([45, 15, 45], "bfloat16"))
    assert block("scatter_add_", *full)[0] == 32
    quarter = (V([262144, 3], "float32"), 1, V([12], "int64"), V([262144, 12], "float32"))
    assert block("index_add_", *quarter)[0] == 16
