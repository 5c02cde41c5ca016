"""The sweep's slowest cases (seeds 20-23, and 26-27's unprofiled ones) rebuilt by hand, jitops beside PyTorch under the bench's timing;
with --once NAME each side runs once after a warm-up, for ncu's counters (NOTES 64)."""

import sys

import torch
from probe_timing import median_us

import jitops

dev = "cuda"
g = torch.Generator(device=dev)
g.manual_seed(0)


def hot(n, high, dtype=torch.int64, pool=8):
    """n indices drawn from a pool of `pool` values in [0, high): the sweep's 'repeated'."""
    values = torch.randint(0, high, (pool,), device=dev, generator=g)
    return values[torch.randint(0, pool, (n,), device=dev, generator=g)].to(dtype)


def permuted(shape, order, dtype):
    """A dense array of `shape` whose dims are stored outermost-first in `order`."""
    base = torch.randint(-100, 100, [shape[d] for d in order], device=dev, generator=g).to(dtype)
    inverse = [order.index(d) for d in range(len(shape))]
    return base.permute(inverse)


def fill_1d():
    x, x_ref = torch.zeros(16777216, dtype=torch.int16, device=dev), torch.zeros(16777216, dtype=torch.int16,
                                                                                 device=dev)
    idx = hot(3583783, 16777216)
    return lambda: jitops.index_fill_(x, 0, idx, 7), lambda: x_ref.index_fill_(0, idx, 7)


def fill_transposed(order):
    def make():
        x = permuted((524288, 2, 8), order, torch.int32)
        x_ref = x.clone().as_strided(x.shape, x.stride())
        idx = hot(14, 8)
        return lambda: jitops.index_fill_(x, 2, idx, 7), lambda: x_ref.index_fill_(2, idx, 7)
    return make


def fill_complex():
    x = torch.zeros(62161, 64, 5, dtype=torch.complex64, device=dev)
    x_ref = x.clone()
    idx = torch.randint(0, 64, (49,), device=dev, generator=g).sort().values
    idx32 = idx.int()  # the sweep's index dtype; PyTorch's index_fill_ takes int64 only
    return lambda: jitops.index_fill_(x, 1, idx32, 1.5), lambda: x_ref.index_fill_(1, idx, 1.5)


def amax_sorted():
    x = torch.randint(-1000, 1000, (66056, 1), dtype=torch.int32, device=dev, generator=g)
    src = torch.randint(-1000, 1000, (16641813, 1), dtype=torch.int32, device=dev, generator=g)
    idx = torch.randint(0, 66056, (16641813, 1), device=dev, generator=g).sort(dim=0).values
    a, b = x.clone(), x.clone()
    return (lambda: jitops.scatter_reduce_(a, 0, idx, src, "amax"), lambda: b.scatter_reduce_(0, idx, src, "amax"))


def bf16_repeated():
    x = torch.randn(77, 23297, device=dev, generator=g).bfloat16()
    src = torch.randn(77, 131072, device=dev, generator=g).bfloat16()
    idx = hot(77 * 131072, 23297, torch.int32).reshape(77, 131072)
    a, b = x.clone(), x.clone()
    return lambda: jitops.scatter_add_(a, 1, idx, src), lambda: b.scatter_add_(1, idx, src)


def prod_f16_column():
    x = torch.rand(1504, 1, device=dev, generator=g).half() + 0.5
    src = torch.rand(109117, 1, device=dev, generator=g).half() * 0.02 + 0.99
    idx = torch.randint(0, 1504, (109117, 1), device=dev, generator=g)
    a, b = x.clone(), x.clone()
    return (lambda: jitops.scatter_reduce_(a, 0, idx, src, "prod", include_self=False),
            lambda: b.scatter_reduce_(0, idx, src, "prod", include_self=False))


def expanded_rows_f32(rows=9451, mode=1):
    def make():
        x = torch.randn(42, 256, device=dev, generator=g)
        src = torch.randn(rows, 256, device=dev, generator=g)
        idx = torch.randint(0, 42, (rows,), device=dev, generator=g).sort().values.int()[:, None].expand(rows, 256)
        a, b = x.clone(), x.clone()

        def ours():
            jitops._core._set_row_sum_mode(mode)  # 0: atomics only, 1: the default choice
            jitops.scatter_add_(a, 0, idx, src)
            jitops._core._set_row_sum_mode(1)
        return ours, lambda: b.scatter_add_(0, idx, src)
    return make


def full_index_f64():
    x = torch.randn(64, 681209, dtype=torch.float64, device=dev, generator=g)
    src = torch.randn(64, 524288, dtype=torch.float64, device=dev, generator=g)
    idx = torch.randint(0, 681209, (64, 524288), device=dev, generator=g)
    a, b = x.clone(), x.clone()
    return lambda: jitops.scatter_add_(a, 1, idx, src), lambda: b.scatter_add_(1, idx, src)


def narrow_rows_f64():
    x = torch.randn(20250, 8, dtype=torch.float64, device=dev, generator=g)
    src = torch.randn(1387460, 8, dtype=torch.float64, device=dev, generator=g)
    idx = torch.randint(0, 20250, (1387460, 1), device=dev, generator=g).expand(1387460, 8)
    a, b = x.clone(), x.clone()
    idx32 = idx.int()
    return lambda: jitops.scatter_add_(a, 0, idx32, src), lambda: b.scatter_add_(0, idx, src)


def fill_int64_repeated():
    x = torch.zeros(8388608, 13, dtype=torch.int64, device=dev)
    x_ref = x.clone()
    idx = hot(40, 13, pool=8)
    return lambda: jitops.index_fill_(x, 1, idx.int(), 7), lambda: x_ref.index_fill_(1, idx, 7)



def index_add_transposed_src(dtype=torch.float32):
    """Seed 31: index_add_ into a sliced self (rows 8 bytes apart) from a transposed source, 166 hot indices."""
    def make():
        store = torch.randn(33554688, device=dev, generator=g).to(dtype)
        a = store.as_strided((256, 65536), (131073, 2), 1)
        b = store.clone().as_strided((256, 65536), (131073, 2), 1)
        src = torch.randn(65536, 166, device=dev, generator=g).to(dtype).t()
        idx = hot(166, 256, torch.int32)
        return (lambda: jitops.index_add_(a, 0, idx, src, alpha=0.5),
                lambda: b.index_add_(0, idx, src, alpha=0.5))
    return make


def narrow_rows_int32(config=None, hot_pool=0):
    """Seed 32: int32 rows of 3 from 289477 random rows into 3322 (0.79x), under a forced configuration;
    with hot_pool, the rows go to that many destinations only."""
    def make():
        x = torch.randint(-100, 100, (3322, 3), dtype=torch.int32, device=dev, generator=g)
        src = torch.randint(-100, 100, (289477, 3), dtype=torch.int32, device=dev, generator=g)
        idx = (hot(289477, 3322, pool=hot_pool) if hot_pool else
               torch.randint(0, 3322, (289477,), device=dev, generator=g)).int()[:, None].expand(289477, 3)
        idx64 = idx.long()
        a, b = x.clone(), x.clone()
        run = (lambda f: jitops._core._tuning_run(f, config)) if config else (lambda f: f())
        return lambda: run(lambda: jitops.scatter_add_(a, 0, idx, src)), lambda: b.scatter_add_(0, idx64, src)
    return make


def rows_f32(rows, dests, mode, order="sorted"):
    """Seed 31: float32 rows of 300 with a sorted index (0.89x at 1.6 rows a destination); row sums (mode 1)
    against atomics (mode 0) as the rows a destination grow, with the index sorted or random."""
    def make():
        x = torch.randn(dests, 300, device=dev, generator=g)
        src = torch.randn(rows, 300, device=dev, generator=g)
        idx = torch.randint(0, dests, (rows,), device=dev, generator=g)
        idx = (idx.sort().values if order == "sorted" else idx).int()[:, None].expand(rows, 300)
        idx64 = idx.long()
        a, b = x.clone(), x.clone()

        def ours():
            jitops._core._set_row_sum_mode(mode)
            jitops.scatter_add_(a, 0, idx, src)
            jitops._core._set_row_sum_mode(1)
        return ours, lambda: b.scatter_add_(0, idx64, src)
    return make


CASES = {
    "fill_1d_hot": fill_1d,
    **{f"fill_transposed_{''.join(map(str, o))}": fill_transposed(list(o))
       for o in ((0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))},
    "fill_complex_dim1": fill_complex,
    "amax_int32_sorted_column": amax_sorted,
    "scatter_add_bf16_repeated": bf16_repeated,
    "prod_f16_column": prod_f16_column,
    "expanded_rows_f32_42": expanded_rows_f32(),
    "full_index_f64_dim1": full_index_f64,
    "narrow_rows_f64": narrow_rows_f64,
    "fill_int64_13_repeated": fill_int64_repeated,
    **{f"rows_{r}_into_42_mode{m}": expanded_rows_f32(r, m) for r in (9451, 20000, 42000, 100000, 400000)
       for m in (0, 1)},
    "index_add_transposed_src_f32": index_add_transposed_src(),
    "index_add_transposed_src_f16": index_add_transposed_src(torch.float16),
    "narrow_rows_int32": narrow_rows_int32(),
    **{f"narrow_rows_int32_t{t}_u{u}": narrow_rows_int32(f"threads={t} unroll={u} waves=16 vector=16")
       for t in (128, 256, 512) for u in (1, 2, 4, 8)},
    **{f"{o}_rows_f32_{d}_mode{m}": rows_f32(208171, d, m, o) for d in (131648, 70000, 35000, 17000)
       for m in (0, 1) for o in ("sorted", "random")},
    **{f"hot_narrow_rows_int32_u{u}": narrow_rows_int32(f"threads=256 unroll={u} waves=16 vector=16", hot_pool=8)
       for u in (1, 2, 4, 8)},
}

if __name__ == "__main__":
    once = "--once" in sys.argv
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(CASES)
    for name in names:
        ours, theirs = CASES[name]()
        if once:
            ours(), theirs()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push(name)
            ours(), theirs()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            continue
        o, t = median_us(ours, reps=30), median_us(theirs, reps=30)
        print(f"{name:34s} jitops {o:9.1f} us  PyTorch {t:9.1f} us  {t / o:5.2f}x", flush=True)
