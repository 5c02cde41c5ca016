"""The kernel cases of BENCHMARKS.md that jitops implements, each run with
int64 and int32 indices. A case builds its inputs once and returns the jitops
call, the PyTorch call, the CuPy call (where CuPy is installed and has the
op) and the minimum bytes the op must move."""

from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

M = 1 << 20


class Built(NamedTuple):
    ours: Callable  # the jitops call; returns the result (in-place ops: self)
    theirs: Callable  # PyTorch
    min_bytes: int
    call: tuple  # (op, args, kwargs) of the jitops call, for jitops.tune
    cupy: Optional[Callable] = None  # CuPy's own op, where it has one


def _cupy_of(cp, *tensors):
    """Zero-copy CuPy views of the tensors (None where CuPy is not installed)."""
    return [cp.asarray(t) for t in tensors] if cp is not None else [None] * len(tensors)


def _cupyx(cp):
    import cupyx

    return cupyx


@dataclass
class Case:
    name: str
    build: Callable  # (torch, device, index_dtype, cupy module or None) -> Built
    # In-place float accumulation: results depend on the order atomics land in,
    # so they are checked with a tolerance instead of bit for bit.
    rtol: float = 0.0
    # Cases with an index run once per index dtype; the others once.
    indexed: bool = True


def _index_select(dtype, shape, dim, n_index):
    def build(torch, device, index_dtype, cp):
        import jitops

        x = torch.randn(shape, device=device).to(getattr(torch, dtype))
        idx = torch.randint(0, shape[dim], (n_index,), device=device, dtype=index_dtype)
        out_shape = list(shape)
        out_shape[dim] = n_index
        out_numel = 1
        for s in out_shape:
            out_numel *= s
        min_bytes = 2 * out_numel * x.element_size() + n_index * idx.element_size()
        cx, ci = _cupy_of(cp, x, idx)
        return Built(lambda: jitops.index_select(x, dim, idx), lambda: torch.index_select(x, dim, idx), min_bytes,
                     (jitops.index_select, (x, dim, idx), {}), cp and (lambda: cp.take(cx, ci, axis=dim)))

    dims = "x".join(str(s) for s in shape)
    return Case(f"index_select {dtype} ({dims}) dim{dim} idx{n_index}", build)


def _gather(dtype, x_shape, idx_shape, dim):
    def build(torch, device, index_dtype, cp):
        import jitops

        x = torch.randn(x_shape, device=device).to(getattr(torch, dtype))
        idx = torch.randint(0, x_shape[dim], idx_shape, device=device, dtype=index_dtype)
        numel = idx.numel()
        min_bytes = 2 * numel * x.element_size() + numel * idx.element_size()
        cx, ci = _cupy_of(cp, x, idx)
        return Built(lambda: jitops.gather(x, dim, idx), lambda: torch.gather(x, dim, idx), min_bytes,
                     (jitops.gather, (x, dim, idx), {}), cp and (lambda: cp.take_along_axis(cx, ci, axis=dim)))

    xs = ",".join(str(s) for s in x_shape)
    ids = ",".join(str(s) for s in idx_shape)
    return Case(f"gather {dtype} x({xs}) idx({ids}) dim{dim}", build)


def _tolerance(dtype):
    return {"float32": 1e-4, "float16": 2e-2, "bfloat16": 1e-1}[dtype]


def _index_add(dtype, self_shape, dim, n_index, src_shape=None):
    def build(torch, device, index_dtype, cp):
        import jitops

        tdt = getattr(torch, dtype)
        base = torch.randn(self_shape, device=device).to(tdt)
        shape = list(self_shape)
        shape[dim] = n_index
        src = torch.randn(src_shape or shape, device=device).to(tdt)
        idx = torch.randint(0, self_shape[dim], (n_index,), device=device, dtype=index_dtype)
        ours, theirs, mine = base.clone(), base.clone(), base.clone()
        min_bytes = 3 * src.numel() * src.element_size() + n_index * idx.element_size()
        return Built(lambda: jitops.index_add_(ours, dim, idx, src), lambda: theirs.index_add_(dim, idx, src),
                     min_bytes, (jitops.index_add_, (ours, dim, idx, src), {}),
                     _cupy_index_add(cp, mine, dim, idx, src) if tdt != torch.bfloat16 else None)

    dims = "x".join(str(s) for s in self_shape)
    srcs = "x".join(str(s) for s in (src_shape or [n_index if i == dim else s for i, s in enumerate(self_shape)]))
    return Case(f"index_add {dtype} self({dims}) dim{dim} src({srcs}) idx{n_index}", build, _tolerance(dtype))


def _cupy_index_add(cp, target, dim, idx, src):
    """cupyx.scatter_add of src's slices into target's at idx along dim (CuPy's index_add); None without CuPy."""
    if cp is None:
        return None
    ct, ci, cs = _cupy_of(cp, target, idx, src)
    where = ci if dim == 0 else (slice(None),) * dim + (ci,)

    def run():
        _cupyx(cp).scatter_add(ct, where, cs)
        return ct

    return run


def _scatter_add(dtype, rows, width, n):
    def build(torch, device, index_dtype, cp):
        import jitops

        tdt = getattr(torch, dtype)
        base = torch.randn(rows, width, device=device).to(tdt)
        src = torch.randn(n, width, device=device).to(tdt)
        rows_idx = torch.randint(0, rows, (n, 1), device=device, dtype=index_dtype)
        idx = rows_idx.expand(n, width)
        ours, theirs, mine = base.clone(), base.clone(), base.clone()
        # the index counts once per row (it is expanded), self's touched rows are read and written
        min_bytes = src.numel() * src.element_size() + n * idx.element_size() + 2 * base.numel() * base.element_size()
        # CuPy: the same sums written as rows added at the row index (cupyx.scatter_add)
        return Built(lambda: jitops.scatter_add_(ours, 0, idx, src), lambda: theirs.scatter_add_(0, idx, src),
                     min_bytes, (jitops.scatter_add_, (ours, 0, idx, src), {}),
                     _cupy_index_add(cp, mine, 0, rows_idx[:, 0], src))

    return Case(f"scatter_add {dtype} self({rows},{width}) src({n},{width}) idx({n},1) expanded", build,
                _tolerance(dtype))


def _heavy_duplicates(dtype, rows, width, n, every_index_equal):
    """index_add_ of n rows into a self of `rows` rows: a few hot rows (random indices) or every index equal.
    Self is tiny, so min bytes are the source and the index read once (plus self read and written)."""
    def build(torch, device, index_dtype, cp):
        import jitops

        tdt = getattr(torch, dtype)
        base = torch.randn(rows, width, device=device).to(tdt)
        src = torch.randn(n, width, device=device).to(tdt) / 64
        if every_index_equal:
            idx = torch.full((n,), rows // 2, device=device, dtype=index_dtype)
        else:
            idx = torch.randint(0, rows, (n,), device=device, dtype=index_dtype)
        ours, theirs, mine = base.clone(), base.clone(), base.clone()
        min_bytes = src.numel() * src.element_size() + n * idx.element_size() + 2 * base.numel() * base.element_size()
        return Built(lambda: jitops.index_add_(ours, 0, idx, src), lambda: theirs.index_add_(0, idx, src), min_bytes,
                     (jitops.index_add_, (ours, 0, idx, src), {}), _cupy_index_add(cp, mine, 0, idx, src))

    kind = "every index equal" if every_index_equal else "hot rows"
    # ~16384 (hot rows) to 2^20 float terms per element: either library's rounding reaches ~1e-3 absolute.
    return Case(f"index_add {kind} {dtype} self({rows},{width}) src({n},{width})", build, 5e-2 if every_index_equal
                else 1e-2)


def _histc(n, bins, value_range=None):
    def build(torch, device, index_dtype, cp):
        import jitops

        x = torch.randn(n, device=device)
        lo, hi = value_range or (0, 0)
        min_bytes = x.numel() * x.element_size() + bins * 4
        (cx,) = _cupy_of(cp, x)

        def cupy_histogram():  # CuPy's user finds the range first (a host round trip)
            limits = (lo, hi) if value_range else (float(cx.min()), float(cx.max()))
            return cp.histogram(cx, bins, range=limits)[0]

        return Built(lambda: jitops.histc(x, bins, lo, hi), lambda: torch.histc(x, bins, lo, hi), min_bytes,
                     (jitops.histc, (x, bins, lo, hi), {}), cp and cupy_histogram)

    what = f"range({value_range[0]},{value_range[1]})" if value_range else "auto range"
    exponent = n.bit_length() - 1
    return Case(f"histc f32 n=2^{exponent} bins{bins} {what}", build, indexed=False)


def _upsample(dtype, shape, backward):
    def build(torch, device, index_dtype, cp):  # CuPy has no upsample op
        import jitops

        tdt = getattr(torch, dtype)
        n, c, h, w = shape
        if not backward:
            x = torch.randn(shape, device=device).to(tdt)
            min_bytes = 5 * x.numel() * x.element_size()
            return Built(lambda: jitops.upsample_nearest2d(x, scale_factor=2),
                         lambda: torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest"), min_bytes,
                         (jitops.upsample_nearest2d, (x,), {"scale_factor": 2}))
        grad = torch.randn(n, c, 2 * h, 2 * w, device=device).to(tdt)
        min_bytes = grad.numel() * grad.element_size() * 5 // 4
        return Built(lambda: jitops.upsample_nearest2d_backward(grad, shape, scale_factor=2),
                     lambda: torch.ops.aten.upsample_nearest2d_backward(grad, [2 * h, 2 * w], list(shape), 2.0, 2.0),
                     min_bytes, (jitops.upsample_nearest2d_backward, (grad, shape), {"scale_factor": 2}))

    short = {"float32": "f32", "float16": "f16"}[dtype]
    n, c, h, w = shape
    what = f"bwd {short} grad({n},{c},{2 * h},{2 * w})" if backward else f"fwd {short} ({n},{c},{h},{w}) x2"
    return Case(f"upsample_nearest2d {what}", build, indexed=False)


def _mul(dtype, n):
    def build(torch, device, index_dtype, cp):
        import jitops

        tdt = getattr(torch, dtype)
        x = torch.randn(n, device=device).to(tdt)
        y = torch.randn(n, device=device).to(tdt)
        cx, cy = _cupy_of(cp, x, y)
        return Built(lambda: jitops.mul(x, y), lambda: torch.mul(x, y), 3 * n * x.element_size(),
                     (jitops.mul, (x, y), {}), cp and (lambda: cp.multiply(cx, cy)))

    return Case(f"elementwise mul {dtype}, {n // M}M elements", build, indexed=False)


def _reduction_sum(dtype, shape, axis):
    """jitops.ReductionKernel summing along one axis, beside torch.sum and the same cupy.ReductionKernel."""

    def build(torch, device, index_dtype, cp):
        import jitops

        x = torch.randn(shape, device=device).to(getattr(torch, dtype))
        kernel = jitops.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "bench_sum")
        out_numel = x.numel() // shape[axis]
        cupy_call = None
        if cp is not None:
            cx = cp.asarray(x)
            ck = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "bench_sum")
            cupy_call = lambda: ck(cx, axis=axis)  # noqa: E731
        return Built(lambda: kernel(x, axis=axis), lambda: torch.sum(x, dim=axis),
                     (x.numel() + out_numel) * x.element_size(), (kernel, (x,), {"axis": axis}), cupy_call)

    dims = "x".join(str(s) for s in shape)
    return Case(f"ReductionKernel sum {dtype} ({dims}) axis{axis}", build, rtol=1e-4, indexed=False)


CASES = [
    _index_select("float32", (50000, 1024), 0, 8192),
    _index_select("float32", (1024, 32768), 1, 4096),
    _index_select("float32", (32 * M,), 0, 4 * M),
    _index_select("float32", (64, 128, 256), 1, 64),
    _index_select("float16", (50000, 1024), 0, 8192),
    _gather("float32", (5100, 38506), (5100, 1), 1),
    _gather("float32", (100, 128), (100, 64), 1),
    _gather("float32", (5100, 128), (5100, 96), 1),
    _index_add("float32", (32 * M,), 0, 15),
    _index_add("float32", (32768, 1024), 0, 15),
    _index_add("float32", (32, 1024, 1024), 0, 15),
    _index_add("float32", (32 * M,), 0, 1024),
    _index_add("float32", (32768, 1024), 0, 1024),
    _index_add("float16", (32, 1024, 1024), 0, 15),
    _index_add("bfloat16", (32768, 1024), 0, 1024),
    _index_add("float32", (4096, 4096), 1, 512),
    _scatter_add("float32", 100000, 128, M),
    _scatter_add("float16", 100000, 128, M),
    _heavy_duplicates("float32", 64, 128, M, every_index_equal=False),
    _heavy_duplicates("float32", 64, 128, M, every_index_equal=True),
    _histc(1 << 26, 100),
    _histc(1 << 26, 100, (-3, 3)),
    _histc(1 << 26, 1000),
    _histc(1 << 20, 100),
    _upsample("float32", (16, 32, 80, 80), False),
    _upsample("float32", (16, 32, 80, 80), True),
    _upsample("float32", (8, 64, 256, 256), False),
    _upsample("float16", (16, 32, 80, 80), False),
    _upsample("float16", (16, 32, 80, 80), True),
    _mul("float32", 32 * M),
    _mul("float16", 32 * M),
    _reduction_sum("float32", (8192, 8192), 0),
    _reduction_sum("float32", (8192, 8192), 1),
]
