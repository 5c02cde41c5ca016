"""Where the small-index regime stops paying: index_add_ into wide rows with
n indices, timed with the regime forced each way (float32 and float16)."""

import torch

import jitops
from jitops import _core
from jitops.bench.timing import Timer

timer = Timer(torch, torch.device("cuda", 0))
for dtype in (torch.float32, torch.float16):
    for width in (1 << 20, 1 << 16):
        for n in (1, 2, 4, 8, 16, 32, 64, 128):
            self_t = torch.randn(256, width, device="cuda", dtype=dtype)
            src = torch.randn(n, width, device="cuda", dtype=dtype)
            idx = torch.randint(0, 256, (n,), device="cuda")
            times = {}
            for label, threshold in (("small", 1 << 30), ("large", 0)):
                _core._set_small_index_threshold(threshold)
                regime = jitops.explain(jitops.index_add_, self_t, 0, idx, src)[0]["regime"]
                times[label] = (timer.median_us(lambda: jitops.index_add_(self_t, 0, idx, src), reps=50), regime)
            torch_us = timer.median_us(lambda: self_t.index_add_(0, idx, src), reps=50)
            print(f"{str(dtype)[6:]:8s} width {width:8d} n {n:4d}  small-forced {times['small'][0]:7.1f} "
                  f"({times['small'][1]})  large {times['large'][0]:7.1f}  torch {torch_us:7.1f}", flush=True)
_core._set_small_index_threshold(16)
