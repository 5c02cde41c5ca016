"""16-bit float sums of one column through the linear walk: jitops beside PyTorch, time and error against
float64, for hot, sorted and spread destinations; the lanes of a warp that share a destination are summed
in float first (combine_peers, NOTES 68)."""

import torch
from probe_timing import median_us

import jitops

dev = "cuda"
g = torch.Generator(device=dev)
g.manual_seed(1)


def indices(kind, n, high, dtype):
    if kind == "hot8":
        pool = torch.randint(0, high, (8,), device=dev, generator=g)
        return pool[torch.randint(0, 8, (n,), device=dev, generator=g)].to(dtype)
    idx = torch.randint(0, high, (n,), device=dev, generator=g)
    return (idx.sort().values if kind == "sorted" else idx).to(dtype)


def case(dtype, rows, n, kind, include_self, index_dtype=torch.int32):
    x = torch.randn(rows, 1, device=dev, generator=g).to(dtype)
    src = torch.randn(n, 1, device=dev, generator=g).to(dtype)
    idx = indices(kind, n, rows, index_dtype)[:, None]
    ref = x.double().scatter_reduce(0, idx.long(), src.double(), "sum", include_self=include_self)
    a, b = x.clone(), x.clone()

    def ours():
        a.copy_(x)
        jitops.scatter_reduce_(a, 0, idx, src, "sum", include_self=include_self)

    def theirs():
        b.copy_(x)
        b.scatter_reduce_(0, idx.long(), src, "sum", include_self=include_self)

    def error(t):
        return ((t.double() - ref).abs().max() / ref.abs().max()).item()

    o, t = median_us(ours, reps=20), median_us(theirs, reps=20)
    ours(), theirs()
    return o, t, error(a), error(b)


CASES = [
    ("f16 31.2M into 1.66M, 8 hot rows (seed 27)", torch.float16, 1662216, 31176366, "hot8", False),
    ("bf16 31.2M into 1.66M, 8 hot rows", torch.bfloat16, 1662216, 31176366, "hot8", True),
    ("f16 31.1M sorted into 298143 (seed 26)", torch.float16, 298143, 31135977, "sorted", False),
    ("f16 16M random into 16M", torch.float16, 1 << 24, 1 << 24, "random", True),
    ("f16 16M random into 65536", torch.float16, 65536, 1 << 24, "random", True),
    ("bf16 4M random into 4096", torch.bfloat16, 4096, 1 << 22, "random", True),
    ("f16 1M random into 1M", torch.float16, 1 << 20, 1 << 20, "random", True),
]

if __name__ == "__main__":
    for name, dtype, rows, n, kind, include_self in CASES:
        o, t, eo, et = case(dtype, rows, n, kind, include_self)
        print(f"{name:44s} jitops {o:8.1f} us  PyTorch {t:8.1f} us  {t / o:5.2f}x   error {eo:.2e} vs {et:.2e}",
              flush=True)
