"""jitops: tensor-indexing kernels specialized at run time with NVRTC.

    import torch, jitops
    x = torch.randn(50000, 1024, device="cuda")
    idx = torch.randint(0, 50000, (8192,), device="cuda")
    y = jitops.index_select(x, 0, idx)          # == torch.index_select(x, 0, idx)

Each call picks a kernel specialization from its inputs, compiles it once
with NVRTC to CUBIN for the GPU at hand, caches it on disk and in memory, and
launches it through the CUDA Driver API on the caller's stream.
"""

import atexit as _atexit

from . import _config, _core, _torch_hooks, cache_admin
from ._core import DeviceArray, VirtualArray
from .errors import CompileError, CudaError, CudaUnavailableError, JitopsError
from .explain import KernelReport, explain
from .elementwise_kernel import ElementwiseKernel
from .raw_kernel import RawKernel, RawModule
from .reduction_kernel import ReductionKernel
from .template import Template
from .tuning import TuneResult, autotune_enabled, set_autotune, tune
from .ops import (add, div, gather, histc, index_add_, index_copy_, index_fill_, index_select, maximum, minimum, mul,
                  scatter_add_, scatter_reduce_, sub, take, upsample_nearest2d, upsample_nearest2d_backward)

__version__ = "0.1.0"

_core.configure(_config.nvrtc_dirs(), _config.include_dirs(), _config.cache_dir(), _config.cache_enabled(),
                _config.nvrtc_loader_fallback())
_core.set_tuning_version(__version__)

#: dtype names jitops handles, from the core's dtype table.
DTYPES = tuple(row[0] for row in _core.dtypes())


def cache_stats():
    """Counters since the process started: ``compiles``, ``disk_hits``, ``memory_hits``,
    ``module_loads``, ``module_unloads``, ``disk_misses``, ``disk_writes``, ``disk_rejected``
    (corrupt or stale files); and ``modules_loaded`` now."""
    return _core.cache_stats()


def set_cache_dir(directory, enabled=True):
    """Points the disk cache at ``directory`` (``enabled=False`` turns it off);
    tuning results are read from the new directory's files."""
    _core.set_cache(str(directory), bool(enabled))
    _core.clear_tuned()


def cache_dir():
    return _core.cache_config()["directory"]


def clear_memory_cache():
    """Unloads every kernel from this process (the disk cache stays)."""
    _core.clear_memory_cache()


def set_memory_cache_limit(kernels):
    """Keeps at most ``kernels`` modules loaded (default 4096, or
    ``JITOPS_MEMORY_CACHE_MAX_KERNELS``); the least recently used is unloaded first."""
    _core.set_memory_cache_limit(kernels)


def set_index_checks(mode):
    """How out-of-range indices are reported (``JITOPS_INDEX_CHECKS`` sets it at import).

    ``"async"`` (default): a kernel that meets a bad index records the first one (lowest
    position) in mapped host memory, with no added synchronization; ``IndexError`` is raised
    at the next jitops call on that device or at :func:`synchronize`. ``"sync"``: each call
    waits for its kernels and raises itself. ``"off"``: nothing is recorded or raised and
    what an out-of-range index yields is undefined; it is still never read or written, so
    the process and its CUDA context stay sound."""
    _core.set_index_checks(mode)


def synchronize(device=0):
    """Waits for all work on ``device`` and raises any pending IndexError."""
    _core.synchronize(device)


def is_available(device=0):
    """True when a CUDA driver and GPU are usable here: False with no driver or GPU, in a process forked
    after CUDA was initialized, or after an earlier error (another library's device-side assert, say) left
    the device's context unusable. :func:`cuda_status` says why."""
    return cuda_status(device) is None


def cuda_status(device=0):
    """None when CUDA works on ``device`` in this process, else why not (waits for its queued work)."""
    return _core.cuda_status(device) or None


# Modules are unloaded at exit, while the driver is surely still there.
_atexit.register(_core.clear_memory_cache)

# torch.ops.jitops.* and torch.compile support, as soon as PyTorch is imported (never imported here).
_torch_hooks.arm()

if _config.os.environ.get("JITOPS_INDEX_CHECKS"):
    set_index_checks(_config.os.environ["JITOPS_INDEX_CHECKS"])
if _config.os.environ.get("JITOPS_AUTOTUNE", "0").strip().lower() in ("1", "true", "yes", "on"):
    set_autotune(True)

__all__ = [
    "CompileError", "CudaError", "CudaUnavailableError", "DTYPES", "DeviceArray", "ElementwiseKernel", "JitopsError",
    "KernelReport", "RawKernel", "RawModule", "ReductionKernel", "Template", "TuneResult", "VirtualArray", "add", "autotune_enabled", "cache_dir", "cache_stats", "clear_memory_cache", "div", "explain",
    "cuda_status", "gather", "histc", "index_add_", "index_copy_", "index_fill_", "index_select", "is_available", "maximum",
    "minimum", "mul", "scatter_add_", "scatter_reduce_", "set_autotune", "set_cache_dir", "set_index_checks", "set_memory_cache_limit", "sub",
    "synchronize", "take", "tune", "upsample_nearest2d", "upsample_nearest2d_backward",
]
