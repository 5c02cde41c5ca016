"""One sweep case (drawn by seed, picked by a piece of its name) with one operand stored in each order of its
dims, jitops beside PyTorch, with the plan each order gets. Usage: python3 layout_variants_probe.py SEED NAME
[OPERAND [DTYPE,DTYPE...]] (OPERAND defaults to src; the DTYPEs replace every dense operand's dtype)."""
import itertools
import sys
from dataclasses import replace

import torch

from jitops.bench.layouts import Dense, build_torch, strides_for_order
from jitops.bench.sweep import _runners, explain_case
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.timing import Timer


def main(argv):
    seed, name = int(argv[0]), argv[1]
    operand = argv[2] if len(argv) > 2 else "src"
    dtypes = argv[3].split(",") if len(argv) > 3 else [None]
    (base,) = [c for c in draw_cases(seed, 10) if name in c.name][:1]
    timer = Timer(torch, torch.device("cuda"))
    print(base.name)
    warmed = False
    for dtype in dtypes:
        for order in itertools.permutations(range(len(base.operands[operand].shape))):
            case = replace(base, operands=dict(base.operands))
            spec = case.operands[operand]
            case.operands[operand] = replace(spec, strides=tuple(strides_for_order(spec.shape, order)),
                                             storage=spec.numel, offset=0)
            for key, value in list(case.operands.items()):
                if dtype and isinstance(value, Dense):
                    case.operands[key] = replace(case.operands[key], dtype=dtype)
            built = build_torch(torch, case.operands, timer.device, 0)
            ours, theirs = _runners(torch, case, built, long_indices=True)
            if not warmed:  # the first timing of a process runs while the clocks come up
                timer.median_us(theirs, reps=30)
                warmed = True
            us, their_us = timer.median_us(ours, reps=30), timer.median_us(theirs, reps=30)
            plans = " | ".join(f"{r['kernel'].split(' threads')[0]} grid {r['grid']} block {r['block']}"
                               for r in explain_case(case))
            print(f"{dtype or '':9s} {operand} stored {order} strides {case.operands[operand].strides}: "
                  f"jitops {us:8.1f} us  PyTorch {their_us:8.1f} us  {their_us / us:5.2f}x  {plans}", flush=True)
            del built


if __name__ == "__main__":
    main(sys.argv[1:])
