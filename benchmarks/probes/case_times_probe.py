"""Times of the sweep cases of some seeds whose planned kernel matches a pattern, jitops beside PyTorch, into
a JSON file: run once per build and compare two files (`--compare OLD NEW`) for a change no forced
configuration reproduces (a template's code). Usage:
  python3 case_times_probe.py FIRST_SEED LAST_SEED FAMILIES PATTERN OUT.json [--grid2d] [--only KEYS.json]
  python3 case_times_probe.py --compare OLD.json NEW.json
--grid2d keeps launches whose grid has more than one block along both x and y; --only keeps the cases named
in a JSON list of "SEED NAME" keys (drawn once with the new build's plans, so that the old build times the
same cases whatever its own plans say)."""
import json
import math
import re
import sys


def measure(first, last, families, pattern, out, grid2d, only=None):
    import torch

    from jitops.bench.layouts import build_torch
    from jitops.bench.sweep import _runners, explain_case
    from jitops.bench.sweep_cases import draw_cases
    from jitops.bench.timing import Timer

    families, pattern = set(families.split(",")), re.compile(pattern)
    timer, times = Timer(torch, torch.device("cuda")), {}
    for seed in range(int(first), int(last) + 1):
        for case in draw_cases(seed, 10):
            if case.family not in families or (only is not None and f"{seed} {case.name}" not in only):
                continue
            try:
                plans = [r for r in explain_case(case) if only is not None or pattern.search(r["kernel"])]
                if not plans or (grid2d and not any(r["grid"][0] > 1 and r["grid"][1] > 1 for r in plans)):
                    continue
                built = build_torch(torch, case.operands, timer.device, seed)
                ours, theirs = _runners(torch, case, built, long_indices=True)
                j = min(timer.median_us(ours, reps=50) for _ in range(2))
                t = timer.median_us(theirs, reps=50)
                del built
            except Exception as exc:  # noqa: BLE001 - a probe: note and go on
                print(f"{seed} {case.name}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            times[f"{seed} {case.name}"] = (j, t)
            print(f"{seed} {case.name[:90]:90s} jitops {j:8.1f} PyTorch {t:8.1f} us ({t / j:5.2f}x)", flush=True)
            with open(out, "w") as f:  # after every case: a pass cut off by its time limit keeps what it timed
                json.dump(times, f, indent=1)


def compare(old_file, new_file):
    old, new = json.load(open(old_file)), json.load(open(new_file))
    common = [k for k in new if k in old]
    g = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
    for k in common:
        (o, ot), (n, nt) = old[k], new[k]
        print(f"{k[:90]:90s} old {o:8.1f} new {n:8.1f} us ({o / n:5.2f}x)  PyTorch {ot / o:5.2f}x -> {nt / n:5.2f}x")
    if common:
        print(f"{len(common)} cases: new over old {g([old[k][0] / new[k][0] for k in common]):.3f}x in geomean; "
              f"against PyTorch {g([old[k][1] / old[k][0] for k in common]):.3f}x -> "
              f"{g([new[k][1] / new[k][0] for k in common]):.3f}x; below 0.97x "
              f"{sum(old[k][1] / old[k][0] < 0.97 for k in common)} -> {sum(new[k][1] / new[k][0] < 0.97 for k in common)}")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        only = set(json.load(open(sys.argv[sys.argv.index("--only") + 1]))) if "--only" in sys.argv else None
        measure(*sys.argv[1:6], grid2d="--grid2d" in sys.argv, only=only)
