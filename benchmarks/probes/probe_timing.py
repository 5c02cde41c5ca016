"""The bench's timing for probes that run without building jitops: CUDA
events around each run, the L2 flushed (256 MB zeroed) before each, the
median of the runs (as jitops.bench.timing.Timer); and host_loop_us, the
wall time a call of a tight loop (host cost where kernels are tiny)."""
import statistics
import time

import torch

_flush = None


def median_us(fn, reps=100, warmup=5):
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        _flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1000 for s, e in zip(starts, ends))


def host_loop_us(fn, n):
    """Wall time per call of `fn` over n calls in a loop, the GPU drained before and after."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n * 1e6
