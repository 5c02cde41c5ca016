"""Ahead-of-time compilation: ``python -m jitops warmup --arch sm_90``.

Plans the calls users make (every op, the chosen dtypes and index dtypes, and
shapes that give each layout: 1, 2 and 3 collapsed dimensions, few and many
indices, vectorized and scalar rows, 2x and other upsample scales) on virtual
arrays for one architecture, and compiles the specializations they select into
the disk cache, several at a time (NVRTC runs without the GIL). Needs no GPU:
build the cache on a CPU node and ship the directory with
``JITOPS_CACHE_DIR`` pointing at it.
"""

import concurrent.futures
import os
import time

from . import _core
from .explain import explain

FLOATS = ("float32", "float16", "bfloat16")
ALL_OPS = ("index_select", "take", "gather", "index_add_", "index_copy_", "index_fill_", "scatter_add_",
           "scatter_reduce_", "histc", "upsample_nearest2d", "upsample_nearest2d_backward", "add", "sub", "mul", "div",
           "maximum", "minimum")


def _v(shape, dtype):
    return _core.VirtualArray(list(shape), dtype)


def _calls(op, dtype, index_dtype):
    """(op, args, kwargs) of the representative calls of `op` for one dtype and index dtype."""
    v, i = _v, index_dtype
    calls = []
    if op == "index_select":
        for rows in (64, 33):  # vectorized rows and scalar rows
            calls += [((v((1000, rows), dtype), 0, v((8,), i)), {}), ((v((1000, rows), dtype), 0, v((4096,), i)), {}),
                      ((v((rows, 1000), dtype), 1, v((16,), i)), {}), ((v((8, 100, rows), dtype), 1, v((16,), i)), {})]
        calls.append(((v((100000,), dtype), 0, v((4096,), i)), {}))
    elif op == "take":
        calls += [((v((1000, 64), dtype), v((4096,), i)), {}), ((v((1000, 64), dtype), v((16,), i)), {"axis": 0}),
                  ((v((64, 1000), dtype), v((16,), i)), {"axis": 1})]
    elif op == "gather":
        calls += [((v((100, 128), dtype), 1, v((100, 8), i)), {}), ((v((100, 128), dtype), 0, v((8, 128), i)), {}),
                  ((v((8, 100, 128), dtype), 1, v((8, 10, 128), i)), {})]
    elif op in ("index_add_", "index_copy_"):
        for n in (8, 4096):  # the small- and large-index regimes
            calls += [((v((5000, 64), dtype), 0, v((n,), i), v((n, 64), dtype)), {}),
                      ((v((64, 5000), dtype), 1, v((n,), i), v((64, n), dtype)), {}),
                      ((v((100000,), dtype), 0, v((n,), i), v((n,), dtype)), {})]
        if op == "index_add_":  # many wide rows: sorted by destination, then summed (row sums)
            calls.append(((v((100000, 128), dtype), 0, v((1 << 20,), i), v((1 << 20, 128), dtype)), {}))
    elif op == "index_fill_":
        calls += [((v((5000, 64), dtype), 0, v((16,), i), 1.5), {}), ((v((64, 5000), dtype), 1, v((16,), i), 1.5), {})]
    elif op == "scatter_add_":
        calls += [((v((1000, 64), dtype), 0, v((4096, 64), i), v((4096, 64), dtype)), {}),
                  ((v((1000, 64), dtype), 1, v((1000, 16), i), v((1000, 16), dtype)), {})]
    elif op == "scatter_reduce_":
        for reduce in ("sum", "prod", "mean", "amax", "amin"):
            calls.append(((v((1000, 64), dtype), 0, v((4096, 64), i), v((4096, 64), dtype), reduce), {}))
    elif op == "histc":
        calls += [((v((1 << 20,), dtype),), {"bins": 100}), ((v((1 << 20,), dtype),), {"bins": 100, "min": -3, "max": 3})]
    elif op == "upsample_nearest2d":
        calls += [((v((2, 8, 32, 32), dtype),), {"scale_factor": 2}), ((v((2, 8, 32, 32), dtype),), {"scale_factor": 1.5})]
    elif op == "upsample_nearest2d_backward":
        calls += [((v((2, 8, 64, 64), dtype), (2, 8, 32, 32)), {"scale_factor": 2}),
                  ((v((2, 8, 48, 48), dtype), (2, 8, 32, 32)), {"scale_factor": 1.5})]
    else:  # binary elementwise: dense, broadcast rows, a number
        calls += [((v((1 << 20,), dtype), v((1 << 20,), dtype)), {}), ((v((1000, 64), dtype), v((64,), dtype)), {}),
                  ((v((1 << 20,), dtype), 2), {})]
    return [(op, a, k) for a, k in calls]


def plan(ops=ALL_OPS, dtypes=FLOATS, index_dtypes=("int64", "int32")):
    """The representative calls: index ops once per index dtype, the others once."""
    calls = []
    for op in ops:
        if op not in ALL_OPS:
            raise ValueError(f"ops: expected names among {', '.join(ALL_OPS)} (got {op!r})")
        indexed = op in ("index_select", "take", "gather", "index_add_", "index_copy_", "index_fill_", "scatter_add_",
                         "scatter_reduce_")
        for dtype in dtypes:
            for index_dtype in index_dtypes if indexed else index_dtypes[:1]:
                calls += _calls(op, dtype, index_dtype)
    return calls


def warmup(arch, ops=ALL_OPS, dtypes=FLOATS, index_dtypes=("int64", "int32"), jobs=None, progress=None):
    """Compiles every specialization of plan(...) for `arch` into the disk cache.

    Returns {"kernels", "compiled", "from_disk", "unsupported", "seconds"}: the
    distinct kernels, how many were compiled or already on disk, and the
    calls the op refuses for that dtype (e.g. histc of bool).
    """
    calls = plan(ops, dtypes, index_dtypes)
    jobs = jobs or min(8, os.cpu_count() or 1)
    kernels, unsupported = {}, []
    start = time.perf_counter()

    def one(call):
        op, args, kwargs = call
        try:
            return call, explain(op, *args, arch=arch, **kwargs), None
        except (TypeError, ValueError) as exc:
            return call, [], exc

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for call, reports, error in pool.map(one, calls):
            if error is not None:
                unsupported.append(f"{call[0]}: {error}")
            for r in reports:
                kernels.setdefault(r["kernel"], r["origin"])
            if progress is not None:
                progress.update()
    origins = list(kernels.values())
    return {"calls": len(calls), "kernels": len(kernels), "compiled": origins.count("compiled"),
            "from_disk": origins.count("disk"), "in_memory": origins.count("memory"),
            "unsupported": sorted(set(unsupported)), "seconds": time.perf_counter() - start}
