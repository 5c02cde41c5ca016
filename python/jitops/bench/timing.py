"""Timing as BENCHMARKS.md asks: CUDA events around each run, the L2 flushed
before each (as triton.testing.do_bench does), median of the runs."""

import statistics

_FLUSH_BYTES = 256 << 20  # several times the 50-60 MB L2 of an H100 / H200


class Timer:
    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.flush = torch.empty(_FLUSH_BYTES, dtype=torch.int8, device=device)

    def median_us(self, fn, reps=100, warmup=5):
        torch = self.torch
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize(self.device)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize(self.device)
        return statistics.median(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))

    def copy_us(self, nbytes, reps=100):
        """Device-to-device copy of an nbytes buffer (nbytes read + nbytes written)."""
        torch = self.torch
        n = max(1, int(nbytes))
        src = torch.empty(n, dtype=torch.int8, device=self.device).random_(-100, 100)
        dst = torch.empty_like(src)
        return self.median_us(lambda: dst.copy_(src), reps=reps)

    def copy_bandwidth(self, nbytes=1 << 30, reps=50):
        """Bytes read + written per second of a large device-to-device copy."""
        return 2 * nbytes / (self.copy_us(nbytes, reps) * 1e-6)
