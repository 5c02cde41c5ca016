"""Kernel by kernel (torch.profiler, in launch order): where the time of the
row sums goes on the bench's scatter_add (2^20 rows of 128 into 100000),
float32, float16 and bfloat16, beside the atomic kernels (row sums switched
off); the whole call timed as the bench times it, and checked against
PyTorch. Usage: python benchmarks/row_sum_probe.py [in_flight:warps ...]
(the sum kernel's shapes; none: the planner's defaults)."""
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import jitops
from jitops import _core
from probe_timing import median_us

flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
rows, dests, width = 1 << 20, 100000, 128
idx = torch.randint(0, dests, (rows,), device="cuda").view(-1, 1).expand(-1, width)
shapes = [tuple(int(x) for x in a.split(":")) for a in sys.argv[1:]] or [None]


def kernel_times(self_t, src):
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
    return " ".join(f"{n} {us:.1f}" for n, us in zip(names, columns)) + f" (kernels {sum(columns):.1f} us)"


for dtype in (torch.float32, torch.float16, torch.bfloat16):
    src = torch.randn(rows, width, device="cuda", dtype=dtype)
    base = torch.randn(dests, width, device="cuda", dtype=dtype)
    want = base.double().scatter_add_(0, idx, src.double())
    for mode, shape in [(0, None)] + [(2, s) for s in shapes]:
        _core._set_row_sum_mode(mode)
        if shape:
            _core._set_row_sum_shape(*shape)
        err = (jitops.scatter_add_(base.clone(), 0, idx, src).double() - want).abs().max().item()
        self_t = base.clone()
        us = median_us(lambda: jitops.scatter_add_(self_t, 0, idx, src))
        label = "atomics" if mode == 0 else f"row sums {shape or 'defaults'}"
        print(dtype, label, f"{us:.1f} us (err {err:.1e}):", kernel_times(self_t, src), flush=True)
_core._set_row_sum_mode(1)
