"""The elementwise family with no GPU: specialization (pack width, dense vs
strided, number operands), the generated source, and ElementwiseKernel's
parsing, type resolution and compile errors, all through NVRTC."""

import numpy as np
import pytest

import jitops
from jitops import _core

V = _core.VirtualArray


def explain(op, *args, **kwargs):
    return jitops.explain(op, *args, arch="sm_90", **kwargs)


@pytest.mark.parametrize("dtype,pack", [("float32", 4), ("float16", 8), ("bfloat16", 8), ("float64", 2),
                                        ("uint8", 16), ("int64", 2)])
def test_dense_operands_move_in_16_byte_packs(fresh_cache, dtype, pack):
    (k,) = explain("mul", V([1 << 20], dtype), V([1 << 20], dtype))
    assert k["spec"]["pack"] == pack and k["spec"]["dims"] == 0
    assert k["regime"] == "dense, packed"
    assert "The tail" in k["source"]
    # Grid: blocks of 256, capped at SM count x resident blocks x 32 waves.
    assert k["block"] == (256, 1, 1)
    assert k["grid"][0] == min((1 << 20) // pack // 256, 132 * 8 * 32)


@pytest.mark.parametrize("y,n", [("uint8", 43103), (2.5, 4097), ("uint8", 1 << 20)])
def test_dense_tail_loads_come_before_the_loop(fresh_cache, y, n):
    # The tail's loads share the packs' DRAM round trip: issued after the loop, they waited for a second one
    # (NOTES 108). Its compute and store come after the loop.
    other = V([n], y) if isinstance(y, str) else y
    for unroll in ("heuristic", "threads=256 unroll=4 waves=32 vector=16"):
        if unroll == "heuristic":
            (k,) = explain("add", V([n], "uint8"), other)
        else:
            (k,), _ = _core._tuning_run(lambda: explain("add", V([n], "uint8"), other), unroll)
            assert k["spec"]["unroll"] == 4
        body = k["source"][k["source"].index("jitops_kernel("):]
        load, loop, store = body.index("if (tail) t0 = "), body.index("for ("), body.index("if (tail) {")
        assert load < loop < store
        assert ("if (tail) t1 = " in body) == isinstance(y, str)  # a number is no load


@pytest.mark.parametrize("x,y,n,unroll", [
    ("int64", 7, 2_076_263, 2),          # one 16-byte operand: two packs a thread, 32 bytes of loads in flight
    ("float16", 0.5, 4_000_001, 2),
    ("int64", 7, 131_072, 0),            # under two blocks an SM at two packs: one pack a thread
    ("float32", 2.0, 1 << 24, 0),        # full 16-byte loads past ~4 waves: one pack a thread
    ("float32", "float32", 1 << 22, 0),  # two operands already load 32 bytes a pack
    ("uint8", 2.5, 1 << 24, 2),          # 4-byte loads (float32 stores narrow the pack), at any size; at most
                                         # 64 bytes loaded and stored a thread
    ("uint8", "uint8[1]", 1 << 24, 2),   # a one-element operand is read once, before the loop
])
def test_dense_loop_takes_packs_a_thread_by_the_bytes_it_moves(fresh_cache, x, y, n, unroll):
    other = y if not isinstance(y, str) else V([n], "uint8", strides=[0]) if y.endswith("[1]") else V([n], y)
    (k,) = explain("add", V([n], x), other)
    assert k["spec"]["dims"] == 0 and k["spec"]["unroll"] == unroll
    u = max(1, unroll)
    assert k["grid"][0] == -(-max(1, n // k["spec"]["pack"]) // (256 * u))
    if unroll:
        assert k["spec"]["offset"] == 32 and f"constexpr int U = {unroll};" in k["source"] and k["local_bytes"] == 0
    (forced,), _ = _core._tuning_run(lambda: explain("add", V([n], x), other), "threads=128 unroll=4 waves=1 vector=16")
    # forced: 4 packs a thread, a grid of one wave at most (the loop goes over several chunks where it is less)
    assert forced["spec"]["unroll"] == 4 and forced["grid"][0] <= -(-max(1, n // forced["spec"]["pack"]) // 512)


def fields(k):
    return {name: k["spec"][name] for name in ("pack", "dims", "offset", "uniform")}


def test_layouts_pick_dense_packed_or_strided_plans(fresh_cache):
    # a bias over rows: strided, packs along the dense inner dim, 32-bit offsets
    (k,) = explain("add", V([64, 128], "float32"), V([128], "float32"))
    assert k["regime"] == "strided, packed along the inner dim"
    assert fields(k) == {"pack": 4, "dims": 2, "offset": 32, "uniform": 0}
    # one value per row: y is read once per pack (uniform along the inner dim)
    (k,) = explain("mul", V([4096, 4096], "float32"), V([4096, 1], "float32"))
    assert fields(k) == {"pack": 4, "dims": 2, "offset": 32, "uniform": 0b10}
    # one element for everything: dense, y read once per thread
    (k,) = explain("div", V([1 << 20], "bfloat16"), V([1], "bfloat16"))
    assert k["regime"] == "dense, packed" and fields(k)["uniform"] == 0b10 and fields(k)["pack"] == 8
    assert "const __nv_bfloat16 u1 = " in k["source"]
    # operands transposed alike, or channels-last alike, are walked in memory order: dense
    t = V([4096, 2048], "float32", [1, 4096])
    (k,) = explain("add", t, t)
    assert k["regime"] == "dense, packed" and fields(k)["dims"] == 0
    cl = V([8, 32, 16, 16], "float16", [8192, 1, 512, 32])
    (k,) = explain("add", cl, cl)
    assert k["regime"] == "dense, packed"
    (k,) = explain("add", cl, V([32, 1, 1], "float16"))  # channels-last plus a per-channel bias
    assert fields(k) == {"pack": 8, "dims": 2, "offset": 32, "uniform": 0}
    # layouts that disagree along a dim too short to tile: element by element, offsets by FastDivmod
    (k,) = explain("sub", V([300, 9], "float32"), V([300, 9], "float32", [1, 300]))
    assert fields(k) == {"pack": 1, "dims": 2, "offset": 32, "uniform": 0}
    assert k["regime"] == "strided"
    assert "jitops::operand_offsets(p, q0 + L(u) * stride, o[u]);" in k["source"] and k["spec"]["unroll"] >= 1
    # offsets past 2^31 elements: 64-bit
    (k,) = explain("add", V([1 << 16, 1 << 16], "int8"), V([1 << 16], "int8"))
    assert fields(k)["offset"] == 64 and k["regime"] == "strided, packed along the inner dim"


@pytest.mark.parametrize("dims", [4, 5, 6, 7])
def test_dims_that_do_not_collapse_get_their_own_kernel_up_to_six(fresh_cache, dims):
    # x against a y that is 1 along every other dim: no two neighbours collapse
    x_shape = [3, 5, 2, 7, 3, 4, 2][:dims - 1] + [9]
    y_shape = [1 if d % 2 == 0 else n for d, n in enumerate(x_shape)]
    (k,) = explain("mul", V(x_shape, "float32"), V(y_shape, "float32"))
    assert fields(k)["dims"] == (dims if dims <= 6 else 16), k["kernel"]
    assert f"ElementwiseParams<{fields(k)['dims']}, 32>" in k["source"]


TILED = "tiled: operands dense along another dim staged through shared memory"


def strides_for_order(shape, order):
    """Element strides of a dense array whose dims are stored outermost-first in `order`."""
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    return strides


def tile_fields(k):
    return {name: k["spec"][name] for name in ("dims", "offset", "tile_a", "tile_b", "staged")}


def test_disagreeing_layouts_take_tiles(fresh_cache):
    # NOTES item 39's case: y permuted against a contiguous x; the output follows x, y is staged (operand 1)
    shape = [128, 16, 65536]
    x, y = V(shape, "float64"), V(shape, "float64", [16, 1, 2048])
    (k,) = explain("minimum", x, y)
    assert k["regime"] == TILED
    assert tile_fields(k) == {"dims": 2, "offset": 32, "tile_a": 32, "tile_b": 32, "staged": 0b10}
    assert k["block"] == (256, 1, 1) and k["shared_bytes"] == 32 * 33 * 8 and k["local_bytes"] == 0
    assert "__syncthreads();" in k["source"] and "jitops::tile_origin<TA, TB, 3>(p, tile)" in k["source"]
    # the output in y's layout: the walk follows it, x is staged instead
    (k,) = explain("minimum", x, y, out=V(shape, "float64", [16, 1, 2048]))
    assert k["regime"] == TILED and tile_fields(k)["staged"] == 0b01
    # a 3-D permutation keeps a batch dim; a 4-D one two
    # (b's 40 in two tiles of 20, where two of 32 left 24 of 64 idle; a's 50 in two of 32 leaves under a quarter)
    (k,) = explain("add", V([6, 40, 50], "float32"), V([6, 40, 50], "float32", strides_for_order([6, 40, 50], [0, 2, 1])))
    assert tile_fields(k) == {"dims": 3, "offset": 32, "tile_a": 32, "tile_b": 20, "staged": 0b10}
    s4 = [3, 18, 5, 20]
    (k,) = explain("mul", V(s4, "float64", strides_for_order(s4, [0, 3, 2, 1])), V(s4, "float64"))
    assert k["regime"] == TILED and tile_fields(k)["dims"] == 16 and tile_fields(k)["staged"] == 0b10
    # NCHW against channels-last, a number and a broadcast operand along for the ride
    nchw, nhwc = V([8, 32, 16, 16], "float16"), V([8, 32, 16, 16], "float16", [8192, 1, 512, 32])
    (k,) = explain("add", nchw, nhwc)
    assert k["regime"] == TILED and tile_fields(k)["staged"] == 0b10
    (k,) = explain("mul", nhwc, 0.5, out=V([8, 32, 16, 16], "float16"))
    assert k["regime"] == TILED and tile_fields(k)["staged"] == 0b01 and k["spec"]["scalars"] == 0b10
    (k,) = explain("add", V([6, 40, 50], "float32"), V([6, 40, 50], "float32", [0, 1, 40]))  # broadcast over dim 0
    assert k["regime"] == TILED and tile_fields(k)["staged"] == 0b10
    assert k["spec"]["batch_first"] == 0  # the L2 holds what moves between two reads of y's stretch
    # an input broadcast along a batch dim with more than the L2 moving between two reads of its stretch b
    # first (here 631 MB): the tiles of one stretch of b run over the batch first
    x = V([16, 7, 43, 16384], "float64", [301, 43, 1, 4816])
    (k,) = explain("maximum", x, V([7, 43, 16384], "float64", [16384, 114688, 1]))
    assert k["regime"] == TILED and k["spec"]["batch_first"] == 1
    assert "jitops::tile_origin<TA, TB, 3, true>(p, tile)" in k["source"]
    (k,) = explain("maximum", x, V([16, 7, 43, 16384], "float64", [7 * 43 * 16384, 16384, 114688, 1]))  # y not broadcast
    assert k["regime"] == TILED and k["spec"]["batch_first"] == 0
    # offsets past 2^31 elements: 64-bit tiles
    (k,) = explain("add", V([1 << 16, 1 << 16], "int8"), V([1 << 16, 1 << 16], "int8", [1, 1 << 16]))
    assert k["regime"] == TILED and tile_fields(k)["offset"] == 64


def test_tiles_fitted_to_short_dims(fresh_cache):
    # NOTES 102, seed 1829's case: a of 19 (the output follows the transposed x) in one tile of 19 where a
    # power of two left 13 of 32 rows idle; 19 x 32 elements at 4 a thread in whole warps
    shape = [19, 286875]
    x, y = V(shape, "uint8", [1, 19]), V(shape, "uint8")
    (k,) = explain("mul", x, y)
    assert k["regime"] == TILED and tile_fields(k)["tile_a"] == 19 and tile_fields(k)["tile_b"] == 32
    assert k["block"] == (160, 1, 1) and k["shared_bytes"] == 19 * 36  # uint8 rows of 32 padded to 9 words
    assert "ITEMS = (TA * TB + THREADS - 1) / THREADS" in k["source"] and "tile_item_in<TA * TB, THREADS>" in k["source"]
    # the other operand first: b is the short dim; its staged rows of 19 bytes padded to 5 words
    (k,) = explain("mul", y, x)
    assert tile_fields(k)["tile_a"] == 32 and tile_fields(k)["tile_b"] == 19 and k["shared_bytes"] == 32 * 20
    # 35 in two tiles of 18, where two of 32 left 29 of 64 idle
    (k,) = explain("sub", V([4096, 35], "float32"), V([4096, 35], "float32", [1, 4096]))
    assert tile_fields(k)["tile_a"] == 18 and tile_fields(k)["tile_b"] == 32
    # 121 in four tiles of 32 leaves 7 of 128 idle: kept, rows stay aligned to 32 bytes (fitted, 4 of 31,
    # lost 13%)
    (k,) = explain("sub", V([4096, 121], "uint8"), V([4096, 121], "uint8", [1, 4096]))
    assert tile_fields(k)["tile_a"] == 32 and tile_fields(k)["tile_b"] == 32 and k["block"] == (256, 1, 1)
    # the development knob keeps powers of two throughout
    from jitops import _core

    _core._set_elementwise_tile_fitted(False)
    try:
        (k,) = explain("mul", x, y)
        assert tile_fields(k)["tile_a"] == 32 and k["block"] == (256, 1, 1)
    finally:
        _core._set_elementwise_tile_fitted(True)


def test_agreeing_layouts_do_not_take_tiles(fresh_cache):
    t = V([4096, 2048], "float32", [1, 4096])
    assert explain("add", t, t)[0]["regime"] == "dense, packed"  # transposed alike
    assert explain("add", t, 2.0)[0]["regime"] == "dense, packed"
    # broadcast along the inner dim (stride 0 there): read along a, no tile
    (k,) = explain("add", V([2048, 4096], "float32"), V([2048, 1], "float32"))
    assert k["regime"] == "strided, packed along the inner dim"
    # a row bias, and a transposed operand over a dim shorter than 16
    assert explain("add", V([64, 128], "float32"), V([128], "float32"))[0]["regime"] != TILED
    assert explain("add", V([15, 4096], "float32"), V([15, 4096], "float32", [1, 15]))[0]["regime"] == "strided"
    assert explain("add", V([4096, 15], "float32"), V([4096, 15], "float32", [1, 4096]))[0]["regime"] == "strided"
    # the same inner dim, other dims permuted: coalesced already
    s = [6, 40, 50]
    (k,) = explain("add", V(s, "float32"), V(s, "float32", strides_for_order(s, [1, 0, 2])))
    assert k["regime"] == "strided, packed along the inner dim"
    # a staged operand broadcast along a dim, whose reads the walk's blocks share from L1: staging it would
    # save under a tenth of the bytes, so no tile (NOTES 97: seed 920's 436.4 -> 195.5 us)
    (k,) = explain("sub", V([32, 37, 32768], "int32", [37, 1, 1184]), V([37, 32768], "int64"))
    assert k["regime"] == "strided"
    # the same broadcast, but the walk reads a sector an element of it (one byte, far along b): tiled
    (k,) = explain("add", V([16, 2, 215, 16384], "uint8"), V([1, 1, 215, 16384], "uint8", [0, 0, 1, 215]))
    assert k["regime"] == TILED and tile_fields(k)["staged"] == 0b10
    # nothing to launch for an empty array
    assert explain("add", V([0, 64], "float32"), V([0, 64], "float32", [1, 1])) == []


ELEMENTWISE_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                      "bfloat16", "float32", "float64"]
PICK = jitops.ElementwiseKernel("T x, T y", "T z", "z = x < y ? x : y", "pick")


@pytest.mark.parametrize("dtype", ELEMENTWISE_DTYPES)
def test_tiled_kernels_compile_for_every_dtype_without_local_memory(fresh_cache, dtype):
    shape = [37, 3, 129]
    x, y = V(shape, dtype), V(shape, dtype, strides_for_order(shape, [2, 1, 0]))
    reports = PICK.explain(x, y)
    if dtype != "bool":  # the built-ins take no bool x bool
        reports += explain("minimum", x, y)
    for k in reports:
        assert k["regime"] == TILED and k["local_bytes"] == 0, (dtype, k["kernel"])
        assert k["registers"] <= 64, (dtype, k["registers"])
        assert k["shared_bytes"] <= 48 * 1024


def test_tile_shape_follows_short_dims_block_size_and_shared_memory(fresh_cache):
    # a short b gives its share to a, and the other way round: the tile keeps 4 elements a thread
    (k,) = explain("add", V([16, 1000], "float32"), V([16, 1000], "float32", [1, 16]))
    assert (k["spec"]["tile_a"], k["spec"]["tile_b"]) == (64, 16)
    (k,) = explain("add", V([1000, 16], "uint8"), V([1000, 16], "uint8", [1, 1000]))
    assert (k["spec"]["tile_a"], k["spec"]["tile_b"]) == (16, 64)
    # short dims both ways: a 16 x 16 tile takes 64 threads, 4 elements each (NOTES 97: seed 599)
    s4 = [1429, 69, 16, 16]
    (k,) = explain("div", V(s4, "bfloat16", [256, 365824, 1, 16]), V(s4, "bfloat16"))
    assert (k["spec"]["tile_a"], k["spec"]["tile_b"], k["block"][0], k["spec"]["threads"]) == (16, 16, 64, 64)
    # the block size is the tuning knob: 1024 threads take 64 x 64 tiles
    x, y = V([300, 400], "int8"), V([300, 400], "int8", [1, 300])
    (k,), (point,) = _core._tuning_run(lambda: explain("add", x, y), "threads=1024 unroll=1 waves=8 vector=16")
    assert (k["spec"]["tile_a"], k["spec"]["tile_b"], k["block"][0]) == (64, 64, 1024)
    # tiled launches are tuning points of their own: the extents of a and b (capped at 2^8) are in the bucket
    assert point["description"].endswith("sizes~2^17,2^8,2^8")
    _, (strided,) = _core._tuning_run(lambda: explain("add", V([300, 9], "int8"), V([300, 9], "int8", [1, 300])))
    assert strided["description"].endswith(",2^0,2^0")
    # seven staged float64 inputs: the tile shrinks into 48 KiB of shared memory, the block with it
    many = jitops.ElementwiseKernel("T a, T b, T c, T d, T e, T f, T g", "T z", "z = a + b * c - d + e * f - g", "many")
    ins = [V([500, 600], "float64", [1, 500]) for _ in range(7)]
    (k,) = many.explain(*ins, V([500, 600], "float64"))
    assert k["regime"] == TILED and k["spec"]["staged"] == 0b1111111
    assert k["shared_bytes"] <= 48 * 1024 and k["spec"]["tile_a"] * k["spec"]["tile_b"] == 512
    assert k["block"][0] == 256 and k["local_bytes"] == 0


def test_tiled_outputs_laid_out_either_way(fresh_cache):
    two = jitops.ElementwiseKernel("T x, T y", "T z, float64 w", "z = x - y; w = double(x) * 2 + double(y)", "two")
    x, y = V([90, 70], "float32"), V([90, 70], "float32", [1, 90])
    # the second output in y's layout is staged too, and written along b after the block's tile is computed
    (k,) = two.explain(x, y, V([90, 70], "float32"), V([90, 70], "float64", [1, 90]))
    assert k["regime"] == TILED and k["spec"]["staged"] == 0b1010 and k["spec"]["load_outputs"] == 1
    assert k["source"].count("__syncthreads();") == 3 and k["local_bytes"] == 0


def test_number_operand_is_a_scalar_in_the_compute_type(fresh_cache):
    (k,) = explain("mul", V([1000], "float16"), 2.5)
    assert k["spec"]["scalars"] == 0b10
    assert "typedef float C;" in k["source"]  # 16-bit floats compute in float
    (k,) = explain("div", V([1000], "int32"), V([1000], "int32"))
    assert "typedef double Z;" in k["source"]  # integer division gives numpy's float64 outside PyTorch
    (k,) = explain("div", V([1000], "int32"), V([1000], "int32"), _promotion="torch")
    assert "typedef float Z;" in k["source"]  # and PyTorch's float32 for its tensors


def test_elementwise_kernel_specializes_per_resolved_type(fresh_cache):
    k = jitops.ElementwiseKernel("T x, T y", "T z", "z = x * y + 1", "fma1")
    a = k.explain(V([100], "float32"), V([100], "float32"))[0]
    b = k.explain(V([100], "float16"), V([100], "float16"))[0]
    assert a["spec"] != b["spec"]
    assert "typedef float T;" in a["source"] and "typedef __half T;" in b["source"]
    assert '#line 1 "fma1"' in a["source"]


def test_elementwise_kernel_compile_error_points_at_the_operation(fresh_cache):
    k = jitops.ElementwiseKernel("T x", "T y", "float t = x;\ny = t * undefined_name", "broken")
    with pytest.raises(jitops.CompileError, match=r"operation line 2: error: identifier \"undefined_name\" is undefined"):
        k.explain(V([10], "float32"))


@pytest.mark.parametrize("args,error,match", [
    (("T x", "T y", "y = x", "not an identifier"), ValueError, "name: expected a C identifier"),
    (("T", "T y", "y = x", "k"), ValueError, "in_params: expected 'type name' pairs"),
    (("T x, T x", "T y", "y = x", "k"), ValueError, "parameter names must be distinct"),
    (("raw T x", "T y", "y = x", "k"), ValueError, "in_params: expected 'type name' pairs"),
    (("T x", "T y", "", "k"), ValueError, "operation: expected C\\+\\+ statements"),
])
def test_elementwise_kernel_bad_definitions(args, error, match):
    with pytest.raises(error, match=match):
        jitops.ElementwiseKernel(*args)


def test_elementwise_kernel_type_resolution():
    k = jitops.ElementwiseKernel("T x, int32 n, S s", "U z", "z = x * n + s", "resolve")
    with pytest.raises(TypeError, match="z: type U is not set by any input; pass out= for it"):
        k.explain(V([10], "float32"), V([10], "int32"), 2.0)
    with pytest.raises(TypeError, match="n: expected dtype int32 \\(got int64\\)"):
        k.explain(V([10], "float32"), V([10], "int64"), 2.0, V([10], "float32"))
    (r,) = k.explain(V([10], "float32"), V([10], "int32"), 2, V([10], "float64"))
    assert "typedef long long S;" in r["source"] and "typedef double U;" in r["source"]
