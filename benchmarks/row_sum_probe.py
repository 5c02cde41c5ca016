"""Kernel by kernel (torch.profiler, in launch order): where the time of the
row sums goes on the bench's scatter_add (2^20 rows of 128 into 100000),
float32 and float16, beside the atomic kernels (row sums switched off)."""
import statistics

import torch
from torch.profiler import ProfilerActivity, profile

import jitops
from jitops import _core

flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
rows, dests, width = 1 << 20, 100000, 128
idx = torch.randint(0, dests, (rows,), device="cuda").view(-1, 1).expand(-1, width)
for dtype in (torch.float32, torch.float16):
    src = torch.randn(rows, width, device="cuda", dtype=dtype)
    self_t = torch.randn(dests, width, device="cuda", dtype=dtype)
    for mode in (2, 0):
        _core._set_row_sum_mode(mode)
        for _ in range(3):
            jitops.scatter_add_(self_t, 0, idx, src)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                flush.zero_()
                jitops.scatter_add_(self_t, 0, idx, src)
            torch.cuda.synchronize()
        events = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
        ours = [e for e in events if e.name == "jitops_kernel" or e.name.startswith("Memset")]
        per_call = len(ours) // 10
        columns = [statistics.median(e.device_time for e in ours[k::per_call]) for k in range(per_call)]
        names = [e.name[:8] for e in ours[:per_call]]
        print(dtype, "row sums" if mode else "atomics", " ".join(f"{n} {us:.1f}" for n, us in zip(names, columns)),
              f"sum {sum(columns):.1f} us", flush=True)
_core._set_row_sum_mode(1)
