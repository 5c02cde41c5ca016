"""Property tests (Hypothesis) of every op against numpy on the GPU: random
shapes with empty and size-1 dims, layouts (contiguous, transposed, strided
slices, and negative strides through CuPy), dtypes, dims and indices; 1000
examples per op. Each example draws its own `seed` for the data, which the
falsifying example prints; `--hypothesis-seed` replays a whole run."""

import os
import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

try:
    import cupy
except ImportError:  # negative strides need a producer that has them
    cupy = None

DEVICE = "cuda"
# 300 examples a property by default: the shapes are small (0 to 5 a dim), so past a few hundred examples
# they repeat the specializations already run; JITOPS_PROPERTY_EXAMPLES=1000 for a longer search.
EXAMPLES = settings(max_examples=int(os.environ.get("JITOPS_PROPERTY_EXAMPLES", "300")), deadline=None,
                    print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LAYOUTS = ["contiguous", "transposed", "sliced"] + (["reversed"] if cupy is not None else [])
MOVE_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64"]
ADD_DTYPES = ["int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]

shapes = st.lists(st.integers(0, 5), min_size=1, max_size=4)
common = dict(seed=st.integers(0, 2**32 - 1), layout=st.sampled_from(LAYOUTS),
              index_dtype=st.sampled_from(["int32", "int64"]))


def values(rng, shape, dtype):
    """Random values (small integers for integer types, so sums do not overflow)."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 7, shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _c_order(a):
    return np.array(a, order="C", copy=True)  # keeps 0-d arrays 0-d (ascontiguousarray does not)


def on_device(host, layout):
    """`host`'s values on the GPU in `layout`; the result has host's logical shape."""
    if layout == "transposed" and host.ndim >= 2:
        perm = list(range(host.ndim))[::-1]
        return torch.from_numpy(_c_order(host.transpose(perm))).to(DEVICE).permute(*perm)
    if layout == "sliced":
        dtype = torch.from_numpy(_c_order(host)).dtype
        big = torch.zeros([2 * s + 1 for s in host.shape], dtype=dtype, device=DEVICE)
        view = big[tuple(slice(1, None, 2) for _ in host.shape)]
        view.copy_(torch.from_numpy(_c_order(host)).to(DEVICE))
        return view
    if layout == "reversed" and host.ndim >= 1:
        flipped = cupy.asarray(_c_order(host[::-1]))
        return flipped[::-1]  # negative stride on dim 0
    return torch.from_numpy(_c_order(host)).to(DEVICE)


def to_host(a):
    if cupy is not None and isinstance(a, cupy.ndarray):
        return cupy.asnumpy(a)
    return a.cpu().numpy()


def close(got, expected, dtype, terms=1):
    got = np.asarray(got)
    if np.dtype(dtype).kind in "fc":
        tol = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12, "complex64": 1e-5}[dtype] * 4 * max(1, terms)
        np.testing.assert_allclose(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), expected,
                                   rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, expected)


def pick_dim(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


@EXAMPLES
@given(shape=shapes, dtype=st.sampled_from(MOVE_DTYPES), data=st.data(), **common)
def test_index_select(shape, dtype, data, seed, layout, index_dtype):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    dim = pick_dim(data.draw, x.ndim)
    n = x.shape[dim]
    idx = rng.integers(0, max(n, 1), data.draw(st.integers(0, 6) if n else st.just(0))).astype(index_dtype)
    got = jitops.index_select(on_device(x, layout), dim, on_device(idx, "contiguous"))
    close(to_host(got), np.take(x, idx, axis=dim), dtype)


@EXAMPLES
@given(shape=shapes, dtype=st.sampled_from(MOVE_DTYPES), data=st.data(), **common)
def test_take(shape, dtype, data, seed, layout, index_dtype):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    n = x.size if axis is None else x.shape[axis]
    idx_shape = data.draw(st.lists(st.integers(0, 3), max_size=2))
    idx = rng.integers(-n, max(n, 1), idx_shape) if n else np.zeros([0] + idx_shape[1:], np.int64)
    idx = idx.astype(index_dtype)
    got = jitops.take(on_device(x, layout), on_device(idx, data.draw(st.sampled_from(LAYOUTS))), axis=axis)
    close(to_host(got), np.take(x, idx, axis=axis), dtype)


@EXAMPLES
@given(shape=shapes, dtype=st.sampled_from(MOVE_DTYPES), data=st.data(), **common)
def test_gather(shape, dtype, data, seed, layout, index_dtype):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    dim = pick_dim(data.draw, x.ndim)
    idx_shape = [data.draw(st.integers(0, 4)) if d == dim % x.ndim else data.draw(st.integers(0, s))
                 for d, s in enumerate(x.shape)]
    n = x.shape[dim]
    idx = (rng.integers(0, n, idx_shape) if n else np.zeros([0 if d == dim % x.ndim else s
                                                              for d, s in enumerate(idx_shape)], np.int64))
    idx = idx.astype(index_dtype)
    got = jitops.gather(on_device(x, layout), dim, on_device(idx, data.draw(st.sampled_from(LAYOUTS))))
    expected = np.take_along_axis(x[tuple(slice(0, s) if d != dim % x.ndim else slice(None)
                                          for d, s in enumerate(idx.shape))], idx, axis=dim)
    close(to_host(got), expected, dtype)


def along(dim, ndim, i):
    return (slice(None),) * dim + (i,) + (slice(None),) * (ndim - dim - 1)


@pytest.mark.parametrize("op", ["index_add_", "index_copy_", "index_fill_"])  # 1000 examples each
@EXAMPLES
@given(shape=shapes, dtype=st.sampled_from(ADD_DTYPES), data=st.data(), **common)
def test_index_add_copy_fill(shape, dtype, data, op, seed, layout, index_dtype):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    dim = pick_dim(data.draw, x.ndim) % x.ndim
    n = x.shape[dim]
    count = data.draw(st.integers(0, 6)) if n else 0
    # index_copy_ with a repeated index has no defined winner: distinct indices there
    idx = (rng.permutation(n)[:count] if op == "index_copy_" else rng.integers(0, max(n, 1), count)).astype(index_dtype)
    src_shape = list(x.shape)
    src_shape[dim] = len(idx)
    src = values(rng, src_shape, dtype)
    expected = x.astype(np.float64 if dtype.startswith("float") else x.dtype)
    self_dev = on_device(x, layout)
    if op == "index_add_":
        for k, i in enumerate(idx):
            expected[along(dim, x.ndim, i)] += src[along(dim, x.ndim, k)]
        got = jitops.index_add_(self_dev, dim, on_device(idx, "contiguous"), on_device(src, "contiguous"))
    elif op == "index_copy_":
        for k, i in enumerate(idx):
            expected[along(dim, x.ndim, i)] = src[along(dim, x.ndim, k)]
        got = jitops.index_copy_(self_dev, dim, on_device(idx, "contiguous"), on_device(src, "contiguous"))
    else:
        for i in idx:
            expected[along(dim, x.ndim, i)] = 3
        got = jitops.index_fill_(self_dev, dim, on_device(idx, "contiguous"), 3)
    assert got is self_dev
    close(to_host(self_dev), expected.astype(x.dtype) if dtype.startswith("int") or dtype == "uint8" else expected,
          dtype, terms=count)


@pytest.mark.parametrize("reduce", ["add", "sum", "prod", "mean", "amax", "amin"])  # "add": scatter_add_
@EXAMPLES
@given(shape=shapes, dtype=st.sampled_from(ADD_DTYPES), data=st.data(), include_self=st.booleans(), **common)
def test_scatter_add_and_reduce(shape, dtype, data, reduce, include_self, seed, layout, index_dtype):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    dim = pick_dim(data.draw, x.ndim) % x.ndim
    n = x.shape[dim]
    idx_shape = [data.draw(st.integers(0, s)) if d != dim else data.draw(st.integers(0, 4))
                 for d, s in enumerate(x.shape)]
    if n == 0:
        idx_shape[dim] = 0
    idx = rng.integers(0, max(n, 1), idx_shape).astype(index_dtype)
    src = values(rng, idx_shape, dtype)
    if reduce == "prod" and dtype.startswith("float"):
        src = (1 + 0.1 * src).astype(dtype)  # products of values near 1 stay well conditioned
    elif reduce == "prod":  # integer products of 1s and 2s fit even int8
        x = rng.integers(1, 3, shape).astype(dtype)
        src = rng.integers(1, 3, idx_shape).astype(dtype)
    terms = {}
    for pos in np.ndindex(*idx.shape):
        dest = list(pos)
        dest[dim] = idx[pos]
        terms.setdefault(tuple(dest), []).append(src[pos].astype(np.float64))
    expected = x.astype(np.float64)
    for dest, vals in terms.items():
        own = [expected[dest]] if (include_self or reduce == "add") else []
        allv = own + vals
        if reduce in ("add", "sum"):
            expected[dest] = sum(allv)
        elif reduce == "prod":
            expected[dest] = np.prod(allv)
        elif reduce == "amax":
            expected[dest] = max(allv)
        elif reduce == "amin":
            expected[dest] = min(allv)
        else:
            mean = sum(allv) / len(allv)
            expected[dest] = mean if dtype.startswith("float") else np.floor(mean)
    self_dev = on_device(x, layout)
    idx_dev, src_dev = on_device(idx, "contiguous"), on_device(src, "contiguous")
    if reduce == "add":
        jitops.scatter_add_(self_dev, dim, idx_dev, src_dev)
    else:
        jitops.scatter_reduce_(self_dev, dim, idx_dev, src_dev, reduce, include_self=include_self)
    most = max((len(v) for v in terms.values()), default=1)
    got = to_host(self_dev)
    if not dtype.startswith("float"):
        expected = expected.astype(x.dtype)  # small values: no wrap-around to mind
    close(got, expected, dtype, terms=most * (4 if reduce == "prod" else 1))


@EXAMPLES
@given(shape=shapes, dtype=st.sampled_from(["int8", "int32", "int64", "float16", "float32", "float64"]),
       lo=st.integers(-20, 0), width=st.integers(1, 30), per_unit=st.sampled_from([1, 2, 4]),
       auto=st.booleans(), seed=st.integers(0, 2**32 - 1), layout=st.sampled_from(LAYOUTS))
def test_histc(shape, dtype, lo, width, per_unit, auto, seed, layout):
    """Integer-valued data and bins whose edges are exact in every dtype, so that the
    reference needs no rounding model: bin = floor((v - lo) * per_unit)."""
    rng = np.random.default_rng(seed)
    hi = lo + width
    x = rng.integers(lo - 3, hi + 4, shape).astype(dtype)
    bins = width * per_unit
    if auto:
        if x.size == 0:
            return  # an empty input has no range to find
        lo, hi = int(x.min()), int(x.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        bins = (hi - lo) * per_unit
    got = jitops.histc(on_device(x, layout), bins=bins, min=0 if auto else lo, max=0 if auto else hi,
                       counts_dtype="int64")
    v = x.astype(np.float64).reshape(-1)
    v = v[(v >= lo) & (v <= hi)]
    b = np.minimum(np.floor((v - lo) * per_unit).astype(np.int64), bins - 1)
    np.testing.assert_array_equal(to_host(got), np.bincount(b, minlength=bins))


def nearest_sources(h, w, oh, ow):
    """PyTorch's nearest: source = min(floor(dst * float32(in / out)), in - 1)."""
    rows = np.minimum(np.floor(np.arange(oh, dtype=np.float32) * np.float32(h / oh)).astype(np.int64), h - 1)
    cols = np.minimum(np.floor(np.arange(ow, dtype=np.float32) * np.float32(w / ow)).astype(np.int64), w - 1)
    return rows, cols


@EXAMPLES
@given(n=st.integers(0, 2), c=st.integers(0, 3), h=st.integers(1, 6), w=st.integers(1, 6),
       oh=st.integers(1, 13), ow=st.integers(1, 13), dtype=st.sampled_from(["uint8", "float16", "float32", "float64"]),
       channels_last=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_upsample_nearest2d(n, c, h, w, oh, ow, dtype, channels_last, seed):
    rng = np.random.default_rng(seed)
    x = values(rng, (n, c, h, w), dtype)
    rows, cols = nearest_sources(h, w, oh, ow)
    xd = torch.from_numpy(x).to(DEVICE)
    if channels_last:
        xd = xd.contiguous(memory_format=torch.channels_last)
    got = jitops.upsample_nearest2d(xd, size=(oh, ow))
    close(got.cpu().numpy(), x[:, :, rows][:, :, :, cols], dtype)


@EXAMPLES
@given(n=st.integers(0, 2), c=st.integers(0, 3), h=st.integers(1, 6), w=st.integers(1, 6),
       oh=st.integers(1, 13), ow=st.integers(1, 13), dtype=st.sampled_from(["float16", "float32", "float64"]),
       channels_last=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_upsample_nearest2d_backward(n, c, h, w, oh, ow, dtype, channels_last, seed):
    rng = np.random.default_rng(seed)
    rows, cols = nearest_sources(h, w, oh, ow)
    grad = values(rng, (n, c, oh, ow), dtype)
    expected = np.zeros((n, c, h, w))
    np.add.at(expected, (slice(None), slice(None), rows[:, None], cols[None, :]), grad.astype(np.float64))
    gd = torch.from_numpy(grad).to(DEVICE)
    if channels_last:
        gd = gd.contiguous(memory_format=torch.channels_last)
    got = jitops.upsample_nearest2d_backward(gd, (n, c, h, w))
    close(got.cpu().numpy(), expected, dtype, terms=int(np.ceil(oh / h) * np.ceil(ow / w)))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])  # 1000 examples each
@EXAMPLES
@given(shape=shapes, dtype=st.sampled_from(ADD_DTYPES), broadcast=st.booleans(), seed=st.integers(0, 2**32 - 1), layout=st.sampled_from(LAYOUTS),
       layout_y=st.sampled_from(LAYOUTS))
def test_elementwise(shape, dtype, op, broadcast, seed, layout, layout_y):
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    y = values(rng, [1] + shape[1:] if broadcast else shape, dtype)
    if op == "sub" and np.dtype(dtype).kind == "u":
        x = (x + 7).astype(dtype)  # stays non-negative
    got = getattr(jitops, op)(on_device(x, layout), on_device(y, layout_y))
    expected = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply"}.get(op, op))(x, y)
    close(to_host(got), expected, dtype)
