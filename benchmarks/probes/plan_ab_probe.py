"""A planner change, A/B: the sweep cases of some seeds whose planned kernel matches a pattern, each timed
as planned and under a forced configuration (the old plan), alternated twice (the better of two medians a
side), beside PyTorch. Usage: python3 plan_ab_probe.py FIRST_SEED LAST_SEED FAMILIES PATTERN CONFIG
(FAMILIES: comma-separated; PATTERN: a regular expression over the planned kernels' names; CONFIG as
jitops._core._tuning_run takes it, e.g. "threads=256 unroll=1 waves=32 vector=16")."""
import math
import re
import sys

import torch

import jitops
from jitops.bench.layouts import build_torch
from jitops.bench.sweep import _runners, explain_case
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.timing import Timer


def main(first, last, families, pattern, config):
    families, pattern = set(families.split(",")), re.compile(pattern)
    timer = Timer(torch, torch.device("cuda"))
    ratios, vs_torch = [], []
    for seed in range(int(first), int(last) + 1):
        for case in draw_cases(seed, 10):
            if case.family not in families:
                continue
            try:
                if not any(pattern.search(r["kernel"]) for r in explain_case(case)):
                    continue
                built = build_torch(torch, case.operands, timer.device, seed)
                ours, theirs = _runners(torch, case, built, long_indices=True)
                forced = lambda: jitops._core._tuning_run(ours, config)  # noqa: E731
                if hasattr(ours, "before"):
                    forced.before = ours.before
                new, old = [], []
                for _ in range(2):
                    new.append(timer.median_us(ours, reps=50))
                    old.append(timer.median_us(forced, reps=50))
                t = timer.median_us(theirs, reps=50)
                del built
            except Exception as exc:  # noqa: BLE001 - a probe: note and go on
                print(f"{seed} {case.name}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            n, o = min(new), min(old)
            ratios.append(o / n)
            vs_torch.append((t / o, t / n))
            print(f"{seed} {case.name[:80]:80s} old {o:8.1f} new {n:8.1f} us ({o / n:5.2f}x)  PyTorch {t:8.1f} "
                  f"({t / o:5.2f}x -> {t / n:5.2f}x)", flush=True)
    if ratios:
        g = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
        print(f"{len(ratios)} cases: new over old {g(ratios):.3f}x in geomean (min {min(ratios):.2f}, max "
              f"{max(ratios):.2f}); against PyTorch {g([a for a, _ in vs_torch]):.3f}x -> "
              f"{g([b for _, b in vs_torch]):.3f}x; below 0.97x {sum(a < 0.97 for a, _ in vs_torch)} -> "
              f"{sum(b < 0.97 for _, b in vs_torch)}")


if __name__ == "__main__":
    main(*sys.argv[1:6])
