"""Autograd for jitops' custom ops, with PyTorch's formulas (derivatives.yaml
and FunctionsManual.cpp's scatter_reduce_backward).

Backward passes run jitops' own ops (torch.ops.jitops.*, themselves
differentiable, so double backward works where PyTorch has it); PyTorch ops
appear only for masks, sums over broadcast dims and dtype casts. Sums honour
torch.use_deterministic_algorithms. The in-place ops run as one
torch.autograd.Function (InPlace) that marks self dirty, as PyTorch's own
in-place ops do: its version counter moves, a leaf that requires grad is
refused, views are rebased.
"""

import torch

from .library import BINARY, IMPLS, deterministic_default, ops

J = None  # torch.ops.jitops behind FastOps, bound by register()


def plain(values):
    """No tensor among `values` is a subclass (FakeTensor, FunctionalTensor, ...)."""
    return all(type(v) is torch.Tensor or type(v) is torch.nn.Parameter for v in values if isinstance(v, torch.Tensor))


def direct(values):
    """A call that needs no dispatcher: nothing traced, plain tensors, and no graph to build."""
    return not torch.is_grad_enabled() and not torch.compiler.is_compiling() and plain(values)


class FastOps:
    """torch.ops.jitops for the formulas below: a call that builds no graph on plain tensors runs the op's
    own body at once (the custom op's dispatch costs tens of microseconds a call); any other call (double
    backward, tracing) goes through the custom op, so it stays differentiable and traceable."""

    def __getattr__(self, name):
        custom = getattr(torch.ops.jitops, name)
        body = IMPLS.get(name)
        if body is None:
            call = custom
        else:
            def call(*args):
                return body(*args) if direct(args) else custom(*args)
        setattr(self, name, call)
        return call


def _pad_to(grad, shape):
    """`grad` (shaped like an index) inside zeros of `shape` (a source larger than its index)."""
    if tuple(grad.shape) == tuple(shape):
        return grad
    out = grad.new_zeros(shape)
    out[tuple(slice(0, n) for n in grad.shape)] = grad
    return out


# ---------------------------------------------------------------------------- the gather family


def _into_zeros(op, shape, like, *args):
    """zeros(shape) with `op` (index_add, scatter_add) applied: in place on the new zeros when no graph is
    being built (no copy of a tensor that may be a whole embedding table), functional under create_graph."""
    zeros = like.new_zeros(shape)
    if torch.is_grad_enabled():
        return getattr(J, op)(zeros, *args)
    getattr(J, op + "_")(zeros, *args)
    return zeros


def _dim_index_setup(ctx, inputs, output):
    """index_select's and gather's: the dim, x's shape, the index."""
    x, dim, index = inputs
    ctx.dim, ctx.shape = dim, x.shape
    ctx.save_for_backward(index)


def _index_select_backward(ctx, grad):
    (index,) = ctx.saved_tensors
    return _into_zeros("index_add", ctx.shape, grad, ctx.dim, index, grad, 1, deterministic_default()), None, None


def _take_setup(ctx, inputs, output):
    x, indices, axis = inputs
    ctx.axis, ctx.shape = axis, x.shape
    ctx.save_for_backward(indices)


def _take_backward(ctx, grad):
    (indices,) = ctx.saved_tensors
    shape, axis = ctx.shape, ctx.axis
    det = deterministic_default()
    if axis is None:
        n = max(1, int(torch.Size(shape).numel()))
        flat = indices.reshape(-1)
        flat = torch.where(flat < 0, flat + n, flat)  # numpy.take's negative indices count from the end
        g = _into_zeros("index_add", (n,), grad, 0, flat, grad.reshape(-1), 1, det)
        return g.reshape(shape), None, None
    a = axis % len(shape)
    flat = indices.reshape(-1)
    flat = torch.where(flat < 0, flat + shape[a], flat)
    g = grad.reshape(tuple(shape[:a]) + (flat.numel(),) + tuple(shape[a + 1:]))
    return _into_zeros("index_add", shape, grad, a, flat, g, 1, det), None, None


def _gather_backward(ctx, grad):
    (index,) = ctx.saved_tensors
    return _into_zeros("scatter_add", ctx.shape, grad, ctx.dim, index, grad, deterministic_default()), None, None


# ---------------------------------------------------------------------------- the accumulate family


def _index_add_setup(ctx, inputs, output):
    self, dim, index, source, alpha, deterministic = inputs
    ctx.dim, ctx.alpha, ctx.source_shape = dim, alpha, source.shape
    ctx.save_for_backward(index)


def _index_add_backward(ctx, grad):
    (index,) = ctx.saved_tensors
    grad_source = None
    if ctx.needs_input_grad[3]:
        grad_source = J.index_select(grad, ctx.dim, index)
        if ctx.alpha != 1:
            grad_source = J.mul_scalar(grad_source, ctx.alpha, False)
        grad_source = grad_source.reshape(ctx.source_shape)
    return grad, None, None, grad_source, None, None


def _index_copy_setup(ctx, inputs, output):
    self, dim, index, source = inputs
    ctx.dim, ctx.source_shape = dim, source.shape
    ctx.save_for_backward(index)


def _index_copy_backward(ctx, grad):
    (index,) = ctx.saved_tensors
    grad_self = J.index_fill(grad, ctx.dim, index, 0) if ctx.needs_input_grad[0] else None
    grad_source = J.index_select(grad, ctx.dim, index).reshape(ctx.source_shape) if ctx.needs_input_grad[3] else None
    return grad_self, None, None, grad_source


def _index_fill_setup(ctx, inputs, output):
    self, dim, index, value = inputs
    ctx.dim = dim
    ctx.save_for_backward(index)


def _index_fill_backward(ctx, grad):
    (index,) = ctx.saved_tensors
    return J.index_fill(grad, ctx.dim, index, 0), None, None, None


def _scatter_add_setup(ctx, inputs, output):
    self, dim, index, src, deterministic = inputs
    ctx.dim, ctx.src_shape = dim, src.shape
    ctx.save_for_backward(index)


def _scatter_add_backward(ctx, grad):
    (index,) = ctx.saved_tensors
    grad_src = _pad_to(J.gather(grad, ctx.dim, index), ctx.src_shape) if ctx.needs_input_grad[3] else None
    return grad, None, None, grad_src, None


def _scatter_reduce_setup(ctx, inputs, output):
    self, dim, index, src, reduce, include_self, deterministic = inputs
    ctx.dim, ctx.reduce, ctx.include_self, ctx.src_shape = dim, reduce, include_self, src.shape
    ctx.save_for_backward(self, index, src, output)


def _scatter_reduce_backward(ctx, grad):
    """PyTorch's scatter_reduce_backward (aten/src/ATen/native/... FunctionsManual.cpp), on jitops' ops."""
    self, index, src, result = ctx.saved_tensors
    dim, reduce, include_self = ctx.dim, ctx.reduce, ctx.include_self
    det = deterministic_default()
    src_window = src[tuple(slice(0, n) for n in index.shape)]
    if reduce == "sum":
        grad_self, grad_src = grad, J.gather(grad, dim, index)
    elif reduce == "mean":
        n = torch.ones_like(grad) if include_self else torch.zeros_like(grad)
        n = J.scatter_add(n, dim, index, torch.ones_like(src_window), det)
        n = n.masked_fill(n == 0, 1)
        grad_self = J.div(grad, n)
        grad_src = J.gather(grad_self, dim, index)
    elif reduce == "prod":
        # Products without the zeros: an element of self or src that is zero gets the product of the others.
        masked_self = self.masked_fill(self == 0, 1)
        masked_self_result = J.scatter_reduce(masked_self, dim, index, src, reduce, include_self, False)
        grad_self = J.div(J.mul(grad, masked_self_result), masked_self)
        src_zero = src_window == 0
        src_num_zeros = J.gather(J.scatter_add(torch.zeros_like(grad), dim, index, src_zero.to(grad.dtype), det),
                                 dim, index)
        src_single_zero = src_zero & (src_num_zeros == 1)
        masked_src = src.clone()
        masked_src[tuple(slice(0, n) for n in index.shape)] = src_window.masked_fill(src_single_zero, 1)
        masked_src_result = J.scatter_reduce(self, dim, index, masked_src, reduce, include_self, False)
        grad_src1 = torch.where(src_single_zero, J.gather(J.mul(grad, masked_src_result), dim, index),
                                J.div(J.gather(J.mul(grad, result), dim, index), src_window.masked_fill(src_zero, 1)))
        if bool((src_num_zeros > 1).any()):
            raise RuntimeError("scatter_reduce_(reduce='prod'): the gradient with more than one zero in the source "
                               "values reduced into one element is not implemented (as in PyTorch)")
        grad_src = grad_src1
    else:  # amax, amin: shared equally between the values that reached the result
        value = J.gather(result, dim, index)
        self_is_result = (self == result).to(grad.dtype)
        src_is_result = (src_window == value).to(grad.dtype)
        n = J.scatter_add(self_is_result, dim, index, src_is_result, det)
        grad_distributed = J.div(grad, n)
        grad_self = J.mul(self_is_result, grad_distributed)
        grad_src = J.mul(src_is_result, J.gather(grad_distributed, dim, index))
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0)
    return grad_self, None, None, _pad_to(grad_src, ctx.src_shape), None, None, None


# ---------------------------------------------------------------------------- upsample


def _upsample_setup(ctx, inputs, output):
    x, size, scale_factor = inputs
    ctx.input_size, ctx.scale_factor = list(x.shape), scale_factor


def _upsample_backward(ctx, grad):
    return J.upsample_nearest2d_backward(grad, ctx.input_size, ctx.scale_factor), None, None


def _upsample_grad_setup(ctx, inputs, output):
    grad_output, input_size, scale_factor = inputs
    ctx.output_hw, ctx.scale_factor = list(grad_output.shape[2:]), scale_factor


def _upsample_grad_backward(ctx, grad):
    """The gradient of the backward is the forward, with the same mapping of rows and columns."""
    size = None if ctx.scale_factor is not None else ctx.output_hw
    return J.upsample_nearest2d(grad, size, ctx.scale_factor), None, None


# ---------------------------------------------------------------------------- elementwise


def _to_input(grad, like_shape, like_dtype):
    """A gradient summed over the dims its input was broadcast along, in the input's dtype."""
    if tuple(grad.shape) != tuple(like_shape):
        grad = grad.sum_to_size(like_shape) if len(like_shape) else grad.sum()
    return grad.to(like_dtype)


def _neg(g):
    return J.mul_scalar(g, -1, False)


def _binary_grads(name, x, y, g):
    """(dz/dx * g, dz/dy * g) before broadcasting sums; y may be a number (its gradient is then unused)."""
    def mul(a, b):
        return J.mul(a, b) if torch.is_tensor(b) else J.mul_scalar(a, b, False)

    def div(a, b):
        return J.div(a, b) if torch.is_tensor(b) else J.div_scalar(a, b, False)

    if name == "add":
        return g, g
    if name == "sub":
        return g, _neg(g)
    if name == "mul":
        return mul(g, y), (mul(g, x) if torch.is_tensor(y) else None)
    if name == "div":
        gx = div(g, y)
        gy = _neg(div(mul(g, x), mul(y, y))) if torch.is_tensor(y) else None
        return gx, gy
    # maximum / minimum: PyTorch splits a tie's gradient in halves.
    tie = x == y
    x_wins = (x > y) if name == "maximum" else (x < y)
    half = J.mul_scalar(g, 0.5, False)
    gx = torch.where(tie, half, torch.where(x_wins, g, torch.zeros_like(g)))
    gy = torch.where(tie, half, torch.where(x_wins, torch.zeros_like(g), g)) if torch.is_tensor(y) else None
    return gx, gy


def _binary_formulas(name):
    def setup(ctx, inputs, output):
        x, y = inputs
        ctx.shapes = (x.shape, y.shape)
        ctx.dtypes = (x.dtype, y.dtype)
        ctx.save_for_backward(x, y)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx, gy = _binary_grads(name, x, y, grad)
        return (_to_input(gx, ctx.shapes[0], ctx.dtypes[0]) if ctx.needs_input_grad[0] else None,
                _to_input(gy, ctx.shapes[1], ctx.dtypes[1]) if ctx.needs_input_grad[1] else None)

    def setup_scalar(ctx, inputs, output):
        x, y, number_first = inputs
        ctx.number, ctx.number_first, ctx.shape, ctx.dtype = y, number_first, x.shape, x.dtype
        ctx.save_for_backward(x)

    def backward_scalar(ctx, grad):
        (x,) = ctx.saved_tensors
        y = ctx.number
        if not ctx.number_first or name in ("add", "mul", "maximum", "minimum"):
            # x op y, or a commutative op with the number first
            gx, _ = _binary_grads(name, x, y, grad)
            if name in ("maximum", "minimum"):
                gx, _ = _binary_grads(name, x, torch.full_like(x, y), grad)
        elif name == "sub":  # y - x
            gx = _neg(grad)
        else:  # y / x
            gx = _neg(J.div(J.mul_scalar(grad, y, False), J.mul(x, x)))
        return _to_input(gx, ctx.shape, ctx.dtype), None, None

    return (setup, backward), (setup_scalar, backward_scalar)


FORMULAS = {
    "index_select": (_dim_index_setup, _index_select_backward),
    "take": (_take_setup, _take_backward),
    "gather": (_dim_index_setup, _gather_backward),
    "index_add": (_index_add_setup, _index_add_backward),
    "index_copy": (_index_copy_setup, _index_copy_backward),
    "index_fill": (_index_fill_setup, _index_fill_backward),
    "scatter_add": (_scatter_add_setup, _scatter_add_backward),
    "scatter_reduce": (_scatter_reduce_setup, _scatter_reduce_backward),
    "upsample_nearest2d": (_upsample_setup, _upsample_backward),
    "upsample_nearest2d_backward": (_upsample_grad_setup, _upsample_grad_backward),
}
for _name in BINARY:
    FORMULAS[_name], FORMULAS[_name + "_scalar"] = _binary_formulas(_name)

# In-place ops whose gradient needs self as it was before the op (the rest only need the index and shapes).
_NEEDS_OLD_SELF = {"scatter_reduce"}


class _Shifted:
    """InPlace's ctx as the functional formula sees it: its inputs start at self, not at the op's name."""

    def __init__(self, ctx):
        self._ctx = ctx
        self.needs_input_grad = ctx.needs_input_grad[1:]

    def __getattr__(self, name):
        return getattr(self._ctx, name)


class InPlace(torch.autograd.Function):
    """An in-place jitops op under autograd: the mutating custom op, self marked dirty, the functional
    op's formula for the gradients."""

    @staticmethod
    def forward(ctx, name, self, *args):
        setup, backward = FORMULAS[name]
        before = self.clone() if name in _NEEDS_OLD_SELF else self
        getattr(J, name + "_")(self, *args)
        ctx.mark_dirty(self)
        ctx.formula = backward
        setup(ctx, (before, *args), self)
        return self

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(ctx.formula(_Shifted(ctx), grad))


class Eager(torch.autograd.Function):
    """A functional jitops op under autograd in eager mode, without the custom op's dispatch: its body
    forward, the custom op's own formula backward."""

    @staticmethod
    def forward(ctx, name, *args):
        setup, backward = FORMULAS[name]
        out = IMPLS[name](*args)
        ctx.formula = backward
        setup(ctx, args, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(ctx.formula(_Shifted(ctx), grad))


def functional(name, *args):
    """torch.ops.jitops.<name>(*args) with its gradient: through Eager for plain tensors outside tracing,
    through the custom op otherwise."""
    if plain(args) and not torch.compiler.is_compiling():
        return Eager.apply(name, *args)
    return getattr(torch.ops.jitops, name)(*args)


def register():
    """Attaches every formula to its custom op (once, from install())."""
    global J
    J = FastOps()
    defs = ops()
    for name, (setup, backward) in FORMULAS.items():
        defs[name].register_autograd(backward, setup_context=setup)
