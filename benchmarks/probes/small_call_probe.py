"""Where a small sweep case's time goes: the sweep's event timing beside the GPU time of the kernels each
side launches (torch.profiler's CUDA activity, L2 flushed before each run as the sweep does), jitops beside
PyTorch. Event time minus kernel time is what the launch itself costs on the GPU side.
Usage: python3 small_call_probe.py [--max-bytes N] [--families a,b] SEED [SEED ...]"""
import statistics
import sys

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import jitops
from jitops.bench.layouts import build_torch
from jitops.bench.sweep import _runners
from jitops.bench.sweep_cases import draw_cases
from jitops.bench.timing import Timer

FAMILIES = "index_select,take,gather,index_add_,index_copy_,index_fill_,elementwise"


def option(argv, flag, default):
    if flag not in argv:
        return default, argv
    at = argv.index(flag)
    return argv[at + 1], argv[:at] + argv[at + 2:]


def kernel_runs(fn, timer, runs=20):
    """[[(name, start, end), ...] a run] of `runs` runs, each after a flush (the flush's own fill of 256 MB,
    over 40 us, starts a run; PyTorch's scatter fill kernels are not fills of this kind)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            timer.flush.zero_()
            fn()
        torch.cuda.synchronize()
    events = sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA),
                    key=lambda e: e.time_range.start)
    per_run, current = [], None
    for e in events:
        dur = e.time_range.elapsed_us()
        if dur > 40 and "FillFunctor" in e.name:  # the flush: zeroing 256 MB
            current = []
            per_run.append(current)
        elif current is not None:
            current.append((e.name, e.time_range.start, e.time_range.end))
    return [run for run in per_run if run]


def kernels_per_run(fn, timer, runs=20):
    """[(names, summed kernel us, first start to last end us)] of `runs` runs, each after a flush."""
    return [([n for n, _, _ in run], sum(b - a for _, a, b in run), run[-1][2] - run[0][1])
            for run in kernel_runs(fn, timer, runs)]


def summary(rows):
    names = rows[0][0] if rows else []
    return (names, statistics.median(r[1] for r in rows) if rows else float("nan"),
            statistics.median(r[2] for r in rows) if rows else float("nan"))


def short(names):
    return "+".join(n.split("(")[0].split("<")[0][-28:] for n in names)


def main(argv):
    max_bytes, argv = option(argv, "--max-bytes", "8000000")
    families, argv = option(argv, "--families", FAMILIES)
    families = set(families.split(","))
    timer = Timer(torch, torch.device("cuda"))
    empty = jitops.RawKernel('extern "C" __global__ void jitops_empty() {}', "jitops_empty")
    one = torch.zeros(1, device="cuda")
    for label, fn in (("empty jitops launch", lambda: empty((1,), (32,), ())), ("torch zero_ of 1", one.zero_)):
        ev = timer.median_us(fn, reps=100)
        _, k, _ = summary(kernels_per_run(fn, timer))
        print(f"{label:24s} event {ev:6.2f} us  kernel {k:6.2f} us")
    print("case | ev jit | ev torch | kern jit | kern torch | n jit | n torch | over jit | over torch | kernels")
    for seed in map(int, argv):
        for case in draw_cases(seed, 10):
            if case.family not in families or case.min_bytes > int(max_bytes):
                continue
            try:
                built = build_torch(torch, case.operands, timer.device, seed)
                ours, theirs = _runners(torch, case, built, long_indices=True)
                ev_j, ev_t = timer.median_us(ours, reps=50), timer.median_us(theirs, reps=50)
                names_j, k_j, span_j = summary(kernels_per_run(ours, timer))
                names_t, k_t, span_t = summary(kernels_per_run(theirs, timer))
            except Exception as exc:  # noqa: BLE001 - a probe: note and go on
                print(f"{seed} {case.name}: {type(exc).__name__}: {str(exc)[:120]}")
                continue
            print(f"{seed} {case.name[:90]} | {ev_j:.2f} | {ev_t:.2f} | {k_j:.2f} | {k_t:.2f} | {len(names_j)} | "
                  f"{len(names_t)} | {ev_j - k_j:.2f} | {ev_t - k_t:.2f} | {short(names_j)} / {short(names_t)}",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
