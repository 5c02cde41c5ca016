"""Compare-and-swap updates into a few hot destinations (NOTES 72-73): one sweep case (seed, piece of its name)
timed as the sweep times it, jitops under template variants (JITOPS_DEV_DEFINES, comma-separated macros; the
module cache is cleared between variants) beside PyTorch, and the hot destinations' final values of both.
Modes: drawn (self modified run after run, as the sweep timed it), fresh (self restored before each run,
outside the timing), ones (src all ones: no update changes a value), normal (src standard normal, restored). Usage: python3 cas_hot_probe.py SEED NAME
[VARIANT ...]; `--once MODE VARIANT` runs each library once between cudaProfilerStart/Stop, for ncu."""
import sys

import torch

from jitops.bench.layouts import build_torch
from jitops.bench.sweep import _runners
from jitops.bench.sweep_cases import draw_cases


def hot_values(case, built, out):
    index = built.values["index"].reshape(-1)
    hot = torch.unique(index)[:8].long()
    flat = out.reshape(-1) if out.is_contiguous() else out.contiguous().reshape(-1)
    vals = flat[hot].float().cpu().tolist()
    return " ".join(f"{v:.3g}" for v in vals)


def timed(fn, reset, reps=30):
    """Median us of `fn`, `reset` (or nothing) run before each run's flush, outside the timing."""
    import statistics

    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    times = []
    for i in range(reps + 3):
        if reset:
            reset()
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) * 1000)
    return statistics.median(times)


def main(argv):
    once = None
    if "--once" in argv:
        at = argv.index("--once")
        once = argv[at + 1]
        argv = argv[:at]
    seed, name = int(argv[0]), argv[1]
    (case,) = [c for c in draw_cases(seed, 10) if name in c.name][:1]
    print(case.name, flush=True)
    for mode in ([once] if once else ["drawn", "fresh", "ones", "normal"]):
        built = build_torch(torch, case.operands, torch.device("cuda"), 0)
        if mode == "ones":
            built.values["src"].fill_(1)
        if mode == "normal":
            built.values["src"].copy_(torch.randn(built.values["src"].shape, device="cuda"))
        if once:
            ours, theirs = _runners(torch, case, built, long_indices=True)
            for _ in range(3):
                ours(), theirs()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            ours(), theirs()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            return
        ours, theirs = _runners(torch, case, built, long_indices=True)
        mine, their_self = ours(), theirs()
        pristine = built.values["self"].clone()
        restore = mode in ("fresh", "normal")
        reset_theirs = (lambda: their_self.copy_(pristine)) if restore else None
        reset_ours = (lambda: mine.copy_(pristine)) if restore else None
        timed(theirs, reset_theirs, reps=10)
        theirs_us = min(timed(theirs, reset_theirs) for _ in range(2))
        us = min(timed(ours, reset_ours) for _ in range(2))
        print(f"  {mode:6s} PyTorch {theirs_us:11.1f} us  hot {hot_values(case, built, theirs())}", flush=True)
        print(f"  {mode:6s} jitops  {us:11.1f} us  {theirs_us / us:6.2f}x  hot {hot_values(case, built, ours())}",
              flush=True)

if __name__ == "__main__":
    main(sys.argv[1:])
