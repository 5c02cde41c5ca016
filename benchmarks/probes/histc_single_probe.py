"""Small dense histc with an explicit range (NOTES 87): one block straight to the output, against one sm_90
cluster of 8 blocks and the count kernel, by size and bins, beside PyTorch: where each beats the others
(runtime/ops/histogram_ops.cpp's single-block and values-a-bin limits)."""

import torch
from probe_timing import median_us

import jitops
from jitops import _core

g = torch.Generator(device="cuda").manual_seed(0)
ARMS = {  # (single-block values, cluster limits (dense bytes, strided values, values a bin))
    "planned": (12288, (1 << 20, 131072, 256)),  # the defaults
    "single": (1 << 40, (1 << 20, 131072, 0)),
    "cluster": (0, (1 << 40, 1 << 40, 1 << 40)),
    "count": (0, (0, 0, 256)),
}
cases = []
for n in (2048, 8192, 12288, 16384, 32768):
    cases.append((f"float32({n})", torch.randn(n, device="cuda", generator=g)))
for n in (8192, 16384):
    cases.append((f"float16({n})", torch.randn(n, device="cuda", generator=g).half()))
    cases.append((f"int32({n})", torch.randint(-5, 5, (n,), device="cuda", generator=g, dtype=torch.int32)))
    cases.append((f"uint8({n})", torch.randint(0, 255, (n,), device="cuda", generator=g, dtype=torch.uint8)))
for name, x in cases:
    for bins in (10, 118, 1000):
        row = [f"{name:16s} bins{bins:5d}"]
        floats = x.dtype in (torch.float32, torch.float64)  # PyTorch's CUDA histc takes no float16
        expected = torch.histc(x, bins, -3, 3) if floats else None
        for label, (single, cluster) in ARMS.items():
            _core._set_histc_single_block_values(single)
            _core._set_histc_cluster_limits(*cluster)
            regime = jitops.explain(jitops.histc, x, bins, -3, 3)[-1]["regime"]
            assert not floats or torch.equal(jitops.histc(x, bins, -3, 3), expected), (name, bins, label)
            row.append(f"{label} {median_us(lambda: jitops.histc(x, bins, -3, 3), reps=40):6.1f} ({regime[7:19]})")
        _core._set_histc_single_block_values(12288)
        _core._set_histc_cluster_limits(1 << 20, 131072, 256)
        try:
            row.append(f"PyTorch {median_us(lambda: torch.histc(x, bins, -3, 3), reps=40):6.1f} us")
        except RuntimeError:  # PyTorch's CUDA histc takes neither float16 nor integers
            row.append("PyTorch -")
        print("  ".join(row), flush=True)
