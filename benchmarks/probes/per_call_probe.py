"""The bench's per-call table alone (forward, and forward plus backward), repeated in one process: how far
each op's ratio to PyTorch moves between repeats of the same code. Usage: per_call_probe.py [REPEATS] [OPS]
(OPS: comma-separated names; default every op)."""
import sys

import torch

from jitops.bench.per_call import _alternate, _pairs


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
    forward, backward = _pairs(torch, "cuda")
    for r in range(repeats):
        for kind, pairs, calls, rounds in (("forward", forward, 100, 100), ("forward+backward", backward, 20, 125)):
            for name, (ours, theirs) in pairs.items():
                if only and name not in only:
                    continue
                t = _alternate(torch, "cuda", ours, theirs, calls, rounds)
                print(f"repeat {r} {kind:17s} {name:28s} jitops {t['jitops_us']:7.2f} us  PyTorch "
                      f"{t['torch_us']:7.2f} us  {t['torch_us'] / t['jitops_us']:.3f}x", flush=True)


if __name__ == "__main__":
    main()
