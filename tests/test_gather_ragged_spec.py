"""Ragged packs in the gathers (runtime/ops/gather_ragged.cpp), planned for sm_90 with no GPU: which
index_select and take calls along odd or misaligned rows take them, with how many elements a pack and units
a row, what the parameter block carries, and which keep an element a unit or a uniform pack.
tests/test_gather_ragged_gpu.py checks their values."""

import ctypes

import pytest

import jitops
from jitops import VirtualArray as V
from test_scatter_ragged_spec import WIDTH, rows

@pytest.fixture
def wherever_they_apply():
    previous = jitops._core._set_gather_ragged(1)
    yield
    jitops._core._set_gather_ragged(previous)


def plan(op, *args, **kwargs):
    return jitops.explain(op, *args, arch="sm_90", **kwargs)[-1]


def ragged_params_of(report):
    """A 32-bit ragged gather's parameter block, as the kernel reads it (templates/jitops/gather_params.h,
    GatherParams<32, Dims, 1, false, true>: the ragged base's peel_len first)."""
    dims = report["spec"]["dims"]
    assert report["spec"]["offset"] == 32 and report["spec"]["ragged"] > 0 and dims > 0

    class Divider(ctypes.Structure):
        _fields_ = [("divisor", ctypes.c_uint32), ("multiplier", ctypes.c_uint32), ("shift", ctypes.c_uint32)]

    class Params(ctypes.Structure):
        _fields_ = ([("peel_len", ctypes.c_uint32)] +
                    [(n, ctypes.c_void_p) for n in ("out", "x", "index", "error")] +
                    [("numel", ctypes.c_uint32), ("ndim", ctypes.c_int32), ("op_code", ctypes.c_int32),
                     ("axis_size", ctypes.c_int64), ("axis_stride", ctypes.c_int32), ("sizes", Divider * dims)] +
                    [(n, ctypes.c_int32 * dims) for n in ("out_strides", "x_strides", "index_strides")] +
                    [("index_positions", ctypes.c_int64 * dims), ("x_ndim", ctypes.c_int32),
                     ("band", ctypes.c_int32), ("x_sizes", Divider * 1), ("x_flat_strides", ctypes.c_int32 * 1)])

    raw = report["params"]
    assert len(raw) == report["param_bytes"] == ctypes.sizeof(Params)
    return Params.from_buffer_copy(raw)


@pytest.mark.parametrize("dtype", list(WIDTH))
def test_odd_rows_take_packs_of_16_bytes(dtype, wherever_they_apply):
    for offset in (0, 1, 3):
        x = rows(dtype, 41, 1003, offset)
        for r in (plan("index_select", x, 0, V([37], "int64")), plan("take", x, V([37], "int32"), axis=0)):
            assert r["spec"]["ragged"] == 16 // WIDTH[dtype] and r["spec"]["unit"] == WIDTH[dtype], (offset, r["kernel"])
            assert r["local_bytes"] == 0, r["kernel"]  # no pack indexed at run time


def test_the_units_cover_a_row_at_any_phase(wherever_they_apply):
    # int16 rows of 1003 from x 1003 apart: 127 packs of 8 a row hold 1003 elements shifted by up to 7
    r = plan("index_select", rows("int16", 41, 1003, 1), 0, V([37], "int32"))
    p = ragged_params_of(r)
    assert r["spec"]["dims"] == 2 and p.ndim == 2 and p.peel_len == 1003
    assert [p.sizes[d].divisor for d in range(2)] == [37, 127]
    assert [p.out_strides[d] for d in range(2)] == [1003, 8] and [p.x_strides[d] for d in range(2)] == [0, 8]
    assert p.axis_stride == 1003 and p.axis_size == 41
    assert [p.index_positions[d] for d in range(2)] == [1, 0]  # a bad index is named at its row's first place
    # gather through an index expanded along the rows: ragged too, and a bad value is named at its row's
    # first place (the index's own position stride along the row, 1, is 0 in the walk)
    r = plan("gather", rows("int16", 41, 1003, 1), 0, V([37, 1003], "int64", strides=[1, 0]))
    p = ragged_params_of(r)
    assert r["spec"]["ragged"] == 8 and [p.index_positions[d] for d in range(2)] == [1003, 0]
    # three dims (the linear walk): the index along the middle one, the unit's place the innermost
    r = plan("take", V([5, 23, 1003], "float32", address=4100), V([29], "int64"), axis=1)
    p = ragged_params_of(r)
    assert r["spec"]["dims"] == 3 and r["spec"]["ragged"] == 4 and p.peel_len == 1003
    assert [p.sizes[d].divisor for d in range(3)] == [5, 29, 252]
    assert [p.out_strides[d] for d in range(3)] == [29 * 1003, 1003, 4]


def test_the_rule_takes_odd_rows_of_a_megabyte_or_more():
    # seed 1887's int16 index_select of 48 rows of 54385: 5.2 MB written, an element a unit before
    r = plan("index_select", rows("int16", 191, 54385), 0, V([48], "int32"))
    assert r["spec"]["ragged"] == 8 and r["spec"]["unit"] == 2, r["kernel"]
    # seed 1890's int16 (57x32x1983) along dim 1 by 35 values: rows of 1983, three dims
    r = plan("index_select", V([57, 32, 1983], "int16"), 1, V([35], "int64"))
    assert r["spec"]["ragged"] == 8 and r["spec"]["dims"] == 3, r["kernel"]
    # and seed 1897's bfloat16 rows of 672425
    assert plan("index_select", V([16, 5, 2069, 5, 13], "bfloat16"), 0, V([4], "int32"))["spec"]["ragged"] == 8


def test_what_keeps_an_element_or_a_uniform_pack(wherever_they_apply):
    # rows that a pack divides, at an aligned start: the uniform pack (16-byte units), no ragged packs
    r = plan("index_select", rows("int16", 41, 1024), 0, V([37], "int32"))
    assert r["spec"]["ragged"] == 0 and r["spec"]["unit"] == 16
    # rows shorter than 4 packs
    assert plan("index_select", rows("int16", 41, 31), 0, V([37], "int32"))["spec"]["ragged"] == 0
    # out not dense along its rows (every other element of a wider out)
    out = V([37, 1003], "int16", strides=[2006, 2], address=8192)
    assert plan("index_select", rows("int16", 41, 1003, 1), 0, V([37], "int32"), out=out)["spec"]["ragged"] == 0
    # x strided along its rows (a transposed x): no dense rows to pack
    xt = V([1003, 41], "float32", strides=[1, 1003])
    assert plan("index_select", xt, 0, V([37], "int32"))["spec"]["ragged"] == 0
    # the index varies along the row (gather, take along the last axis), or a flat take
    assert plan("gather", rows("float32", 41, 1003), 1, V([41, 500], "int64"))["spec"]["ragged"] == 0
    assert plan("take", rows("float32", 41, 1003), V([37], "int64"), axis=1)["spec"]["ragged"] == 0
    assert plan("take", rows("float32", 41, 1003, pitch=1004), V([37], "int64"))["spec"]["ragged"] == 0
    # 16-byte elements: a pack of one
    assert plan("index_select", V([41, 1003], "complex128"), 0, V([37], "int32"))["spec"]["ragged"] == 0


def test_the_rule_leaves_out_small_calls_8_byte_elements_and_narrower_uniform_packs():
    small = plan("index_select", rows("int16", 41, 1003, 1), 0, V([37], "int32"))  # 74 KB written
    assert small["spec"]["ragged"] == 0
    wide = plan("index_select", rows("int64", 41, 100003, 1), 0, V([37], "int32"))  # 29.6 MB of 8-byte elements
    assert wide["spec"]["ragged"] == 0
    # even rows: a uniform pack of two int16 fits (4-byte units), which the rule keeps (two loads a pack
    # lost to one there); the knob takes ragged packs even so
    even = plan("index_select", rows("int16", 191, 54386), 0, V([48], "int32"))
    assert even["spec"]["ragged"] == 0 and even["spec"]["unit"] == 4, even["kernel"]
    previous = jitops._core._set_gather_ragged(1)
    try:
        assert plan("index_select", rows("int16", 191, 54386), 0, V([48], "int32"))["spec"]["ragged"] == 8
    finally:
        jitops._core._set_gather_ragged(previous)
    previous = jitops._core._set_gather_ragged(0)
    try:
        assert plan("index_select", rows("int16", 191, 54385), 0, V([48], "int32"))["spec"]["ragged"] == 0
    finally:
        jitops._core._set_gather_ragged(previous)
