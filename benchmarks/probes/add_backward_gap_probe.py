"""Where add's forward-plus-backward per-call gap to PyTorch comes from (NOTES 99): the per-call table's
pair in both orders, controls that time one library against itself (A/A: the order's own bias), the
backward alone through .backward(retain_graph) (AccumulateGrad runs) and autograd.grad (it does not), one
operand needing a gradient, and mul's pair for scale. Sides alternate over rounds as the bench's do."""
import statistics
import sys

import torch

import jitops
from jitops.bench.per_call import _alternate


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    dev = "cuda"
    x, y = torch.randn(64, 16, device=dev), torch.randn(64, 16, device=dev)
    xg, yg = x.clone().requires_grad_(), y.clone().requires_grad_()
    ja, ta = (lambda: jitops.add(xg, yg).sum().backward()), (lambda: torch.add(xg, yg).sum().backward())
    jm, tm = (lambda: jitops.mul(xg, yg).sum().backward()), (lambda: torch.mul(xg, yg).sum().backward())
    jx, tx = (lambda: jitops.add(xg, y).sum().backward()), (lambda: torch.add(xg, y).sum().backward())
    kept_j, kept_t = jitops.add(xg, yg).sum(), torch.add(xg, yg).sum()
    pairs = {
        "add fwd+bwd (jitops first)": (ja, ta),
        "add fwd+bwd (PyTorch first)": (ta, ja),
        "A/A jitops add": (ja, ja),
        "A/A PyTorch add": (ta, ta),
        "add fwd+bwd, y without grad": (jx, tx),
        "add bwd only .backward(retain)": (lambda: kept_j.backward(retain_graph=True),
                                           lambda: kept_t.backward(retain_graph=True)),
        "add bwd only grad(retain)": (lambda: torch.autograd.grad(kept_j, (xg, yg), retain_graph=True),
                                      lambda: torch.autograd.grad(kept_t, (xg, yg), retain_graph=True)),
        "add fwd+sum (grad)": (lambda: jitops.add(xg, yg).sum(), lambda: torch.add(xg, yg).sum()),
        "mul fwd+bwd": (jm, tm),
    }
    results = {name: [] for name in pairs}
    for r in range(repeats):
        for name, (a, b) in pairs.items():
            t = _alternate(torch, dev, a, b, 20, 125)
            results[name].append(t["torch_us"] / t["jitops_us"])
            print(f"repeat {r} {name:34s} first {t['jitops_us']:7.2f} us  second {t['torch_us']:7.2f} us  "
                  f"second/first {t['torch_us'] / t['jitops_us']:.3f}", flush=True)
    for name, v in results.items():
        print(f"median {name:34s} second/first {statistics.median(v):.3f} ({', '.join(f'{x:.3f}' for x in v)})")


if __name__ == "__main__":
    main()
