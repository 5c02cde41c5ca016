"""torch.compile of functions that call jitops.<op>: the plain names are C
builtins, which Dynamo cannot trace, so each is given a polyfill
(torch._dynamo.substitute_in_graph) that Dynamo inlines instead: a call of the
custom op (an in-place op: its functional form, copied into self, which
functionalization turns back into an in-place update). Eager calls still run
the builtin.
"""

import torch

from .. import ops as _ops
from . import install
from .library import deterministic_default, pair, with_out

_registered = False


def _polyfills():
    # Dynamo traces torch.ops.jitops.* reached through the torch module (a namespace object held in a
    # closure is not something it can wrap).
    def index_select(x, dim, index, out=None, *, stream=None):
        return with_out(torch.ops.jitops.index_select(x, dim, index), out)

    def take(x, indices, axis=None, out=None, *, stream=None):
        return with_out(torch.ops.jitops.take(x, indices, axis), out)

    def gather(x, dim, index, out=None, *, stream=None):
        return with_out(torch.ops.jitops.gather(x, dim, index), out)

    def index_add_(self, dim, index, source, alpha=1, *, deterministic=False, stream=None):
        self.copy_(torch.ops.jitops.index_add(self, dim, index, source, alpha, deterministic or deterministic_default()))
        return self

    def index_copy_(self, dim, index, source, *, stream=None):
        self.copy_(torch.ops.jitops.index_copy(self, dim, index, source))
        return self

    def index_fill_(self, dim, index, value, *, stream=None):
        self.copy_(torch.ops.jitops.index_fill(self, dim, index, value))
        return self

    def scatter_add_(self, dim, index, src, *, deterministic=False, stream=None):
        self.copy_(torch.ops.jitops.scatter_add(self, dim, index, src, deterministic or deterministic_default()))
        return self

    def scatter_reduce_(self, dim, index, src, reduce, include_self=True, *, deterministic=False, stream=None):
        det = deterministic or (deterministic_default() and reduce in ("sum", "mean"))
        self.copy_(torch.ops.jitops.scatter_reduce(self, dim, index, src, reduce, include_self, det))
        return self

    def histc(x, bins=100, min=0, max=0, out=None, *, counts_dtype=None, stream=None):
        dtype = getattr(torch, counts_dtype) if isinstance(counts_dtype, str) else counts_dtype
        return with_out(torch.ops.jitops.histc(x, bins, float(min), float(max), dtype), out)

    def upsample_nearest2d(x, size=None, scale_factor=None, out=None, *, stream=None):
        return with_out(torch.ops.jitops.upsample_nearest2d(x, pair(size, int), pair(scale_factor, float)), out)

    def upsample_nearest2d_backward(grad_output, input_size, scale_factor=None, out=None, *, stream=None):
        return with_out(torch.ops.jitops.upsample_nearest2d_backward(grad_output, [int(s) for s in input_size],
                                                  pair(scale_factor, float)), out)

    fills = {f.__name__: f for f in (index_select, take, gather, index_add_, index_copy_, index_fill_, scatter_add_,
                                     scatter_reduce_, histc, upsample_nearest2d, upsample_nearest2d_backward)}

    def binary(name):
        scalar_name = name + "_scalar"

        def fn(x, y, out=None, *, stream=None):
            if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
                return with_out(getattr(torch.ops.jitops, name)(x, y), out)
            if isinstance(x, torch.Tensor):
                return with_out(getattr(torch.ops.jitops, scalar_name)(x, y, False), out)
            return with_out(getattr(torch.ops.jitops, scalar_name)(y, x, True), out)

        return fn

    for name in ("add", "sub", "mul", "div", "maximum", "minimum"):
        fills[name] = binary(name)
    return fills


def register():
    """Gives Dynamo a polyfill for every jitops op (once; torch._dynamo must be importable)."""
    global _registered
    if _registered:
        return
    install()
    import torch._dynamo

    for name, fill in _polyfills().items():
        builtin = _ops.OPS[name][0]
        torch._dynamo.substitute_in_graph(builtin, skip_signature_check=True)(fill)
    _registered = True
