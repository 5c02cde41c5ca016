"""Kernel by kernel: where the time of histc goes (torch.profiler CUDA times,
memsets included), for the bench's sizes, beside the bench's own timing."""
import torch
from torch.profiler import ProfilerActivity, profile

import jitops
from jitops.bench.timing import Timer

timer = Timer(torch, torch.device("cuda"))
for n in (1 << 20, 1 << 26):
    x = torch.randn(n, device="cuda")
    for kwargs in ({}, dict(min=-3, max=3)):
        for _ in range(3):
            jitops.histc(x, 100, **kwargs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                timer.flush.zero_()
                jitops.histc(x, 100, **kwargs)
            torch.cuda.synchronize()
        print(f"n=2^{n.bit_length() - 1}", kwargs or "auto range",
              f"bench timing {timer.median_us(lambda: jitops.histc(x, 100, **kwargs)):.1f} us")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8))
