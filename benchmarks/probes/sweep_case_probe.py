"""One sweep case (drawn by seed, picked by a piece of its name), jitops under forced launch configurations
beside PyTorch, timed as the sweep times it. Usage: python3 sweep_case_probe.py SEED NAME [CONFIG ...],
CONFIG as jitops._core._tuning_run takes it ("threads=256 unroll=2 waves=16 vector=16"); none: the
planner's own. Also swaps the case's index kind (random, sorted, repeated) with --kind KIND, and the
dtype of its dense operands with --dtype DTYPE; --explain prints the planned launches on this device."""
import sys
from dataclasses import replace

import torch

import jitops
from jitops.bench.layouts import Dense, Index, build_torch
from jitops.bench.sweep import _runners
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.timing import Timer


def option(argv, flag):
    """(value of --flag or None, argv without it)."""
    if flag not in argv:
        return None, argv
    at = argv.index(flag)
    return argv[at + 1], argv[:at] + argv[at + 2:]


def main(argv):
    kind, argv = option(argv, "--kind")
    dtype, argv = option(argv, "--dtype")
    explain = "--explain" in argv
    argv = [a for a in argv if a != "--explain"]
    seed, name, configs = int(argv[0]), argv[1], argv[2:] or [None]
    (case,) = [c for c in draw_cases(seed, 10) if name in c.name][:1]
    for key, spec in case.operands.items():
        if kind and isinstance(spec, Index):
            case.operands[key] = replace(spec, kind=kind)
        if dtype and isinstance(spec, Dense):
            case.operands[key] = replace(spec, dtype=dtype)
    timer = Timer(torch, torch.device("cuda"))
    built = build_torch(torch, case.operands, timer.device, 0)
    print(case.name, f"(index {kind})" if kind else "", f"(as {dtype})" if dtype else "")
    if explain:
        from jitops.bench.sweep import call_args

        args, kwargs = call_args(case, dict(built.values))
        for r in jitops.explain(case.op, *args, **kwargs):
            print(f"  {r['kernel']} grid {r['grid']} block {r['block']} {r.get('config')} registers {r['registers']}")
    # The first timing of a process runs while the clocks come up: hot-atomic cases measured up to 1.8x slower
    # in it. A throwaway timing of PyTorch's call first.
    timer.median_us(_runners(torch, case, built, long_indices=True)[1], reps=50)
    theirs_us = None
    for config in configs:
        ours, theirs = _runners(torch, case, built, long_indices=True)
        run = (lambda: jitops._core._tuning_run(ours, config)) if config else ours
        us = timer.median_us(run, reps=50)
        theirs_us = theirs_us or timer.median_us(theirs, reps=50)
        print(f"  {config or 'planned':44s} jitops {us:9.1f} us  PyTorch {theirs_us:9.1f} us  {theirs_us / us:5.2f}x",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
