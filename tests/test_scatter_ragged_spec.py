"""Ragged packs (runtime/ops/scatter_ragged.cpp), planned for sm_90 with no GPU: which stores and adds along
odd or misaligned rows take them, with how many elements a pack and units a row, and which keep an element a
unit. tests/test_scatter_ragged_gpu.py checks their values."""

import pytest

import jitops
from jitops import VirtualArray as V
from test_scatter_spec import params_of, walk

WIDTH = {"int8": 1, "uint8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "float32": 4, "int64": 8,
         "float64": 8}


@pytest.fixture
def wherever_they_apply():
    previous = jitops._core._set_ragged_packs(1)
    yield
    jitops._core._set_ragged_packs(previous)


def plans_of(op, *args, **kwargs):
    return jitops.explain(op, *args, arch="sm_90", **kwargs)


def spec(op, *args, **kwargs):
    return plans_of(op, *args, **kwargs)[-1]["spec"]


def rows(dtype, count, length, offset=0, pitch=None):
    """`count` rows of `length`, `pitch` elements apart, starting `offset` elements past an aligned address."""
    pitch = length if pitch is None else pitch
    return V([count, length], dtype, strides=[pitch, 1], address=4096 + offset * WIDTH[dtype])


@pytest.mark.parametrize("dtype", list(WIDTH))
def test_copies_along_odd_rows_take_packs_of_16_bytes(dtype, wherever_they_apply):
    for offset in (0, 1, 3):
        for src in (rows(dtype, 17, 1003), rows(dtype, 17, 1003, offset=1, pitch=1004),
                    V([17, 1003], dtype, strides=[1, 0])):  # one value a row, broadcast along it
            s = spec("index_copy_", rows(dtype, 41, 1003, offset), 0, V([17], "int64"), src)
            assert s["peel"] == 1 and s["vec"] == 16 // WIDTH[dtype] and s["op"] == 1, (offset, s)


def test_the_units_cover_a_row_at_any_offset_and_a_broadcast_src_packs_too(wherever_they_apply):
    # float32 rows of 1003 at any offset: 252 packs of 4 a row hold 1003 elements shifted by up to 3
    r = jitops.explain("index_copy_", rows("float32", 41, 1003, 1), 0, V([17], "int64"), rows("float32", 17, 1003),
                       arch="sm_90")[-1]
    assert r["spec"]["peel"] == 1 and r["spec"]["dims"] == 2
    p = params_of(r)
    assert walk(r) == ([17, 252], [0, 4])
    assert [p.counts_strides[d] for d in range(2)] == [0, 1]  # the unit's place along the row
    assert (p.peel_len, p.peel_src_step, p.peel_fixed_phase) == (1003, 1, 0)  # rows 1003 apart: a phase each
    # rows a whole number of packs apart, and a broadcast src: one phase, src's step 0
    r = jitops.explain("index_copy_", rows("float32", 41, 1003, 1, pitch=1012), 0, V([17], "int64"),
                       V([17, 1003], "float32", strides=[1, 0]), arch="sm_90")[-1]
    p = params_of(r)
    assert (p.peel_len, p.peel_src_step, p.peel_fixed_phase) == (1003, 0, 1)
    # a broadcast src along rows that packs would divide evenly: packs where there were none
    even = spec("index_copy_", rows("int32", 8, 4096), 0, V([2], "int64"), V([2, 4096], "int32", strides=[1, 0]))
    assert even["peel"] == 1 and even["vec"] == 4
    # seed 1888's int32 rows of 215945 from one value a row, at an odd offset
    s = spec("index_copy_", V([2, 219, 215945], "int32", strides=[94583910, 215945, 1], address=4096 + 4 * 3),
             0, V([2], "int64"), V([2, 219, 215945], "int32", strides=[1, 0, 0]))
    assert s["peel"] == 1 and s["vec"] == 4


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_vector_adds_take_them_and_element_adds_do_not(dtype, wherever_they_apply):
    s = spec("index_add_", rows(dtype, 35, 1292157), 0, V([3], "int64"), rows(dtype, 3, 1292157), alpha=2)
    assert s["peel"] == 1 and s["vec"] == 16 // WIDTH[dtype] and s["alpha"] == 1
    for other in ("float64", "int32", "int64", "int8"):  # an atomic an element whatever the pack
        s = spec("index_add_", rows(other, 35, 1003), 0, V([3], "int64"), rows(other, 3, 1003))
        assert s["peel"] == 0 and s["vec"] == 1, (other, s)


def test_what_keeps_an_element_a_unit(wherever_they_apply):
    idx = V([17], "int64")
    # rows too short for 4 packs: 63 bytes of int8, 15 float32
    assert spec("index_copy_", rows("int8", 41, 63), 0, idx, rows("int8", 17, 63))["peel"] == 0
    assert spec("index_copy_", rows("float32", 41, 15), 0, idx, rows("float32", 17, 15))["peel"] == 0
    # self strided along its rows (a step of 2), and src strided along them
    stepped = V([41, 1003], "float32", strides=[2006, 2])
    assert spec("index_copy_", stepped, 0, idx, rows("float32", 17, 1003))["peel"] == 0
    assert spec("index_copy_", rows("float32", 41, 1003), 0, idx,
                V([17, 1003], "float32", strides=[2006, 2]))["peel"] == 0
    # the index along the rows themselves (dim 1): every unit its own destination column
    assert spec("index_copy_", rows("float32", 1003, 41), 1, idx, rows("float32", 1003, 17))["peel"] == 0
    # products and max: compare-and-swap or an element a reduction, never these packs
    for reduce in ("prod", "amax"):
        s = spec("scatter_reduce_", rows("float32", 41, 1003), 0, V([17, 1003], "int64", strides=[1, 0]),
                 rows("float32", 17, 1003), reduce)
        assert s["peel"] == 0, (reduce, s)
    # passes that keep counts (the mean's adds with include_self) and the deterministic sums' passes
    mean = plans_of("scatter_reduce_", rows("float32", 41, 1003), 0, V([17, 1003], "int64", strides=[1, 0]),
                    rows("float32", 17, 1003), "mean", include_self=True)
    assert mean[0]["spec"]["op"] == 19 and all(r["spec"]["peel"] == 0 for r in mean)
    det = plans_of("index_add_", rows("float32", 41, 1003), 0, idx, rows("float32", 17, 1003), deterministic=True)
    assert all(r["spec"].get("peel", 0) == 0 for r in det)
    # rows that packs divide keep the plain packs
    assert spec("index_copy_", rows("float32", 41, 1024), 0, idx, rows("float32", 17, 1024))["peel"] == 0


def test_a_seam_between_rows_falls_in_one_thread(wherever_they_apply):
    """The premise of the GPU seam test: rows of 17 float32 back to back, 5 packs a row, walked linearly over
    (2000, 104, 5) units, 4 a thread 256 apart."""
    r = jitops.explain("index_add_", V([2000, 104, 17], "float32"), 1, V([104], "int64"),
                       V([2000, 104, 17], "float32"), arch="sm_90")[-1]
    assert r["spec"]["peel"] == 1 and r["spec"]["unroll"] == 4 and r["block"] == (256, 1, 1)
    assert walk(r) == ([2000, 104, 5], [1768, 0, 4])


def test_the_knob_turns_them_off():
    args = ("index_copy_", rows("float32", 4100, 1003, 1), 0, V([1700], "int64"), rows("float32", 1700, 1003))
    previous = jitops._core._set_ragged_packs(0)
    try:
        s = spec(*args)
        assert s["peel"] == 0 and s["vec"] == 1
    finally:
        jitops._core._set_ragged_packs(previous)
    assert spec(*args)["peel"] == 1


def test_the_rule_takes_long_rows_of_large_calls_of_narrow_elements():
    """The default: rows of 32 packs or more, 1 MB written or more, elements of 4 bytes or less."""
    # seed 1888's int32 rows of 215945 from one value a row (378 MB), seed 1883's uint8 column of 21M
    s = spec("index_copy_", V([2, 219, 215945], "int32", strides=[94583910, 215945, 1], address=4096 + 4 * 3),
             0, V([2], "int64"), V([2, 219, 215945], "int32", strides=[1, 0, 0]))
    assert s["peel"] == 1 and s["vec"] == 4
    s = spec("index_copy_", V([21160903, 1], "int8"), 1, V([1], "int64"), V([21160903, 1], "int8", strides=[0, 1]))
    assert s["peel"] == 1 and s["vec"] == 16
    # float32 adds along rows of 1292157 (seed 1883), bfloat16 fills along rows of 4099
    assert spec("index_add_", rows("float32", 35, 1292157), 0, V([3], "int64"), rows("float32", 3, 1292157))["peel"]
    assert spec("index_fill_", rows("bfloat16", 2000, 4099, 1), 0, V([300], "int64"), 1.5)["peel"] == 1
    # under 1 MB written (256 rows of 1003 float32: 1003 KB), rows under 32 packs (float32 rows of 127),
    # 8-byte elements
    assert spec("index_copy_", rows("float32", 300, 1003), 0, V([256], "int64"), rows("float32", 256, 1003))["peel"] == 0
    assert spec("index_copy_", rows("float32", 9000, 127), 0, V([8000], "int64"), rows("float32", 8000, 127))["peel"] == 0
    assert spec("index_copy_", rows("int64", 9000, 1003), 0, V([8000], "int64"), rows("int64", 8000, 1003))["peel"] == 0
