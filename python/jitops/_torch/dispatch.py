"""The calls jitops' C++ core hands to PyTorch's dispatcher (fastcall.h,
TorchDispatch): a tensor argument requires grad with grad mode on, carries a
forward-mode tangent, or is a tensor subclass (FakeTensor, FunctionalTensor).
Each goes to jitops' custom op, whose autograd formula and fake implementation PyTorch then uses; an
in-place op under autograd runs as gradients.InPlace.
"""

import inspect

import torch
import torch.autograd.forward_ad as _forward_ad

from . import install
from .gradients import functional as _functional
from .library import deterministic_default, pair, with_out


def _f(name, *args):
    return _functional(name, *args)

_signatures = {}


class _Binder:
    """inspect.Signature.bind and apply_defaults for the ops' plain signatures (positional-or-keyword
    parameters, then keyword-only ones, all but the first few with defaults), at a fraction of the cost:
    every call that needs autograd passes here. Anything unusual falls back to inspect."""

    def __init__(self, sig):
        self.sig = sig
        self.names = list(sig.parameters)
        self.positional = [n for n, p in sig.parameters.items()
                           if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        self.defaults = {n: p.default for n, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}

    def bind(self, name, args, kwargs):
        if len(args) > len(self.positional) or any(k not in self.sig.parameters for k in kwargs):
            b = self.sig.bind(*args, **kwargs)  # raises Python's own TypeError
            b.apply_defaults()
            return b.arguments
        a = dict(zip(self.positional, args))
        for k, v in kwargs.items():
            if k in a:
                raise TypeError(f"{name}() got multiple values for argument '{k}'")
            a[k] = v
        for n in self.names:
            if n not in a:
                if n not in self.defaults:
                    raise TypeError(f"{name}() missing required argument '{n}'")
                a[n] = self.defaults[n]
        return a


def _needs_grad(*values):
    return torch.is_grad_enabled() and any(torch.is_tensor(v) and v.requires_grad for v in values)


def _in_place(name, self, args, tensors):
    """The mutating op, through autograd when a tensor needs it."""
    J = torch.ops.jitops
    if _needs_grad(self, *tensors):
        from .gradients import InPlace

        return InPlace.apply(name, self, *args)
    getattr(J, name + "_")(self, *args)
    return self


def _run(name, a):
    J = torch.ops.jitops
    if name == "index_select":
        return with_out(_f("index_select", a["x"], a["dim"], a["index"]), a["out"])
    if name == "take":
        return with_out(_f("take", a["x"], a["indices"], a["axis"]), a["out"])
    if name == "gather":
        return with_out(_f("gather", a["x"], a["dim"], a["index"]), a["out"])
    if name == "index_add_":
        det = bool(a["deterministic"]) or deterministic_default()
        return _in_place("index_add", a["self"], (a["dim"], a["index"], a["source"], a["alpha"], det), (a["source"],))
    if name == "index_copy_":
        return _in_place("index_copy", a["self"], (a["dim"], a["index"], a["source"]), (a["source"],))
    if name == "index_fill_":
        value = a["value"]
        if torch.is_tensor(value):
            if value.requires_grad and torch.is_grad_enabled():
                raise RuntimeError("index_fill_: value: a tensor that requires grad is not supported; pass a number, "
                                   "or value.item() if it needs no gradient")
            value = value.item()
        return _in_place("index_fill", a["self"], (a["dim"], a["index"], value), ())
    if name == "scatter_add_":
        det = bool(a["deterministic"]) or deterministic_default()
        return _in_place("scatter_add", a["self"], (a["dim"], a["index"], a["src"], det), (a["src"],))
    if name == "scatter_reduce_":
        det = bool(a["deterministic"]) or (deterministic_default() and a["reduce"] in ("sum", "mean"))
        return _in_place("scatter_reduce", a["self"],
                         (a["dim"], a["index"], a["src"], a["reduce"], bool(a["include_self"]), det), (a["src"],))
    if name == "histc":
        dtype = a["counts_dtype"]
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        return with_out(J.histc(a["x"], a["bins"], float(a["min"]), float(a["max"]), dtype), a["out"])
    if name == "upsample_nearest2d":
        return with_out(_f("upsample_nearest2d", a["x"], pair(a["size"], int), pair(a["scale_factor"], float)),
                        a["out"])
    if name == "upsample_nearest2d_backward":
        return with_out(_f("upsample_nearest2d_backward", a["grad_output"], [int(s) for s in a["input_size"]],
                           pair(a["scale_factor"], float)), a["out"])
    x, y = a["x"], a["y"]
    if torch.is_tensor(x) and torch.is_tensor(y):
        result = _f(name, x, y)
    elif torch.is_tensor(x):
        result = _f(name + "_scalar", x, y.item() if hasattr(y, "item") else y, False)
    else:
        result = _f(name + "_scalar", y, x.item() if hasattr(x, "item") else x, True)
    return with_out(result, a["out"])


def _refuse_tangents(name, a):
    """jitops has no forward-mode (jvp) formulas, and PyTorch's custom ops pass a dual tensor's tangent over
    without a word: refuse it here rather than return a primal without its tangent."""
    if _forward_ad._current_level < 0:
        return
    for k, v in a.items():
        if torch.is_tensor(v) and _forward_ad.unpack_dual(v).tangent is not None:
            raise NotImplementedError(f"jitops.{name}(): {k}: forward-mode AD (a dual tensor) is not supported; "
                                      f"use reverse mode (backward, torch.autograd.grad) or the PyTorch op")


def call(name, *args, **kwargs):
    """jitops.<name>(*args, **kwargs) on PyTorch tensors, through torch.ops.jitops."""
    install()
    from ..ops import OPS

    binder = _signatures.get(name)
    if binder is None:
        binder = _signatures[name] = _Binder(inspect.signature(OPS[name][0]))
    a = binder.bind(name, args, kwargs)
    _refuse_tangents(name, a)
    out = a.get("out")
    if out is not None and _needs_grad(*a.values()):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    stream = a.get("stream")
    if stream is None:
        return _run(name, a)
    from .._streams import stream_handle

    with torch.cuda.stream(torch.cuda.ExternalStream(stream_handle(stream))):
        return _run(name, a)
