"""The kernel cases of BENCHMARKS.md that jitops implements, each run with
int64 and int32 indices. A case builds its inputs once and returns the jitops
call, the PyTorch call and the minimum bytes the op must move."""

from dataclasses import dataclass
from typing import Callable

M = 1 << 20


@dataclass
class Case:
    name: str
    build: Callable  # (torch, device, index_dtype) -> (jitops_fn, torch_fn, min_bytes)


def _index_select(dtype, shape, dim, n_index):
    def build(torch, device, index_dtype):
        import jitops

        x = torch.randn(shape, device=device).to(getattr(torch, dtype))
        idx = torch.randint(0, shape[dim], (n_index,), device=device, dtype=index_dtype)
        out_shape = list(shape)
        out_shape[dim] = n_index
        out_numel = 1
        for s in out_shape:
            out_numel *= s
        min_bytes = 2 * out_numel * x.element_size() + n_index * idx.element_size()
        return (lambda: jitops.index_select(x, dim, idx)), (lambda: torch.index_select(x, dim, idx)), min_bytes

    dims = "x".join(str(s) for s in shape)
    return Case(f"index_select {dtype} ({dims}) dim{dim} idx{n_index}", build)


def _gather(dtype, x_shape, idx_shape, dim):
    def build(torch, device, index_dtype):
        import jitops

        x = torch.randn(x_shape, device=device).to(getattr(torch, dtype))
        idx = torch.randint(0, x_shape[dim], idx_shape, device=device, dtype=index_dtype)
        numel = idx.numel()
        min_bytes = 2 * numel * x.element_size() + numel * idx.element_size()
        return (lambda: jitops.gather(x, dim, idx)), (lambda: torch.gather(x, dim, idx)), min_bytes

    xs = ",".join(str(s) for s in x_shape)
    ids = ",".join(str(s) for s in idx_shape)
    return Case(f"gather {dtype} x({xs}) idx({ids}) dim{dim}", build)


CASES = [
    _index_select("float32", (50000, 1024), 0, 8192),
    _index_select("float32", (1024, 32768), 1, 4096),
    _index_select("float32", (32 * M,), 0, 4 * M),
    _index_select("float32", (64, 128, 256), 1, 64),
    _index_select("float16", (50000, 1024), 0, 8192),
    _gather("float32", (5100, 38506), (5100, 1), 1),
    _gather("float32", (100, 128), (100, 64), 1),
    _gather("float32", (5100, 128), (5100, 96), 1),
]
