"""The sweep cases named in a JSON list, each built once and timed under several environments in turn (a
probe-only variable that the planner reads at every call), alternated over rounds, beside PyTorch timed once:
cheaper than env_variants.sh (one build of the operands and one PyTorch timing a case, not one a variant).
Usage:
  python3 case_variants_probe.py CASES.json OUT.json "base=" "cap=JITOPS_PROBE_CAP=1" ... [--rounds 2]
A variant is NAME=VAR=VALUE[,VAR=VALUE...] (empty after the first '=': no variable; a VAR named _set_* calls
that jitops._core knob with VALUE, or with the integers of VALUE split at ':'; variants that do not name it keep the value last set). Writes
{"SEED NAME": {"torch": us, "VARIANT": [us a round, ...], "wrong": [VARIANT, ...] where its result differs
from PyTorch's, "detail": {VARIANT: the check's words}}} after every case."""
import json
import os
import sys


def parse_variants(specs):
    variants = {}
    for spec in specs:
        name, _, assigns = spec.partition("=")
        variants[name] = dict(a.split("=", 1) for a in assigns.split(",") if a)
    return variants


def set_core_knobs(env):
    """Variables named _set_* call jitops._core's development knob of that name with their integer value
    (values joined by ':' for a knob of several arguments, e.g. _set_row_sum_shape=8:4)."""
    from jitops import _core

    for var, value in env.items():
        if var.startswith("_set_"):
            getattr(_core, var)(*(int(v) for v in value.split(":")))


def once(run):
    """One call from the drawn values (an in-place run restores its operand first)."""
    getattr(run, "before", lambda: None)()
    return run()


def main(cases_file, out, specs, rounds):
    import torch

    from jitops.bench.layouts import build_torch
    from jitops.bench.sweep import _runners, check
    from jitops.bench.sweep_cases import draw_cases
    from jitops.bench.timing import Timer

    variants = parse_variants(specs)
    probe_vars = {var for env in variants.values() for var in env}
    wanted, by_seed = json.load(open(cases_file)), {}
    for key in wanted:
        seed, name = key.split(" ", 1)
        by_seed.setdefault(int(seed), set()).add(name)
    timer, times = Timer(torch, torch.device("cuda")), {}
    for seed, names in sorted(by_seed.items()):
        for case in draw_cases(seed, 10):
            if case.name not in names:
                continue
            key = f"{seed} {case.name}"
            try:
                built = build_torch(torch, case.operands, timer.device, seed)
                ours, theirs = _runners(torch, case, built, long_indices=True)
                row, wrong = {"torch": timer.median_us(theirs, reps=50)}, []
                expected = once(theirs)
                for r in range(rounds):
                    for name, env in variants.items():
                        for var in probe_vars:
                            os.environ.pop(var, None)
                        os.environ.update(env)
                        set_core_knobs(env)
                        if r == 0:
                            ok, detail = check(torch, case, built, once(ours), expected)
                            if not ok:
                                wrong.append(name)
                                row.setdefault("detail", {})[name] = detail
                        row.setdefault(name, []).append(timer.median_us(ours, reps=50))
                if wrong:
                    row["wrong"] = wrong
                del built
            except Exception as exc:  # noqa: BLE001 - a probe: note and go on
                print(f"{key}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            times[key] = row
            cells = " ".join(f"{n} {min(v):8.1f}" for n, v in row.items() if n not in ("torch", "wrong", "detail"))
            print(f"{key[:80]:80s} torch {row['torch']:8.1f} {cells} {'WRONG ' + str(wrong) if wrong else ''}",
                  flush=True)
            with open(out, "w") as f:  # after every case: a run cut off by its time limit keeps what it timed
                json.dump(times, f, indent=1)


if __name__ == "__main__":
    args = sys.argv[1:]
    rounds = 2
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at:at + 2]
    main(args[0], args[1], args[2:], rounds)
