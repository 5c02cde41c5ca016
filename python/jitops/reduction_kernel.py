"""jitops.ReductionKernel: a user's reduction, CuPy-style.

    l2 = jitops.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    norms = l2(x, axis=1)                   # like cupy.ReductionKernel

Each output element is ``post_map_expr`` of the reduction (``reduce_expr``
over ``a`` and ``b``, starting from ``identity``) of ``map_expr`` over the
input elements it reduces. Inputs broadcast together (numpy rules); ``axis``
(int, tuple, None for all) and ``keepdims`` as in numpy; any strided layout.
``reduce_type`` is the type of ``a`` and ``b`` (default: the output's);
``_in_ind.size()`` and ``_out_ind.size()`` are the element counts of the
broadcast input and of the output, as in CuPy. Placeholder types (``T``)
resolve from the inputs as in :class:`jitops.ElementwiseKernel`.
"""

import numpy as np

from . import _config, _core, _host
from .elementwise_kernel import (_C_SPELLINGS, _DTYPE_NAMES, _IDENTIFIER, _bind_dtype, _dtype_name, _parse_params,
                                 _refuse_autograd)
from .errors import CompileError
from .explain import KernelReport


def _axis_tuple(axis):
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"axis: expected an int, a tuple of ints or None (got {axis!r})")
    if isinstance(axis, (int, np.integer)):
        return [int(axis)]
    try:
        items = list(axis)
    except TypeError:
        raise TypeError(f"axis: expected an int, a tuple of ints or None (got {type(axis).__name__})") from None
    if not all(isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) for a in items):
        raise TypeError(f"axis: expected an int, a tuple of ints or None (got {axis!r})")
    return [int(a) for a in items]


class ReductionKernel:
    """A user reduction over any axes, like ``cupy.ReductionKernel``.

    ``kernel(*inputs, out=None, axis=None, keepdims=False, stream=None)``.
    Expressions are C++ over the parameter names; the special names are ``a``
    and ``b`` (values of ``reduce_type``) and, in ``post_map_expr``, the
    output's name. Compile errors raise :class:`jitops.CompileError` naming
    the expression that failed (``map_expr(1): error: ...``).
    """

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 reduce_type=None, reduce_dims=True, preamble=""):
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"name: expected a C identifier (got {name!r})")
        for what, text in (("map_expr", map_expr), ("reduce_expr", reduce_expr), ("post_map_expr", post_map_expr)):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{what}: expected C++ as a non-empty str (got {text!r})")
        if identity is None:
            raise ValueError("identity: expected the reduction's identity as a C expression, e.g. '0' "
                             "(reductions without one are not supported)")
        if not reduce_dims:
            raise ValueError("reduce_dims: jitops always collapses contiguous dims (reduce_dims=False is not supported)")
        self.name = name
        self.in_params = _parse_params(in_params, "in_params")
        self.out_params = _parse_params(out_params, "out_params")
        if not 1 <= len(self.in_params) <= 4:
            raise ValueError(f"in_params: expected 1 to 4 inputs (got {len(self.in_params)})")
        if len(self.out_params) != 1:
            raise ValueError(f"out_params: expected one output (got {len(self.out_params)})")
        names = [n for _, n in self.in_params + self.out_params]
        if len(set(names)) != len(names) or {"a", "b"} & set(names):
            raise ValueError(f"in_params: parameter names must be distinct and not 'a' or 'b' (got {names})")
        if reduce_type is None:
            reduce_type = self.out_params[0][0]
        elif isinstance(reduce_type, str):
            reduce_type = _C_SPELLINGS.get(reduce_type.strip(), reduce_type.strip())
        else:
            reduce_type = np.dtype(reduce_type).name
        self.reduce_type = reduce_type
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity = str(identity)
        self._names = names
        self._id = _core.register_reduction(name, names, [t for t, _ in self.in_params + self.out_params],
                                            len(self.in_params), map_expr, reduce_expr, post_map_expr, self.identity,
                                            reduce_type, preamble)

    def __repr__(self):
        return f"ReductionKernel({self.name!r}: {self.in_params} -> {self.out_params})"

    def _resolve(self, inputs, out):
        """Dtype names of the inputs, the output and the reduce type."""
        bound = {}
        dtypes = []
        for (ptype, pname), v in zip(self.in_params, inputs):
            if _host.is_number(v) or v is None:
                raise TypeError(f"{pname}: expected an array (got {type(v).__name__})")
            d = _dtype_name(v)
            _bind_dtype(bound, ptype, pname, d)
            dtypes.append(d)
        otype, oname = self.out_params[0]
        if otype in _DTYPE_NAMES:
            out_dtype = otype
        elif otype in bound:
            out_dtype = bound[otype]
        elif out is not None:
            out_dtype = bound.setdefault(otype, _dtype_name(out))
        else:
            raise TypeError(f"{oname}: type {otype} is not set by any input; pass out=")
        rtype = self.reduce_type
        reduce_dtype = rtype if rtype in _DTYPE_NAMES else bound.get(rtype)
        if reduce_dtype is None:
            raise TypeError(f"reduce_type: {rtype!r} is neither a dtype nor a type the inputs set")
        return dtypes + [out_dtype, reduce_dtype]

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        if len(args) != len(self.in_params):
            raise TypeError(f"{self.name}: expected {len(self.in_params)} inputs (got {len(args)})")
        _refuse_autograd(self.name, args)
        dtypes = self._resolve(args, out)
        axes = _axis_tuple(axis)
        try:
            return self._run(list(args) + [out], dtypes, axes, keepdims, stream)
        except _core.HostOperands:
            return self._run_on_host(list(args), out, dtypes, axes, keepdims, stream)

    def _run(self, operands, dtypes, axes, keepdims, stream, explain_arch=-1):
        try:
            return _core.reduction_call(self._id, operands, self._names, dtypes, len(self.in_params), axes,
                                        bool(keepdims), stream, explain_arch)
        except CompileError as exc:
            raise CompileError(f"ReductionKernel {self.name!r} does not compile for dtypes {dtypes}:\n{exc.log}",
                               exc.log, exc.options, exc.kernel_name, exc.source) from None

    def _run_on_host(self, inputs, out, dtypes, axes, keepdims, stream):
        device = next((_host._device_of(v) for v in inputs + [out] if v is not None and not _host._is_host(v)), 0)
        moved = [_host.to_device(*_host._as_numpy(v, n, False), device) if _host._is_host(v) else v
                 for v, n in zip(inputs, self._names)]
        out_device = _host.to_device(*_host._as_numpy(out, self._names[-1], False), device) \
            if out is not None and _host._is_host(out) else out
        result = self._run(moved + [out_device], dtypes, axes, keepdims, stream)
        _core.synchronize(device)
        if out is not None and _host._is_host(out):
            host = _host._result_for(out, result)
            if isinstance(out, np.ndarray):
                np.copyto(out, host)
            else:
                out.copy_(host)
            return out
        like = next((v for v in inputs if _host._is_host(v)), None)
        return _host._result_for(like, result) if like is not None else result

    def explain(self, *args, out=None, axis=None, keepdims=False, arch=None):
        """The kernels a call would launch (see :func:`jitops.explain`); host arrays stand for device arrays."""
        dtypes = self._resolve(args, out)
        operands = [_core.VirtualArray(list(np.shape(v)), d) if v is not None and _host._is_host(v) else v
                    for v, d in zip(list(args) + [out], dtypes)]
        on_device = any(v is not None and _core.array_kind(v) not in ("host", "virtual") for v in operands)
        explain_arch = _config.parse_arch(arch) if arch is not None else 0 if on_device else (
            _config.default_arch() or 90)
        reports = self._run(operands, dtypes, _axis_tuple(axis), keepdims, None, explain_arch)
        return [KernelReport(r) for r in reports]
