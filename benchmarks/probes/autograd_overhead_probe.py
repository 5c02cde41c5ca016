"""Where a jitops forward-plus-backward call's host time goes on tiny tensors (issue 19's per-call
target): cProfile of index_select and mul under autograd, beside PyTorch's own ops, kernels cached."""

import cProfile
import pstats
import time

import torch
from probe_timing import host_loop_us

import jitops


loop_us = host_loop_us


def main():
    dev = "cuda"
    x = torch.randn(64, 16, device=dev, requires_grad=True)
    y = torch.randn(64, 16, device=dev, requires_grad=True)
    idx = torch.randint(0, 64, (8,), device=dev)
    g = torch.ones(8, 16, device=dev)
    cases = {
        "index_select": (lambda: jitops.index_select(x, 0, idx).backward(g),
                         lambda: torch.index_select(x, 0, idx).backward(g)),
        "mul": (lambda: jitops.mul(x, y).sum().backward(), lambda: torch.mul(x, y).sum().backward()),
        "index_select forward only": (lambda: jitops.index_select(x, 0, idx), lambda: torch.index_select(x, 0, idx)),
    }
    for name, (ours, theirs) in cases.items():
        for fn in (ours, theirs):
            loop_us(fn, 50)
        print(f"{name}: jitops {loop_us(ours, 300):.1f} us, PyTorch {loop_us(theirs, 300):.1f} us")
    for name in ("index_select", "mul"):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(300):
            cases[name][0]()
        prof.disable()
        torch.cuda.synchronize()
        print(f"--- {name}: the 18 costliest functions (own time, 300 calls)")
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
