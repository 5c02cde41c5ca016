"""index_fill_'s marked pass over self (runtime/ops/fill_marked_plan.cpp), planned for sm_90 with no GPU:
taken where the index walk would store pieces of sectors (an axis whose run of self is under 32 bytes) and the
index names a quarter of the axis or more, or where its values repeat (1.5 a position or more) and the walk
would write each position as often; the walk elsewhere. The kernel compiles for every element."""

import pytest

import jitops
from jitops import VirtualArray as V

MARKED = "marked pass over self"
FLAT = MARKED + ", units across its rows"


def plan(self, dim, n, index_dtype="int64"):
    return jitops.explain(jitops.index_fill_, self, dim, V([n], index_dtype), 3, arch="sm_90")[-1]


def test_seed_1810s_int8_fill_along_16_wide_rows():
    p = plan(V([4, 369, 256, 16], "int8"), 3, 36)
    assert p["regime"] == MARKED
    assert "op=16" in p["kernel"] and "vec=16" in p["kernel"] and "dims=2" in p["kernel"]
    assert p["shared_bytes_dynamic"] == 16 and p["block"] == (256, 1, 1)


def test_repeated_values_over_whole_rows():
    # seed 1737's int64 (57x1048576x1) along dim 2 by 3 values: the walk wrote all of self 3 times
    p = plan(V([57, 1048576, 1], "int64"), 2, 3)
    assert p["regime"] == MARKED and "vec=2" in p["kernel"] and "dims=1" in p["kernel"]
    assert plan(V([4096, 6, 64], "float32"), 1, 9)["regime"] == MARKED  # 1.5 values a position


@pytest.mark.parametrize("dtype,vec", [("bool", 16), ("uint8", 16), ("int16", 8), ("float16", 8),
                                       ("bfloat16", 8), ("int32", 4), ("float32", 4), ("int64", 2),
                                       ("float64", 2), ("complex64", 2)])
def test_every_element_compiles_with_whole_units(dtype, vec):
    p = plan(V([4096, 64], dtype), 1, 40, "int32")
    assert p["regime"] == MARKED and f"vec={vec}" in p["kernel"] and p["registers"] > 0


def test_units_follow_the_layout():
    assert "vec=1" in plan(V([5000, 13], "uint8"), 1, 20)["kernel"]  # rows of 13: no unit divides them
    # over 16 MB, units of 16 bytes run across the rows' seams instead (seed 1827's shape)
    flat = plan(V([10193221, 13], "uint8"), 1, 7, "int32")
    assert flat["regime"] == FLAT and "vec=16" in flat["kernel"] and "dims=1" in flat["kernel"]
    assert "vec=8" in plan(V([2 ** 20, 13], "float16"), 1, 7)["kernel"]
    assert "vec=8" in plan(V([2 ** 21, 13], "uint8", address=264), 1, 7)["kernel"]  # 8-byte aligned: 8 a unit
    assert plan(V([2 ** 20, 14], "int16"), 1, 7)["regime"] == FLAT  # 2 a row, 8 across the rows
    for small_units in (V([2 ** 21, 13], "uint8", address=260), V([2 ** 20, 13], "float32"), V([2 ** 20, 12], "int16")):
        assert plan(small_units, 1, 7)["regime"] == MARKED  # units of 1 or 4 a unit, or 4 a row already: the rows' units
    transposed = plan(V([1000, 64], "int16", strides=[1, 1000]), 0, 600)  # the axis innermost in memory
    assert transposed["regime"] == MARKED and "vec=8" in transposed["kernel"]
    middle = plan(V([3000, 41, 2], "float64"), 1, 30)  # runs of 16 bytes beside the axis: one mark a unit
    assert middle["regime"] == MARKED and "vec=2" in middle["kernel"] and "dims=3" in middle["kernel"]
    sliced = plan(V([4000, 15], "float32", strides=[30, 2]), 1, 20)
    assert sliced["regime"] == MARKED and "vec=1" in sliced["kernel"]


@pytest.mark.parametrize("self_,dim,n,why", [
    (V([99139, 128], "int32"), 1, 12, "the index names under a quarter of the axis"),
    (V([4096, 4, 64], "float32"), 1, 5, "runs of 256 bytes beside the axis: the walk stores whole sectors"),
    (V([64, 20000], "float32"), 1, 20000, "more positions than a block's marks"),
    (V([300, 16], "float32"), 1, 2000, "few elements for the index a block loads"),
])
def test_the_walk_stays_elsewhere(self_, dim, n, why):
    assert plan(self_, dim, n)["regime"] != MARKED, why
