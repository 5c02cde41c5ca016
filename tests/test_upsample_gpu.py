"""upsample_nearest2d and its backward on the GPU, bit for bit against
PyTorch (torch.nn.functional.interpolate and its autograd gradient) and
against a numpy reference, for every dtype x layout (NCHW, channels-last,
sliced) x scale (exact 2x by size and by factor, 1.5, odd sizes, a
downscale), into fresh and poisoned outputs; the backward's tile kernel on
the cases it takes (integer, fractional and explicit scales, empty and wide
windows, misaligned and H-sliced gradients, wide rows) and on the sweep's
shapes, where it must match the row kernels bit for bit too."""

import zlib

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, poisoned_like, to_numpy

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("upsample_tiles_on_narrow_rows")]
torch = pytest.importorskip("torch")
F = torch.nn.functional



DEVICE = "cuda"
DTYPES = ["float16", "bfloat16", "float32", "float64", "uint8"]
SCALES = {"2x_size": dict(size=(2 * 10, 2 * 12)), "2x_factor": dict(scale_factor=2),
          "1.5_factor": dict(scale_factor=1.5), "odd_size": dict(size=(13, 29)), "down": dict(scale_factor=0.5),
          "mixed": dict(scale_factor=(3, 0.75))}


def make_input(dtype, layout, shape=(2, 3, 10, 12), seed=0):
    rng = np.random.default_rng(seed)
    t_dtype = getattr(torch, dtype)
    full = (shape[0], shape[1], shape[2], shape[3] * 2) if layout == "sliced" else shape
    if dtype == "uint8":
        x = torch.from_numpy(rng.integers(1, 255, full, dtype=np.uint8))
    else:
        x = torch.from_numpy(rng.standard_normal(full)).to(t_dtype)
    x = x.to(DEVICE)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    if layout == "sliced":
        x = x[..., ::2]
    return x


def source_index(out_size, in_size, scale):
    dst = np.arange(out_size, dtype=np.float32)
    return np.minimum(np.floor(dst * np.float32(scale)).astype(np.int64), in_size - 1)


def numpy_forward(x, out_h, out_w, scale_h, scale_w):
    a = x.detach().cpu().numpy() if x.dtype != torch.bfloat16 else x.detach().cpu().view(torch.int16).numpy()
    return a[:, :, source_index(out_h, a.shape[2], scale_h)][:, :, :, source_index(out_w, a.shape[3], scale_w)]


def kernel_scales(x, kwargs):
    h, w = x.shape[2], x.shape[3]
    if "size" in kwargs:
        oh, ow = kwargs["size"]
        return oh, ow, np.float32(h) / np.float32(oh), np.float32(w) / np.float32(ow)
    sf = kwargs["scale_factor"]
    sh, sw = (sf, sf) if np.isscalar(sf) else sf
    return int(np.floor(h * sh)), int(np.floor(w * sw)), np.float32(1.0 / sh), np.float32(1.0 / sw)


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("layout", ["nchw", "channels_last", "sliced"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward(dtype, layout, scale):
    x = make_input(dtype, layout, seed=zlib.crc32(f"{dtype}{layout}{scale}".encode()))
    kwargs = SCALES[scale]
    expected = F.interpolate(x, mode="nearest", **kwargs)
    got = jitops.upsample_nearest2d(x, **kwargs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, expected))
    if layout == "channels_last":
        assert got.is_contiguous(memory_format=torch.channels_last)
    oh, ow, sh, sw = kernel_scales(x, kwargs)
    assert_same_bits(to_numpy(torch, got), numpy_forward(x, oh, ow, sh, sw))
    out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
    assert jitops.upsample_nearest2d(x, out=out, **kwargs) is out
    assert_same_bits(to_numpy(torch, out), to_numpy(torch, expected))


def numpy_backward(grad, in_h, in_w, scale_h, scale_w, dtype):
    """Window sums in float32 (float64 for float64, wrapping uint32 for uint8), row by row."""
    g = grad.detach().cpu()
    acc = np.float64 if dtype == "float64" else np.uint32 if dtype == "uint8" else np.float32
    a = g.float().numpy().astype(acc) if dtype in ("float16", "bfloat16") else g.numpy().astype(acc)
    out_h, out_w = a.shape[2], a.shape[3]

    def window(i, s, out):
        return min(int(np.ceil(np.float32(i) * np.float32(s))), out)

    result = np.zeros(a.shape[:2] + (in_h, in_w), dtype=acc)
    for h in range(in_h):
        for w in range(in_w):
            total = np.zeros(a.shape[:2], dtype=acc)
            for y in range(window(h, scale_h, out_h), window(h + 1, scale_h, out_h)):
                for x in range(window(w, scale_w, out_w), window(w + 1, scale_w, out_w)):
                    total = total + a[:, :, y, x]
            result[:, :, h, w] = total
    return result


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("layout", ["nchw", "channels_last", "sliced"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward(dtype, layout, scale):
    x = make_input(dtype if dtype != "uint8" else "float32", "nchw", seed=1)
    kwargs = SCALES[scale]
    oh, ow, _, _ = kernel_scales(x, kwargs)
    grad = make_input(dtype, layout, shape=(2, 3, oh, ow), seed=zlib.crc32(f"g{dtype}{layout}{scale}".encode()))
    factor = kwargs.get("scale_factor")
    got = jitops.upsample_nearest2d_backward(grad, tuple(x.shape), scale_factor=factor)
    assert got.shape == x.shape and got.dtype == grad.dtype
    bh = np.float32(factor if np.isscalar(factor) else factor[0]) if factor is not None else np.float32(oh) / np.float32(x.shape[2])
    bw = np.float32(factor if np.isscalar(factor) else factor[1]) if factor is not None else np.float32(ow) / np.float32(x.shape[3])
    ref = numpy_backward(grad, x.shape[2], x.shape[3], bh, bw, dtype)
    if dtype == "uint8":
        np.testing.assert_array_equal(got.cpu().numpy(), ref.astype(np.uint8))
        return
    # Bit for bit against PyTorch's own gradient.
    xr = x.to(grad.dtype).detach().requires_grad_(True)
    F.interpolate(xr, mode="nearest", **kwargs).backward(grad)
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, xr.grad))
    expected = torch.from_numpy(ref).to(grad.dtype)
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, expected))
    out = poisoned_like(torch, tuple(x.shape), grad.dtype, DEVICE)
    jitops.upsample_nearest2d_backward(grad, tuple(x.shape), scale_factor=factor, out=out)
    assert_same_bits(to_numpy(torch, out), to_numpy(torch, xr.grad))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_exact_2x_packed_kernels_with_odd_width(dtype):
    # Width 7: the packs fall back to single elements; results must not change.
    x = make_input(dtype, "nchw", shape=(3, 5, 9, 7), seed=5)
    got = jitops.upsample_nearest2d(x, scale_factor=2)
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, F.interpolate(x, scale_factor=2, mode="nearest")))
    grad = make_input(dtype, "nchw", shape=(3, 5, 18, 14), seed=6)
    xr = x.detach().requires_grad_(True)
    F.interpolate(xr, scale_factor=2, mode="nearest").backward(grad)
    got_grad = jitops.upsample_nearest2d_backward(grad, tuple(x.shape), scale_factor=2)
    assert_same_bits(to_numpy(torch, got_grad), to_numpy(torch, xr.grad))


def test_bad_calls_leave_the_next_call_working():
    x = torch.randn(2, 3, 4, 4, device=DEVICE)
    with pytest.raises(ValueError, match="size: expected exactly one of size and scale_factor"):
        jitops.upsample_nearest2d(x)
    with pytest.raises(ValueError, match="x: expected a 4-d array"):
        jitops.upsample_nearest2d(x[0], scale_factor=2)
    with pytest.raises(TypeError, match="x: upsample_nearest2d supports"):
        jitops.upsample_nearest2d(x.to(torch.int32), scale_factor=2)
    with pytest.raises(ValueError, match="grad_output: expected shape"):
        jitops.upsample_nearest2d_backward(x, (2, 3, 4, 4), scale_factor=2)
    got = jitops.upsample_nearest2d(x, scale_factor=2)
    assert torch.equal(got, F.interpolate(x, scale_factor=2, mode="nearest"))


ROW_SHAPES = {  # (shape, layout, kwargs): each a different row-kernel plan (pack width, columns a thread, layout)
    "odd_wide_rows": ((2, 5, 37, 201), "nchw", dict(size=(81, 403))),
    "uint8_x3_packs_of_16": ((2, 4, 16, 32), "nchw", dict(scale_factor=3)),
    "rgb_channels_last": ((2, 3, 50, 48), "channels_last", dict(scale_factor=1.5)),
    "wide_channels_last": ((2, 64, 9, 10), "channels_last", dict(scale_factor=3)),
    "channels_last_down": ((2, 16, 40, 30), "channels_last", dict(scale_factor=0.5)),
    "sliced_to_odd": ((3, 7, 21, 23), "sliced", dict(size=(50, 47))),
    # rows of 41 and 39 groups: forward blocks fitted to the row (21 and 20 lanes, warps spanning rows;
    # float64 keeps 32 lanes)
    "fitted_41_columns": ((2, 16, 30, 49), "nchw", dict(size=(65, 41))),
    "fitted_channels_last": ((8, 3, 120, 15), "channels_last", dict(size=(240, 13))),
}


@pytest.mark.parametrize("case", list(ROW_SHAPES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_kernels_forward_and_backward(dtype, case):
    shape, layout, kwargs = ROW_SHAPES[case]
    x = make_input(dtype, layout, shape=shape, seed=zlib.crc32(f"rows{dtype}{case}".encode()))
    expected = F.interpolate(x, mode="nearest", **kwargs)
    out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
    if layout == "channels_last":  # poisoned bytes, channels-last strides
        out = out.contiguous(memory_format=torch.channels_last)
    got = jitops.upsample_nearest2d(x, **kwargs)
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, expected))
    assert got.is_contiguous(memory_format=torch.channels_last) == (layout == "channels_last")
    assert jitops.upsample_nearest2d(x, out=out, **kwargs) is out
    assert_same_bits(to_numpy(torch, out), to_numpy(torch, expected))
    if dtype == "uint8":
        return
    grad = make_input(dtype, layout, shape=tuple(expected.shape), seed=zlib.crc32(f"rowsg{dtype}{case}".encode()))
    xr = x.detach().clone().requires_grad_(True)
    F.interpolate(xr, mode="nearest", **kwargs).backward(grad)
    factor = kwargs.get("scale_factor")
    got_grad = jitops.upsample_nearest2d_backward(grad, tuple(x.shape), scale_factor=factor)
    assert_same_bits(to_numpy(torch, got_grad), to_numpy(torch, xr.grad))


TILE_CASES = {  # (input shape, grad layout, kwargs): backward calls the tile kernel takes (upsample_tiles.cuh)
    "x3": ((2, 3, 20, 23), "nchw", dict(scale_factor=3)),
    "x3_even": ((2, 3, 20, 24), "nchw", dict(scale_factor=3)),  # 16- and 8-bit types: 2 or 4 elements an item
    "x4": ((2, 3, 11, 13), "nchw", dict(scale_factor=4)),
    "x1.5": ((2, 3, 17, 23), "nchw", dict(scale_factor=1.5)),
    "x2.5": ((2, 3, 17, 23), "nchw", dict(scale_factor=2.5)),
    "odd_size": ((2, 3, 19, 29), "nchw", dict(size=(31, 47))),
    "odd_size_h_down": ((2, 3, 19, 29), "nchw", dict(size=(13, 47))),
    "empty_windows": ((2, 3, 20, 20), "nchw", dict(scale_factor=(0.5, 3))),
    "x7_loops": ((2, 2, 10, 11), "nchw", dict(scale_factor=7)),
    "channels_last_x3": ((2, 3, 20, 23), "channels_last", dict(scale_factor=3)),
    "channels_last_x1.5": ((2, 4, 17, 23), "channels_last", dict(scale_factor=1.5)),
    "rows_apart": ((2, 3, 20, 23), "h_sliced", dict(scale_factor=3)),
    "misaligned": ((2, 3, 20, 23), "offset", dict(scale_factor=3)),
    "wide_rows": ((1, 2, 6, 900), "nchw", dict(scale_factor=3)),
}
# float64 summed over windows of 3x3 or more takes the row kernels (runtime/ops/upsample_tiles_plan.cpp)
FLOAT64_ON_ROWS = {"x3", "x3_even", "x4", "x2.5", "channels_last_x3", "rows_apart", "misaligned", "wide_rows"}


def tile_grad(dtype, layout, shape, seed):
    """make_input's data, or every other H of a taller gradient (h_sliced), or one element past an aligned
    start (offset)."""
    if layout == "h_sliced":
        return make_input(dtype, "nchw", shape=(shape[0], shape[1], 2 * shape[2], shape[3]), seed=seed)[:, :, ::2]
    if layout == "offset":
        flat = make_input(dtype, "nchw", shape=(1, 1, 1, int(np.prod(shape)) + 1), seed=seed).reshape(-1)
        return flat[1:].view(shape)
    return make_input(dtype, layout, shape=shape, seed=seed)


def backward_scales(x, oh, ow, factor):
    if factor is None:
        return np.float32(oh) / np.float32(x.shape[2]), np.float32(ow) / np.float32(x.shape[3])
    return (np.float32(factor), np.float32(factor)) if np.isscalar(factor) else tuple(map(np.float32, factor))


@pytest.mark.parametrize("case", list(TILE_CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_backward_tile_kernel(dtype, case):
    shape, layout, kwargs = TILE_CASES[case]
    x = make_input(dtype if dtype != "uint8" else "float32", "nchw", shape=shape, seed=3)
    oh, ow, _, _ = kernel_scales(x, kwargs)
    grad = tile_grad(dtype, layout, (shape[0], shape[1], oh, ow), zlib.crc32(f"tiles{dtype}{case}".encode()))
    factor = kwargs.get("scale_factor")
    (report,) = jitops.explain(jitops.upsample_nearest2d_backward, grad, tuple(x.shape), scale_factor=factor)
    wide_pixels = layout == "channels_last" and shape[1] * grad.element_size() >= 32  # the row kernels' case
    on_rows = wide_pixels or (dtype == "float64" and case in FLOAT64_ON_ROWS)
    assert report["regime"].startswith("rows of" if on_rows else "tiles of rows")
    out = poisoned_like(torch, tuple(x.shape), grad.dtype, DEVICE)
    if layout == "channels_last":
        out = out.contiguous(memory_format=torch.channels_last)
    assert jitops.upsample_nearest2d_backward(grad, tuple(x.shape), scale_factor=factor, out=out) is out
    got = jitops.upsample_nearest2d_backward(grad, tuple(x.shape), scale_factor=factor)
    ref = numpy_backward(grad, x.shape[2], x.shape[3], *backward_scales(x, oh, ow, factor), dtype)
    if dtype == "uint8":
        np.testing.assert_array_equal(out.cpu().numpy(), ref.astype(np.uint8))
        np.testing.assert_array_equal(got.cpu().numpy(), ref.astype(np.uint8))
        return
    xr = x.to(grad.dtype).detach().requires_grad_(True)
    F.interpolate(xr, mode="nearest", **kwargs).backward(grad)
    assert_same_bits(to_numpy(torch, out), to_numpy(torch, xr.grad))
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, xr.grad))
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, torch.from_numpy(ref).to(grad.dtype)))


@pytest.mark.parametrize("grad_shape,in_size,factor", [
    ((1, 256, 441, 417), (1, 256, 147, 139), 3.0),   # the sweep's x3 case
    ((4, 32, 231, 307), (4, 32, 194, 283), None),    # ... and its size= case: windows of 1 and 2
])
def test_backward_tile_kernel_on_the_sweep_shapes(grad_shape, in_size, factor):
    grad = torch.randn(grad_shape, device=DEVICE)
    expected = torch.ops.aten.upsample_nearest2d_backward(grad, list(grad_shape[2:]), list(in_size), factor, factor)
    got = jitops.upsample_nearest2d_backward(grad, in_size, scale_factor=factor)
    assert_same_bits(to_numpy(torch, got), to_numpy(torch, expected))
    jitops._core._set_upsample_tiles(False)  # the row kernels: the same bits
    try:
        rows = jitops.upsample_nearest2d_backward(grad, in_size, scale_factor=factor)
    finally:
        jitops._core._set_upsample_tiles(True)
    assert_same_bits(to_numpy(torch, rows), to_numpy(torch, got))


@pytest.mark.parametrize("direction", ["forward", "backward", "backward_2x"])
def test_kernels_on_calls_past_eight_l2s(direction):
    """Calls of 8 L2s or more take a grid of up to 64 waves (NOTES 92): the row kernels float32 x3 up and x0.5
    down (500 MB written on an H100, its batch grown to pass 8 L2s of a larger L2) and the exact-2x backward
    (670 MB moved), against numpy and PyTorch, into a poisoned output."""
    rng = np.random.default_rng(92)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    n = max(8, -(-8 * l2 // (64 * 480 * 510 * 4)))  # the row kernels' large side: 8 L2s or more
    in_shapes = {"forward": (n, 64, 160, 170), "backward": (n, 64, 480, 510), "backward_2x": (8, 64, 256, 256)}
    in_shape = in_shapes[direction]
    if direction == "backward_2x":
        a = rng.standard_normal((8, 64, 512, 512), dtype=np.float32)
        grad = torch.from_numpy(a).to(DEVICE)
        # window sums from zero, rows then columns (a -0.0 term alone sums to +0.0, as in PyTorch)
        expected = np.float32(0) + a[:, :, 0::2, 0::2]
        for term in (a[:, :, 0::2, 1::2], a[:, :, 1::2, 0::2], a[:, :, 1::2, 1::2]):
            expected = expected + term
        call = lambda **out: jitops.upsample_nearest2d_backward(grad, in_shape, scale_factor=2, **out)  # noqa: E731
        (plan,) = jitops.explain("upsample_nearest2d_backward", grad, in_shape, scale_factor=2)
        xr = torch.zeros(in_shape, device=DEVICE, requires_grad=True)
        F.interpolate(xr, scale_factor=2, mode="nearest").backward(grad)
        theirs = xr.grad
        moved = a.nbytes + expected.nbytes
    elif direction == "forward":
        a = rng.standard_normal(in_shape, dtype=np.float32)
        x = torch.from_numpy(a).to(DEVICE)
        expected = numpy_forward(x, 480, 510, np.float32(1 / 3), np.float32(1 / 3))
        call = lambda **out: jitops.upsample_nearest2d(x, scale_factor=3, **out)  # noqa: E731
        (plan,) = jitops.explain("upsample_nearest2d", x, scale_factor=3)
        theirs = F.interpolate(x, scale_factor=3, mode="nearest")
    else:
        a = rng.standard_normal((n, 64, 240, 255), dtype=np.float32)
        grad = torch.from_numpy(a).to(DEVICE)
        expected = np.zeros(in_shape, dtype=np.float32)  # each even (h, w) takes one term, the rest none
        expected[:, :, ::2, ::2] = np.float32(0) + a  # summed from zero: standard_normal's few -0.0 give +0.0
        call = lambda **out: jitops.upsample_nearest2d_backward(grad, in_shape, scale_factor=0.5, **out)  # noqa: E731
        (plan,) = jitops.explain("upsample_nearest2d_backward", grad, in_shape, scale_factor=0.5)
        xr = torch.zeros(in_shape, device=DEVICE, requires_grad=True)
        F.interpolate(xr, scale_factor=0.5, mode="nearest").backward(grad)
        theirs = xr.grad
    if direction == "backward_2x":
        assert moved >= 8 * l2 and plan["regime"] == "exact 2x, packed pairs"
    else:
        assert expected.nbytes >= 8 * l2 and plan["regime"].startswith("rows of W")
    assert "waves=64" in plan["config"]
    out = poisoned_like(torch, expected.shape, torch.float32, DEVICE)
    assert call(out=out) is out
    assert_same_bits(to_numpy(torch, out), expected)
    assert_same_bits(to_numpy(torch, call()), to_numpy(torch, theirs))
