"""jitops' ops as PyTorch custom ops: torch.ops.jitops.<name>.

Each op runs the jitops kernel (with the C++ core's routing to this package
switched off, so that the kernel runs on whatever tensors it is handed) and
has a fake implementation giving the output's shape, dtype and strides, for
torch.compile, torch.export and FakeTensor tracing. The in-place ops come in
two forms, as PyTorch's do: `index_add_` mutates self (declared, so the
dispatcher bumps its version counter) and `index_add` returns a new tensor
(what autograd formulas and compiled graphs use).

Registered once, by install() in jitops._torch.
"""

import contextlib
from typing import List, Optional, Union

import torch
from torch import Tensor

from .. import _core

Number = Union[int, float, bool]
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
_library = {}
# Each op's own Python body (the kernel call), by name: eager calls that need
# no dispatcher (plain tensors, nothing traced) run these directly (gradients.py).
IMPLS = {}
# Stand-ins for jitops' kernels by op name (tests of this wiring on the CPU
# put PyTorch's own ops here); absent, the op runs jitops' kernel.
KERNELS = {}


def kernel(name):
    return KERNELS.get(name) or getattr(_core, name)


class _KernelsOnly:
    """jitops' kernels run on the tensors as they are (no second trip through the dispatcher). A class, not
    a contextlib generator: it is entered on every kernel call under autograd, and costs a third as much."""

    __slots__ = ("previous",)

    def __enter__(self):
        self.previous = _core._torch_routing(False)

    def __exit__(self, *exc):
        _core._torch_routing(self.previous)
        return False


def kernels_only():
    return _KernelsOnly()


def with_out(result, out):
    """`result`, or copied into the caller's out= and that returned."""
    if out is None:
        return result
    out.copy_(result)
    return out


def pair(v, kind):
    """size= / scale_factor= as the custom ops take them: None, or a list of two."""
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [kind(x) for x in v]
    return [kind(v), kind(v)]


def deterministic_default():
    """torch.use_deterministic_algorithms(True) makes jitops' sums deterministic too."""
    return torch.are_deterministic_algorithms_enabled()


def op(name, mutates=()):
    """Registers `fn` as torch.ops.jitops.<name> and keeps the CustomOpDef for register_fake/autograd."""

    def wrap(fn):
        IMPLS[name] = fn
        defined = torch.library.custom_op(f"jitops::{name}", mutates_args=mutates)(fn)
        _library[name] = defined
        return defined

    return wrap


# ---------------------------------------------------------------------------- the gather family


@op("index_select")
def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    with kernels_only():
        return kernel("index_select")(x, dim, index)


@index_select.register_fake
def _(x, dim, index):
    shape = list(x.shape)
    if shape:
        shape[dim % x.dim()] = index.numel()
    return x.new_empty(shape)


@op("take")
def take(x: Tensor, indices: Tensor, axis: Optional[int]) -> Tensor:
    with kernels_only():
        return kernel("take")(x, indices, axis)


@take.register_fake
def _(x, indices, axis):
    if axis is None:
        return x.new_empty(indices.shape)
    a = axis % x.dim()
    return x.new_empty(tuple(x.shape[:a]) + tuple(indices.shape) + tuple(x.shape[a + 1:]))


@op("gather")
def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    with kernels_only():
        return kernel("gather")(x, dim, index)


@gather.register_fake
def _(x, dim, index):
    return x.new_empty(index.shape)


# ---------------------------------------------------------------------------- the accumulate family


@op("index_add_", mutates=("self",))
def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, alpha: Number, deterministic: bool) -> None:
    with kernels_only():
        kernel("index_add_")(self, dim, index, source, alpha, deterministic=deterministic)


@op("index_add")
def index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, alpha: Number, deterministic: bool) -> Tensor:
    out = self.clone()
    IMPLS["index_add_"](out, dim, index, source, alpha, deterministic)  # on its own new tensor: no trip through the dispatcher
    return out


@op("index_copy_", mutates=("self",))
def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> None:
    with kernels_only():
        kernel("index_copy_")(self, dim, index, source)


@op("index_copy")
def index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    out = self.clone()
    IMPLS["index_copy_"](out, dim, index, source)  # on its own new tensor: no trip through the dispatcher
    return out


@op("index_fill_", mutates=("self",))
def index_fill_(self: Tensor, dim: int, index: Tensor, value: Number) -> None:
    with kernels_only():
        kernel("index_fill_")(self, dim, index, value)


@op("index_fill")
def index_fill(self: Tensor, dim: int, index: Tensor, value: Number) -> Tensor:
    out = self.clone()
    IMPLS["index_fill_"](out, dim, index, value)  # on its own new tensor: no trip through the dispatcher
    return out


@op("scatter_add_", mutates=("self",))
def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor, deterministic: bool) -> None:
    with kernels_only():
        kernel("scatter_add_")(self, dim, index, src, deterministic=deterministic)


@op("scatter_add")
def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor, deterministic: bool) -> Tensor:
    out = self.clone()
    IMPLS["scatter_add_"](out, dim, index, src, deterministic)  # on its own new tensor: no trip through the dispatcher
    return out


@op("scatter_reduce_", mutates=("self",))
def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool,
                    deterministic: bool) -> None:
    with kernels_only():
        kernel("scatter_reduce_")(self, dim, index, src, reduce, include_self, deterministic=deterministic)


@op("scatter_reduce")
def scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool,
                   deterministic: bool) -> Tensor:
    out = self.clone()
    IMPLS["scatter_reduce_"](out, dim, index, src, reduce, include_self, deterministic)  # on its own new tensor: no trip through the dispatcher
    return out


for _name in ("index_add_", "index_copy_", "index_fill_", "scatter_add_", "scatter_reduce_"):
    _library[_name].register_fake(lambda self, *args: None)
for _name in ("index_add", "index_copy", "index_fill", "scatter_add", "scatter_reduce"):
    _library[_name].register_fake(lambda self, *args: self.clone())


# ---------------------------------------------------------------------------- histc, upsample


@op("histc")
def histc(x: Tensor, bins: int, min: float, max: float, counts_dtype: Optional[torch.dtype]) -> Tensor:
    with kernels_only():
        return kernel("histc")(x, bins, min, max, counts_dtype=counts_dtype)


@histc.register_fake
def _(x, bins, min, max, counts_dtype):
    return x.new_empty((bins,), dtype=counts_dtype or x.dtype)


def upsample_size(in_hw, size, scale_factor):
    """The output's (height, width), as jitops and F.interpolate(mode="nearest") compute it."""
    if size is not None:
        return tuple(int(s) for s in size)
    return tuple(int(float(i) * float(s) // 1) for i, s in zip(in_hw, scale_factor))


def _like_layout(x, shape):
    channels_last = x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
    return torch.empty(shape, dtype=x.dtype, device=x.device,
                       memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@op("upsample_nearest2d")
def upsample_nearest2d(x: Tensor, size: Optional[List[int]], scale_factor: Optional[List[float]]) -> Tensor:
    with kernels_only():
        return kernel("upsample_nearest2d")(x, size=size, scale_factor=scale_factor)


@upsample_nearest2d.register_fake
def _(x, size, scale_factor):
    return _like_layout(x, tuple(x.shape[:2]) + upsample_size(x.shape[2:], size, scale_factor))


@op("upsample_nearest2d_backward")
def upsample_nearest2d_backward(grad_output: Tensor, input_size: List[int],
                                scale_factor: Optional[List[float]]) -> Tensor:
    with kernels_only():
        return kernel("upsample_nearest2d_backward")(grad_output, input_size, scale_factor=scale_factor)


@upsample_nearest2d_backward.register_fake
def _(grad_output, input_size, scale_factor):
    return _like_layout(grad_output, tuple(input_size))


# ---------------------------------------------------------------------------- elementwise


def _binary(name):
    reference = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
                 "minimum": torch.minimum}[name]

    def tensors(x: Tensor, y: Tensor) -> Tensor:
        with kernels_only():
            return kernel(name)(x, y)

    def with_number(x: Tensor, y: Number, number_first: bool) -> Tensor:
        with kernels_only():
            return kernel(name)(y, x) if number_first else kernel(name)(x, y)

    tensors.__name__, with_number.__name__ = name, name + "_scalar"
    both = op(name)(tensors)
    scalar = op(name + "_scalar")(with_number)
    # Shapes, dtypes and strides as PyTorch's own op gives them: jitops lays
    # its results out by the same rule (TensorIterator's order).
    both.register_fake(lambda x, y: reference(x, y))

    def fake_scalar(x, y, number_first):
        if name in ("maximum", "minimum"):  # torch.maximum takes tensors: a weak 0-d one promotes as a number
            y = torch.tensor(y, device=x.device)
            return reference(y, x) if number_first else reference(x, y)
        return reference(y, x) if number_first else reference(x, y)

    scalar.register_fake(fake_scalar)
    return both, scalar


for _name in BINARY:
    _binary(_name)


def ops():
    """name -> CustomOpDef of every registered op."""
    return dict(_library)
