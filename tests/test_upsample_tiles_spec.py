"""upsample_nearest2d_backward's tile kernel with no GPU: which backward
calls take it (windows wider than a column, a dense input gradient whose
output gradient's rows are dense in the same order), its tile shapes, and
that every dtype compiles into registers alone."""

import pytest

import jitops
from jitops import _core

pytestmark = pytest.mark.usefixtures("upsample_tiles_on_narrow_rows")



V = _core.VirtualArray
TILES = 6  # UpsampleKind kUpsampleTilesBackward
ROWS = 5   # kUpsampleRowsBackward


def explain(grad, in_size, **kwargs):
    (k,) = jitops.explain("upsample_nearest2d_backward", grad, in_size, arch="sm_90", **kwargs)
    return k


def channels_last(shape, dtype):
    n, c, h, w = shape
    return V(list(shape), dtype, [c * h * w, 1, w * c, c])


def test_sweep_shapes_take_tiles_of_whole_rows(fresh_cache):
    # x3 float32 (1,256,441,417): 3 input rows a tile, their 9 output rows one span of 3753 floats (15 KiB)
    k = explain(V([1, 256, 441, 417], "float32"), (1, 256, 147, 139), scale_factor=3)
    assert k["spec"]["kind"] == TILES and k["spec"]["one_span"] == 1 and k["spec"]["nchw"] == 1
    assert k["regime"].startswith("tiles of rows of W staged in shared memory")
    assert (k["spec"]["window_h"], k["spec"]["window_w"]) == (3, 3)
    assert k["grid"] == (256 * 49, 1, 1) and k["block"] == (256, 1, 1)
    assert k["shared_bytes_dynamic"] == 624 + (9 * 417 + 4) * 4  # edge and row tables, then the span and its lead
    assert k["local_bytes"] == 0
    assert k["registers"] <= 32  # 8 blocks of 256 threads an SM: the staging of 8 tiles keeps DRAM busy
    # windows of 1 and 2 (231/194 x 307/283): 3 rows a tile keep 6 or more waves of blocks
    k = explain(V([4, 32, 231, 307], "float32"), (4, 32, 194, 283))
    assert k["spec"]["kind"] == TILES and (k["spec"]["window_h"], k["spec"]["window_w"]) == (2, 2)
    assert k["grid"][0] == 4 * 32 * 65 and k["local_bytes"] == 0


@pytest.mark.parametrize("grad,in_size,kwargs,kind", [
    (V([2, 3, 16, 16], "float32"), (2, 3, 8, 8), {}, 3),                       # exact 2x: packed pairs stay
    (V([2, 3, 24, 15], "float32"), (2, 3, 8, 20), dict(scale_factor=(3, 0.75)), ROWS),  # one column a window
    (V([2, 3, 12, 12], "float32"), (2, 3, 24, 24), dict(scale_factor=0.5), ROWS),
    (V([2, 3, 24, 24], "float32", [3456, 1152, 48, 2]), (2, 3, 8, 8), dict(scale_factor=3), ROWS),  # W-sliced
    (channels_last((2, 16, 24, 24), "float32"), (2, 16, 8, 8), dict(scale_factor=3), ROWS),  # 64-byte pixels
    (channels_last((2, 7, 24, 24), "float32"), (2, 7, 8, 8), dict(scale_factor=3), TILES),
    (channels_last((2, 15, 24, 24), "float16"), (2, 15, 8, 8), dict(scale_factor=3), TILES),
    (channels_last((2, 4, 24, 24), "float64"), (2, 4, 8, 8), dict(scale_factor=3), ROWS),
    (V([2, 3, 24, 24], "float64"), (2, 3, 8, 8), dict(scale_factor=3), ROWS),  # 8-byte 3x3 windows
    (V([2, 3, 24, 36], "float64"), (2, 3, 16, 24), dict(scale_factor=1.5), TILES),  # windows of 2
    (V([2, 3, 24, 24], "float64"), (2, 3, 8, 12), dict(scale_factor=(3, 2)), TILES),  # 3x2
])
def test_which_backward_calls_take_tiles(fresh_cache, grad, in_size, kwargs, kind):
    assert explain(grad, in_size, **kwargs)["spec"]["kind"] == kind


def test_layouts_that_disagree_stay_on_the_row_kernels(fresh_cache):
    out = channels_last((2, 3, 8, 8), "float32")
    assert explain(V([2, 3, 24, 24], "float32"), (2, 3, 8, 8), scale_factor=3, out=out)["spec"]["kind"] == ROWS


def test_rows_that_do_not_follow_are_staged_one_by_one(fresh_cache):
    # every other H of a taller output gradient: rows 2 x 24 floats apart, each its own span
    k = explain(V([2, 3, 24, 24], "float32", [3456, 1152, 48, 1]), (2, 3, 8, 8), scale_factor=3)
    assert k["spec"]["kind"] == TILES and k["spec"]["one_span"] == 0


def test_wide_rows_are_split_into_column_chunks(fresh_cache):
    # 3 rows of 60000 floats do not fit 16 KiB: one input row a tile, chunks of W positions
    k = explain(V([1, 2, 6, 60000], "float32"), (1, 2, 2, 20000), scale_factor=3)
    assert k["spec"]["kind"] == TILES and k["spec"]["one_span"] == 0
    assert k["grid"][0] > 2 * 2 and k["shared_bytes_dynamic"] <= 20 << 10


@pytest.mark.parametrize("dtype,width,per", [
    ("float16", 12, 2), ("bfloat16", 12, 2), ("uint8", 12, 4), ("uint8", 14, 2), ("float16", 13, 1),
    ("float32", 12, 1),
])
def test_narrow_types_sum_four_bytes_an_item(fresh_cache, dtype, width, per):
    # consecutive elements share an item's index arithmetic and one store, where rows keep them aligned
    k = explain(V([2, 3, 33, 3 * width], dtype), (2, 3, 11, width), scale_factor=3)
    assert k["spec"]["kind"] == TILES and k["spec"]["per_item"] == per and k["local_bytes"] == 0


def test_windows_past_four_sum_in_loops(fresh_cache):
    k = explain(V([2, 3, 70, 70], "float32"), (2, 3, 10, 10), scale_factor=7)
    assert k["spec"]["kind"] == TILES and (k["spec"]["window_h"], k["spec"]["window_w"]) == (0, 0)


def test_the_knob_sends_tile_cases_back_to_the_row_kernels(fresh_cache):
    grad = V([1, 4, 30, 30], "float32")
    assert _core._set_upsample_tiles(False) is True
    try:
        assert explain(grad, (1, 4, 10, 10), scale_factor=3)["spec"]["kind"] == ROWS
    finally:
        assert _core._set_upsample_tiles(True) is False
    assert explain(grad, (1, 4, 10, 10), scale_factor=3)["spec"]["kind"] == TILES


@pytest.mark.parametrize("scale,size,widest", [
    (3, 100, 3), (1.5, 100, 2), (2.5, 100, 3), (0.5, 100, 1),
    (1.999, 100, 2), (1.999, 1 << 20, 3),  # a product big enough to round across an integer: one wider
    (3, 1 << 23, 0),                       # products past 2^24: any width, in a loop
])
def test_widest_window_allows_for_float_edges(fresh_cache, scale, size, widest):
    # (windows under a column wide go to the row kernels, which share the bound)
    k = explain(V([1, 1, 4, int(size * scale)], "float32"), (1, 1, 4, size), scale_factor=(1, scale))
    assert k["spec"]["window_w"] == widest


LOOPS = {  # (grad shape, input size, kwargs, channels-last): each a different specialization
    "x3": ((1, 4, 30, 33), (1, 4, 10, 11), dict(scale_factor=3), False),
    "x4": ((1, 4, 40, 44), (1, 4, 10, 11), dict(scale_factor=4), False),
    "x1.5_channels_last": ((1, 3, 15, 16), (1, 3, 10, 11), dict(scale_factor=1.5), True),
    "odd_size": ((1, 4, 23, 31), (1, 4, 19, 29), {}, False),
    "x7_loops": ((1, 2, 70, 77), (1, 2, 10, 11), dict(scale_factor=7), False),
}


@pytest.mark.parametrize("case", list(LOOPS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "uint8"])
def test_every_dtype_compiles_without_local_memory(fresh_cache, dtype, case):
    shape, in_size, kwargs, cl = LOOPS[case]
    grad = channels_last(shape, dtype) if cl else V(list(shape), dtype)
    k = explain(grad, in_size, **kwargs)
    if dtype == "float64" and case in ("x3", "x4"):  # 8-byte windows of 3x3 or more: the row kernels
        assert k["spec"]["kind"] == ROWS
        return
    assert k["spec"]["kind"] == TILES
    assert k["local_bytes"] == 0 and k["registers"] <= 40


def test_narrow_rows_stay_on_the_row_kernels_by_default(fresh_cache):
    """Output-gradient rows under 256 bytes go to the row kernels: float16 (1,128,99,31) x1.5 (rows of 92
    bytes) took 10.8 us tiled against 5.6 on the row kernels on an H100 (NOTES 50)."""
    previous = _core._set_upsample_tile_min_row_bytes(256)
    try:
        assert explain(V([1, 128, 148, 46], "float16"), (1, 128, 99, 31), scale_factor=1.5)["spec"]["kind"] == ROWS
        assert explain(V([4, 32, 231, 307], "float32"), (4, 32, 194, 283))["spec"]["kind"] == TILES
    finally:
        _core._set_upsample_tile_min_row_bytes(previous)


def test_tiles_under_2_kib_go_to_the_row_kernels_by_default(fresh_cache):
    """A heuristic tile under 2 KiB of shared memory goes to the row kernels: seed 292's bfloat16
    (2,128,66,151) x1.5 backward, tiles of one row of 101 (1052 bytes), took 14.5 us tiled against 10.8 on
    the row kernels on an H100 (NOTES 107); a tile of 16 KiB stays tiled."""
    small = (V([2, 128, 66, 151], "bfloat16"), (2, 128, 44, 101))
    large = (V([16, 128, 283, 226], "float32"), (16, 128, 189, 151))
    previous = _core._set_upsample_tile_min_bytes(2048)
    try:
        assert explain(*small, scale_factor=1.5)["spec"]["kind"] == ROWS
        k = explain(*large, scale_factor=1.5)
        assert k["spec"]["kind"] == TILES and k["shared_bytes_dynamic"] >= 2048
        _core._set_upsample_tile_min_bytes(0)
        k = explain(*small, scale_factor=1.5)
        assert k["spec"]["kind"] == TILES and k["shared_bytes_dynamic"] < 2048
    finally:
        _core._set_upsample_tile_min_bytes(previous)


def test_blocks_take_three_items_a_thread_down_to_128_threads(fresh_cache):
    """Seed 44's float16 tiles of 2 x 185 items: 128 threads (18.1 us against 24.6 on 256); below 128 the
    rule is two items a thread, which keeps 128 for a tile of 2 x 191."""
    k = explain(V([2, 256, 22, 555], "float16"), (2, 256, 11, 185))
    assert k["spec"]["kind"] == TILES and k["block"] == (128, 1, 1)
    k = explain(V([1, 32, 153, 286], "float16"), (1, 32, 102, 191))
    assert k["spec"]["kind"] == TILES and k["block"] == (128, 1, 1)
