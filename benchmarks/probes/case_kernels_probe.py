"""Where a sweep case's GPU time goes, kernel by kernel: each side's kernels (torch.profiler's CUDA
activity, the L2 flushed before each run as the sweep does), their median times over 10 runs, beside the
sweep's event time. In-place cases run on the self the last run left (timing, not values).
Usage: python3 case_kernels_probe.py "SEED NAME-PIECE" ["SEED NAME-PIECE" ...]"""
import statistics
import sys

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from jitops.bench.layouts import build_torch
from jitops.bench.sweep import _runners
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.timing import Timer


def kernel_times(fn, timer, runs=10):
    """[[(kernel name, us), ...] a run]: a run starts at the flush (a fill of 256 MB, over 60 us)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            timer.flush.zero_()
            fn()
        torch.cuda.synchronize()
    events = sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA), key=lambda e: e.time_range.start)
    per_run = []
    for e in events:
        us = e.time_range.elapsed_us()
        if "FillFunctor" in e.name and us > 60:
            per_run.append([])
        elif per_run:
            per_run[-1].append((e.name.split("(")[0][:100], us))
    return [r for r in per_run if r]


def main(specs):
    timer = Timer(torch, torch.device("cuda"))
    for spec in specs:
        seed, piece = spec.split(" ", 1)
        (case,) = [c for c in draw_cases(int(seed), 10) if piece in c.name][:1]
        built = build_torch(torch, case.operands, timer.device, int(seed))
        print(case.name)
        for label, fn in zip(("jitops", "torch"), _runners(torch, case, built, long_indices=True)):
            runs = kernel_times(fn, timer)
            print(f"  {label}: event {timer.median_us(fn, reps=30):.1f} us")
            for k in range(min(len(r) for r in runs) if runs else 0):
                print(f"     {statistics.median(r[k][1] for r in runs):9.1f} us  {runs[0][k][0]}")


if __name__ == "__main__":
    main(sys.argv[1:])
