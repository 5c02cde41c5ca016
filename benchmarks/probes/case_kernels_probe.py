"""Where a sweep case's GPU time goes, kernel by kernel: each side's kernels (torch.profiler's CUDA
activity, the L2 flushed before each run as the sweep does: small_call_probe.kernel_runs), their median
times over 10 runs, beside the sweep's event time. In-place cases run on the self the last run left
(timing, not values).
Usage: python3 case_kernels_probe.py "SEED NAME-PIECE" ["SEED NAME-PIECE" ...]"""
import statistics
import sys

import torch
from small_call_probe import kernel_runs

from jitops.bench.layouts import build_torch
from jitops.bench.sweep import _runners
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.timing import Timer


def main(specs):
    timer = Timer(torch, torch.device("cuda"))
    for spec in specs:
        seed, piece = spec.split(" ", 1)
        (case,) = [c for c in draw_cases(int(seed), 10) if piece in c.name][:1]
        built = build_torch(torch, case.operands, timer.device, int(seed))
        print(case.name)
        for label, fn in zip(("jitops", "torch"), _runners(torch, case, built, long_indices=True)):
            runs = kernel_runs(fn, timer, runs=10)
            print(f"  {label}: event {timer.median_us(fn, reps=30):.1f} us")
            for k in range(min(len(r) for r in runs) if runs else 0):
                us = statistics.median(r[k][2] - r[k][1] for r in runs)
                print(f"     {us:9.1f} us  {runs[0][k][0].split('(')[0][:100]}")


if __name__ == "__main__":
    main(sys.argv[1:])
