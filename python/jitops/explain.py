"""explain(): what a call would launch, without launching it."""

import inspect

from . import _config, _core, _host
from .ops import OPS


class KernelReport(dict):
    """One kernel a call would launch: a dict with a readable ``str()``."""

    def __str__(self):
        if self.get("template_args") is not None:
            args = ", ".join(f"{k}={v}" for k, v in self["template_args"].items())
            head = [f"kernel   {self['kernel']}  (template arguments {args})"]
        else:
            head = [f"kernel   {self['kernel']}"]
        lines = head + [
            f"device   {self['device']}  ({self['arch']})",
            f"launch   grid={self['grid']} block={self['block']} params={self['param_bytes']} B",
            f"config   {self['config'] or 'fixed'} ({self['config_origin']}"
            + (f"; tuning point {self['tuning_point']})" if self.get('tuning_point') else ")"),
            f"resources registers={self['registers']} shared={self['shared_bytes']} B local={self['local_bytes']} B",
            f"compile  {self['compile_ms']:.1f} ms; this time from {self['origin']} "
            f"({self['prepare_ms']:.2f} ms to prepare, {self['load_ms']:.2f} ms to load)",
            f"cubin    {self['cubin_bytes']} bytes; options {' '.join(self['options'])}",
        ]
        return "\n".join(lines)

    def sass(self):
        """The kernel's SASS, disassembled with cuobjdump or nvdisasm."""
        from .sass import disassemble

        return disassemble(self["cubin"])


def _virtual(obj, name, is_index):
    """A host operand as the contiguous device array the real call would make of it."""
    host, dtype = _host._as_numpy(obj, name, is_index)
    return _core.VirtualArray(list(host.shape), dtype)


def explain(op, *args, arch=None, **kwargs):
    """The kernels ``op(*args, **kwargs)`` would launch, as a list of KernelReport.

    Each report has the specialization (``kernel``, ``spec``), the specialized
    ``source``, the ``ptx``, the ``cubin`` and ``cubin_bytes`` (``.sass()``
    disassembles it where cuobjdump or nvdisasm is installed), ``registers`` / ``shared_bytes`` /
    ``local_bytes`` per thread, ``grid`` and ``block``, the ``regime`` where a
    family has several, ``params`` (the parameter block's bytes), ``compile_ms``, and
    ``origin``: where the kernel came from this time (``memory``, ``disk`` or
    ``compiled``), ``params``: the parameter block as it would be launched (its
    pointers are the operands' addresses: a VirtualArray's ``address``), and the launch ``config`` with ``config_origin``:
    ``heuristic`` (the planner's default), ``tuned`` (a result of
    :func:`jitops.tune` or autotuning for its ``tuning_point``) or ``fixed``. Nothing is launched. With ``arch="sm_90"`` (or
    ``JITOPS_ARCH``) it needs no GPU: host arrays stand for device arrays of
    their shape and dtype.
    """
    if not isinstance(op, str) and callable(getattr(op, "explain", None)):
        return op.explain(*args, arch=arch, **kwargs)  # users' kernels: ElementwiseKernel, RawKernel, Template, ...
    name = op if isinstance(op, str) else getattr(op, "__name__", str(op))
    if name not in OPS:
        raise ValueError(f"op: expected one of {sorted(OPS)} (got {op!r})")
    fn, array_positions, index_positions, _ = OPS[name]
    private = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith("_")}  # e.g. _promotion, passed through
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    arch_value = _config.parse_arch(arch) if arch is not None else _config.default_arch()
    names = list(bound.arguments)
    for i in array_positions:
        value = bound.arguments[names[i]]
        if value is not None and _host._is_host(value):
            bound.arguments[names[i]] = _virtual(value, names[i], i in index_positions)
    reports = fn(*bound.args, **bound.kwargs, **private, _explain=arch_value if arch_value is not None else 0)
    return [KernelReport(r) for r in reports]
