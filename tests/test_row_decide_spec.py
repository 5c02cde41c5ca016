"""The sample's decision between sorted row sums and the atomic kernel (templates/row_decide.cuh,
runtime/ops/row_sum_plan.cpp's plan_decision), planned for sm_90 with no GPU: where the rule sorts rows, a
one-block decision first, the gated atomic kernel next, both it and every sorted pass reading the decision's
word, and the bar of equal
pairs among the 1024 samples (8 rows a destination throughout, never under 4; none where rows of 2 KB or more
meet 3 or more a destination)."""

import ctypes
import math
import struct

import jitops
from jitops import VirtualArray as V

M = 1 << 20
SAMPLE_PAIRS = 1024 * 1023 // 2


class RowSortParams(ctypes.Structure):
    """templates/jitops/row_sort_params.h, as the kernels read it."""
    _fields_ = ([(n, ctypes.c_void_p) for n in ("index", "src", "self", "error", "tile_sums", "total", "tile_start",
                                                "chunk_tile", "chunk_in_order", "in_order", "bucketed", "sorted")] +
                [(n, ctypes.c_int64) for n in ("rows", "chunk_rows", "destinations", "index_stride",
                                               "position_stride", "src_row_stride", "self_row_stride", "row_units",
                                               "self_lo", "self_hi")] +
                [("alpha", ctypes.c_double), ("alpha_int", ctypes.c_int64)] +
                [(n, ctypes.c_int32) for n in ("tiles", "chunks", "op_code", "copies", "unit_splits")] +
                [("taken", ctypes.c_void_p), ("hot_pairs", ctypes.c_int32)])


def row_params(report):
    assert len(report["params"]) == report["param_bytes"] == ctypes.sizeof(RowSortParams)
    return RowSortParams.from_buffer_copy(report["params"])


def scatter_add(dtype, destinations, rows, width):
    return jitops.explain("scatter_add_", V([destinations, width], dtype), 0,
                          V([rows, width], "int64", strides=[1, 0]), V([rows, width], dtype), arch="sm_90")


def test_every_pass_and_the_atomic_kernel_read_the_decision():
    passes = scatter_add("float32", 100000, M, 128)
    decision, atomics, sorted_rows = passes[0], passes[1], passes[2:]
    taken = row_params(decision).taken
    assert taken and all(row_params(p).taken == taken for p in sorted_rows)
    (skip_if,) = struct.unpack("<Q", bytes(atomics["params"][-8:]))  # ScatterParams's last field
    assert skip_if == taken and atomics["spec"]["gated"] == 1 and atomics["spec"]["op"] == 0
    # the decision's word lies past the sorted pairs, inside the scratch
    p = row_params(decision)
    assert taken >= p.sorted + 8 * p.rows


def test_the_bar_of_equal_pairs():
    # the bench's shape: 10.5 rows a destination, over the 8 the bar is set for: 4 pairs (the floor)
    assert row_params(scatter_add("float32", 100000, M, 128)[0]).hot_pairs == max(4, math.ceil(SAMPLE_PAIRS * 8 / M))
    # seed 1905's float64 rows of 96: 139132 rows into 74514 (7 pairs expected at random)
    assert row_params(scatter_add("float64", 74514, 139132, 96)[0]).hot_pairs == math.ceil(SAMPLE_PAIRS * 8 / 139132)
    # rows of 2 KB, 3 a destination: any unsorted index sorts; 2.9 a destination keeps the bar
    assert row_params(scatter_add("float32", 30000, 90000, 512)[0]).hot_pairs == 0
    assert row_params(scatter_add("float32", 30000, 87000, 512)[0]).hot_pairs == math.ceil(SAMPLE_PAIRS * 8 / 87000)
    assert row_params(scatter_add("float64", 30000, 90000, 128)[0]).hot_pairs > 0  # rows of 1 KB


def test_forced_sorting_and_the_knob_below_zero_plan_no_decision():
    decided = [p["spec"]["op"] for p in scatter_add("float32", 100000, M, 128)]
    assert decided == [21, 0, 10, 11, 12, 14, 13]
    previous = jitops._core._set_row_sum_hot_rows(-1)
    try:
        passes = scatter_add("float32", 100000, M, 128)
    finally:
        jitops._core._set_row_sum_hot_rows(previous)
    assert [p["spec"]["op"] for p in passes] == [10, 11, 12, 14, 13]
    assert all(row_params(p).taken is None for p in passes)
    jitops._core._set_row_sum_mode(2)
    try:
        assert [p["spec"]["op"] for p in scatter_add("float32", 100000, M, 128)] == [10, 11, 12, 14, 13]
    finally:
        jitops._core._set_row_sum_mode(1)
    jitops._core._set_row_sum_mode(4)  # tests: no atomic kernel after the decision
    try:
        assert [p["spec"]["op"] for p in scatter_add("float32", 100000, M, 128)] == [21, 10, 11, 12, 14, 13]
    finally:
        jitops._core._set_row_sum_mode(1)


def test_the_atomic_kernels_elsewhere_are_not_gated():
    (r,) = scatter_add("float32", 1000, 4096, 128)
    assert r["spec"]["gated"] == 0 and "skip_if" not in r["source"]
