"""upsample_nearest2d and histc with no GPU: which kernels a call plans
(exact-2x packed pairs vs generic, range + count, shared vs global
counting), their sources, and argument errors."""

import pytest

import jitops
from jitops import _core

V = _core.VirtualArray


def explain(op, *args, **kwargs):
    return jitops.explain(op, *args, arch="sm_90", **kwargs)


@pytest.mark.parametrize("dtype,vec", [("float32", 2), ("float16", 4), ("float64", 1), ("uint8", 8)])
def test_exact_2x_uses_packed_pairs(fresh_cache, dtype, vec):
    (k,) = explain("upsample_nearest2d", V([2, 3, 8, 8], dtype), scale_factor=2)
    assert k["spec"]["kind"] == 1 and k["spec"]["vec"] == vec
    (k,) = explain("upsample_nearest2d_backward", V([2, 3, 16, 16], dtype), (2, 3, 8, 8))
    assert k["spec"]["kind"] == 3 and k["spec"]["vec"] == vec
    assert "upsample_backward_2x" in k["source"]


def test_other_scales_walk_rows_of_the_dense_result(fresh_cache):
    (k,) = explain("upsample_nearest2d", V([2, 3, 8, 8], "float32"), scale_factor=1.5)
    assert k["spec"]["kind"] == 4 and k["spec"]["nchw"] == 1 and k["spec"]["vec"] == 4  # rows of 12
    (k,) = explain("upsample_nearest2d", V([4, 32, 110, 187], "float32"), size=(81, 403))
    assert k["spec"]["vec"] == 1 and k["spec"]["unroll"] == 4 and k["block"][0] == 32  # odd rows: 4 columns a thread
    # channels-last: rows of W x C, read in packs when the channels are dense
    (k,) = explain("upsample_nearest2d", V([2, 64, 10, 12], "float16", [7680, 1, 768, 64]), scale_factor=3)
    assert k["spec"]["kind"] == 4 and k["spec"]["nchw"] == 0 and k["spec"]["src_packed"] == 1
    assert k["regime"].startswith("rows of W x C")
    # backward, channels-last pixels of 64 bytes (NCHW at this scale takes the tile kernel: test_upsample_tiles_spec)
    (k,) = explain("upsample_nearest2d_backward", V([2, 16, 12, 12], "float32", [2304, 1, 192, 16]), (2, 16, 8, 8),
                   scale_factor=1.5)
    assert k["spec"]["kind"] == 5 and k["local_bytes"] == 0
    # a result that is neither dense NCHW nor channels-last: the element-by-element kernel
    out = V([2, 3, 12, 12], "float32", [1000, 300, 24, 2])
    (k,) = explain("upsample_nearest2d", V([2, 3, 8, 8], "float32"), scale_factor=1.5, out=out)
    assert k["spec"]["kind"] == 0 and k["regime"] == "generic gather"


@pytest.fixture
def fitted_rows():
    yield _core._set_upsample_fitted_rows
    _core._set_upsample_fitted_rows(True)


def test_row_kernels_fit_their_blocks_to_rows_a_power_of_two_leaves_a_quarter_idle(fresh_cache, fitted_rows):
    """Seed 1842's bfloat16 (1x128x152x49) to (329, 41): 41 columns a row, which 64 lanes (two blocks of 32)
    left 23 idle, take two blocks of 21 lanes, 12 rows each; with the knob off, 32 x 8. Rows of 12 in packs of
    4 (3 groups in 4 lanes) leave only a quarter idle and keep theirs (NOTES 104)."""
    x = V([1, 128, 152, 49], "bfloat16")
    (k,) = explain("upsample_nearest2d", x, size=(329, 41))
    assert k["block"] == (21, 12, 1) and k["grid"][0] == 2
    fitted_rows(False)
    (k,) = explain("upsample_nearest2d", x, size=(329, 41))
    assert k["block"] == (32, 8, 1) and k["grid"][0] == 2
    fitted_rows(True)
    (k,) = explain("upsample_nearest2d", V([2, 3, 8, 8], "float32"), scale_factor=1.5)
    assert k["block"][0] == 4


def test_small_calls_and_float64_rows_keep_a_power_of_two_of_lanes(fresh_cache):
    """Under two blocks an SM of threads (16 x 65 rows of 41) fewer, fuller blocks cost more than idle lanes;
    float64 rows ran 0.98x fitted (NOTES 104)."""
    (k,) = explain("upsample_nearest2d", V([1, 16, 30, 49], "float32"), size=(65, 41))
    assert k["block"] == (32, 8, 1)
    (k,) = explain("upsample_nearest2d", V([1, 128, 152, 49], "float64"), size=(329, 41))
    assert k["block"] == (32, 8, 1)


def _channels_last(shape, dtype):
    n, c, h, w = shape
    return V(list(shape), dtype, [h * w * c, 1, w * c, c])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("scale", [0.5, 1.5, 2, 3])
def test_row_backward_holds_few_enough_registers_for_three_blocks_an_sm(fresh_cache, dtype, scale):
    """The backward row kernel keeps each element's window bounds and window loads in registers. Holding 32 loads
    a thread, float16 x0.5 took 226 registers and float64 x1.5 105 (1-2 blocks an SM), and lost to PyTorch; the
    planner now gives a thread fewer elements (NOTES 74)."""
    grad = _channels_last((4, 64, int(48 * scale), int(40 * scale)), dtype)
    (k,) = explain("upsample_nearest2d_backward", grad, (4, 64, 48, 40), scale_factor=scale)
    assert k["spec"]["kind"] == 5 and k["local_bytes"] == 0
    assert k["registers"] <= 72  # 3 blocks of 256 threads an SM or more
    held = 3 + k["spec"]["window_h"] * k["spec"]["window_w"] * max(1, {"float64": 2}.get(dtype, 1))
    assert k["spec"]["vec"] * k["spec"]["unroll"] * held <= 32 or k["spec"]["vec"] * k["spec"]["unroll"] == 1


@pytest.mark.parametrize("op", ["upsample_nearest2d", "upsample_nearest2d_backward"])
def test_row_kernels_take_more_waves_for_a_result_eight_times_the_l2(fresh_cache, op):
    """Past 8 L2s of result, the row kernels' grid is capped at 64 waves rather than 16, so that a thread loops
    over fewer rows: sweep seed 903's float32 backward (1 GB) 894 -> 710 us; smaller results keep 16 waves, where
    more blocks each mapping their columns lost up to 0.66x (NOTES 92)."""
    def rows_plan(n, c):
        if op == "upsample_nearest2d":
            (k,) = explain(op, V([n, c, 109, 146], "float32"), scale_factor=2.5)
        else:
            (k,) = explain(op, V([n, c, 109, 146], "float32"), (n, c, 218, 292), scale_factor=0.5)
        assert k["regime"].startswith("rows of W")
        return k

    wave = 132 * 8  # blocks of 256 threads resident on an H100
    big, small = rows_plan(16, 256), rows_plan(2, 256)  # results of 1-1.6 GB and of 130-203 MB
    assert "waves=64" in big["config"] and big["grid"][0] * big["grid"][1] > 16 * wave
    assert "waves=16" in small["config"] and small["grid"][0] * small["grid"][1] <= 16 * wave


def test_exact_2x_kernels_take_more_waves_for_calls_moving_eight_l2s(fresh_cache):
    """The exact-2x kernels count the bytes read and written: 8 L2s or more cap the grid at 64 waves (71 capped
    plans of seeds 100-699 1.009x faster), less keeps 16 (NOTES 92)."""
    big = explain("upsample_nearest2d_backward", V([8, 64, 512, 512], "float64"), (8, 64, 256, 256), scale_factor=2)
    small = explain("upsample_nearest2d_backward", V([2, 64, 512, 512], "float64"), (2, 64, 256, 256), scale_factor=2)
    assert big[0]["regime"] == small[0]["regime"] == "exact 2x, packed pairs"
    assert "waves=64" in big[0]["config"] and big[0]["grid"][0] > 16 * 132 * 8
    assert "waves=16" in small[0]["config"] and small[0]["grid"][0] <= 16 * 132 * 8


def test_upsample_argument_errors():
    x = V([2, 3, 8, 8], "float32")
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        explain("upsample_nearest2d", x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match="scale_factor: expected positive finite scales"):
        explain("upsample_nearest2d", x, scale_factor=-1)
    with pytest.raises(TypeError, match="size: expected an int or a pair of ints"):
        explain("upsample_nearest2d", x, size="big")
    with pytest.raises(TypeError, match="input_size: expected a sequence of 4 ints"):
        explain("upsample_nearest2d_backward", x, (8, 8))


INTO_OUT = "count: sub-histograms in shared memory, each block's added into the output"
SUMMED_BY_LAST_BLOCK = "count: sub-histograms in shared memory"


def test_histc_auto_range_plans_a_range_kernel_then_a_count(fresh_cache):
    kernels = explain("histc", V([1 << 20], "float32"))
    assert [k["spec"]["kind"] for k in kernels] == [0, 1]
    assert kernels[1]["regime"] == INTO_OUT
    assert kernels[1]["shared_bytes_dynamic"] == 32 * 101 * 4  # a column per lane; a spare row for values outside
    (only,) = explain("histc", V([1 << 20], "float32"), 10, -3, 3)
    assert only["spec"]["kind"] == 1


@pytest.mark.parametrize("x_dtype,counts,n,into", [
    ("float32", None, 1 << 20, True), ("float32", None, 1 << 24, True),
    ("float32", None, (1 << 24) + 4, False),  # a float32 count past 2^24 would round: summed exactly first
    ("float64", None, 1 << 20, True), ("float16", None, 1 << 20, False), ("bfloat16", None, 1 << 20, False),
    ("float16", "int32", 1 << 20, True), ("uint8", "int64", 1 << 22, True), ("float32", "float64", 1 << 20, True),
    ("float32", "int16", 1 << 20, False), ("int32", "uint8", 1 << 20, False),
])
@pytest.mark.parametrize("automatic", [False, True])
def test_histc_count_kernel_adds_into_outputs_that_add_integers_exactly(fresh_cache, x_dtype, counts, n, into,
                                                                        automatic):
    """Each block adds its counts straight into the output where the output's adds of integer counts are
    exact; other outputs (16-bit floats, narrow integers, float32 past 2^24 values) take the counts summed
    in 64-bit scratch by the last block."""
    rng = () if automatic else (-3, 3)
    kernels = explain("histc", V([n], x_dtype), 87, *rng, counts_dtype=counts)
    assert [k["spec"]["kind"] for k in kernels] == ([0, 1] if automatic else [1])
    assert kernels[-1]["regime"] == (INTO_OUT if into else SUMMED_BY_LAST_BLOCK)


def test_histc_counts_into_a_strided_out_only_where_the_range_kernel_zeroes_it(fresh_cache):
    """A memset zeroes a contiguous out before the count kernel; a strided one is zeroed by the range
    kernel of an automatic range, and with an explicit range keeps the last block's hand-off."""
    out = V([87], "float32", strides=[2])
    assert explain("histc", V([1 << 20], "float32"), 87, -3, 3, out=out)[-1]["regime"] == SUMMED_BY_LAST_BLOCK
    assert explain("histc", V([1 << 20], "float32"), 87, out=out)[-1]["regime"] == INTO_OUT
    assert explain("histc", V([1 << 20], "float32"), 87, -3, 3, out=V([87], "float32"))[-1]["regime"] == INTO_OUT


def test_histc_bins_past_shared_memory_count_in_global_memory(fresh_cache):
    big = explain("histc", V([1000], "float32"), 100000, -1, 1)[-1]
    assert big["regime"] == "count: global atomics" and big["shared_bytes_dynamic"] == 0
    one_copy = explain("histc", V([1000], "float32"), 50000, -1, 1)[-1]
    assert one_copy["shared_bytes_dynamic"] == 50001 * 4  # past 48 KiB: opted in


def test_histc_small_explicit_range_is_one_cluster_launch_on_sm90(fresh_cache):
    """sm_90: up to 1 MiB of a dense x (or 131072 strided values, 65536 of 8 bytes) is counted by
    one cluster of 8 blocks that writes the output itself; sm_80 has no clusters and keeps one block
    (tiny x) or the count kernel. Where the count kernel would add into the output, the cluster takes
    only x of fewer than 256 values a bin (an 8-byte value counting as two)."""
    (k,) = explain("histc", V([65536], "float32"), 2201, -1, 2)
    assert k["spec"]["kind"] == 2 and tuple(k["grid"]) == (8, 1, 1) and tuple(k["block"]) == (1024, 1, 1)
    assert "__cluster_dims__(8, 1, 1)" in k["source"] and "cluster" in k["regime"]
    assert "histogram_cluster<float, float, 4>" in k["source"]  # x's type, the counts' type, float4 loads
    # One column of 2202 counters (8192 values a block fill less than two), then the folded row.
    assert k["shared_bytes_dynamic"] == (2202 + 2201) * 4
    assert "mapa.shared::cluster" in k["ptx"]
    (k,) = explain("histc", V([65536], "uint8"), 10, 0, 9, counts_dtype="int16")
    assert "histogram_cluster<unsigned char, short, 16>" in k["source"]
    (k,) = explain("histc", V([27963], "float16", strides=[2]), 11, 0, 1)  # strided
    assert k["spec"]["kind"] == 2 and k["spec"]["dims"] == 1
    f16 = dict(counts_dtype="float16")  # counts the count kernel cannot add into the output: the limits alone
    (k,) = explain("histc", V([1 << 18], "float32"), 100, -3, 3, **f16)
    assert k["spec"]["kind"] == 2 and k["shared_bytes_dynamic"] == (32 * 101 + 100) * 4
    assert explain("histc", V([(1 << 18) + 1], "float32"), 100, -3, 3, **f16)[-1]["spec"]["kind"] == 1
    assert explain("histc", V([131072], "float32", strides=[2]), 100, -3, 3, **f16)[-1]["spec"]["kind"] == 2
    assert explain("histc", V([131073], "float32", strides=[2]), 100, -3, 3, **f16)[-1]["spec"]["kind"] == 1
    assert explain("histc", V([131072], "float16", strides=[2]), 100, -3, 3)[-1]["spec"]["kind"] == 2
    assert explain("histc", V([65536], "float64", strides=[2]), 100, -3, 3, **f16)[-1]["spec"]["kind"] == 2
    assert explain("histc", V([65537], "float64", strides=[2]), 100, -3, 3, **f16)[-1]["spec"]["kind"] == 1
    # Counts the count kernel adds into the output: fewer than 256 values a bin for the cluster.
    assert explain("histc", V([65536], "float32"), 255, -3, 3)[-1]["spec"]["kind"] == 1
    assert explain("histc", V([65536], "float32"), 257, -3, 3)[-1]["spec"]["kind"] == 2
    assert explain("histc", V([65536], "float64", strides=[2]), 512, -3, 3)[-1]["spec"]["kind"] == 1
    assert explain("histc", V([65536], "float64", strides=[2]), 513, -3, 3)[-1]["spec"]["kind"] == 2
    out = V([100], "float32", strides=[2])  # an explicit range adds only into a contiguous out
    assert explain("histc", V([1 << 18], "float32"), 100, -3, 3, out=out)[-1]["spec"]["kind"] == 2
    assert [k["spec"]["kind"] for k in explain("histc", V([1000], "float32"))] == [0, 1]  # automatic range
    (old,) = jitops.explain("histc", V([65536], "float32"), 2201, -1, 2, arch="sm_80")
    assert old["spec"]["kind"] == 1 and "cluster" not in old["source"]


def test_histc_up_to_12288_dense_values_is_one_block_then_a_cluster_or_the_count_kernel(fresh_cache):
    """An explicit range over a dense floating x of up to 12288 values (float64: 2048): one block counts and
    writes the output; past that, one cluster (under 256 values a bin) or the count kernel, both sooner there. An
    integer x of up to 16384 values: one cluster at any bins (NOTES 87)."""
    one_block = "count: one block, straight to the output"
    cluster = "count: one cluster of 8 blocks, straight to the output"
    for bins in (10, 118, 1000):
        assert explain("histc", V([12288], "float32"), bins, -3, 3)[-1]["regime"] == one_block
        assert explain("histc", V([8192], "float16"), bins, -3, 3)[-1]["regime"] == one_block
        assert explain("histc", V([8192], "int32"), bins, -3, 3)[-1]["regime"] == cluster
        assert explain("histc", V([16384], "uint8"), bins, 0, 9)[-1]["regime"] == cluster
    assert explain("histc", V([12289], "float32"), 1000, -3, 3)[-1]["regime"] == cluster
    assert explain("histc", V([32768], "float32"), 118, -3, 3)[-1]["regime"].startswith("count: sub-histograms")
    assert explain("histc", V([12288], "float32", strides=[2]), 10, -3, 3)[-1]["regime"] != one_block  # strided
    # float64: one block up to 2048 values, the cluster past that (NOTES 97)
    assert explain("histc", V([2048], "float64"), 474, 0, 1)[-1]["regime"] == one_block
    assert explain("histc", V([4096, 2], "float64"), 474, 0, 1)[-1]["regime"] == cluster
    assert explain("histc", V([2049], "float64"), 10, 0, 1)[-1]["regime"] != one_block


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(bins=0), ValueError, "bins: expected a positive number of bins"),
    (dict(bins=10, min=3, max=1), ValueError, "max: expected max >= min"),
    (dict(bins=10, min=float("nan"), max=1), ValueError, "min: expected a finite range"),
    (dict(bins=10.5), TypeError, "bins: expected an int"),
    (dict(bins=10, counts_dtype="complex64"), TypeError, "counts_dtype: expected an integer or floating dtype"),
])
def test_histc_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        explain("histc", V([100], "float32"), **kwargs)


def test_histc_explicit_range_that_overflows_the_dtype():
    with pytest.raises(ValueError, match="not finite"):
        explain("histc", V([100], "float16"), 10, -1e6, 1e6)
