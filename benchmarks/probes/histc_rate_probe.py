"""Is histc's counting bound by memory or by the SM's own work? Each kernel
timed on an x that L2 already holds (2^22 and 2^23 float32, 16 and 32 MB, no
flush) and on 2^26 values after the bench's L2 flush: jitops.histc with an
explicit range (the count kernel alone), with the auto range (two kernels),
and torch.amax (one read-only reduction) beside them."""
import statistics

import torch

import jitops
from probe_timing import median_us


def hot_us(fn, reps=200):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000)
    return statistics.median(times)


for n, hot in ((1 << 22, True), (1 << 23, True), (1 << 26, False)):
    x = torch.randn(n, device="cuda")
    time = hot_us if hot else median_us
    cases = {"amax": lambda: torch.amax(x), "histc range(-3,3)": lambda: jitops.histc(x, 100, min=-3, max=3),
             "histc auto": lambda: jitops.histc(x, 100)}
    line = " | ".join(f"{k} {time(f):.1f} us" for k, f in cases.items())
    print(f"n=2^{n.bit_length() - 1} {'L2-hot' if hot else 'flushed'} ({n * 4 / 1e6:.0f} MB): {line}", flush=True)
