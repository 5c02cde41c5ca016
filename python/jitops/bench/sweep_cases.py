"""Seeded random cases for `python -m jitops bench --sweep`: users' shapes, not ours.

Each family draws realistic calls of one op: 1 to 5 dims, 2^10 to 2^27
elements, odd sizes and powers of two, every dtype the op takes, layouts
(contiguous, transposed, sliced with a step, channels_last, broadcast), index
counts from 1 to 4x the indexed dim in int32 and int64, random, sorted,
repeated or unique indices, upsample scales 2, 3, 1.5, 0.5 and size=,
elementwise broadcasting, Python numbers and mixed dtypes. A case is a plain
description (layouts.py) plus PyTorch's way of computing the same thing; the
runner (sweep.py) makes tensors of it on the GPU, and the CI tests make
VirtualArrays of it to plan and explain it with no GPU.
"""

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .. import _core
from .layouts import ITEMSIZE, Dense, Index, Number, dense, expanded_rows

MAX_ELEMENTS = 1 << 27
GATHER_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                 "bfloat16", "float32", "float64", "complex64", "complex128")
ADD_DTYPES = ("float32", "float32", "float16", "bfloat16", "float64", "int32", "int64")  # float32 drawn twice as often
COPY_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
               "complex64")
FLOATS = ("float32", "float16", "bfloat16", "float64")
UPSAMPLE_DTYPES = ("float32", "float16", "bfloat16", "float64", "uint8")
ARITH_DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "int16", "uint8")
INDEX_KINDS = ("random", "random", "sorted", "repeated")


class Ref(str):
    """An argument that names one of the case's operands."""


@dataclass
class SweepCase:
    family: str
    name: str
    op: object  # a jitops op name, or ("kernel", in_params, out_params, operation, name)
    operands: dict  # name -> Dense | Index | Number
    args: tuple  # positional arguments: Ref(name) or plain values
    kwargs: dict
    reference: Callable  # (torch, values) -> PyTorch's result (in-place: self, modified)
    min_bytes: int
    inplace: Optional[str] = None  # the operand the op modifies
    compare: str = "exact"  # exact | accumulate (against float64, within 2x PyTorch's error) | close
    notes: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------- drawing helpers


def _pick(rng, values):
    return values[int(rng.integers(0, len(values)))]


def _log2_elements(rng, low=10, high=27):
    return float(rng.uniform(low, high))


def draw_shape(rng, ndim, log2_elements):
    """`ndim` sizes whose product is about 2^log2_elements: each a power of two or an odd size."""
    parts = rng.dirichlet(np.ones(ndim)) * log2_elements if ndim > 1 else [log2_elements]
    shape = []
    for p in parts:
        if rng.random() < 0.5:
            size = 2 ** int(round(p))
        else:
            size = int(2 ** p * rng.uniform(0.7, 1.3))
            if size > 2:
                size |= 1
        shape.append(max(1, size))
    return tuple(shape)


def _numel(shape):
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def _cap(shape, limit=MAX_ELEMENTS):
    """Halves the largest dims until the shape holds at most `limit` elements."""
    shape = list(shape)
    while _numel(shape) > limit:
        d = int(np.argmax(shape))
        shape[d] = max(1, shape[d] // 2)
    return tuple(shape)


def draw_count(rng, size, limit=None):
    """An index count from 1 to 4x `size`, log-uniform."""
    top = max(1, 4 * size if limit is None else min(4 * size, limit))
    return max(1, int(round(math.exp(rng.uniform(0, math.log(top))))))


def _layout(rng, ndim, allow=("contiguous", "transposed", "sliced", "channels_last")):
    options = [a for a in allow if (a != "transposed" or ndim >= 2) and (a != "channels_last" or ndim == 4)]
    weights = np.array([3.0 if a == "contiguous" else 1.0 for a in options])
    return options[int(rng.choice(len(options), p=weights / weights.sum()))]


def _round_sectors(nbytes):
    return -(-nbytes // 32) * 32


def _gathered_reads(units, unit_bytes, limit_bytes):
    """Bytes moved by `units` reads of `unit_bytes` at random places: whole 32-byte sectors, at most
    `limit_bytes` (every sector of the source read once)."""
    return min(units * _round_sectors(unit_bytes), _round_sectors(limit_bytes))


def _touched(slots, draws):
    """Expected distinct slots hit by `draws` uniform draws among `slots`."""
    if slots <= 0:
        return 0
    return slots * (1 - (1 - 1 / slots) ** draws)


def _index_dtype(rng):
    return _pick(rng, ("int64", "int32"))


def _dims_text(shape):
    return "x".join(str(s) for s in shape)


# ---------------------------------------------------------------------------- gather family


def draw_index_select(rng):
    ndim = int(rng.integers(1, 6))
    dtype = _pick(rng, GATHER_DTYPES)
    shape = _cap(draw_shape(rng, ndim, _log2_elements(rng)))
    dim = int(rng.integers(0, ndim))
    rest = _numel(shape) // shape[dim]
    n = draw_count(rng, shape[dim], max(1, MAX_ELEMENTS // max(rest, 1)))
    x = dense(shape, dtype, _layout(rng, ndim), rng)
    idx = Index((n,), _index_dtype(rng), shape[dim], _pick(rng, INDEX_KINDS))
    out_numel = rest * n
    run = x.contiguous_run(dim)
    min_bytes = (out_numel * x.itemsize + n * idx.itemsize
                 + _gathered_reads(out_numel // max(run, 1), run * x.itemsize, x.distinct_bytes))
    return SweepCase("index_select", f"index_select {x.describe()} dim{dim} idx {idx.describe()}[{n}]",
                     "index_select", {"x": x, "index": idx}, (Ref("x"), dim, Ref("index")), {},
                     lambda torch, v: torch.index_select(v["x"], dim, v["index"]), min_bytes)


def draw_take(rng):
    ndim = int(rng.integers(1, 5))
    dtype = _pick(rng, GATHER_DTYPES)
    shape = _cap(draw_shape(rng, ndim, _log2_elements(rng)))
    x = dense(shape, dtype, _layout(rng, ndim), rng)
    axis = None if rng.random() < 0.4 else int(rng.integers(0, ndim))
    size = _numel(shape) if axis is None else shape[axis]
    rest = 1 if axis is None else _numel(shape) // size
    count = draw_count(rng, size, max(1, MAX_ELEMENTS // max(rest, 1)))
    idx_shape = (count,) if rng.random() < 0.6 or count < 4 else (count // 2, 2)
    negative = axis is None and rng.random() < 0.5  # torch.take wraps negative indices as numpy.take does
    idx = Index(idx_shape, _index_dtype(rng), size, _pick(rng, INDEX_KINDS), low=-size if negative else 0)
    n = _numel(idx_shape)
    if axis is None:
        reads = _gathered_reads(n, x.itemsize, x.distinct_bytes)

        def reference(torch, v):
            return torch.take(v["x"], v["indices"])
    else:
        run = x.contiguous_run(axis)
        reads = _gathered_reads(rest * n // max(run, 1), run * x.itemsize, x.distinct_bytes)

        def reference(torch, v):
            picked = torch.index_select(v["x"], axis, v["indices"].reshape(-1))
            return picked.reshape(shape[:axis] + idx_shape + shape[axis + 1:])
    min_bytes = rest * n * x.itemsize + n * idx.itemsize + reads
    where = "flat" if axis is None else f"axis{axis}"
    return SweepCase("take", f"take {x.describe()} {where} idx {idx.describe()}{' wrapped' if negative else ''}",
                     "take", {"x": x, "indices": idx}, (Ref("x"), Ref("indices")), {"axis": axis}, reference,
                     min_bytes)


def draw_gather(rng):
    ndim = int(rng.integers(1, 5))
    dtype = _pick(rng, GATHER_DTYPES)
    shape = _cap(draw_shape(rng, ndim, _log2_elements(rng)))
    dim = int(rng.integers(0, ndim))
    x = dense(shape, dtype, _layout(rng, ndim), rng)
    idx_shape = [s if rng.random() < 0.7 else max(1, int(s * rng.uniform(0.3, 1.0))) for s in shape]
    rest = _numel(idx_shape) // idx_shape[dim]
    idx_shape[dim] = draw_count(rng, shape[dim], max(1, MAX_ELEMENTS // max(rest, 1)))
    idx_shape = tuple(idx_shape)
    index_dtype = _index_dtype(rng)
    broadcast = [d for d in range(ndim) if d != dim and idx_shape[d] > 1]
    if broadcast and rng.random() < 0.3:  # one row of indices for every row (paddle's index_sample pattern)
        b = int(rng.choice(broadcast))
        strides = list(Index(tuple(1 if d == b else s for d, s in enumerate(idx_shape)), index_dtype, 1).strides)
        strides[b] = 0
        storage = _numel(idx_shape) // idx_shape[b]
        idx = Index(idx_shape, index_dtype, shape[dim], _pick(rng, INDEX_KINDS), strides=tuple(strides),
                    storage=storage)
    else:
        idx = Index(idx_shape, index_dtype, shape[dim], _pick(rng, INDEX_KINDS))
    n = _numel(idx_shape)
    min_bytes = n * x.itemsize + idx.distinct_bytes + _gathered_reads(n, x.itemsize, x.distinct_bytes)
    return SweepCase("gather", f"gather {x.describe()} dim{dim} idx {idx.describe()}", "gather",
                     {"x": x, "index": idx}, (Ref("x"), dim, Ref("index")), {},
                     lambda torch, v: torch.gather(v["x"], dim, v["index"]), min_bytes)


# ---------------------------------------------------------------------------- index_add_ / copy / fill


def _self_and_slices(rng, dtypes, ndim_high=5):
    ndim = int(rng.integers(1, ndim_high))
    dtype = _pick(rng, dtypes)
    shape = _cap(draw_shape(rng, ndim, _log2_elements(rng)))
    dim = int(rng.integers(0, ndim))
    self_ = dense(shape, dtype, _layout(rng, ndim, ("contiguous", "transposed", "sliced")), rng)
    slice_numel = _numel(shape) // shape[dim]
    return self_, shape, dim, slice_numel


def draw_index_add(rng):
    self_, shape, dim, slice_numel = _self_and_slices(rng, ADD_DTYPES)
    n = draw_count(rng, shape[dim], max(1, MAX_ELEMENTS // max(slice_numel, 1)))
    src_shape = shape[:dim] + (n,) + shape[dim + 1:]
    src = dense(src_shape, self_.dtype, _layout(rng, len(shape), ("contiguous", "transposed", "expanded")), rng)
    idx = Index((n,), _index_dtype(rng), shape[dim], _pick(rng, INDEX_KINDS))
    integral = self_.dtype.startswith("int")
    alpha = 1 if rng.random() < 0.6 else (2 if integral else 0.5)
    touched = _touched(shape[dim], n) if idx.kind != "repeated" else min(8, shape[dim])
    min_bytes = src.distinct_bytes + idx.distinct_bytes + 2 * int(touched * slice_numel * self_.itemsize)
    alpha_text = "" if alpha == 1 else f" alpha={alpha}"
    return SweepCase("index_add_", f"index_add_ self {self_.describe()} dim{dim} src {src.describe()} "
                                   f"idx {idx.describe()}{alpha_text}", "index_add_",
                     {"self": self_, "index": idx, "source": src}, (Ref("self"), dim, Ref("index"), Ref("source")),
                     {"alpha": alpha}, lambda torch, v: v["self"].index_add_(dim, v["index"], v["source"], alpha=alpha),
                     min_bytes, inplace="self", compare="exact" if integral else "accumulate")


def draw_index_copy(rng):
    self_, shape, dim, slice_numel = _self_and_slices(rng, COPY_DTYPES)
    # Duplicate indices make PyTorch's result undefined: unique ones, at most the dim's size.
    n = max(1, min(shape[dim], draw_count(rng, shape[dim]) // 4 + 1))
    src_shape = shape[:dim] + (n,) + shape[dim + 1:]
    src = dense(src_shape, self_.dtype, _layout(rng, len(shape), ("contiguous", "transposed", "expanded")), rng)
    idx = Index((n,), _index_dtype(rng), shape[dim], "unique")
    min_bytes = src.distinct_bytes + idx.distinct_bytes + n * slice_numel * self_.itemsize
    return SweepCase("index_copy_", f"index_copy_ self {self_.describe()} dim{dim} src {src.describe()} "
                                    f"idx {idx.describe()}", "index_copy_",
                     {"self": self_, "index": idx, "source": src}, (Ref("self"), dim, Ref("index"), Ref("source")), {},
                     lambda torch, v: v["self"].index_copy_(dim, v["index"], v["source"]), min_bytes, inplace="self")


def draw_index_fill(rng):
    self_, shape, dim, slice_numel = _self_and_slices(rng, COPY_DTYPES)
    n = draw_count(rng, shape[dim])
    idx = Index((n,), _index_dtype(rng), shape[dim], _pick(rng, INDEX_KINDS))
    value = {"bool": True, "complex64": -1.5}.get(self_.dtype, 3 if self_.dtype.startswith(("int", "uint")) else -1.5)
    touched = _touched(shape[dim], n) if idx.kind != "repeated" else min(8, shape[dim])
    min_bytes = idx.distinct_bytes + int(touched * slice_numel * self_.itemsize)
    return SweepCase("index_fill_", f"index_fill_ self {self_.describe()} dim{dim} idx {idx.describe()}[{n}]",
                     "index_fill_", {"self": self_, "index": idx, "value": Number(value)},
                     (Ref("self"), dim, Ref("index"), Ref("value")), {},
                     lambda torch, v: v["self"].index_fill_(dim, v["index"], value), min_bytes, inplace="self")


# ---------------------------------------------------------------------------- scatter family

SCATTER_SHAPES = ("expanded rows", "full index", "one column", "narrow rows")


def _scatter_operands(rng, dtypes, values="normal"):
    """(self, index, src, dim, label): a scatter of src into self, drawn among GNN-style expanded rows, a full
    random index, one-column and narrow-row shapes, 1 to 3 dims."""
    kind = _pick(rng, SCATTER_SHAPES)
    dtype = _pick(rng, dtypes)
    index_dtype = _index_dtype(rng)
    log2 = _log2_elements(rng, 10, 26)
    if kind in ("expanded rows", "one column", "narrow rows"):
        width = {"one column": 1, "narrow rows": int(_pick(rng, (2, 3, 4, 8, 16, 32)))}.get(
            kind, int(_pick(rng, (32, 64, 96, 128, 256, 300, 512))))
        n = max(1, int(2 ** log2) // width)
        rows = max(1, int(n / 2 ** rng.uniform(0, 8)))  # destinations: a few up to as many as the rows
        self_ = dense((rows, width), dtype, "contiguous", rng, values)
        src = dense((n, width), dtype, _layout(rng, 2, ("contiguous", "contiguous", "transposed")), rng, values)
        idx = expanded_rows(n, width, index_dtype, rows, _pick(rng, INDEX_KINDS))
        dim = 0
        reads = src.distinct_bytes + idx.distinct_bytes
        dest_bytes = int(_touched(rows, n)) * width * self_.itemsize
        label = f"{kind} self({rows},{width}) src({n},{width})"
    else:
        ndim = int(rng.integers(1, 4))
        src_shape = _cap(draw_shape(rng, ndim, log2))
        dim = int(rng.integers(0, ndim))
        self_shape = tuple(max(1, int(s * rng.uniform(0.1, 1.5))) if d == dim else s
                           for d, s in enumerate(src_shape))
        self_ = dense(self_shape, dtype, _layout(rng, ndim, ("contiguous", "transposed")), rng, values)
        src = dense(src_shape, dtype, _layout(rng, ndim, ("contiguous", "transposed", "sliced")), rng, values)
        idx = Index(src_shape, index_dtype, self_shape[dim], _pick(rng, INDEX_KINDS))
        reads = src.distinct_bytes + idx.distinct_bytes
        dest_bytes = min(_round_sectors(self_.distinct_bytes), src.numel * 32)
        label = f"{kind} self {self_.describe()} dim{dim} src {src.describe()}"
    return self_, idx, src, dim, f"{label} idx {idx.dtype} {idx.kind}", reads + 2 * dest_bytes


def draw_scatter_add(rng):
    self_, idx, src, dim, label, min_bytes = _scatter_operands(rng, ADD_DTYPES)
    integral = self_.dtype.startswith("int")
    return SweepCase("scatter_add_", f"scatter_add_ {self_.dtype} {label}", "scatter_add_",
                     {"self": self_, "index": idx, "src": src}, (Ref("self"), dim, Ref("index"), Ref("src")), {},
                     lambda torch, v: v["self"].scatter_add_(dim, v["index"], v["src"]), min_bytes, inplace="self",
                     compare="exact" if integral else "accumulate")


REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def draw_scatter_reduce(rng, reduce=None):
    reduce = reduce or _pick(rng, REDUCTIONS)
    dtypes = FLOATS + (("int32", "int64") if reduce in ("sum", "amax", "amin") else ())
    self_, idx, src, dim, label, min_bytes = _scatter_operands(rng, dtypes, "near_one" if reduce == "prod" else "normal")
    include_self = bool(rng.random() < 0.5)
    integral = self_.dtype.startswith("int")
    exact = integral or reduce in ("amax", "amin")
    return SweepCase("scatter_reduce_", f"scatter_reduce_ {reduce} include_self={include_self} {self_.dtype} {label}",
                     "scatter_reduce_", {"self": self_, "index": idx, "src": src},
                     (Ref("self"), dim, Ref("index"), Ref("src"), reduce), {"include_self": include_self},
                     lambda torch, v: v["self"].scatter_reduce_(dim, v["index"], v["src"], reduce,
                                                                include_self=include_self),
                     min_bytes, inplace="self", compare="exact" if exact else "accumulate")


# ---------------------------------------------------------------------------- histc


def draw_histc(rng):
    dtype = _pick(rng, ("float32", "float32", "float64"))  # PyTorch's CUDA histc takes no 16-bit floats
    ndim = int(rng.integers(1, 3))
    shape = _cap(draw_shape(rng, ndim, _log2_elements(rng)))
    x = dense(shape, dtype, _layout(rng, ndim, ("contiguous", "contiguous", "sliced")), rng)
    bins = max(1, int(round(math.exp(rng.uniform(0, math.log(4096))))))
    if rng.random() < 0.5:
        lo, hi, what = 0, 0, "auto range"
    else:
        lo, hi = _pick(rng, ((-3, 3), (-1, 2), (0, 1)))
        what = f"range({lo},{hi})"
    min_bytes = x.distinct_bytes + bins * x.itemsize
    return SweepCase("histc", f"histc {x.describe()} bins{bins} {what}", "histc", {"x": x},
                     (Ref("x"), bins, lo, hi), {}, lambda torch, v: torch.histc(v["x"], bins, lo, hi), min_bytes,
                     compare="counts")


# ---------------------------------------------------------------------------- upsample_nearest2d

SCALES = (2, 2, 3, 1.5, 0.5, "size")


def _upsample_geometry(rng, max_out=MAX_ELEMENTS):
    scale = _pick(rng, SCALES)
    while True:
        n, c = int(_pick(rng, (1, 2, 4, 8, 16))), int(_pick(rng, (1, 3, 16, 32, 64, 128, 256)))
        h, w = int(rng.integers(7, 321)), int(rng.integers(7, 321))
        if rng.random() < 0.4:
            h, w = int(_pick(rng, (16, 32, 64, 128, 256))), int(_pick(rng, (16, 32, 64, 128, 256)))
        if scale == "size":
            size = (int(rng.integers(max(1, h // 2), 3 * h + 1)), int(rng.integers(max(1, w // 2), 3 * w + 1)))
            out_hw = size
            kwargs = {"size": size}
        else:
            out_hw = (int(math.floor(h * scale)), int(math.floor(w * scale)))
            kwargs = {"scale_factor": scale}
        if min(out_hw) >= 1 and n * c * out_hw[0] * out_hw[1] <= max_out and n * c * h * w >= 1 << 10:
            return (n, c, h, w), out_hw, kwargs


def draw_upsample(rng):
    dtype = _pick(rng, UPSAMPLE_DTYPES)
    shape, out_hw, kwargs = _upsample_geometry(rng)
    x = dense(shape, dtype, _pick(rng, ("contiguous", "contiguous", "channels_last")), rng)
    out_numel = shape[0] * shape[1] * out_hw[0] * out_hw[1]
    read = x.distinct_bytes if out_hw[0] >= shape[2] and out_hw[1] >= shape[3] else min(
        x.distinct_bytes, out_numel * 32)
    what = f"size={out_hw}" if "size" in kwargs else f"x{kwargs['scale_factor']}"

    def reference(torch, v):
        return torch.nn.functional.interpolate(v["x"], mode="nearest", **kwargs)

    return SweepCase("upsample_nearest2d", f"upsample_nearest2d {x.describe()} {what}", "upsample_nearest2d",
                     {"x": x}, (Ref("x"),), dict(kwargs), reference, read + out_numel * x.itemsize)


def draw_upsample_backward(rng):
    dtype = _pick(rng, ("float32", "float16", "bfloat16", "float64"))
    shape, out_hw, kwargs = _upsample_geometry(rng)
    n, c, h, w = shape
    grad = dense((n, c) + out_hw, dtype, _pick(rng, ("contiguous", "contiguous", "channels_last")), rng)
    scale = kwargs.get("scale_factor")
    what = f"size={out_hw}" if scale is None else f"x{scale}"

    def reference(torch, v):
        s = None if scale is None else float(scale)
        return torch.ops.aten.upsample_nearest2d_backward(v["grad_output"], list(out_hw), list(shape), s, s)

    return SweepCase("upsample_nearest2d_backward", f"upsample_nearest2d_backward grad {grad.describe()} {what}",
                     "upsample_nearest2d_backward", {"grad_output": grad},
                     (Ref("grad_output"), shape), {} if scale is None else {"scale_factor": scale}, reference,
                     grad.distinct_bytes + _numel(shape) * grad.itemsize, compare="exact")


# ---------------------------------------------------------------------------- elementwise

BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum", "minimum": "minimum"}


def _broadcast_partner(rng, shape):
    """A shape that broadcasts against `shape`: the same, trailing dims only, or some dims of size 1."""
    choice = rng.random()
    if choice < 0.5 or len(shape) == 0:
        return tuple(shape)
    if choice < 0.75 and len(shape) > 1:
        return tuple(shape[int(rng.integers(1, len(shape))):])
    return tuple(1 if rng.random() < 0.5 else s for s in shape)


def draw_elementwise(rng):
    op = _pick(rng, tuple(BINARY))
    ndim = int(rng.integers(1, 5))
    shape = _cap(draw_shape(rng, ndim, _log2_elements(rng)))
    x_dtype = _pick(rng, ARITH_DTYPES)
    y_dtype = x_dtype if rng.random() < 0.7 else _pick(rng, ARITH_DTYPES)
    x = dense(shape, x_dtype, _layout(rng, ndim, ("contiguous", "contiguous", "transposed", "sliced")), rng)
    operands = {"x": x}
    if rng.random() < 0.25:
        floating = x_dtype in FLOATS
        if op in ("maximum", "minimum"):
            number = 0.25 if floating else 7  # torch.clamp, PyTorch's way, keeps x's dtype
        else:
            number = _pick(rng, (3, -2, 0.5, 2.5)) if op != "div" else _pick(rng, (3, 0.5))
        operands["y"] = Number(number)
        y_text = repr(number)
        y_bytes = 0
    else:
        y_shape = _broadcast_partner(rng, shape)
        y = dense(y_shape, y_dtype, _layout(rng, len(y_shape), ("contiguous", "contiguous", "transposed", "expanded")),
                  rng)
        operands["y"] = y
        y_text = y.describe()
        y_bytes = y.distinct_bytes
    number = operands["y"].value if isinstance(operands["y"], Number) else None

    def reference(torch, v):
        if number is not None and op in ("maximum", "minimum"):
            return torch.clamp(v["x"], min=number) if op == "maximum" else torch.clamp(v["x"], max=number)
        return getattr(torch, op)(v["x"], v["y"])

    out_dtype = torch_result_dtype(op, x_dtype, number if number is not None else operands["y"].dtype)
    return SweepCase("elementwise", f"{op} {x.describe()} {y_text}", op, operands, (Ref("x"), Ref("y")), {},
                     reference, x.distinct_bytes + y_bytes + x.numel * ITEMSIZE[out_dtype])


def torch_result_dtype(op, x_dtype, y):
    """The dtype PyTorch gives `op` of a tensor of x_dtype and `y`, a dtype (a tensor with dims) or a Python
    number (weak), by jitops's own promotion (the rules jitops.add and the others follow for PyTorch
    tensors, checked against PyTorch's for every pair of dtypes)."""
    if not isinstance(y, str):
        y = "number:" + ("bool" if isinstance(y, bool) else "int" if isinstance(y, int) else "float")
    return _core.result_dtype(x_dtype, y, "torch", division=op == "div")


KERNELS = (
    ("T x, T y", "T z", "z = T(float(x) * float(y) + 1.0f)", "fma1",
     lambda torch, v: (v["x"].float() * v["y"].float() + 1).to(v["x"].dtype)),
    ("T x", "T z", "z = float(x) > 0.0f ? x : T(0.1f * float(x))", "leaky_relu",
     lambda torch, v: torch.where(v["x"].float() > 0, v["x"], (0.1 * v["x"].float()).to(v["x"].dtype))),
    ("T x, T y, float a", "T z", "z = T(a * float(x) + float(y))", "axpy",
     lambda torch, v: (v["a"] * v["x"].float() + v["y"].float()).to(v["x"].dtype)),
)


def draw_elementwise_kernel(rng):
    in_params, out_params, operation, name, reference = KERNELS[int(rng.integers(0, len(KERNELS)))]
    ndim = int(rng.integers(1, 5))
    shape = _cap(draw_shape(rng, ndim, _log2_elements(rng)))
    dtype = _pick(rng, FLOATS)
    operands = {"x": dense(shape, dtype, _layout(rng, ndim, ("contiguous", "contiguous", "transposed", "sliced")), rng)}
    args = [Ref("x")]
    if "T y" in in_params:
        y_shape = _broadcast_partner(rng, shape)
        operands["y"] = dense(y_shape, dtype, _layout(rng, len(y_shape), ("contiguous", "expanded")), rng)
        args.append(Ref("y"))
    if "float a" in in_params:
        operands["a"] = Number(0.75)
        args.append(Ref("a"))
    min_bytes = sum(s.distinct_bytes for s in operands.values() if isinstance(s, Dense)) + _numel(shape) * \
        operands["x"].itemsize
    described = " ".join(s.describe() for s in operands.values())
    return SweepCase("ElementwiseKernel", f"ElementwiseKernel {name} {described}",
                     ("kernel", in_params, out_params, operation, name), operands, tuple(args), {}, reference,
                     min_bytes, compare="close")


FAMILIES = {
    "index_select": draw_index_select,
    "take": draw_take,
    "gather": draw_gather,
    "index_add_": draw_index_add,
    "index_copy_": draw_index_copy,
    "index_fill_": draw_index_fill,
    "scatter_add_": draw_scatter_add,
    "scatter_reduce_": draw_scatter_reduce,
    "histc": draw_histc,
    "upsample_nearest2d": draw_upsample,
    "upsample_nearest2d_backward": draw_upsample_backward,
    "elementwise": draw_elementwise,
    "ElementwiseKernel": draw_elementwise_kernel,
}


def draw_cases(seed, per_family=10, filter_text=""):
    """`per_family` cases of every family (scatter_reduce_ cycles through the reductions), in a fixed order for
    `seed`; `filter_text` keeps the cases whose name contains it."""
    cases = []
    for k, (family, draw) in enumerate(FAMILIES.items()):
        rng = np.random.default_rng([seed, k])
        for i in range(per_family):
            case = draw(rng, REDUCTIONS[i % len(REDUCTIONS)]) if family == "scatter_reduce_" else draw(rng)
            case.notes["seed"] = [seed, k, i]
            if filter_text in case.name or filter_text == family:
                cases.append(case)
    return cases
