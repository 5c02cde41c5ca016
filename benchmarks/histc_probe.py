"""Kernel by kernel: where the time of histc goes (torch.profiler CUDA times)."""
import torch
from torch.profiler import ProfilerActivity, profile

import jitops

x = torch.randn(1 << 26, device="cuda")
for kwargs in ({}, dict(min=-3, max=3)):
    for _ in range(3):
        jitops.histc(x, 100, **kwargs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            jitops.histc(x, 100, **kwargs)
        torch.cuda.synchronize()
    print(kwargs or "auto range")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=6))
