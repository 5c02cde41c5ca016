"""One sweep case timed where the sweep times it: every case of the seed before it runs first, as in
`jitops bench --sweep`, then the target is timed again and its jitops call profiled on the host (cProfile),
for a case whose time in the sweep differs from its time alone.
Usage: python3 sweep_context_probe.py SEED NAME_PIECE"""
import cProfile
import pstats
import sys
import time

import torch

from jitops.bench.layouts import build_torch
from jitops.bench.sweep import _runners, run_case
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.timing import Timer

seed, name = int(sys.argv[1]), sys.argv[2]
device = torch.device("cuda")
timer = Timer(torch, device)
timer.bandwidth = timer.copy_bandwidth()
timer.empty_launch_us()
timer.chain_floors_us()
for i, case in enumerate(draw_cases(seed, 10)):
    row = run_case(torch, timer, case, seed=hash((seed, i)) & 0x7FFFFFFF, reps=50)
    if name in case.name:
        print(f"in the sweep's place: jitops {row.get('jitops_us', 0):.1f} us, PyTorch {row.get('torch_us', 0):.1f} us")
        built = build_torch(torch, case.operands, device, hash((seed, i)) & 0x7FFFFFFF)
        ours, theirs = _runners(torch, case, built)
        for label, fn in (("jitops", ours), ("PyTorch", theirs)):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(200):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            print(f"{label}: host {1e6 * (t1 - t0) / 200:.1f} us a call (200 calls, no restore)")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            ours()
        prof.disable()
        torch.cuda.synchronize()
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
        break
    if i % 16 == 15:
        torch.cuda.empty_cache()
