"""The host path: ops called with numpy arrays, CPU tensors or Python lists.

Host operands are copied into jitops device memory, the op runs on the GPU
like any other call, and the result is copied back as the caller's type
(numpy for numpy and CPU DLPack producers, a CPU tensor for PyTorch).
"""

import numpy as np

from . import _core


def _torch_module(obj):
    return type(obj).__module__.startswith("torch")


def _as_numpy(obj, name, is_index):
    """(host array with native byte order and the right bytes, jitops dtype name)."""
    if _torch_module(obj) and hasattr(obj, "numpy"):
        import torch

        t = obj.detach()
        dtype = str(t.dtype).replace("torch.", "")
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16: carry the bits
            return t.contiguous().view(torch.int16).numpy(), dtype
        if t.dtype == torch.bool:
            return t.contiguous().numpy(), "bool"
        return t.contiguous().numpy(), dtype
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__"):
        try:
            arr = np.from_dlpack(obj)
        except Exception as exc:  # noqa: BLE001 - say which argument, keep the cause
            raise TypeError(f"{name}: expected an array jitops can read (got {type(obj).__name__}: {exc})") from exc
    else:
        try:
            arr = np.asarray(obj)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(f"{name}: expected an array (got {type(obj).__name__})") from exc
    if is_index:
        if arr.dtype.kind == "f" and arr.size == 0:
            arr = arr.astype(np.int64)  # [] is an empty index, as in numpy.take
        elif arr.dtype.kind in "iu" and arr.dtype not in (np.int32, np.int64):
            arr = arr.astype(np.int64)
    if arr.dtype.kind not in "biufc" and arr.dtype.name != "bfloat16":
        raise TypeError(f"{name}: expected a numeric or bool array (got dtype {arr.dtype})")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr), arr.dtype.name


def is_number(obj):
    """Python and numpy scalars: values an op takes as they are, not arrays."""
    return isinstance(obj, (bool, int, float, np.generic)) and not isinstance(obj, (complex, np.complexfloating))


def _is_host(obj):
    if obj is None or is_number(obj):
        return False
    kind = _core.array_kind(obj)
    if kind == "host":
        return True
    if kind == "torch":
        return not obj.is_cuda
    if kind in ("jitops", "virtual"):
        return False
    device_type = obj.__dlpack_device__()[0]
    return device_type in (1, 3)


def _device_of(obj):
    kind = _core.array_kind(obj)
    if kind == "torch":
        return obj.get_device()
    if kind == "jitops":
        return obj.device
    return int(obj.__dlpack_device__()[1])


def to_device(host, dtype, device):
    array = _core.DeviceArray(device, list(host.shape), dtype)
    array.copy_from_host(host)
    return array


def to_host(array, like_dtype=None):
    shape = tuple(array.shape)
    if array.dtype == "bfloat16":
        out = np.empty(shape, dtype=np.int16)
    else:
        out = np.empty(shape, dtype=np.dtype(array.dtype))
    array.copy_to_host(out)
    return out


def _result_for(original, array):
    """The device result as the type of the host array the caller passed."""
    host = to_host(array)
    if _torch_module(original):
        import torch

        t = torch.from_numpy(host)
        return t.view(torch.bfloat16) if array.dtype == "bfloat16" else t
    if array.dtype == "bfloat16":
        try:
            import ml_dtypes

            return host.view(ml_dtypes.bfloat16)
        except ImportError:
            return host  # the bits, as int16
    return host


_SAME_VIEW_OK = {"add", "sub", "mul", "div", "maximum", "minimum"}  # elementwise: out may be an input itself


def _check_out_apart(op, out, what, inputs):
    """ValueError when host out= shares memory with a host input, as on the device."""
    out_view = _numpy_view(out)
    for name, value in inputs.items():
        if op in _SAME_VIEW_OK and value is out:
            continue
        view = _numpy_view(value)
        if out_view is not None and view is not None and np.may_share_memory(out_view, view):
            raise ValueError(f"{what}: must not overlap the input {name}")


def _numpy_view(obj):
    if isinstance(obj, np.ndarray):
        return obj
    if _torch_module(obj):
        import torch

        t = obj.detach()
        try:
            return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
        except (TypeError, RuntimeError):  # a dtype numpy lacks: not compared
            return None
    return None


def run_op(name, *args, **kwargs):
    """Runs op ``name`` with its host operands moved to the GPU (called from C++)."""
    import inspect

    from .ops import OPS

    fn, arrays, indices, out_pos = OPS[name]
    explain = kwargs.pop("_explain", None)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    names = list(bound.arguments)
    values = list(bound.arguments.values())
    stream = bound.arguments.get("stream")
    device = next((_device_of(values[i]) for i in arrays
                   if values[i] is not None and not is_number(values[i]) and not _is_host(values[i])), 0)
    originals = {}
    for i in arrays:
        if _is_host(values[i]):
            originals[i] = values[i]
            host, dtype = _as_numpy(values[i], names[i], i in indices)
            bound.arguments[names[i]] = to_device(host, dtype, device)
    host_out = originals.get(out_pos)
    if host_out is not None:
        what = names[out_pos]
        if not isinstance(host_out, np.ndarray) and not _torch_module(host_out):
            raise TypeError(f"{what}: expected a numpy array or a tensor to write into (got {type(host_out).__name__})")
        if isinstance(host_out, np.ndarray) and not host_out.flags.writeable:
            raise ValueError(f"{what}: expected a writable array (got a read-only numpy array)")
        on_device = next((names[i] for i in arrays if i != out_pos and values[i] is not None
                          and not is_number(values[i]) and not _is_host(values[i])), None)
        if out_pos != 0 and on_device:  # a new result lands where its inputs are, as in PyTorch
            raise ValueError(f"{what}: expected an array on cuda:{device} like {on_device} (got a host array)")
        if out_pos != 0:  # out= of a new result (in-place ops write their own self)
            _check_out_apart(name, host_out, what, {names[i]: v for i, v in originals.items() if i != out_pos})
    extra = {} if explain is None else {"_explain": explain}
    if name in _SAME_VIEW_OK and any(_torch_module(v) for v in originals.values()):
        extra["_promotion"] = "torch"  # CPU tensors promote by PyTorch's rules, as CUDA ones do
    result = fn(*bound.args, **bound.kwargs, **extra)
    if explain is not None:
        return result
    if stream is not None:
        from ._streams import stream_handle

        _core.stream_synchronize(device, stream_handle(stream))
    _core.synchronize(device)
    if host_out is not None:
        host = _result_for(host_out, result)
        if isinstance(host_out, np.ndarray):
            np.copyto(host_out, host.view(host_out.dtype) if host.dtype != host_out.dtype else host)
        else:
            host_out.copy_(host)
        return host_out
    # The result takes the type of the first array operand (numbers are skipped).
    first = next((i for i in arrays if i != out_pos and values[i] is not None and not is_number(values[i])), None)
    if out_pos != 0 and first in originals:
        return _result_for(originals[first], result)
    return result
