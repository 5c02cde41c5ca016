"""Private copies (templates/row_private.cuh) on the bench's heavy-duplicate
shapes (2^20 rows of 128 into 64 rows: hot rows, every index equal), for
several shapes of the kernel (shared memory for copies per SM, rows a warp
loads at a time), timed as the bench times them; the atomic kernels beside.
Usage: python benchmarks/row_private_probe.py [budget:in_flight:warps ...]
(none: the planner's defaults)."""
import sys

import torch

import jitops
from jitops import _core
from probe_timing import median_us

rows, dests, width = 1 << 20, 64, 128
shapes = [tuple(int(x) for x in a.split(":")) for a in sys.argv[1:]] or ["defaults"]
for dtype in (torch.float32, torch.float16):
    src = torch.randn(rows, width, device="cuda", dtype=dtype) / 64
    for name, idx in (("hot rows", torch.randint(0, dests, (rows,), device="cuda")),
                      ("every index equal", torch.full((rows,), 32, device="cuda"))):
        base = torch.randn(dests, width, device="cuda", dtype=dtype)
        want = base.clone().index_add_(0, idx, src).double()
        results = []
        for mode, shape in [(0, None)] + [(3, s) for s in shapes]:
            _core._set_row_sum_mode(mode)
            if shape and shape != "defaults":
                _core._set_row_private_shape(*shape)
            got = jitops.index_add_(base.clone(), 0, idx, src).double()
            err = (got - want).abs().max().item()
            self_t = base.clone()
            us = median_us(lambda: jitops.index_add_(self_t, 0, idx, src))
            results.append(f"{'atomics' if mode == 0 else shape}: {us:.1f} us (err {err:.1e})")
        print(dtype, name, " | ".join(results), flush=True)
_core._set_row_sum_mode(1)
