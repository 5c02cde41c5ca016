"""The accumulate family's specialization, planned for an architecture with
no GPU: element type, vector width, regime, passes."""

import ctypes
import re

import pytest

import jitops
from jitops import VirtualArray as V

M = 1 << 20


def plans(op, *args, **kwargs):
    return jitops.explain(op, *args, arch="sm_90", **kwargs)


@pytest.fixture
def index_walk():
    """index_fill_ through the index walk where the marked pass would take it (whose plans
    tests/test_fill_marked_spec.py checks)."""
    jitops._core._set_fill_marked_mode(0)
    yield
    jitops._core._set_fill_marked_mode(-1)


def test_index_add_rows_vectorize_and_pick_a_regime():
    (r,) = plans("index_add_", V([32, 1024, 1024], "float32"), 0, V([15], "int64"), V([15, 1024, 1024], "float32"))
    assert r["spec"]["vec"] == 4 and r["spec"]["op"] == 0 and r["regime"] == "small-index"
    (r,) = plans("index_add_", V([32768, 1024], "float32"), 0, V([1024], "int64"), V([1024, 1024], "float32"))
    assert r["regime"] == "large-index"
    (r,) = plans("index_add_", V([32768, 1024], "bfloat16"), 0, V([1024], "int32"), V([1024, 1024], "bfloat16"))
    assert r["spec"]["vec"] == 8 and r["spec"]["element"] == 6 and r["spec"]["index"] == 4
    # A few indices into a narrow slice would leave the small-index grid on one SM: large-index instead.
    (r,) = plans("index_add_", V([32768, 1024], "float32"), 0, V([15], "int64"), V([15, 1024], "float32"))
    assert r["regime"] == "large-index"


def test_index_add_dim1_and_alpha():
    (r,) = plans("index_add_", V([4096, 4096], "float32"), 1, V([512], "int64"), V([4096, 512], "float32"), alpha=2)
    assert r["spec"]["vec"] == 1 and r["spec"]["alpha"] == 1 and r["spec"]["dims"] == 2
    assert "scatter_2d<float, long long, 0, 1, true" in r["source"]


def test_sources_name_their_ops():
    (fill,) = plans("index_fill_", V([100, 64], "float16"), 1, V([3], "int64"), 1.5)
    assert fill["spec"]["op"] == 2 and "__half" in fill["source"]
    (copy,) = plans("index_copy_", V([100, 64], "uint16"), 0, V([3], "int64"), V([3, 64], "uint16"))
    assert copy["spec"]["op"] == 1 and copy["spec"]["element"] == 2  # uint16 copies move 16-bit words
    assert [p["spec"]["op"] for p in plans("scatter_reduce_", V([10, 8], "float32"), 0, V([20, 8], "int64"),
                                           V([20, 8], "float32"), "mean", include_self=False)] == [6, 0, 7]
    # from 2^19 units: count, zero the counted elements in a pass over self, add, divide
    assert [p["spec"]["op"] for p in plans("scatter_reduce_", V([1000, 8], "float32"), 0, V([M, 8], "int64"),
                                           V([M, 8], "float32"), "mean", include_self=False)] == [6, 18, 0, 7]
    assert [p["spec"]["op"] for p in plans("scatter_reduce_", V([10, 8], "int32"), 0, V([20, 8], "int64"),
                                           V([20, 8], "int32"), "amax")] == [4]


def test_include_self_means_count_in_the_adds_pass():
    """include_self=True's mean needs its counts only for the division: the adds' own pass counts each unit
    (op 19: scatter_add's walk with count_units), two launches, not a counting pass that reads the index
    again (NOTES 106); the knob gives the three passes back. include_self=False keeps counting first."""
    call = (V([157190, 1], "float32"), 0, V([M, 1], "int64"), V([M, 1], "float32"), "mean")
    add, finish = plans("scatter_reduce_", *call)
    assert [add["spec"]["op"], finish["spec"]["op"]] == [19, 7]
    assert "scatter_linear<float, long long, 1, false, 0, 1, false, 4, true, true>" in add["source"], add["source"]
    two_d = plans("scatter_reduce_", V([64, 300], "float32"), 0, V([M // 300, 300], "int32"),
                  V([M // 300, 300], "float32"), "mean")
    assert [p["spec"]["op"] for p in two_d] == [19, 7] and ", true>(p);" in two_d[0]["source"]
    assert [p["spec"]["op"] for p in plans("scatter_reduce_", *call, include_self=False)] == [6, 18, 0, 7]
    # a pass of their own where self and its counts pass half the L2 (seed 1185's float32 column of 5.1M) ...
    big = (V([5105099, 1], "float32"), 0, V([M, 1], "int64"), V([M, 1], "float32"), "mean")
    assert [p["spec"]["op"] for p in plans("scatter_reduce_", *big)] == [6, 0, 7]
    # ... and where 16-bit adds of 2^22 units or more go in packs (seed 1811's bfloat16 rows of 32), not one
    # element at a time (rows of 3: no packs)
    units = 303966
    packed = (V([33328, 32], "bfloat16"), 0, V([units, 32], "int64", strides=[1, 0]), V([units, 32], "bfloat16"),
              "mean")
    ops = plans("scatter_reduce_", *packed)
    assert [p["spec"]["op"] for p in ops] == [6, 0, 7] and ops[1]["spec"]["vec"] > 1, [p["spec"] for p in ops]
    lone = (V([33328, 3], "bfloat16"), 0, V([2 * M, 3], "int64", strides=[1, 0]), V([2 * M, 3], "bfloat16"), "mean")
    assert [p["spec"]["op"] for p in plans("scatter_reduce_", *lone)] == [19, 7]
    jitops._core._set_mean_counts_with_adds(0)
    try:
        assert [p["spec"]["op"] for p in plans("scatter_reduce_", *call)] == [6, 0, 7]
    finally:
        jitops._core._set_mean_counts_with_adds(1)


def test_identity_stores_walk_the_index_not_src():
    """The identity stores before include_self=False's reduction read no source: a transposed src no longer
    orders their walk, the index does (its reads dense along the lanes), where the reduction itself keeps src's
    order. Seed 1856's float64 sum: the stores took 66 us walking the index 53 KB a lane (NOTES 106)."""
    call = (V([383, 8398], "float64"), 1, V([383, 6647], "int64"), V([383, 6647], "float64", strides=[1, 383]),
            "sum")
    prepare, add = plans("scatter_reduce_", *call, include_self=False)
    assert params_of(prepare).index_strides[1] == 1, params_of(prepare).index_strides
    assert params_of(add).src_strides[1] == 1, params_of(add).src_strides
    # the indexed dim outermost: each lane stores into another row in either order, and src's order stays
    outer = (V([3132, 509], "float64"), 0, V([2955, 509], "int32"), V([2955, 509], "float64", strides=[1, 2955]),
             "amax")
    prepare, add = plans("scatter_reduce_", *outer, include_self=False)
    assert params_of(prepare).src_strides[:2] == params_of(add).src_strides[:2], params_of(prepare).src_strides
    previous = jitops._core._set_prepare_order(0)
    try:
        prepare, _ = plans("scatter_reduce_", *call, include_self=False)
        assert params_of(prepare).index_strides[1] == 6647, params_of(prepare).index_strides
    finally:
        jitops._core._set_prepare_order(previous)


def test_counts_and_stores_walk_the_indexed_dim_innermost():
    """Where the indexed dim is self's innermost but not the index's, the counts (and the stores, where the
    other dims hold 16 units or more) walk it innermost, their lanes within a row of self. Seed 1858's bfloat16
    mean into a transposed (94x65536): its counts, lanes along the index's rows, took 114 us against
    PyTorch's 67-us count (NOTES 107). The stores into int32 (1481093x7) keep the index's order (489 us
    against 917 walking the indexed dim)."""
    mean = (V([94, 65536], "bfloat16", strides=[1, 94]), 0, V([101, 65536], "int64"),
            V([101, 65536], "bfloat16", strides=[1, 101]), "mean")
    counts = plans("scatter_reduce_", *mean)[0]
    assert counts["spec"]["op"] == 6 and params_of(counts).index_strides[1] == 65536, params_of(counts).index_strides
    narrow = (V([1481093, 7], "int32", strides=[1, 1481093]), 0, V([M, 7], "int64"), V([M, 7], "int32"), "sum")
    stores = plans("scatter_reduce_", *narrow, include_self=False)[0]
    assert stores["spec"]["op"] == 6 and params_of(stores).index_strides[1] == 1, params_of(stores).index_strides
    wide = (V([20000, 64], "float32", strides=[1, 20000]), 0, V([M // 64, 64], "int64"), V([M // 64, 64], "float32"),
            "amax")
    stores = plans("scatter_reduce_", *wide, include_self=False)[0]
    assert params_of(stores).index_strides[1] == 64, params_of(stores).index_strides
    previous = jitops._core._set_prepare_order(1)  # the index's order
    try:
        counts = plans("scatter_reduce_", *mean)[0]
        assert params_of(counts).index_strides[1] == 1, params_of(counts).index_strides
    finally:
        jitops._core._set_prepare_order(previous)


def test_scatter_add_expanded_index_is_2d_and_vectorized():
    (r,) = plans("scatter_add_", V([1000, 128], "float32"), 0, V([4096, 128], "int64", strides=[1, 0]),
                 V([4096, 128], "float32"))
    assert r["spec"]["dims"] == 2 and r["spec"]["vec"] == 4


def test_many_wide_rows_are_sorted_by_destination_then_summed():
    """2^20 rows of 128 into 100000 (the bench's scatter_add): count rows per bucket of 128 destinations,
    scan, place into buckets, sort each bucket, sum."""
    for call in (("scatter_add_", V([100000, 128], "float32"), 0, V([M, 128], "int64", strides=[1, 0]),
                  V([M, 128], "float32")),
                 ("index_add_", V([100000, 128], "float64"), 0, V([M], "int32"), V([M, 128], "float64"))):
        passes = plans(*call)
        assert [p["spec"]["op"] for p in passes] == [10, 11, 12, 14, 13]
        assert [p["regime"].split(": ")[0] for p in passes] == ["row sums"] * 5
        assert passes[-1]["spec"]["vec"] == 16 // (8 if call[1].dtype == "float64" else 4)
        assert passes[0]["grid"][0] == passes[2]["grid"][0] == M // 4096  # a block per chunk of 4096 rows
        assert passes[1]["grid"][0] == passes[3]["grid"][0] == 782  # a block per bucket of 128 destinations
        assert "row_sum<" in passes[-1]["source"] and "row_count<" in passes[0]["source"]
        # sums: a warp per 32 sorted rows, 8 warps a block (4 for float64), 4 rows in flight a group of lanes
        warps = 4 if call[1].dtype == "float64" else 8
        assert passes[-1]["grid"][0] == M // 32 // warps and passes[-1]["block"][0] == 32 * warps
        assert passes[-1]["spec"]["unroll"] == 4
        assert "row_tile_sort(p)" in passes[3]["source"] and passes[3]["spec"]["index"] == 0
    # 16-bit floats, integers, products and narrow rows keep the atomic kernels
    for call in (("scatter_add_", V([100000, 128], "float16"), 0, V([M, 128], "int64", strides=[1, 0]),
                  V([M, 128], "float16")),
                 ("index_add_", V([100000, 128], "int32"), 0, V([M], "int64"), V([M, 128], "int32")),
                 ("scatter_reduce_", V([100000, 128], "float32"), 0, V([M, 128], "int64", strides=[1, 0]),
                  V([M, 128], "float32"), "prod"),
                 ("index_add_", V([100000, 8], "float32"), 0, V([M], "int64"), V([M, 8], "float32"))):
        assert [p["spec"]["op"] for p in plans(*call)][-1] < 10


def test_heavy_duplicates_into_few_rows_add_into_private_copies():
    """Hot rows (2^20 rows of 128 into 64): one launch, a block per SM holding as many float copies of self's
    64 x 128 elements as 227 KB take (7); a copy's warps split a row's units, the unit narrowing until the
    block has 8 warps or more (16 for 16-bit floats): float32 in pairs (14 warps, 32 rows in flight),
    16-bit floats one element a lane (28 warps, 16 rows in flight: what the registers of 896 threads hold)."""
    for call, vec, warps, in_flight in (
            (("index_add_", V([64, 128], "float32"), 0, V([M], "int64"), V([M, 128], "float32")), 2, 14, 32),
            (("index_add_", V([64, 128], "float16"), 0, V([M], "int32"), V([M, 128], "float16")), 1, 28, 16),
            (("scatter_add_", V([64, 128], "bfloat16"), 0, V([M, 128], "int64", strides=[1, 0]),
              V([M, 128], "bfloat16")), 1, 28, 16)):
        (r,) = plans(*call)
        assert r["spec"]["op"] == 15 and r["regime"].startswith("row sums: rows added into private copies")
        assert r["grid"] == (132, 1, 1) and r["block"] == (32 * warps, 1, 1)
        assert r["shared_bytes_dynamic"] == 7 * 64 * 128 * 4
        assert r["spec"]["vec"] == vec and r["spec"]["unroll"] == in_flight
        assert "row_private<" in r["source"] and r["local_bytes"] == 0
    # 8 rows of 16: 16 copies of 512 bytes (twice the target), a warp each, 16 lanes across a row
    (r,) = plans("index_add_", V([8, 16], "float32"), 0, V([M], "int64"), V([M, 16], "float32"))
    assert r["spec"]["op"] == 15 and r["spec"]["vec"] == 1 and r["block"] == (512, 1, 1)
    assert r["grid"][0] == 132 and r["shared_bytes_dynamic"] == 16 * 8 * 16 * 4
    # too few rows to give every SM a block (9451 rows: 30 blocks of 5 copies), too few rows per destination
    # and block, or copies too large for 4 a block: not private
    (r,) = plans("scatter_add_", V([42, 256], "float32"), 0, V([9451, 256], "int32", strides=[1, 0]),
                 V([9451, 256], "float32"))
    assert r["spec"]["op"] == 0
    for call in (("index_add_", V([4096, 128], "float32"), 0, V([M], "int64"), V([M, 128], "float32")),
                 ("index_add_", V([64, 128], "float64"), 0, V([M], "int64"), V([M, 128], "float64")),
                 ("index_add_", V([512, 16], "float32"), 0, V([200000], "int64"), V([200000, 16], "float32"))):
        assert all(r["spec"]["op"] != 15 for r in plans(*call))


def params_of(report):
    """A 32-bit scatter launch's parameter block, as the kernel reads it
    (templates/jitops/scatter_params.h, ScatterParams<32, Dims>; the generic walk, dims 0, holds 16)."""
    dims = report["spec"]["dims"] or 16
    assert report["spec"]["offset"] == 32

    class Divider(ctypes.Structure):
        _fields_ = [("divisor", ctypes.c_uint32), ("multiplier", ctypes.c_uint32), ("shift", ctypes.c_uint32)]

    class Params(ctypes.Structure):
        _fields_ = ([(n, ctypes.c_void_p) for n in ("self", "src", "index", "error", "counts")] +
                    [("numel", ctypes.c_uint32), ("ndim", ctypes.c_int32), ("op_code", ctypes.c_int32),
                     ("axis_size", ctypes.c_int64), ("index_wrap", ctypes.c_int64)] +
                    [(n, ctypes.c_int32) for n in ("axis_stride", "counts_axis_stride", "self_lo", "self_hi")] +
                    [("alpha", ctypes.c_double), ("alpha_int", ctypes.c_int64), ("include_self", ctypes.c_int32),
                     ("mean", ctypes.c_int32), ("keys", ctypes.c_void_p), ("value", ctypes.c_ubyte * 16),
                     ("sizes", Divider * dims)] +
                    [(n, ctypes.c_int32 * dims) for n in ("self_strides", "src_strides", "index_strides",
                                                          "counts_strides")] +
                    [("index_positions", ctypes.c_int64 * dims), ("rows_first", ctypes.c_int32),
                     ("block_rows", ctypes.c_int32), ("peel_len", ctypes.c_int64), ("peel_src_step", ctypes.c_int32),
                     ("peel_fixed_phase", ctypes.c_int32)])

    raw = report["params"]
    assert len(raw) == report["param_bytes"] == ctypes.sizeof(Params)
    params = Params.from_buffer_copy(raw)
    assert params.index_wrap == 0  # negative indices wrap only in take's gradient (the C++ node's entry)
    return params


def walk(report):
    """(sizes, self strides) of a scatter launch's iteration space, outermost first."""
    p = params_of(report)
    return [p.sizes[d].divisor for d in range(p.ndim)], [p.self_strides[d] for d in range(p.ndim)]


def test_index_runs_of_self_order_the_walk(index_walk):
    """Dims the index does not vary along, dense in self, go innermost; the index's dim outside them when
    their run is long (whole slices written side by side), at the axis's stride when it is short."""
    # int32 pairs of a transposed self (strides 16, 1, 2): each row's 14 fills stay inside its 64 bytes,
    # two elements (one 8-byte unit) a thread; the index's dim outermost wrote every sector once an index.
    (r,) = plans("index_fill_", V([524288, 2, 8], "int32", strides=[16, 1, 2]), 2, V([14], "int64"), 3)
    assert r["spec"]["vec"] == 2 and walk(r) == ([524288, 14], [16, 0])
    # runs of 128 bytes: the slices of self, one an index
    (r,) = plans("index_fill_", V([512, 32, 8], "int32", strides=[256, 1, 32]), 2, V([14], "int64"), 3)
    assert walk(r) == ([14, 512, 8], [0, 256, 4]) and r["spec"]["vec"] == 4  # strides in elements
    (r,) = plans("index_add_", V([512, 32, 8], "float32", strides=[256, 1, 32]), 2, V([14], "int64"),
                 V([512, 32, 14], "float32"))
    assert walk(r)[0][0] == 14
    # no dense dim in self: a fill follows the axis's stride
    (r,) = plans("index_fill_", V([4096, 8], "float32", strides=[16, 2]), 1, V([5], "int32"), 1.0)
    assert walk(r) == ([4096, 5], [16, 0])


def test_a_self_past_half_the_l2_is_walked_in_its_own_order():
    """Over a self that spans more than half the L2 (25 MB on sm_90), the index's dim counts at the axis's
    stride even under long runs: outermost, each index position wrote rows across all of self at once and
    partly written sectors went to DRAM and back (float64 (16x4x8192x23) along dim 2, 19785 indices: 202 us,
    in self's order 93, PyTorch 109)."""
    (r,) = plans("index_fill_", V([16, 4, 8192, 23], "float64"), 2, V([19785], "int32"), 1.5)  # 96 MB
    assert walk(r) == ([64, 19785, 23], [188416, 0, 1])
    (r,) = plans("index_add_", V([16, 4, 1024, 23], "float64"), 2, V([1000], "int32"),
                 V([16, 4, 1000, 23], "float64"))  # 12 MB: rows stay in L2, the index's dim outermost
    assert walk(r)[0][0] == 1000


def test_rows_a_few_bytes_apart_in_self_share_a_warp(index_walk):
    """Where each lane of a row reaches its own destination through the index and self's rows lie a few
    bytes apart, a warp's lanes along the index are the fewest sectors read plus twice written: the rest of
    the warp takes further rows, whose writes share sectors."""
    # index_add_ into a sliced self (rows 8 bytes apart) from a transposed source (seed 31, 0.52x at 32
    # lanes): 8 lanes read one sector of src, 4 rows of 8 bytes fill one sector of self
    self_ = V([256, 65536], "float32", strides=[131073, 2])
    src = V([166, 65536], "float32", strides=[1, 166])
    (r,) = plans("index_add_", self_, 0, V([166], "int32"), src, alpha=0.5)
    assert walk(r) == ([65536, 166], [2, 0])
    assert r["block"] == (8, 32, 1) and r["grid"] == (21, 2048, 1)
    # float16 (rows 4 bytes apart): 8 rows fill a sector of self, its 4 lanes read half of src's
    (r,) = plans("index_add_", V([256, 65536], "float16", strides=[131073, 2]), 0, V([166], "int32"),
                 V([166, 65536], "float16", strides=[1, 166]))
    assert r["block"] == (4, 64, 1)
    # float64 (rows 16 bytes apart): 2 rows fill a sector; 16 lanes read 4 whole sectors of src
    (r,) = plans("index_copy_", V([256, 4096], "float64", strides=[8192, 2]), 0, V([100], "int64"),
                 V([100, 4096], "float64", strides=[1, 100]))
    assert r["block"] == (16, 16, 1)
    # rows 64 bytes or more apart (a contiguous self, along dim 1) keep the row across the warp
    (r,) = plans("index_add_", V([4096, 4096], "float32"), 1, V([1000], "int64"), V([4096, 1000], "float32"))
    assert r["block"][0] >= 32
    # rows of 25 bytes along their own dim (seed 707's index_fill_): a row's destinations span one sector,
    # which a warp along the index writes together; 4 lanes a row, 8 rows, spread it over 7
    (r,) = plans("index_fill_", V([32, 33829, 25], "uint8"), 2, V([37], "int32"), 3)
    assert r["block"][0] == 32, r["block"]
    (r,) = plans("index_add_", V([4000, 12], "int16"), 1, V([40], "int64"), V([4000, 40], "int16"))
    assert r["block"][0] == 32, r["block"]


def test_units_a_thread_leave_the_grid_a_wave():
    """Adds whose index runs along the rows take the tuned 4 units a thread, however many terms a destination
    averages (8 where terms piled up ran 1.16x slower over 202 sweep plans: NOTES 95), and no more than leave
    a wave of threads (132 SMs x 2048 on sm_90)."""
    def unroll(dtype, rows, width):
        (r,) = plans("scatter_add_", V([3322, width], dtype), 0, V([rows, width], "int32", strides=[1, 0]),
                     V([rows, width], dtype))
        return r["spec"]["unroll"]
    assert unroll("int32", 289477, 3) == 2  # seed 32's 0.79x: 868431 units, a wave at 2 a thread
    assert unroll("int32", 4 << 20, 3) == 4
    assert unroll("int64", 4 << 20, 3) == 4
    assert unroll("float16", 1 << 20, 32) == 4  # packs of 8
    assert unroll("int64", 1 << 16, 3) == 1  # 196608 units: under a wave even at 1


def test_hot_destinations_spread_the_updates_in_flight():
    """Blocks of the 2-D walk go row-major where self moves along a row only through the index, and
    compare-and-swap updates with many terms a destination take 4 units a thread (their identity stores 8),
    not 1."""
    (r,) = plans("scatter_add_", V([77, 23297], "bfloat16"), 1, V([77, 131072], "int32"),
                 V([77, 131072], "bfloat16"))
    assert r["spec"]["dims"] == 2 and r["grid"][1] > 1 and params_of(r).rows_first == 1
    # rows of destinations past L2 (8 rows of 9 MB): x first, a row a thread, so one row's in flight
    (r,) = plans("index_copy_", V([8, 1136195], "complex64", strides=[2272390, 1]), 1, V([893146], "int32"),
                 V([8, 893146], "complex64"))
    assert r["spec"]["unroll"] == 1 and params_of(r).rows_first == 0
    # ... and the grid's rows are the rows, not capped at the waves (a thread looping over rows a grid apart
    # kept 8 rows of 5.4 MB in flight)
    (r,) = plans("scatter_add_", V([64, 681209], "float64"), 1, V([64, 524288], "int64"),
                 V([64, 524288], "float64"))
    assert r["spec"]["unroll"] == 1 and r["grid"] == (2048, 64, 1) and params_of(r).rows_first == 0
    # along dim 0 the columns reach distinct elements: x first
    (r,) = plans("scatter_add_", V([23297, 77], "float32"), 0, V([131072, 77], "int32"),
                 V([131072, 77], "float32"))
    assert r["spec"]["dims"] == 2 and params_of(r).rows_first == 0
    # the walk's products (a self this small takes private copies by the rule, NOTES 110: the knob at 0)
    call = (V([1504, 1], "float16"), 0, V([109117, 1], "int64"), V([109117, 1], "float16"), "prod")
    previous = jitops._core._set_private_products_mode(0)
    try:
        stores, products = plans("scatter_reduce_", *call, include_self=False)
    finally:
        jitops._core._set_private_products_mode(previous)
    assert stores["spec"]["unroll"] == 8 and stores["grid"][0] == -(-109117 // (256 * 8))
    assert products["spec"]["unroll"] == 4 and products["grid"][0] == -(-109117 // (256 * 4))
    # few terms a destination, or a native atomic (int32 max): the grid keeps a unit a thread
    (r,) = plans("scatter_reduce_", V([100000, 1], "float16"), 0, V([109117, 1], "int64"),
                 V([109117, 1], "float16"), "prod")
    assert r["spec"]["unroll"] == 1
    (r,) = plans("scatter_reduce_", V([1504, 1], "int32"), 0, V([109117, 1], "int64"), V([109117, 1], "int32"),
                 "amax")
    assert r["spec"]["unroll"] == 1


def test_deterministic_plans_keys_sort_reduce():
    rs = plans("index_add_", V([100, 64], "float32"), 0, V([1000], "int64"), V([1000, 64], "float32"),
               deterministic=True)
    assert rs[0]["spec"]["op"] == 8 and rs[-1]["spec"]["op"] == 9
    n = 1 << 16  # 64000 units pad to 2^16: log2(n) * (log2(n) + 1) / 2 bitonic steps
    assert len(rs) == 2 + 16 * 17 // 2 and rs[1]["family"] == "sort"


BAD = [
    ("index_add_", (V([5, 3], "float32"), 0, V([2], "int64"), V([2, 4], "float32")), {}, ValueError,
     "source: expected self's shape (5,3) with dimension 0 of size len(index) = 2 (got (2,4))"),
    ("index_add_", (V([5, 3], "bool"), 0, V([2], "int64"), V([2, 3], "bool")), {}, TypeError,
     "self: index_add_ supports int8, uint8, int16, int32, int64, float16, bfloat16, float32 and float64 (got bool)"),
    ("index_add_", (V([5, 3], "float32", strides=[0, 1]), 0, V([2], "int64"), V([2, 3], "float32")), {}, ValueError,
     "self: expected an array whose elements do not overlap"),
    ("scatter_add_", (V([5, 3], "float32"), 0, V([2], "int64"), V([2, 3], "float32")), {}, ValueError,
     "index: expected index, src and self to have the same number of dimensions"),
    ("scatter_reduce_", (V([5, 3], "float32"), 0, V([2, 3], "int64"), V([2, 3], "float32"), "prod"),
     dict(deterministic=True), ValueError, "deterministic: supported for reduce='sum' and 'mean'"),
    ("index_fill_", (V([5, 3], "float32"), 0, V([2], "int64"), "x"), {}, TypeError, "value: expected a number (got str)"),
]


@pytest.mark.parametrize("op,args,kwargs,exc,message", BAD, ids=[b[4][:40] for b in BAD])
def test_bad_calls(op, args, kwargs, exc, message):
    with pytest.raises(exc) as info:
        plans(op, *args, **kwargs)
    assert message in str(info.value)


def test_the_index_inner_dim_goes_inside_where_a_warp_reads_fewer_sectors():
    """The order by self, then src, lets the index (read at every unit, 8 bytes an int64) have no say. Where
    putting another dim innermost lets a warp touch at most three quarters of the sectors, and the walk
    stays linear, it goes inside. Seed 41's float16 from a fully transposed src through a full index along
    a dim of 2: lanes along the index's inner dim of 5 (dense index, 15 sectors a warp where they were 42)."""
    self_ = V([512, 20021, 2], "float16")
    index = V([512, 20021, 5], "int64")
    (r,) = plans("scatter_add_", self_, 2, index, V([512, 20021, 5], "float16", strides=[1, 512, 10250752]))
    sizes, self_strides = walk(r)
    assert sizes[-1] == 5 and self_strides[-1] == 0 and r["spec"]["dims"] == 3
    # The same src dense along dim 1: the order collapses to a 2-D walk whose threads loop over the rows,
    # reading the index's 40-byte groups one after another; it stays (271 us, 382 with the lanes along 5).
    (r,) = plans("scatter_add_", self_, 2, index, V([512, 20021, 5], "float16", strides=[20021, 1, 10250752]))
    assert walk(r)[0] == [5, 512 * 20021] and r["spec"]["dims"] == 2


def test_a_copy_puts_src_dense_dim_just_outside_a_short_innermost_one():
    """index_copy_ along an inner dim of 4 from a fully transposed src (seed 116): in self's order a warp's
    lanes read src 2 MB apart (37 sectors a warp); with src's dense dim just outside the innermost, 8 of its
    units share a warp and src's sectors (21). Adds keep the innermost-only move."""
    def src():
        return V([128, 8192, 8, 4], "float16", strides=[1, 128, 4194304, 1048576])
    (r,) = plans("index_copy_", V([128, 8192, 8, 4], "float16"), 3, V([4], "int32"), src())
    sizes, self_strides = walk(r)
    assert sizes[-2:] == [128, 4] and self_strides[-2:] == [262144, 0]
    (r,) = plans("index_add_", V([128, 8192, 8, 4], "float16"), 3, V([4], "int32"), src())
    assert walk(r) == ([128, 8192, 8, 4], [262144, 32, 4, 0])  # self's own order


def test_a_full_2d_index_keeps_its_rows_in_flight():
    """Adds in the 2-D walk take one unit a thread only where the index is the same along the rows
    (index_add_ along the inner dim); a full index keeps the tuned 4: int32 through a full int64 index into a
    transposed self (seed 44) ran 677 us at one unit, 571 at four (PyTorch 600)."""
    (r,) = plans("scatter_add_", V([244904, 128], "int32", strides=[1, 244904]), 0, V([262144, 128], "int64"),
                 V([262144, 128], "int32"))
    assert r["spec"]["dims"] == 2 and r["spec"]["unroll"] == 4
    (r,) = plans("index_add_", V([4096, 4096], "float32"), 1, V([1000], "int64"), V([4096, 1000], "float32"))
    assert r["spec"]["dims"] == 2 and r["spec"]["unroll"] == 1


def test_row_sums_only_for_destinations_past_half_the_l2():
    """Sorted row sums only where self's destination rows do not fit in half the L2 (50 MB on sm_90): into
    rows that fit, the atomics stay in L2 (seed 46: float64 rows of 512 into 854, atomics 62 us, sums 87).
    Where the sums run with few runs of wide rows, each run's units split over several warps."""
    def passes(dtype, destinations, rows, width):
        return plans("scatter_add_", V([destinations, width], dtype), 0,
                     V([rows, width], "int64", strides=[1, 0]), V([rows, width], dtype))
    assert len(passes("float64", 854, 23451, 512)) == 1  # 3.5 MB of destinations
    assert len(passes("float32", 17000, 208171, 300)) == 1  # 20 MB
    sums = passes("float64", 20261, 83107, 300)  # 49 MB: sorted, 2598 runs of 32 rows split 3 ways
    assert [p["spec"]["op"] for p in sums] == [10, 11, 12, 14, 13]
    runs = (83107 + 31) // 32
    assert sums[-1]["block"][0] == 128 and sums[-1]["grid"][0] == (3 * runs + 3) // 4  # 4 warps a block (float64)


def test_row_sums_need_rows_of_512_bytes_and_3_of_them_a_destination():
    """The sort costs the same a row whatever its width, and the index's order decides the rest (sorted indices
    lost sorted, hot ones won): rows sort only where they won at random too (NOTES 114), 3 or more a destination
    of 512 bytes or more, 8 or more of 256 to 511 bytes; narrower rows, or fewer a destination, keep the atomic
    kernels."""
    def ops(dtype, destinations, rows, width):
        return [p["spec"]["op"] for p in plans("scatter_add_", V([destinations, width], dtype), 0,
                                                V([rows, width], "int64", strides=[1, 0]), V([rows, width], dtype))]
    assert len(ops("float32", 262144, 8 * 262144, 32)) == 1  # 128-byte rows, 8 a destination
    assert len(ops("float32", 262144, 8 * 262144 - 1, 64)) == 1  # 256-byte rows, just under 8 a destination
    assert ops("float32", 262144, 8 * 262144, 64) == [10, 11, 12, 14, 13]  # 8 a destination (the GNN bench: 16)
    assert len(ops("float64", 74514, 139132, 96)) == 1  # seed 1905: rows of 768 bytes, 1.87 a destination
    assert len(ops("float32", 131072, 3 * 131072 - 1, 128)) == 1  # just under 3 a destination
    assert ops("float32", 131072, 3 * 131072, 128) == [10, 11, 12, 14, 13]  # 512-byte rows, 3 a destination
    assert ops("float64", 65536, 3 * 65536, 256) == [10, 11, 12, 14, 13]  # rows of 2 KB


def test_max_and_min_take_one_unit_a_thread_under_32_terms_a_destination():
    """Compare-and-swap max and min: 4 units a thread from 32 terms a destination on, one below (a float16
    amin of 17 sorted terms a destination, seed 49: 998 us at 8, 590 at 1); products take 4 from 8 terms
    (at 8, float64 products into (180177, 8) of seed 1848: 608 us against 351, NOTES 105)."""
    def unroll(reduce, dtype, rows, destinations):
        passes = plans("scatter_reduce_", V([destinations, 32], dtype), 0, V([rows, 32], "int32", strides=[1, 0]),
                       V([rows, 32], dtype), reduce)
        return passes[-1]["spec"]["unroll"]
    assert unroll("amin", "float16", 1154892, 69156) == 1
    assert unroll("amin", "float16", 1154892 * 2, 69156) == 4  # 33 terms a destination
    assert unroll("prod", "float16", 1154892, 69156) == 4
    jitops._core._set_cas_unroll(8)  # the knob the A/B measured the old plan with
    try:
        assert unroll("prod", "float64", 1154892, 69156) == 8
    finally:
        jitops._core._set_cas_unroll(-1)
    # float32 and float64 max and min are reductions after a read: one unit a thread under 32 terms, the
    # default from there (4 for this many units, as an int32 amax's), not the compare-and-swap's 8.
    for dtype in ("float32", "float64"):
        assert unroll("amax", dtype, 1154892, 69156) == 1
        assert unroll("amax", dtype, 1154892 * 2, 69156) == unroll("amax", "int32", 1154892 * 2, 69156) == 4


@pytest.mark.parametrize("dtype, word", [("float32", "32"), ("float64", "64")])
def test_float_max_and_min_are_integer_reductions_on_the_bits(dtype, word):
    """float32 and float64 amax / amin reduce with red.max / red.min on the value's bits (signed for values
    of sign 0, unsigned for the others, the NaN rule in jitops/float_extremum.cuh), no compare-and-swap
    loop; 16-bit floats keep theirs."""
    def ptx(dtype, reduce):
        (r,) = plans("scatter_reduce_", V([1000, 16], dtype), 0, V([50000, 16], "int64"), V([50000, 16], dtype),
                     reduce)
        return r["ptx"]
    int_word = {"32": "int32", "64": "int64"}[word]
    for reduce, ops in (("amax", ("max.s", "min.u")), ("amin", ("min.s", "max.u"))):
        code = ptx(dtype, reduce)
        reductions = set(re.findall(r"red\.global\.(\w+\.\w+)", code))
        assert reductions == {op + word for op in ops}, reductions
        # No loop of its own: as many CAS as the int32 / int64 kernel's (the index-error report's lock).
        assert code.count("atom.cas.") == ptx(int_word, reduce).count("atom.cas.")
    (r,) = plans("scatter_reduce_", V([1000, 16], "float16"), 0, V([50000, 16], "int64"), V([50000, 16], "float16"),
                 "amax")
    assert "red.global.max" not in r["ptx"] and "atom.cas.b32" in r["ptx"]


def test_compare_and_swap_runs_combine_only_where_lanes_walk_the_index():
    """In the 2-D walk, neighbouring lanes can share a destination only where the index varies along the
    lanes' dim: there compare-and-swap ops combine their runs; along expanded rows the code is left out."""
    expanded = jitops.explain("scatter_reduce_", V([1392, 256], "bfloat16"), 0,
                              V([90495, 256], "int32", strides=[1, 0]), V([90495, 256], "bfloat16"), "amin",
                              include_self=False, arch="sm_90")[-1]["spec"]
    assert expanded["dims"] == 2 and expanded["lane_runs"] == 0
    full = jitops.explain("scatter_reduce_", V([85539, 7], "float64"), 1, V([85539, 8], "int64"),
                          V([85539, 8], "float64"), "prod", arch="sm_90")[-1]["spec"]
    assert full["dims"] == 2 and full["lane_runs"] == 1


def test_adds_along_rows_that_fill_the_gpu_match_lanes_that_repeat_a_destination():
    """The 2-D walk's adds along a row's index: where a row's blocks fill the GPU twice and the rows'
    destinations pass L2 (columns first), every block in flight adds into one row, and a warp whose lanes
    repeat a destination out of order matches them (lane_runs 4: seed 716's float64 index_add_ through 8 hot
    values); rows whose destinations fit, or a few blocks a row, keep lane_runs 2 and no match."""
    def spec(self_shape, cols, dtype="float64"):
        rows = self_shape[0]
        (r,) = jitops.explain("scatter_add_", V(self_shape, dtype), 1, V([rows, cols], "int32"),
                              V([rows, cols], dtype), arch="sm_90")
        return r
    long_rows = spec([119, 524288], 285464)
    assert (long_rows["spec"]["dims"], long_rows["spec"]["lane_runs"]) == (2, 4), long_rows["spec"]
    assert long_rows["grid"][0] >= 264 and "match.any.sync" in long_rows["ptx"]
    for short in (spec([37, 211], 1639), spec([64, 16384], 285464, "float32")):
        assert short["spec"]["lane_runs"] == 2, short["spec"]
        assert "match.any.sync" not in short["ptx"]


def test_a_few_rows_take_their_blocks_in_groups_and_a_full_index_a_warp_a_row():
    """Where the tensor has fewer rows than the planner's block (a few rows reached through the index, their
    warps 4-8 lanes a row), the block takes its rows in groups side by side along the columns, so that the
    grid needs a fraction of the column blocks; a full index into those few rows, on a grid that gives every
    SM two blocks, takes a warp a row (32 lanes). Many rows keep the narrow warps and whole blocks."""
    # seed 508's mean: float64 (4 x 1397985) through a full index into a transposed self of 4 rows
    (add, _) = plans("scatter_reduce_", V([4, 182769], "float64", strides=[1, 4]), 1, V([4, 1397985], "int32"),
                     V([4, 1397985], "float64"), "mean")  # the adds counting too (NOTES 106)
    for r in (add,):
        assert r["block"] == (32, 8, 1) and r["grid"] == (-(-1397985 // 64), 1, 1), (r["block"], r["grid"])
        assert params_of(r).block_rows == 4
    # a small grid (5 rows of 1637) keeps the narrow warp, in groups of 8 rows
    (r,) = plans("scatter_add_", V([5, 211], "float32", strides=[1, 5]), 1, V([5, 1637], "int64"),
                 V([5, 1637], "float32"))
    assert r["block"] == (4, 64, 1) and r["grid"] == (-(-1637 // 32), 1, 1), (r["block"], r["grid"])
    assert params_of(r).block_rows == 8
    # seed 614's index_copy_ (a 1-D index, self sliced with a step of 3): 8 lanes a row of 16, two groups a block
    (r,) = plans("index_copy_", V([4194304, 16], "int16", strides=[49, 3]), 0, V([3407178], "int32"),
                 V([3407178, 16], "int16", strides=[1, 3407178]))
    assert r["block"] == (8, 32, 1) and r["grid"] == (-(-3407178 // 16), 1, 1), (r["block"], r["grid"])
    # seed 402's 16384 rows through 8 hot values: narrow warps, whole blocks
    (r,) = plans("scatter_add_", V([16384, 1463], "float32", strides=[1, 16384]), 1, V([16384, 1024], "int64"),
                 V([16384, 1024], "float32"))
    assert r["block"] == (4, 64, 1) and r["grid"] == (256, 256, 1), (r["block"], r["grid"])
    assert params_of(r).block_rows == 0


def test_compare_and_swap_updates_through_a_full_index_take_a_warp_a_row():
    """Products of every width, and max and min of 8- and 16-bit elements (compare-and-swap loops) through
    a full index into a transposed self: a warp along one row of the index (32 lanes), whose runs and peers
    combine a row's repeats; max and min of 4 and 8 bytes (native reductions) keep lanes_along_index's narrow
    warps across rows (NOTES 98)."""
    def lanes(dtype, reduce):  # seed 815's shape: 8192 terms a row into (128 x 1270), self transposed
        args = (V([128, 1270], dtype, strides=[1, 128]), 1, V([128, 8192], "int64"), V([128, 8192], dtype), reduce)
        (r,) = plans("scatter_reduce_", *args)
        return r["block"][0]
    for dtype, reduce in (("bfloat16", "prod"), ("float32", "prod"), ("float64", "prod"), ("float16", "amax"),
                          ("int8", "amin")):
        assert lanes(dtype, reduce) == 32, (dtype, reduce)
    for dtype, reduce in (("int32", "amax"), ("float32", "amax"), ("float64", "amin")):
        assert lanes(dtype, reduce) in (4, 8), (dtype, reduce)


def test_a_warp_across_narrow_rows_combines_hot_peers_across_its_rows():
    """Rows reached through an expanded index, a warp across several (lane_runs 3: the kernel votes on
    whether two threads' units met, then matches its lanes' destinations): native adds where a warp spans 8
    rows or more (a row 4 lanes or fewer), products at any width under 32 lanes (lane_runs 5: the vote also
    asks whether a lane and the one a row above it meet, NOTES 110); not adds with 2 or 4 rows a warp, max
    and min that read first, copies, or a walk a warp to a row (NOTES 86)."""
    def walk(op, dtype, width, *extra, rows=3001, n=216412):
        index = V([n, width], "int32", strides=[1, 0])
        args = (V([rows, width], dtype), 0, index, V([n, width], dtype)) + extra
        (r,) = [p for p in plans(op, *args) if p["spec"].get("dims") == 2]
        return r
    add = walk("scatter_add_", "float32", 8, n=2632089)  # red.v4: a row 2 lanes, a warp 16 rows (seed 262)
    assert add["block"][0] <= 4 and add["spec"]["unroll"] > 1 and add["spec"]["lane_runs"] == 3, add
    assert "match.any.sync" in add["ptx"] and "red.global.add.v4.f32" in add["ptx"]
    wide_int_max = walk("scatter_reduce_", "int32", 3, "amax")
    assert wide_int_max["spec"]["lane_runs"] == 3 and "match.any.sync" in wide_int_max["ptx"], wide_int_max
    # products: lane_runs 5, the warp also matches where a lane and the one a row above it meet (a sorted
    # index's run of rows); 3 with the development knob at 0
    prod = walk("scatter_reduce_", "float16", 32, "prod")  # a row 16 lanes, a warp 2 rows
    assert 4 < prod["block"][0] < 32 and prod["spec"]["lane_runs"] == 5, prod
    assert "match.any.sync" in prod["ptx"]
    narrow_prod = walk("scatter_reduce_", "float64", 4, "prod")  # seed 1890's rows of 4: a warp 8 rows
    assert narrow_prod["block"][0] <= 4 and narrow_prod["spec"]["lane_runs"] == 5, narrow_prod
    previous = jitops._core._set_rows_always_meet(0)
    try:
        assert walk("scatter_reduce_", "float64", 4, "prod")["spec"]["lane_runs"] == 3
    finally:
        jitops._core._set_rows_always_meet(previous)
    # seed 712's scatter_add_: rows of 32 float32, 8 lanes a row, 4 rows a warp
    four_rows = walk("scatter_add_", "float32", 32, rows=88915)
    assert four_rows["block"][0] == 8 and four_rows["spec"]["lane_runs"] == 0, four_rows
    assert "match.any.sync" not in four_rows["ptx"]
    for dtype in ("float32", "float64", "float16"):
        extremum = walk("scatter_reduce_", dtype, 3, "amin")
        assert extremum["block"][0] <= 4 and extremum["spec"]["lane_runs"] == 0, (dtype, extremum)
    (copy_,) = plans("index_copy_", V([88915, 8], "float32"), 0, V([216412], "int32"), V([216412, 8], "float32"))
    assert copy_["block"][0] <= 4 and copy_["spec"]["lane_runs"] == 0, copy_
    assert "match.any.sync" not in copy_["ptx"]
    wide = walk("scatter_reduce_", "float32", 256, "prod")
    assert wide["block"][0] >= 32 and wide["spec"]["lane_runs"] == 0, wide


def test_linear_walk_drops_the_lane_tests_where_lanes_cannot_share_a_destination():
    """The linear walk's lanes take 32 consecutive units: two that may share a destination differ only in
    the indexed dim (where self does not move), a product of the dims inside it apart; where that passes a
    warp, no two lanes share one and the runs' and peers' tests go (lane_runs 0)."""
    def linear_spec(self_shape, dim, index_shape, src_strides=None):
        index = V(index_shape, "int64")
        src = V(index_shape, "bfloat16", strides=src_strides)
        spec = jitops.explain("scatter_add_", V(self_shape, "bfloat16"), dim, index, src, arch="sm_90")[-1]["spec"]
        assert spec["dims"] not in (2,), spec
        return spec["lane_runs"]
    # along dim 1 of (1024x4x2048) from a transposed src (seed 143): the inner 2048 move self
    assert linear_spec([1024, 4, 2048], 1, [1024, 4, 2048], src_strides=[1, 2097152, 1024]) == 0
    # the inner dim of 20 is too short for a warp, but lanes wrap into the next row of dim 0, where self moves
    assert linear_spec([1024, 4, 20], 1, [1024, 4, 20], src_strides=[1, 20480, 1024]) == 0
    # the indexed dim just outside an inner dim of 5: lanes 5 apart may meet
    assert linear_spec([1024, 4, 5], 1, [1024, 4, 5]) == 1
    # a 1-D scatter: every unit picks its destination through the index
    assert linear_spec([5000], 0, [100000]) == 1


def test_sixteen_bit_adds_through_a_one_dim_index_keep_selfs_order():
    """prefer_fewest_sectors moves a short dim innermost where a warp touches far fewer sectors, but not for
    16-bit float adds through a 1-D index (index_add_): seed 721's bfloat16 (15x7x19x8192) from a transposed
    src keeps self's dense dim innermost, where float32 takes the dim of 7 inside; both walks' lanes differ
    where self moves (lane_runs 0). A full index still moves (seed 41's float16, its index's dim of 5)."""
    def walk_of(dtype):
        src = V([24, 7, 19, 8192], dtype, strides=[133, 1, 7, 3192])
        (r,) = plans("index_add_", V([15, 7, 19, 8192], dtype), 0, V([24], "int64"), src, alpha=0.5)
        return walk(r), r["spec"]["lane_runs"]
    for dtype in ("bfloat16", "float16"):
        assert walk_of(dtype) == (([24, 7, 19, 8192], [0, 155648, 8192, 1]), 0)
    assert walk_of("float32") == (([24, 19, 8192, 7], [0, 8192, 1, 155648]), 0)
    (r,) = plans("scatter_add_", V([512, 20021, 2], "float16"), 2, V([512, 20021, 5], "int64"),
                 V([512, 20021, 5], "float16", strides=[1, 512, 10250752]))
    assert walk(r) == ([512, 20021, 5], [40042, 2, 0]) and r["spec"]["lane_runs"] == 1


def test_two_d_adds_combine_runs_only_along_the_indexed_dim_a_warp_a_row():
    """The 2-D walk's adds combine runs of one destination (lane_runs 2) where the lanes walk the indexed dim
    and a warp lies in one row (a sorted full index along dim 1: 1639 terms a destination); narrow rows, whose
    warps span rows, keep single atomics (1); where self moves along the lanes no two share one (0)."""
    def spec(op, self_, dim, index, src):
        s = jitops.explain(op, self_, dim, index, src, arch="sm_90")[-1]["spec"]
        assert s["dims"] == 2, s
        return s["lane_runs"]
    assert spec("scatter_add_", V([6737, 2399], "bfloat16"), 1, V([6737, 1639], "int32"),
                V([6737, 1639], "bfloat16", strides=[4917, 3])) == 2
    assert spec("index_add_", V([2097152, 1, 8], "float16"), 2, V([12], "int64"),
                V([2097152, 1, 12], "float16")) == 1
    assert spec("scatter_add_", V([2, 1723975], "float64"), 0, V([5, 1723975], "int64"),
                V([5, 1723975], "float64")) == 0


def test_two_d_adds_combine_runs_with_a_warp_across_a_few_wide_rows():
    """Where self's rows lie a few bytes apart (a transposed self), lanes_along_index gives a row 4 or 8 lanes
    and a warp spans rows; those rows are wide, so adds combine their runs (lane_runs 2: a run never crosses
    rows, whose destinations differ), except 16-bit floats, which measured slower so (NOTES 83)."""
    def walk(dtype):
        self_ = V([721, 2103], dtype, strides=[1, 721])  # transposed: rows 1 element apart
        r = jitops.explain("scatter_add_", self_, 1, V([721, 9021], "int32"),
                           V([721, 9021], dtype), arch="sm_90")[-1]
        assert r["spec"]["dims"] == 2 and r["block"][0] < 32, r
        return r["spec"]["lane_runs"]
    for dtype in ("float32", "float64", "int8", "int32", "int64"):
        assert walk(dtype) == 4, dtype  # 2 and the hot lanes' match: a row's blocks fill the GPU
    assert walk("float16") == 1 and walk("bfloat16") == 1


def test_compare_and_swap_updates_of_dense_rows_go_a_word_at_a_time():
    """Products, floating max and min, and adds of 8- and 16-bit integers along rows reached through an
    expanded index: a thread updates the elements that fill a 32-bit word in one compare-and-swap loop where
    the row's width and self's alignment allow; native atomics and 32- and 64-bit elements keep one a thread."""
    def vec(op, dtype, width, reduce=None, offset_bytes=0):
        self_ = V([3001, width], dtype, address=256 + offset_bytes)
        index = V([20011, width], "int64", strides=[1, 0])
        src = V([20011, width], dtype, strides=[2 * width, 1])  # rows a step apart
        args = (self_, 0, index, src) + ((reduce,) if reduce else ())
        return jitops.explain(op, *args, arch="sm_90")[-1]["spec"]["vec"]
    assert vec("scatter_reduce_", "bfloat16", 32, "prod") == 2
    assert vec("scatter_reduce_", "float16", 6, "amax") == 2
    assert vec("scatter_add_", "int8", 32) == 4 and vec("scatter_add_", "int16", 6) == 2
    assert vec("scatter_reduce_", "uint8", 12, "prod") == 4
    assert vec("scatter_reduce_", "float16", 32, "prod", offset_bytes=2) == 1  # the word would straddle two
    assert vec("scatter_reduce_", "bfloat16", 33, "amin") == 1
    assert vec("scatter_reduce_", "int8", 6, "amin") == 1  # no whole word a row
    assert vec("scatter_reduce_", "float32", 32, "amin") == 1 and vec("scatter_reduce_", "float64", 32, "prod") == 1
    assert vec("scatter_reduce_", "int16", 32, "amax") == 2
    assert vec("scatter_reduce_", "int32", 32, "amax") == 1  # a native atomic: one element a thread
    assert vec("scatter_add_", "int32", 32) == 1


@pytest.fixture
def owned_mode():
    """Sets the owned walk's knob for one test and restores it."""
    before = jitops._core._owned_walk()
    yield jitops._core._set_owned_walk
    jitops._core._set_owned_walk(before)


def test_owned_walk_takes_slow_atomics_whose_owners_fill_the_gpu_side_by_side(owned_mode):
    """A thread takes every term of its destinations (plain loads and stores, the index's dim first in the
    walk) where the other walks' atomics are slow or narrow and a wave of owners lies side by side in self."""
    def plan(op, self_, dim, index, src, *extra):
        return jitops.explain(op, self_, dim, index, src, *extra, arch="sm_90")[-1]
    # seed 723's float16 index_add_: every element of self takes its two terms, from a src expanded along dim 1
    f16 = ("index_add_", V([522765, 128, 1], "float16"), 2, V([2], "int32"),
           V([522765, 128, 2], "float16", strides=[2, 0, 1]))
    r = plan(*f16)
    assert r["regime"] == "owned" and r["spec"]["owned"] == 1 and r["spec"]["lane_runs"] == 0
    assert "scatter_owned<__half, int, 3" in r["source"]
    assert walk(r) == ([2, 522765, 128], [0, 128, 1])
    prod = ("scatter_reduce_", V([131072, 5, 8], "bfloat16"), 1, V([131072, 32, 8], "int64"),
            V([131072, 32, 8], "bfloat16"), "prod")
    assert plan(*prod)["regime"] == "owned"
    # float64 adds: one element an atomic elsewhere, a 16-byte pack owned
    r = plan("index_add_", V([4096, 4, 1024], "float64"), 1, V([3], "int64"), V([4096, 3, 1024], "float64"))
    assert r["regime"] == "owned" and r["spec"]["vec"] == 2
    # 16-byte packs of adds take one owner a thread (registers); compare-and-swap and 16-bit packs keep several
    assert r["spec"]["unroll"] == 1 and plan(*f16)["spec"]["unroll"] == 4 and plan(*prod)["spec"]["unroll"] > 1
    # 8-bit adds, compare-and-swap loops elsewhere: a full index moves an element at a time, a 1-D one 16 bytes
    int8 = plan("scatter_add_", V([300000, 3, 4], "int8"), 1, V([300000, 5, 4], "int64"), V([300000, 5, 4], "int8"))
    assert int8["regime"] == "owned" and int8["spec"]["vec"] == 1
    int8 = plan("index_add_", V([100000, 3, 64], "int8"), 1, V([5], "int64"), V([100000, 5, 64], "int8"))
    assert int8["regime"] == "owned" and int8["spec"]["vec"] == 16
    # not taken: 16-bit adds whose lanes never meet (self within half the L2 keeps the index's dim outermost),
    # float32's vector reductions, a self row a lane apart, owners short of a wave
    assert plan("index_add_", V([4096, 128, 1], "float16"), 2, V([2], "int32"),
                V([4096, 128, 2], "float16", strides=[2, 0, 1]))["regime"] != "owned"
    assert plan("index_add_", V([4096, 4, 1024], "float32"), 1, V([3], "int64"),
                V([4096, 3, 1024], "float32"))["regime"] != "owned"
    assert plan("index_add_", V([1 << 20, 49], "float16"), 1, V([13], "int64"),
                V([1 << 20, 13], "float16"))["regime"] != "owned"
    assert plan("index_add_", V([64, 2048], "float16"), 0, V([4000], "int64"),
                V([4000, 2048], "float16"))["regime"] != "owned"
    # the knob: never, or wherever the walk applies; fills and copies never
    owned_mode(0)
    assert plan(*f16)["regime"] != "owned" and plan(*prod)["regime"] != "owned"
    owned_mode(1)
    assert plan("index_add_", V([64, 2048], "float16"), 0, V([4000], "int64"),
                V([4000, 2048], "float16"))["regime"] == "owned"
    assert plan("index_copy_", V([64, 2048], "float16"), 0, V([40], "int64"),
                V([40, 2048], "float16"))["regime"] != "owned"


def test_owned_walk_takes_owners_a_short_dense_row_apart(owned_mode):
    """With the indexed dim innermost and dense in self and src, owners lie a row apart: adds through
    index_add_'s one index, a self row of at most 8 bytes and a src row of at most 32, take the owned walk for
    any element (sweep seed 1871's int32 index_add_ along a dim of 2, 22.2 -> 13.3 us, PyTorch 17.1; NOTES
    109). Each refusal below breaks one condition."""
    def regime(op, self_, dim, index, src, *extra):
        return jitops.explain(op, self_, dim, index, src, *extra, arch="sm_90")[-1]["regime"]
    n = 1048576
    int32 = ("index_add_", V([128, 331, 8, 2], "int32"), 3, V([6], "int64"), V([128, 331, 8, 6], "int32"))
    assert regime(*int32) == "owned"
    # src expanded along a middle dim; and along the owners' inner dim, one src row for every owner
    assert regime("index_add_", V([131072, 13, 13, 3], "bfloat16"), 3, V([6], "int64"),
                  V([131072, 13, 13, 6], "bfloat16", strides=[78, 0, 6, 1])) == "owned"
    one_src_row = V([n, 8], "float32", strides=[0, 1])
    assert regime("index_add_", V([n, 2], "float32"), 1, V([8], "int32"), one_src_row) == "owned"
    # not taken: a full index (each owner its own destinations), and a shared one for products
    assert regime("scatter_add_", V([n, 2], "float32"), 1, V([n, 8], "int32"), V([n, 8], "float32")) != "owned"
    assert regime("scatter_reduce_", V([n, 1], "float64"), 1, V([n, 4], "int64"), V([n, 4], "float64"),
                  "amax") != "owned"
    assert regime("scatter_reduce_", V([n, 2], "float32"), 1, V([n, 8], "int64", strides=[0, 1]),
                  V([n, 8], "float32"), "prod") != "owned"
    # nor: a self row of 16 bytes; a src row of 40, or 40 bytes of terms from a src expanded along the owners
    assert regime("index_add_", V([852065, 4], "float32"), 1, V([3], "int32"), V([852065, 3], "float32")) != "owned"
    assert regime("index_add_", V([n, 3], "float16"), 1, V([20], "int32"), V([n, 20], "float16")) != "owned"
    assert regime("index_add_", V([n, 2], "float32"), 1, V([10], "int32"),
                  V([n, 10], "float32", strides=[0, 1])) != "owned"
    # nor rows that are not dense: self transposed (the dim outermost), self's rows sliced apart, src's rows sliced
    src = V([n, 6], "float32")
    assert regime("index_add_", V([n, 2], "float32", strides=[1, n]), 1, V([6], "int32"), src) != "owned"
    assert regime("index_add_", V([n, 2], "float32", strides=[4, 1]), 1, V([6], "int32"), src) != "owned"
    assert regime("index_add_", V([n, 2], "float32"), 1, V([6], "int32"),
                  V([n, 6], "float32", strides=[8, 1])) != "owned"
    # nor owners short of a wave
    assert regime("index_add_", V([4096, 2], "int32"), 1, V([6], "int64"), V([4096, 6], "int32")) != "owned"
    owned_mode(0)
    assert regime(*int32) != "owned"


def test_plain_stores_of_two_bytes_or_more_take_a_grid_over_all_their_units(index_walk):
    """index_copy_ and index_fill_ of 2-byte or wider elements launch a block for every 1024 units rather
    than loop a grid capped at 16 waves: bfloat16 fills of a step-3 slice (seed 918) ran 234.7 us capped,
    191.8 uncapped (PyTorch 193.2). Single bytes keep the cap (16 waves of 8 blocks on 132 SMs)."""
    self_ = dict(shape=[7, 4, 2097152], strides=[25165828, 6291457, 3])
    units = 5 * 4 * 2097152
    (r,) = plans("index_fill_", V(dtype="bfloat16", **self_), 0, V([5], "int32"), -1.5)
    assert r["grid"][0] == units // (256 * 4)
    (r,) = plans("index_copy_", V(dtype="float32", **self_), 0, V([5], "int32"), V([5, 4, 2097152], "float32"))
    assert r["grid"][0] == units // (256 * 4)
    capped = 132 * 8 * 16
    (r,) = plans("index_fill_", V(dtype="int8", **self_), 0, V([5], "int32"), 3)
    assert r["grid"][0] == capped


@pytest.fixture
def no_tiles():
    """The walks where src's layout would send a copy or add through tiles (test_scatter_tile_spec.py)."""
    previous = jitops._core._set_scatter_tiles(0)
    yield
    jitops._core._set_scatter_tiles(previous)


def test_walks_but_the_2d_one_take_a_grid_over_all_their_units(no_tiles):
    """Adds, reductions and their identity stores and counts in the linear walk launch a block for every
    group of units (capped, blocks looping a grid apart lost what L2 held: seed 1863's int64 index_add_ from
    a transposed src 632 -> 425 us, NOTES 108); the 2-D walk keeps the cap, and the knob forces one."""
    capped = 132 * 8 * 16
    self_ = dict(shape=[7, 4, 2097152], strides=[25165828, 6291457, 3])
    (r,) = plans("index_add_", V(dtype="bfloat16", **self_), 0, V([5], "int32"), V([5, 4, 2097152], "bfloat16"))
    assert r["spec"]["dims"] != 2 and r["grid"][0] == 5 * 4 * 2097152 // (256 * r["spec"]["unroll"])
    self_1863 = V([8, 59, 5, 24465], "int64", strides=[14434350, 122325, 24465, 1])
    src_1863 = V([5, 59, 5, 24465], "int64", strides=[59, 1, 7217175, 295])
    (r,) = plans("index_add_", self_1863, 0, V([5], "int32"), src_1863, alpha=2)
    assert r["spec"]["dims"] == 3 and r["grid"][0] == -(-5 * 59 * 5 * 24465 // (256 * r["spec"]["unroll"]))
    (r,) = plans("scatter_reduce_", V([1 << 20, 1], "float16"), 0, V([1 << 25, 1], "int64"), V([1 << 25, 1], "float16"),
                 "amax")
    assert r["spec"]["dims"] == 1 and r["grid"][0] > capped
    (r,) = plans("index_add_", V([420293, 8], "int32"), 1, V([18], "int32"), V([420293, 18], "int32"), alpha=2)
    assert r["spec"]["dims"] == 2 and r["grid"][0] * r["grid"][1] <= capped
    previous = jitops._core._set_scatter_waves(16)
    try:
        (r,) = plans("index_add_", self_1863, 0, V([5], "int32"), src_1863, alpha=2)
        assert r["grid"][0] == capped
    finally:
        jitops._core._set_scatter_waves(previous)


def test_the_means_counts_and_passes_over_self_follow_self_in_memory():
    """A transposed self's counts lie in its memory order, so the finish walks both densely as one dim, and
    the reset of include_self=False (from 2^19 units, or forced) walks the same way. In C order the finish
    read self 64 bytes a lane apart (float32 (16x179528) transposed: 37 us against PyTorch's 9, NOTES 105)."""
    self_t = V([16, 179528], "float32", strides=[1, 16])
    call = (self_t, 1, V([16, 131072], "int32"), V([16, 131072], "float32"), "mean")
    *_, finish = plans("scatter_reduce_", *call)
    assert finish["spec"]["op"] == 7 and finish["spec"]["dims"] == 1
    # four elements a thread, their counts loaded together (NOTES 107)
    assert finish["spec"]["unroll"] == 4 and finish["grid"][0] == -(-16 * 179528 // (256 * 4))
    assert "scatter_mean_finish<float, 1, false, false, 4>" in finish["source"]
    previous = jitops._core._set_mean_finish_unroll(1)
    try:
        *_, finish = plans("scatter_reduce_", *call)
        assert finish["spec"]["unroll"] == 1 and finish["grid"][0] == -(-16 * 179528 // 256)
    finally:
        jitops._core._set_mean_finish_unroll(previous)
    # a small self keeps one element a thread, its grid filling the resident threads (132 SMs x 2048) once
    for n, unroll in ((132 * 2048, 1), (2 * 132 * 2048, 2)):
        *_, finish = plans("scatter_reduce_", V([n], "float32"), 0, V([n], "int64"), V([n], "float32"), "mean")
        assert finish["spec"]["unroll"] == unroll, (n, finish["spec"])
    prepare, reset, add, finish = plans("scatter_reduce_", *call, include_self=False)
    assert [reset["spec"]["op"], reset["spec"]["dims"]] == [18, 1]
    assert "scatter_mean_finish<float, 1, false, true, 4>" in reset["source"]
    jitops._core._set_mean_memory_order(0)  # counts in C order: the walk keeps both dims
    try:
        *_, finish = plans("scatter_reduce_", *call)
        assert finish["spec"]["dims"] == 2
    finally:
        jitops._core._set_mean_memory_order(1)
    jitops._core._set_mean_reset(0)  # never: three passes, whatever the units
    try:
        assert [p["spec"]["op"] for p in plans("scatter_reduce_", *call, include_self=False)] == [6, 0, 7]
    finally:
        jitops._core._set_mean_reset(-1)
