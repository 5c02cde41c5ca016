"""jitops.ElementwiseKernel: a user's C++ statements compiled into the
vectorized elementwise template, CuPy-style.

    fma1 = jitops.ElementwiseKernel("T x, T y", "T z", "z = x * y + 1", "fma1")
    z = fma1(a, b)

Parameter types are dtype names (``float32``, ``int64``, ... and the C
spellings ``float``, ``double``, ``int``, ``half``, ``bool``) or placeholders
(any other identifier), resolved from the arguments at each call: a
placeholder takes the dtype of the first array bound to it; one bound only to
Python numbers takes int64, float64 or bool. Each resolution is a kernel
specialization, compiled once and cached like every other kernel.
"""

import re

import numpy as np

from . import _core, _host
from .errors import CompileError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_C_SPELLINGS = {"float": "float32", "double": "float64", "half": "float16", "int": "int32", "bool": "bool",
                "char": "int8", "short": "int16", "long": "int64"}
_DTYPE_NAMES = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                "bfloat16", "float32", "float64"}
_MAX_OPERANDS = 8


def _parse_params(text, what):
    params = []
    for part in (p.strip() for p in text.split(",")):
        words = part.split()
        if len(words) != 2 or not _IDENTIFIER.match(words[0]) or not _IDENTIFIER.match(words[1]):
            raise ValueError(f"{what}: expected 'type name' pairs separated by commas, e.g. 'T x, T y' (got {part!r})")
        if words[0] == "raw":
            raise ValueError(f"{what}: raw parameters are not supported (got {part!r})")
        params.append((_C_SPELLINGS.get(words[0], words[0]), words[1]))
    return params


def _dtype_name(obj):
    if type(obj).__module__.startswith("torch"):
        return str(obj.dtype).replace("torch.", "")
    dtype = obj.dtype
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def _bind_dtype(bound, ptype, pname, dtype):
    """Checks array `pname`'s dtype against its parameter type: a fixed dtype, or a type name (T) that every
    array declared with it shares (`bound`: type name -> dtype, filled by the first array)."""
    if ptype in _DTYPE_NAMES:
        if dtype != ptype:
            raise TypeError(f"{pname}: expected dtype {ptype} (got {dtype})")
    elif bound.setdefault(ptype, dtype) != dtype:
        raise TypeError(f"{pname}: expected dtype {bound[ptype]} for type {ptype} like the earlier arrays "
                        f"(got {dtype})")


def _refuse_autograd(name, inputs):
    """No silent detachment: an input that requires grad, with grad mode on, is refused (as PyTorch refuses
    to differentiate an op without a formula) rather than given an output outside the graph."""
    for v in inputs:
        if type(v).__module__.startswith("torch") and getattr(v, "requires_grad", False):
            import torch

            if torch.is_grad_enabled():
                raise RuntimeError(f"ElementwiseKernel {name!r} has no backward, and an input requires grad: "
                                   "call it under torch.no_grad() or on x.detach() if no gradient should flow")


def _number_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, np.generic):
        return value.dtype.name
    return "int64" if isinstance(value, int) else "float64"


class ElementwiseKernel:
    """A user operation over elementwise parameters, like ``cupy.ElementwiseKernel``.

    ``in_params`` and ``out_params`` are ``"type name"`` lists; ``operation``
    is C++ statements over those names, run once per element (outputs are
    references: assign them; with ``out=`` given they start as its values,
    otherwise at zero). ``preamble`` is C++ placed before the kernel (helper
    functions). Inputs broadcast together (numpy rules); Python numbers are
    passed by value. Call it as ``kernel(*inputs)``, or with the outputs after
    the inputs or as ``out=`` (one array or a tuple), and ``stream=``. Compile
    errors raise :class:`jitops.CompileError` pointing at the line of
    ``operation`` that failed.
    """

    def __init__(self, in_params, out_params, operation, name="kernel", preamble=""):
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"name: expected a C identifier (got {name!r})")
        if not isinstance(operation, str) or not operation.strip():
            raise ValueError("operation: expected C++ statements as a non-empty str")
        self.name = name
        self.operation = operation
        self.in_params = _parse_params(in_params, "in_params")
        self.out_params = _parse_params(out_params, "out_params")
        params = self.in_params + self.out_params
        names = [n for _, n in params]
        if len(set(names)) != len(names):
            raise ValueError(f"in_params: parameter names must be distinct (got {names})")
        if len(params) > _MAX_OPERANDS:
            raise ValueError(f"in_params: at most {_MAX_OPERANDS} inputs and outputs together (got {len(params)})")
        self._names = names
        self._id = _core.register_elementwise(name, names, [t for t, _ in params], len(self.in_params), operation,
                                              preamble)
        self._resolved = {}

    def __repr__(self):
        return f"ElementwiseKernel({self.name!r}: {self.in_params} -> {self.out_params})"

    def _split(self, args, out):
        n_in, n_out = len(self.in_params), len(self.out_params)
        if len(args) not in (n_in, n_in + n_out):
            raise TypeError(f"{self.name}: expected {n_in} inputs (or {n_in + n_out} with the outputs) (got {len(args)})")
        outputs = list(args[n_in:]) if len(args) > n_in else [None] * n_out
        if out is not None:
            if len(args) > n_in:
                raise TypeError(f"{self.name}: outputs given both by position and as out=")
            outputs = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(outputs) != n_out:
                raise ValueError(f"out: expected {n_out} arrays (got {len(outputs)})")
        return list(args[:n_in]), outputs

    def _resolve(self, operands):
        """The dtype name of every operand, placeholders resolved from the arrays."""
        key = tuple(None if v is None else ("#", _number_dtype(v)) if _host.is_number(v) else _dtype_name(v)
                    for v in operands)
        cached = self._resolved.get(key)
        if cached is not None:
            return cached
        params = self.in_params + self.out_params
        bound = {}
        for (ptype, pname), k in zip(params, key):
            if k is None or isinstance(k, tuple):
                continue
            _bind_dtype(bound, ptype, pname, k)
        for (ptype, pname), k in zip(params, key):
            if isinstance(k, tuple) and ptype not in _DTYPE_NAMES:
                bound.setdefault(ptype, k[1])
        dtypes = []
        for ptype, pname in params:
            dtype = ptype if ptype in _DTYPE_NAMES else bound.get(ptype)
            if dtype is None:
                raise TypeError(f"{pname}: type {ptype} is not set by any input; pass out= for it")
            dtypes.append(dtype)
        self._resolved[key] = dtypes
        return dtypes

    def __call__(self, *args, out=None, stream=None):
        inputs, outputs = self._split(args, out)
        _refuse_autograd(self.name, inputs)
        operands = inputs + outputs
        dtypes = self._resolve(operands)
        load_outputs = any(o is not None for o in outputs)
        try:
            return self._run(operands, dtypes, load_outputs, stream)
        except _core.HostOperands:
            return self._run_on_host(operands, dtypes, load_outputs, stream)

    def _run(self, operands, dtypes, load_outputs, stream, explain_arch=-1):
        _core.take_autotune_request()  # drop one left by a call that failed after planning
        try:
            result = _core.elementwise_call(self._id, operands, self._names, dtypes, len(self.in_params),
                                            load_outputs, stream, explain_arch)
        except CompileError as exc:
            raise self._compile_error(exc) from None
        if _core.take_autotune_request() and explain_arch < 0:
            self._autotune(operands, stream)
        return result

    def _autotune(self, operands, stream):
        """Autotuning's first sight of this kernel's point (the ops do this in C++, fastcall.h)."""
        from .tuning import _autotune_call

        inputs, outputs = operands[:len(self.in_params)], operands[len(self.in_params):]
        if all(o is not None for o in outputs):
            _autotune_call(self, self.name, inputs + outputs, {"stream": stream})
        elif not any(o is not None for o in outputs):
            _autotune_call(self, self.name, inputs, {"stream": stream})

    def _run_on_host(self, operands, dtypes, load_outputs, stream):
        device = next((_host._device_of(v) for v in operands if v is not None and not _host.is_number(v)
                       and not _host._is_host(v)), 0)
        moved = []
        for value, name in zip(operands, self._names):
            if value is not None and _host._is_host(value):
                host, dtype = _host._as_numpy(value, name, False)
                moved.append(_host.to_device(host, dtype, device))
            else:
                moved.append(value)
        result = self._run(moved, dtypes, load_outputs, stream)
        _core.synchronize(device)
        results = result if isinstance(result, tuple) else (result,)
        n_in = len(self.in_params)
        like = next((v for v in operands[:n_in] if v is not None and _host._is_host(v)), None)
        finished = []
        for k, r in enumerate(results):
            given = operands[n_in + k]
            if given is not None and _host._is_host(given):
                host = _host._result_for(given, r)
                if isinstance(given, np.ndarray):
                    np.copyto(given, host)
                else:
                    given.copy_(host)
                finished.append(given)
            elif given is None and like is not None:
                finished.append(_host._result_for(like, r))
            else:
                finished.append(r)
        return tuple(finished) if len(finished) > 1 else finished[0]

    def _compile_error(self, exc):
        """The compiler's complaints about the user's lines, with those lines."""
        lines = self.operation.splitlines()
        found = []
        for line in exc.log.splitlines():
            m = re.match(rf"{re.escape(self.name)}\((\d+)\): (error.*)", line)
            if m:
                number = int(m.group(1))
                text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
                found.append(f"  operation line {number}: {m.group(2)}\n      {text}")
        detail = "\n".join(found) if found else exc.log.strip()
        return CompileError(f"ElementwiseKernel {self.name!r}: the operation does not compile:\n{detail}", exc.log,
                            exc.options, exc.kernel_name, exc.source)

    def explain(self, *args, out=None, arch=None):
        """The kernel a call would launch (see :func:`jitops.explain`); host arrays stand for device arrays.

        ``arch=None``: the GPU of the call's device arrays, or (only host or
        virtual arrays) ``JITOPS_ARCH``, else sm_90."""
        from . import _config
        from .explain import KernelReport

        inputs, outputs = self._split(args, out)
        operands = inputs + outputs
        dtypes = self._resolve(operands)
        virtual = [_core.VirtualArray(list(np.shape(v)), d) if v is not None and _host._is_host(v) else v
                   for v, d in zip(operands, dtypes)]
        on_device = any(v is not None and not _host.is_number(v) and _core.array_kind(v) not in ("host", "virtual")
                        for v in virtual)
        explain_arch = _config.parse_arch(arch) if arch is not None else 0 if on_device else (
            _config.default_arch() or 90)
        reports = self._run(virtual, dtypes, any(o is not None for o in outputs), None, explain_arch)
        return [KernelReport(r) for r in reports]
