"""Output allocation for callers whose arrays are not PyTorch tensors.

Called from the C++ core when an op needs a new output shaped like an input
(PyTorch outputs are allocated in C++ with ``Tensor.new_empty``).
"""

import numpy as np

from . import _core


def allocate(kind, like, shape, dtype, device):
    if kind == "virtual":
        return _core.VirtualArray(list(shape), dtype)
    if kind == "cupy" and dtype != "bfloat16":
        import cupy

        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=np.dtype(dtype))
    return _core.DeviceArray(device, list(shape), dtype)


def to_jax(array):
    import jax.dlpack

    return jax.dlpack.from_dlpack(array)
