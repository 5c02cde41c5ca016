"""An in-place sweep case (seed, a piece of its name) whose hot destinations make its time depend on where
self lies: several fresh copies of self, jitops and PyTorch each timed on every copy in turn (the copy
restored before each run, L2 flushed, as the sweep times), so that both libraries meet the same placements.
Usage: python3 placement_probe.py SEED NAME [COPIES]"""
import sys

import torch

from jitops.bench.layouts import build_torch
from jitops.bench.sweep import call_args, jitops_callable
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.layouts import Index
from jitops.bench.timing import RestoringRun, Timer


def main(argv):
    seed, name = int(argv[0]), argv[1]
    copies = int(argv[2]) if len(argv) > 2 else 6
    (case,) = [c for c in draw_cases(seed, 10) if name in c.name][:1]
    assert case.inplace, "an in-place case"
    timer = Timer(torch, torch.device("cuda"))
    built = build_torch(torch, case.operands, timer.device, seed)
    fn = jitops_callable(case)
    theirs_values = dict(built.values)
    for key, spec in case.operands.items():
        if isinstance(spec, Index):
            theirs_values[key] = theirs_values[key].long()
    pristine = built.values[case.inplace]
    spec = case.operands[case.inplace]
    targets = [built.fresh(case.inplace, spec) for _ in range(copies)]
    print(case.name)
    for round_ in range(2):
        for i, target in enumerate(targets):
            ours_values = dict(built.values, **{case.inplace: target})
            args, kwargs = call_args(case, ours_values)
            ours = RestoringRun(lambda: fn(*args, **kwargs), target, pristine)
            theirs = RestoringRun(lambda: case.reference(torch, dict(theirs_values, **{case.inplace: target})),
                                  target, pristine)
            a = timer.median_us(ours, reps=20)
            b = timer.median_us(theirs, reps=20)
            print(f"  round {round_} copy {i} at {target.data_ptr() % (1 << 32):#010x}: jitops {a:9.1f} us  "
                  f"PyTorch {b:9.1f} us  {b / a:5.2f}x", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
