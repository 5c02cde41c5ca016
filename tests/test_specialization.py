"""Which specialization a call picks: collapsing, vector width, offset width,
thread layout. Planned for an architecture with no GPU, from shapes alone."""

import pytest

import jitops
from jitops import VirtualArray as V

M = 1 << 20


def spec(op, *args, arch="sm_90", **kwargs):
    reports = jitops.explain(op, *args, arch=arch, **kwargs)
    assert len(reports) == 1
    return reports[0]


def tr(shape, dtype, perm):
    """A permuted (transposed) view of a contiguous array of `shape`."""
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return V([shape[p] for p in perm], dtype, strides=[strides[p] for p in perm])


CASES = [
    # (description, op, args, kwargs, expected spec fields)
    ("rows of a matrix, float4", "index_select", (V([50000, 1024], "float32"), 0, V([8192], "int64")), {},
     dict(unit=16, dims=2, offset=32, index=8)),
    ("columns of a matrix", "index_select", (V([1024, 32768], "float32"), 1, V([4096], "int64")), {},
     dict(unit=4, dims=2)),
    ("1-D", "index_select", (V([32 * M], "float32"), 0, V([4 * M], "int32")), {}, dict(unit=4, dims=1, index=4)),
    ("middle dim of 3-D", "index_select", (V([64, 128, 256], "float32"), 1, V([64], "int64")), {},
     dict(unit=16, dims=3)),
    ("half rows, 8 per vector", "index_select", (V([50000, 1024], "float16"), 0, V([8192], "int64")), {},
     dict(unit=16, dims=2)),
    ("contiguous 5-D collapses around the indexed dim", "index_select",
     (V([2, 3, 4, 5, 6], "float32"), 2, V([3], "int64")), {}, dict(dims=3)),
    ("row of 33 floats: no vector", "index_select", (V([1000, 33], "float32"), 0, V([7], "int64")), {},
     dict(unit=4, dims=2)),
    ("row of 34 floats: float2", "index_select", (V([1000, 34], "float32"), 0, V([7], "int64")), {},
     dict(unit=8, dims=2)),
    ("misaligned base: no vector", "index_select", (V([1000, 64], "float32", address=260), 0, V([7], "int64")), {},
     dict(unit=4)),
    ("transposed 4-D does not collapse: a 4-dim walk", "index_select",
     (tr([4, 5, 6, 7], "float32", [3, 1, 0, 2]), 1, V([3], "int64")), {}, dict(dims=4)),
    ("past 2^31 elements: 64-bit offsets", "index_select", (V([(1 << 31) + 8], "int8"), 0, V([5], "int64")), {},
     dict(offset=64, dims=1)),
    ("gather one column", "gather", (V([5100, 38506], "float32"), 1, V([5100, 1], "int64")), {}, dict(dims=1)),
    ("gather 2-D layout", "gather", (V([5100, 128], "float32"), 1, V([5100, 96], "int64")), {}, dict(dims=2)),
    ("take flat on contiguous x", "take", (V([30, 40], "float32"), V([5, 6], "int64")), {},
     dict(wrap=1, flat=0, dims=1)),
    ("take flat on transposed x unravels", "take", (tr([30, 40], "float32", [1, 0]), V([50], "int64")), {},
     dict(wrap=1, flat=2)),  # x's two dims
    ("take flat on a permuted 4-D x", "take", (tr([3, 4, 5, 6], "int16", [2, 0, 3, 1]), V([50], "int64")), {},
     dict(wrap=1, flat=4)),
    ("take along an axis", "take", (V([4, 5, 6], "float64"), V([2, 3], "int32")), dict(axis=1),
     dict(wrap=1, flat=0, unit=16)),  # rows of 6 doubles move as 3 x 16 bytes
    # x dense along another dim than the output (channels_last against the contiguous output): tiles of
    # the output's H*W by x's C, read along C into shared memory, written along H*W
    ("channels_last x along N: tiles", "index_select",
     (V([8, 64, 56, 56], "float16", strides=[64 * 56 * 56, 1, 56 * 64, 64]), 0, V([5], "int64")), {},
     dict(tile_a=32, tile_b=32, dims=3, unit=2)),
    ("transposed x along an axis: tiles", "take", (tr([120, 30, 60], "float64", [2, 1, 0]), V([2, 3], "int32")),
     dict(axis=1), dict(tile_a=32, tile_b=32, wrap=1)),
    ("under 2^15 output units: no tile", "take", (tr([40, 30, 20], "float64", [2, 1, 0]), V([2, 3], "int32")),
     dict(axis=1), dict(tile_a=0)),
    ("an inner dim under 16: no tile", "index_select",
     (V([8, 64, 56, 56], "float32", strides=[64 * 56 * 56, 1, 56 * 64, 64]), 3, V([7], "int64")), {},
     dict(tile_a=0)),
    ("x dense along the output's inner dim: no tile", "index_select", (V([5000, 1024], "float32"), 0,
     V([8], "int64")), {}, dict(tile_a=0)),
    # x dense along a dim under 16 (x stored (K, 8, 3), the output's inner dim K 24 units apart in x): each
    # lane of the walk reads a sector of its own, a tile reads the 3 units side by side (sweep seed 1819)
    ("a short dense dim of x, 24 bytes a run: tiles of 4 along it", "index_select",
     (V([8, 3, 262144], "complex64", strides=[3, 1, 24]), 0, V([27], "int64")), {},
     dict(tile_a=256, tile_b=4, index_each=0)),
    ("a short dense dim of 12 bytes: the strided walk", "index_select",
     (V([8, 3, 262144], "float32", strides=[3, 1, 24]), 0, V([27], "int64")), {}, dict(tile_a=0)),
    ("a short dense dim, under 2^17 output units: the strided walk", "index_select",
     (V([8, 3, 1024], "complex64", strides=[3, 1, 24]), 0, V([27], "int64")), {}, dict(tile_a=0)),
    ("a short dense dim the tile's edges would fill under half (5 of 8 by 76 of 128): the strided walk", "take",
     (V([5, 16384, 2, 32], "int32", strides=[1, 5, 2621440, 81920]), V([38, 2], "int64")), dict(axis=3),
     dict(tile_a=0)),
    # the indexed dim is the output's inner dim, x dense along another: an index value per element
    ("the indexed dim innermost in the output, x's touched bytes past the L2's three quarters: tiles",
     "index_select", (tr([300, 40, 16384], "uint8", [2, 1, 0]), 2, V([120], "int64")), {},
     dict(tile_a=32, tile_b=32, index_each=1, unit=1)),
    ("the same with units of a byte from an x within the L2: the strided walk", "index_select",
     (tr([300, 40, 64], "uint8", [2, 1, 0]), 2, V([120], "int64")), {}, dict(tile_a=0)),
    # rows of b 41 units apart in the output: the 8 rows that share a sector of x lie within one block of
    # the strided walk (256 threads x 4 units), which reads them from L1
    ("the rows that share x's sectors within a block of the walk: the strided walk", "take",
     (tr([13, 65536], "float32", [1, 0]), V([41], "int32")), dict(axis=1), dict(tile_a=0)),
    ("the same rows for torch.gather's index, varying along them: tiles", "gather",
     (tr([7, 65536], "float32", [1, 0]), 1, V([65536, 41], "int64")), {}, dict(tile_a=32, index_each=2)),
    ("a 2-D index's inner dim innermost in the output: tiles", "take",
     (tr([300, 40, 64], "float32", [2, 1, 0]), V([12, 20], "int32")), dict(axis=2), dict(index_each=1, wrap=1)),
    ("torch.gather's index along x's dense dim, from an axis of 2: tiles", "gather",
     (tr([301, 2, 1024], "int16", [2, 1, 0]), 1, V([1024, 20, 301], "int64", strides=[20, 1, 0])), {},
     dict(tile_a=32, index_each=1)),
    ("torch.gather's index along x's dense dim, from an axis of 64: no tile", "gather",
     (tr([301, 64, 1024], "int16", [2, 1, 0]), 1, V([1024, 20, 301], "int64", strides=[20, 1, 0])), {},
     dict(tile_a=0)),
    # torch.gather's full index, x moving along the output's inner dim too (a channels_last x along H): read
    # along C, a warp's lanes touch one sector a distinct row of the axis instead of a sector a unit
    ("torch.gather's full index from a channels_last x, an axis of 8 bytes: tiles, the index staged", "gather",
     (V([4, 20011, 4, 16], "float16", strides=[20011 * 64, 1, 16 * 20011, 20011]), 2,
      V([4, 20011, 7, 16], "int64")), {}, dict(tile_a=16, tile_b=64, index_each=2)),
    ("the same with units of a byte: the strided walk", "gather",
     (V([4, 20011, 4, 16], "int8", strides=[20011 * 64, 1, 16 * 20011, 20011]), 2, V([4, 20011, 7, 16], "int64")),
     {}, dict(tile_a=0)),
    ("torch.gather's full index from a channels_last x, an axis of 32 bytes: no tile", "gather",
     (V([4, 20011, 4, 16], "float64", strides=[20011 * 64, 1, 16 * 20011, 20011]), 2,
      V([4, 20011, 7, 16], "int64")), {}, dict(tile_a=0)),
    ("the indexed dim innermost, under 2^18 output units: no tile", "index_select",
     (tr([300, 40, 64], "uint8", [2, 1, 0]), 2, V([40], "int64")), {}, dict(tile_a=0)),
    ("x dense along the indexed dim: no tile", "index_select", (V([5000, 1024], "float32"), 1, V([4096], "int64")),
     {}, dict(tile_a=0)),
    # x dense along the indexed axis (the indexed dim innermost in x, another in the output): tiles whose
    # lanes run along the index's values, reading rows of x along the axis (sweep seed 912's shape)
    ("x dense along the indexed axis, rows of 256 bytes: tiles along the index", "gather",
     (tr([16384, 41, 32], "float64", [2, 1, 0]), 0, V([15, 28, 16384], "int32", strides=[28, 1, 0])), {},
     dict(tile_a=64, tile_b=16, index_each=1)),
    ("the same for index_select of 28 values from rows of 64 uint32: tiles along the index", "index_select",
     (tr([8192, 1, 8, 2, 64], "uint32", [4, 3, 2, 1, 0]), 0, V([28], "int32")), {},
     dict(tile_a=32, tile_b=32, index_each=1)),
    ("rows along the axis of 64 bytes: the walk's neighbouring lanes share them, no tile", "gather",
     (tr([2097152, 16], "float32", [1, 0]), 0, V([35, 2097152], "int32")), {}, dict(tile_a=0)),
    ("rows of 32 KB, random values: a sector a lane either way, no tile", "gather",
     (tr([2051, 4096], "uint64", [1, 0]), 0, V([7217, 2051], "int64")), {}, dict(tile_a=0)),
    # an index expanded along an outer dim and varying along the inner one: a load serves several rows
    ("an index expanded over 1024 rows: a load serves 4, twice", "gather",
     (V([1024, 1024, 32, 1], "bfloat16"), 3, V([1024, 384, 26, 4], "int64", strides=[0, 104, 4, 1])), {},
     dict(dims=4, reuse=4, unroll=2)),
    ("an index expanded over 3 rows: a load serves 4", "gather",
     (V([16, 3, 50000], "float32"), 2, V([16, 3, 40000], "int32", strides=[40000, 0, 1])), {},
     dict(dims=3, reuse=4, unroll=2)),
    ("an index expanded over 2 rows: a load serves 2, 4 times", "gather",
     (V([2, 16, 50000], "float32"), 2, V([2, 16, 40000], "int32", strides=[0, 40000, 1])), {},
     dict(dims=3, reuse=2, unroll=4)),
    ("index_select along the inner dim of 3 dims: a load serves 4", "index_select",
     (V([1001, 15, 21], "float32", strides=[630, 21, 1]), 2, V([45], "int32")), {}, dict(dims=3, reuse=4)),
    ("too little work to divide by 2: no reuse", "index_select",
     (V([51, 15, 21], "float32", strides=[630, 21, 1]), 2, V([45], "int32")), {}, dict(dims=3, reuse=1)),
    ("under 64 units inside the expanded dim: no reuse", "gather",
     (V([512, 10223, 8], "uint32"), 2, V([512, 10223, 4], "int64", strides=[4, 0, 1])), {}, dict(reuse=1)),
    ("an index expanded along the inner dim: loads are shared by a warp already", "gather",
     (V([5000, 64, 8], "float32", strides=[512, 1, 64]), 0, V([2000, 64, 8], "int64", strides=[1, 0, 0])), {},
     dict(reuse=1)),
    ("2-D rows of one index: a thread's rows share the load", "index_select",
     (V([8000, 1000], "float32", strides=[1003, 1]), 1, V([77], "int64")), {}, dict(dims=2, unroll=4, reuse=4)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_spec_fields(case):
    _, op, args, kwargs, expected = case
    report = spec(op, *args, **kwargs)
    for field, value in expected.items():
        assert report["spec"][field] == value, (field, report["kernel"])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_compiles_for_arch(arch):
    r = spec("index_select", V([100, 64], "float16"), 0, V([9], "int64"), arch=arch)
    assert f".target {arch}" in r["ptx"]
    assert r["cubin_bytes"] > 0
    assert r["arch"] == arch
    assert r["registers"] > 0 and r["local_bytes"] == 0


def test_source_names_its_spec_and_options():
    r = spec("gather", V([5100, 128], "float32"), 1, V([5100, 96], "int32"))
    first, second = r["source"].splitlines()[:2]
    assert first == "// jitops kernel: " + r["kernel"]
    assert second.startswith("// options:") and "-arch=sm_90" in second
    assert "gather_2d<" in r["source"] and "jitops_kernel" in r["source"]


def test_grid_is_sized_from_the_work_not_the_index_count():
    # 15 indices into 1024-float rows: 15 * 256 float4 units, never one thread.
    r = spec("index_select", V([32768, 1024], "float32"), 0, V([15], "int64"))
    threads = 1
    for g, b in zip(r["grid"], r["block"]):
        threads *= g * b
    assert threads * r["spec"]["unroll"] >= 15 * 256
    # A long index over a 1-D x fills many waves' worth of blocks, capped.
    r = spec("index_select", V([32 * M], "float32"), 0, V([4 * M], "int64"))
    assert 132 * 8 <= r["grid"][0] <= 132 * 8 * 4


def test_gather_walks_of_8_byte_units_take_a_grid_over_all_their_units():
    # Seed 1870's uint64 gather along a channels_last C of 3: capped at 16 waves, resident blocks jump a grid
    # ahead and read x from DRAM again (NOTES 108); units of 8 bytes or more get a block for every unit group.
    from jitops import _core

    x = V([128, 3, 8192, 32], "uint64", strides=[786432, 1, 96, 3])
    index = V([40, 8, 8192, 32], "int32")
    r = spec("gather", x, 1, index)
    assert r["spec"]["unit"] == 8 and r["block"] == (256, 1, 1)
    assert r["grid"][0] == 40 * 8 * 8192 * 32 // (256 * r["spec"]["unroll"])
    # Smaller units keep the cap of 16 waves (1-byte units ran 0.96x uncapped).
    small = spec("gather", V([128, 3, 8192, 32], "uint8", strides=[786432, 1, 96, 3]), 1, index)
    assert small["spec"]["unit"] == 1 and small["grid"][0] == 132 * 8 * 16
    # Row passes were measured against the capped grid, and keep it where they apply (8-byte units too).
    rows = spec("index_select", V([48, 1 << 20], "int64"), 1, V([524295], "int32"))
    assert rows["regime"] == "2-D, one row group a block" and rows["grid"][1] < 48
    # The knob forces a cap on every walk.
    previous = _core._set_gather_waves(16)
    try:
        assert spec("gather", x, 1, index)["grid"][0] == 132 * 8 * 16
    finally:
        _core._set_gather_waves(previous)


def test_dims_up_to_six_get_their_own_walk_more_the_generic_one():
    x = tr([3, 4, 5, 6, 7], "int16", [4, 2, 0, 3, 1])  # shape (7, 5, 3, 6, 4)
    index = V([7, 5, 3, 6, 4], "int64", strides=[1, 7, 35, 105, 630])  # column-major
    r = spec("gather", x, 2, index)
    assert r["spec"]["dims"] == 5
    assert "gather_linear<" in r["source"] and ", 5, false," in r["source"]
    shape = [2, 3, 2, 3, 2, 3, 2]
    x = tr(shape, "int16", [6, 4, 2, 0, 5, 3, 1])
    column_major = [1]
    for n in [x.shape[d] for d in range(6)]:
        column_major.append(column_major[-1] * n)
    r = spec("gather", x, 2, V(list(x.shape), "int64", strides=column_major))
    assert r["spec"]["dims"] == 0
    assert "gather_linear<" in r["source"] and ", 16, true," in r["source"]


def test_empty_output_launches_nothing():
    assert jitops.explain("index_select", V([10, 4], "float32"), 0, V([0], "int64"), arch="sm_90") == []


def test_sass_where_a_disassembler_exists():
    from jitops.sass import _tool_candidates
    import os

    if not any(os.path.isfile(p) and os.access(p, os.X_OK) for _, p in _tool_candidates()):
        pytest.skip("no cuobjdump or nvdisasm installed")
    r = spec("index_select", V([100, 64], "float32"), 0, V([9], "int64"))
    sass = r.sass()
    assert "LDG" in sass and "STG" in sass  # the gather's global loads and stores


def test_gather_rows_first_where_blocks_running_together_share_reads():
    """The 2-D gather walks rows first where each row is one index value whose slice is the same along it, the
    grid spans more than a wave and x more than a quarter of L2, and values must repeat or x is transposed."""
    regime = lambda *args: spec("index_select", *args)["regime"]  # noqa: E731
    big = V([32, 5, 131072], "uint32")  # 84 MB
    assert regime(big, 0, V([97], "int64")) == "2-D, rows first"  # 97 values of 32: repeats
    assert regime(big, 0, V([31], "int64")) is None  # fewer values than rows: no repeat is certain
    # 54 values of 32, rows first from 2 rows of blocks; 16-byte units: one row group (4 rows) a block
    wide = spec("index_select", V([32, 293, 3875], "complex128"), 0, V([54], "int32"))
    assert wide["regime"] == "2-D, rows first" and wide["spec"]["unit"] == 16 and wide["grid"][1] == 14
    narrow = spec("index_select", V([32, 293, 3875], "uint16"), 0, V([54], "int32"))  # odd rows: 2-byte units
    assert narrow["regime"] == "2-D, rows first" and narrow["spec"]["unit"] == 2 and narrow["grid"][1] < 14
    assert regime(V([32, 5, 4096], "uint32"), 0, V([97], "int64")) is None  # 2.6 MB: x stays in L2
    assert regime(tr([12289, 2049], "float32", [1, 0]), 0, V([301], "int64")) == "2-D, rows first"
    assert regime(tr([2049, 2049], "float32", [1, 0]), 0, V([301], "int64")) is None  # 684 blocks: one wave
    # the index varies along a row (a gather with a full index): the bands' rule below
    assert spec("gather", V([97, 655360], "uint32"), 0, V([300, 655360], "int64"))["regime"] != "2-D, rows first"


def gather_band(report):
    """The band field of a 32-bit 2-D gather's parameter block (templates/jitops/gather_params.h,
    GatherParams<32, 2, 1>): 0 columns first, N bands of N column ranges."""
    import ctypes

    class Divider(ctypes.Structure):
        _fields_ = [("divisor", ctypes.c_uint32), ("multiplier", ctypes.c_uint32), ("shift", ctypes.c_uint32)]

    class Params(ctypes.Structure):
        _fields_ = ([(n, ctypes.c_void_p) for n in ("out", "x", "index", "error")] +
                    [("numel", ctypes.c_uint32), ("ndim", ctypes.c_int32), ("op_code", ctypes.c_int32),
                     ("axis_size", ctypes.c_int64), ("axis_stride", ctypes.c_int32), ("sizes", Divider * 2)] +
                    [(n, ctypes.c_int32 * 2) for n in ("out_strides", "x_strides", "index_strides")] +
                    [("index_positions", ctypes.c_int64 * 2), ("x_ndim", ctypes.c_int32), ("band", ctypes.c_int32),
                     ("x_sizes", Divider * 1), ("x_flat_strides", ctypes.c_int32 * 1)])

    assert report["spec"]["dims"] == 2 and report["spec"]["offset"] == 32
    assert report["param_bytes"] == ctypes.sizeof(Params) == len(report["params"])
    return Params.from_buffer_copy(report["params"]).band


def test_gather_full_index_walks_bands_of_column_ranges_where_random_draws_would_meet():
    """torch.gather's index along the rows: rows first within bands of column ranges where index values drawn
    at random would read x's sectors again from DRAM in the hardware's order; the band as wide as a sixteenth
    of L2 holds of x's rows over those columns."""
    banded = "2-D, rows first in bands of column ranges"
    r = spec("gather", V([64, 262144], "float32"), 0, V([40, 262144], "int64"))  # 64 MB, 8 columns a sector
    assert r["regime"] == banded and r["grid"][:2] == (1024, 10)
    assert gather_band(r) == 50  # 64 rows x 256 columns x 4 bytes a range: 50 in 3.1 MB, the last band 24
    r = spec("gather", V([64, 1048576], "uint8"), 0, V([40, 1048576], "int32"))
    assert r["regime"] == banded and gather_band(r) == 200
    r = spec("gather", V([4096, 8192], "float32"), 0, V([300, 8192], "int32"))  # a range's rows 4 MB: band 1
    assert r["regime"] == banded and gather_band(r) == 1
    # x within half of L2: it stays there in any order
    r = spec("gather", V([64, 65536], "float32"), 0, V([40, 65536], "int64"))
    assert r["regime"] is None and gather_band(r) == 0
    # 512 draws a sector column over 65536 rows seldom meet: nothing to share
    assert spec("gather", V([65536, 4096], "float32"), 0, V([64, 4096], "int64"))["regime"] is None
    # the index the same along a row (index_select's): the slices' rule, not this one
    assert spec("index_select", V([64, 262144], "float32"), 0, V([40], "int64"))["regime"] is None


def test_gather_many_values_along_large_rows_take_one_row_group_a_block():
    """index_select along the rows (the index the same down a column): where the y blocks would each walk
    several row groups of 4 rows, spanning more of x than half of L2, with at least as many values as a row
    has sectors and an index that stays in L2, every block takes one row group, of fewer rows where one
    group's rows lying apart would pass half of L2 themselves."""
    passes = "2-D, one row group a block"
    r = spec("index_select", V([79, 524288], "float32"), 1, V([700128], "int64"))  # seed 713's case
    assert r["regime"] == passes and r["grid"][:2] == (2735, 20) and r["spec"]["unroll"] == 4
    # x's row groups 8 MB, walked 2 a block: 16 MB in flight stays in L2
    assert spec("index_select", V([40, 524288], "float32"), 1, V([600000], "int64"))["regime"] is None
    # 71676 values over a row of 131072 sectors: few draws meet
    assert spec("take", V([77, 1048576], "float32"), V([71676], "int64"), axis=1)["regime"] is None
    # a 30 MB index read once a pass would leave L2 (an expanded index: gather's form of the same walk)
    r = spec("gather", V([5, 2097152], "uint64"), 1, V([5, 7544374], "int32", strides=[0, 1]))
    assert r["regime"] is None and r["spec"]["dims"] == 2
    # 4 rows of 8 MB a group with a 1.5 MB index pass half of L2: 2 rows a thread, 6 groups
    r = spec("index_select", V([11, 2097152], "int32"), 1, V([368392], "int32"))
    assert r["regime"] == passes and r["grid"][1] == 6 and r["spec"]["unroll"] == 2
    # seed 1819's rows of 12.4 MB: a row a thread, a group a row
    r = spec("index_select", V([16, 6223695], "int16"), 1, V([2456804], "int32"))
    assert r["regime"] == passes and r["grid"][:2] == (9597, 16) and r["spec"]["unroll"] == 1
    # a transposed x's rows interleave, sharing sectors: a thread's 4 rows read them at once (int16: a
    # column's 13 rows, 26 bytes, share the sector its walk's lane reads; float64's 104 bytes take tiles)
    r = spec("index_select", V([13, 2097152], "int16", strides=[1, 13]), 1, V([2772120], "int32"))
    assert r["regime"] == passes and r["grid"][1] == 4 and r["spec"]["unroll"] == 4
    r = spec("index_select", V([13, 2097152], "float64", strides=[1, 13]), 1, V([2772120], "int32"))
    assert r["spec"]["tile_b"] == 16 and r["spec"]["index_each"] == 1
    # torch.gather's full index along x's inner axis (seed 1838's float32, NOTES 102): each row reads its own
    # values once, however the passes go, so the 444 MB index need not stay in L2
    r = spec("gather", V([153, 698389], "float32"), 1, V([139, 798319], "int32"))
    assert r["regime"] == passes and r["grid"][:2] == (3119, 35) and r["spec"]["unroll"] == 4
    # a full index along dim 0 (x moves along the columns): not this walk
    assert spec("gather", V([698389, 153], "float32"), 0, V([798319, 139], "int32"))["regime"] is None
