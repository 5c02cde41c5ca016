"""One sweep case checked against float64 (the sweep's accumulate check), run after run, jitops beside
PyTorch: is a case marked wrong an effect of the order its atomics happen to take? Prints each run's error
(largest difference over the largest reference value) and how often the sweep's check (error at most 2x the
other's plus 8 eps) fails between runs of jitops and PyTorch, of PyTorch against itself, and of jitops
against itself.
Usage: python3 order_error_probe.py SEED "PART OF THE CASE'S NAME" [--runs N]"""


def main(seed, part, runs):
    import torch

    from jitops.bench.layouts import build_torch
    from jitops.bench.sweep import _float64_reference, _relative_error, _runners
    from jitops.bench.sweep_cases import draw_cases

    (case,) = [c for c in draw_cases(seed, 10) if part in c.name]
    built = build_torch(torch, case.operands, torch.device("cuda"), seed)
    ours, theirs = _runners(torch, case, built, long_indices=True)
    ref = _float64_reference(torch, case, built)

    dtypes = set()

    def errors(run):
        out = []
        for _ in range(runs):
            getattr(run, "before", lambda: None)()
            result = run()
            dtypes.add(result.dtype)
            out.append(_relative_error(torch, result, ref))
        return out

    mine, pytorch = errors(ours), errors(theirs)
    (dtype,) = dtypes
    eps = torch.finfo(dtype).eps

    def fails(a, b):
        pairs = [(x, y) for i, x in enumerate(a) for j, y in enumerate(b) if a is not b or i != j]
        return sum(x > 2 * y + 8 * eps for x, y in pairs), len(pairs)

    print(case.name)
    print("jitops  ", " ".join(f"{e:.2e}" for e in mine))
    print("PyTorch ", " ".join(f"{e:.2e}" for e in pytorch))
    for name, (a, b) in {"jitops vs PyTorch": (mine, pytorch), "PyTorch vs PyTorch": (pytorch, pytorch),
                         "jitops vs jitops": (mine, mine)}.items():
        failed, total = fails(a, b)
        print(f"{name}: the check fails {failed} of {total} pairs")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="a sweep case's error against float64, run after run")
    parser.add_argument("seed", type=int)
    parser.add_argument("part", help="part of the case's name")
    parser.add_argument("--runs", type=int, default=8)
    parsed = parser.parse_args()
    main(parsed.seed, parsed.part, parsed.runs)
