"""upsample_nearest2d's kernels run on the CPU (tests/host_kernel.py), bit for
bit against numpy: the launch jitops plans, its index arithmetic and its
order of sums, for layouts, alignments and scales that pick different plans.
No GPU needed; 16-bit floats run as unsigned short (indexing, not rounding:
the GPU tests check their sums)."""

import zlib

import numpy as np
import pytest

import jitops
from host_kernel import HostKernels, compiler, virtual

pytestmark = [pytest.mark.skipif(compiler() is None, reason="no host C++ compiler"), pytest.mark.usefixtures("upsample_tiles_on_narrow_rows")]



STORAGE = {"float16": np.uint16, "float32": np.float32, "float64": np.float64, "uint8": np.uint8}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return HostKernels(tmp_path_factory.mktemp("host_kernels"))


def make(rng, shape, dtype, layout="nchw", offset=0):
    """Random data of `shape` (N, C, H, W) laid out as `layout`, `offset` elements past an aligned start:
    nchw, channels_last, w_sliced (every other W) or h_sliced (every other H: rows that do not follow)."""
    n, c, h, w = shape
    full = {"w_sliced": (n, c, h, 2 * w), "h_sliced": (n, c, 2 * h, w)}.get(layout, shape)
    order = (0, 2, 3, 1) if layout == "channels_last" else (0, 1, 2, 3)
    stored = tuple(full[d] for d in order)
    base = np.empty(int(np.prod(stored)) + offset, STORAGE[dtype])[offset:].reshape(stored)
    if base.dtype.kind == "f":
        base[...] = rng.standard_normal(stored)
    else:
        base[...] = rng.integers(0, np.iinfo(base.dtype).max, stored, endpoint=True)
    a = base.transpose(np.argsort(order))
    return {"w_sliced": a[..., ::2], "h_sliced": a[:, :, ::2]}.get(layout, a)


def empty_like_layout(shape, dtype, layout):
    """A poisoned output of `shape`, channels-last where `layout` is."""
    n, c, h, w = shape
    stored = np.empty((n, h, w, c) if layout == "channels_last" else shape, STORAGE[dtype])
    stored.view(np.uint8)[...] = 0xA5
    return stored.transpose(0, 3, 1, 2) if layout == "channels_last" else stored


def edge(i, scale, limit):
    return min(int(np.ceil(np.float32(i) * np.float32(scale))), limit)


def numpy_backward(grad, in_h, in_w, scale_h, scale_w):
    """Window sums from zero, rows then columns (PyTorch's order), in float32 for float32, float64 for
    float64, wrapping integers otherwise."""
    acc = {np.float32: np.float32, np.float64: np.float64}.get(grad.dtype.type, np.uint32)
    a = grad.astype(acc)
    out_h, out_w = a.shape[2], a.shape[3]
    result = np.zeros(a.shape[:2] + (in_h, in_w), acc)
    for h in range(in_h):
        for w in range(in_w):
            total = np.zeros(a.shape[:2], acc)
            for y in range(edge(h, scale_h, out_h), edge(h + 1, scale_h, out_h)):
                for x in range(edge(w, scale_w, out_w), edge(w + 1, scale_w, out_w)):
                    total = total + a[:, :, y, x]
            result[:, :, h, w] = total
    return result.astype(grad.dtype)


def numpy_forward(x, out_h, out_w, scale_h, scale_w):
    def source(n, size, scale):
        return np.minimum(np.floor(np.arange(n, dtype=np.float32) * np.float32(scale)).astype(np.int64), size - 1)
    return x[:, :, source(out_h, x.shape[2], scale_h)][:, :, :, source(out_w, x.shape[3], scale_w)]


def backward_case(kernels, in_size, dtype="float32", layout="nchw", offset=0, scale=None, size=None, out_layout=None):
    """Runs the planned backward on the host; returns its regime after checking every bit."""
    rng = np.random.default_rng(zlib.crc32(repr((in_size, dtype, layout, offset, scale, size)).encode()))
    n, c, in_h, in_w = in_size
    if scale is not None:
        sh, sw = scale if isinstance(scale, tuple) else (scale, scale)
        size = (int(np.floor(in_h * sh)), int(np.floor(in_w * sw)))
    else:
        sh, sw = np.float32(size[0]) / np.float32(in_h), np.float32(size[1]) / np.float32(in_w)
    grad = make(rng, (n, c) + tuple(size), dtype, layout, offset)
    out = empty_like_layout(in_size, dtype, out_layout or layout)
    (report,) = jitops.explain("upsample_nearest2d_backward", virtual(grad, dtype), in_size, scale_factor=scale,
                               out=virtual(out, dtype), arch="sm_90")
    kernels.run(report)
    np.testing.assert_array_equal(out, numpy_backward(grad, in_h, in_w, sh, sw))
    return report["regime"]


# Row kernels (templates/upsample_rows.cuh): windows of one column, wide
# channels-last pixels, a W-sliced output gradient, an output written in
# another layout.
ROW_CASES = {
    "h_only_windows": dict(in_size=(2, 3, 9, 20), scale=(3, 0.75)),
    "wide_pixels_channels_last": dict(in_size=(2, 16, 7, 6), scale=3, layout="channels_last"),
    "w_sliced": dict(in_size=(2, 3, 9, 11), scale=1.5, layout="w_sliced", dtype="float64"),
    "written_channels_last": dict(in_size=(2, 3, 9, 11), size=(19, 23), out_layout="channels_last"),
    "downscale_uint8": dict(in_size=(2, 3, 16, 14), scale=0.5, dtype="uint8", offset=1),
}


@pytest.mark.parametrize("case", list(ROW_CASES))
def test_backward_row_kernels(kernels, case):
    assert backward_case(kernels, **ROW_CASES[case]).startswith("rows of")


@pytest.mark.parametrize("dtype,layout,kwargs", [
    ("float32", "nchw", dict(scale_factor=1.5)),
    ("float16", "channels_last", dict(scale_factor=3)),
    ("uint8", "w_sliced", dict(size=(13, 29))),
])
def test_forward_row_kernels(kernels, dtype, layout, kwargs):
    rng = np.random.default_rng(7)
    x = make(rng, (2, 4, 9, 11), dtype, layout, offset=1)
    if "size" in kwargs:
        oh, ow = kwargs["size"]
        sh, sw = np.float32(9) / np.float32(oh), np.float32(11) / np.float32(ow)
    else:
        f = kwargs["scale_factor"]
        oh, ow, sh, sw = int(9 * f), int(11 * f), np.float32(1 / f), np.float32(1 / f)
    out = empty_like_layout((2, 4, oh, ow), dtype, "channels_last" if layout == "channels_last" else "nchw")
    (report,) = jitops.explain("upsample_nearest2d", virtual(x, dtype), out=virtual(out, dtype), arch="sm_90", **kwargs)
    assert report["regime"].startswith("rows of")
    kernels.run(report)
    np.testing.assert_array_equal(out, numpy_forward(x, oh, ow, sh, sw))


# The tile kernel (templates/upsample_tiles.cuh): whole rows as one span at
# every misalignment and element size (16-byte units of 16, 8, 4 and 2
# elements), fractional and explicit sizes, empty windows, channels-last,
# rows staged one by one, column chunks of wide rows, windows summed in loops
# (float64 under windows of 3x3 or more takes the row kernels: its cases keep
# one dim's windows narrower).
TILE_CASES = {
    "x3": dict(in_size=(2, 3, 10, 9), scale=3),
    "x3_misaligned": dict(in_size=(2, 3, 10, 9), scale=3, offset=1),
    "x4_x1.5_float64": dict(in_size=(2, 3, 11, 13), scale=(4, 1.5), dtype="float64", offset=1),
    "x3_uint8": dict(in_size=(2, 3, 11, 13), scale=3, dtype="uint8", offset=3),
    "x3_float16": dict(in_size=(2, 3, 11, 13), scale=3, dtype="float16", offset=5),
    "x3_float16_pairs": dict(in_size=(2, 3, 11, 12), scale=3, dtype="float16", offset=5),  # 2 elements an item
    "x1.5_uint8_quads": dict(in_size=(2, 3, 11, 16), scale=1.5, dtype="uint8", offset=7),  # 4 elements an item
    "channels_last_float16_pairs": dict(in_size=(2, 5, 9, 10), scale=2.5, layout="channels_last", dtype="float16"),
    "wide_rows_float16_pairs": dict(in_size=(1, 2, 5, 2000), scale=3, dtype="float16", offset=1),
    "x1.5": dict(in_size=(1, 2, 17, 23), scale=1.5),
    "x2.5_misaligned": dict(in_size=(1, 2, 17, 23), scale=2.5, offset=2),
    "odd_size": dict(in_size=(2, 2, 19, 29), size=(31, 47)),
    "odd_size_h_down": dict(in_size=(2, 2, 19, 29), size=(13, 47)),
    "empty_windows": dict(in_size=(1, 3, 20, 20), scale=(0.5, 3), dtype="float16"),
    "channels_last_x3": dict(in_size=(2, 3, 10, 9), scale=3, layout="channels_last"),
    "channels_last_x1.5": dict(in_size=(2, 4, 10, 9), scale=1.5, layout="channels_last", offset=1),
    "channels_last_float64": dict(in_size=(2, 3, 13, 11), size=(29, 19), layout="channels_last", dtype="float64"),
    "channels_last_uint8": dict(in_size=(2, 5, 13, 11), size=(29, 31), layout="channels_last", dtype="uint8",
                                offset=5),
    "rows_apart": dict(in_size=(2, 3, 10, 9), scale=3, layout="h_sliced"),
    "rows_apart_float16": dict(in_size=(2, 3, 10, 9), scale=(2.5, 3), layout="h_sliced", dtype="float16", offset=3),
    "wide_rows": dict(in_size=(1, 2, 6, 900), scale=3),
    "wide_rows_float64": dict(in_size=(1, 2, 5, 700), scale=(2.5, 1.5), dtype="float64", offset=1),
    "wide_rows_channels_last": dict(in_size=(1, 3, 4, 600), scale=3, layout="channels_last"),
    "wide_windows": dict(in_size=(1, 1, 3, 3000), scale=(1.5, 7)),
    "x9": dict(in_size=(1, 2, 7, 5), scale=9, dtype="uint8"),
    "one_pixel": dict(in_size=(3, 7, 1, 1), scale=5),
    "one_row": dict(in_size=(1, 1, 1, 40), size=(1, 123)),
}


@pytest.mark.parametrize("case", list(TILE_CASES))
def test_backward_tile_kernel(kernels, case):
    assert backward_case(kernels, **TILE_CASES[case]).startswith("tiles of rows")
