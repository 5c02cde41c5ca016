"""Sweep the launch shape (threads, unroll, waves) on the benchmark's cases
(a name filter as the argument), to choose the heuristic defaults by
measurement. Prints one line per case with the best shapes and the default.
In-place cases accumulate across runs; their check is skipped here."""

import itertools
import sys

import torch

import jitops
from jitops import _core
from jitops.bench.cases import CASES
from jitops.bench.timing import Timer

device = torch.device("cuda", 0)
timer = Timer(torch, device)
shapes = list(itertools.product((128, 256, 512), (1, 2, 4, 8), (1, 2, 4, 16)))
selected = [c for c in CASES if (len(sys.argv) < 2 or sys.argv[1] in c.name)]
for case in selected:
    for index_dtype in (torch.int64, torch.int32):
        ours, theirs, _ = case.build(torch, device, index_dtype)
        expected = theirs()
        results = []
        for threads, unroll, waves in shapes:
            _core._set_launch_tuning(threads, unroll, waves)
            got = ours()
            assert case.rtol or torch.equal(got, expected)
            results.append((timer.median_us(ours, reps=50), threads, unroll, waves))
        _core._set_launch_tuning(0)  # the heuristic, as a user gets it
        default = timer.median_us(ours, reps=50)
        best = sorted(results)[:3]
        torch_us = timer.median_us(theirs, reps=50)
        print(f"{case.name[:46]:46s} {str(index_dtype)[6:]:5s} torch {torch_us:6.1f}  default {default:6.1f}  best "
              + "  ".join(f"{t:6.1f}@{th}/{u}/{w}" for t, th, u, w in best), flush=True)
