"""Operands laid out differently (NOTES item 37): where jitops and PyTorch part.

Cases from the sweep that stayed slow: an elementwise op whose second operand
is a transposed view (the output follows the first), and scatter_reduce_ sum
of one column. Each is timed (bench timing) for jitops, PyTorch and variants;
with --ncu each kernel runs twice, untimed, for `ncu --clock-control none`.
"""
import sys

import torch

import jitops
from jitops.bench.timing import Timer


def transposed_pair():
    x = torch.randn(128, 16, 65536, device="cuda", dtype=torch.float64)
    y = torch.randn(65536, 128, 16, device="cuda", dtype=torch.float64).permute(1, 2, 0)  # strides (16, 1, 2048)
    return x, y


def one_column():
    g = torch.Generator(device="cuda").manual_seed(3)
    self_ = torch.randn(5224811, 1, device="cuda", generator=g)
    src = torch.randn(23534567, 1, device="cuda", generator=g)
    idx32 = torch.randint(0, 5224811, (23534567, 1), device="cuda", generator=g, dtype=torch.int32)
    return self_, src, idx32, idx32.long()


def sorted_products():
    g = torch.Generator(device="cuda").manual_seed(4)
    self_ = 1 + 0.01 * torch.randn(566260, 1, device="cuda", generator=g)
    src = 1 + 0.01 * torch.randn(17589925, 1, device="cuda", generator=g)
    idx = torch.randint(0, 566260, (17589925, 1), device="cuda", generator=g).sort(dim=0).values
    return self_, src, idx


def calls():
    x, y = transposed_pair()
    out_like_y = torch.empty_like(y)  # y's strides: x is the strided read instead
    s, src, i32, i64 = one_column()
    a, b = s.clone(), s.clone()
    ps, psrc, pidx = sorted_products()
    pt = ps.clone()
    return {
        "minimum jitops": lambda: jitops.minimum(x, y),
        "minimum torch": lambda: torch.minimum(x, y),
        "minimum jitops out in y's layout": lambda: jitops.minimum(x, y, out=out_like_y),
        "minimum torch out in y's layout": lambda: torch.minimum(x, y, out=out_like_y),
        "transposed copy torch (y.contiguous)": lambda: y.contiguous(),
        "scatter sum one column jitops int32": lambda: jitops.scatter_reduce_(a, 0, i32, src, "sum"),
        "scatter sum one column jitops int64": lambda: jitops.scatter_reduce_(a, 0, i64, src, "sum"),
        "scatter sum one column torch int64": lambda: b.scatter_reduce_(0, i64, src, "sum"),
        "scatter_add one column torch int64": lambda: b.scatter_add_(0, i64, src),
    }


def main():
    runs = calls()
    if "--ncu" in sys.argv:
        for fn in runs.values():
            fn()
            fn()
        torch.cuda.synchronize()
        return
    timer = Timer(torch, torch.device("cuda", 0))
    for name, fn in runs.items():
        print(f"{timer.median_us(fn, reps=30):9.1f} us  {name}", flush=True)
    x, y = transposed_pair()
    print(jitops.explain(jitops.minimum, x, y)[0])
    print(jitops.tune(jitops.minimum, x, y, reps=10))


if __name__ == "__main__":
    main()
