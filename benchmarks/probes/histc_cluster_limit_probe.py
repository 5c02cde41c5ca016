"""Where histc's one-cluster path (8 blocks on 8 SMs, no scratch) stops beating the multi-block path, dense
and strided, beside PyTorch: the limits of runtime/ops/histogram_ops.cpp (NOTES 65)."""

import torch
from probe_timing import median_us

import jitops
from jitops import _core

g = torch.Generator(device="cuda").manual_seed(0)
DEFAULT = (1 << 20, 131072)
ON = (1 << 40, 1 << 40)
OFF = (0, 0)
cases = []
for mib in (0.5, 1, 2, 3, 4, 8):
    n = int(mib * (1 << 20)) // 4
    cases.append((f"float32({n}) dense", torch.rand(n, device="cuda", generator=g)))
for n in (32768, 65536, 131072, 262144, 514607):
    cases.append((f"float64({n}) sliced", torch.rand(2 * n, device="cuda", generator=g, dtype=torch.float64)[::2]))
for name, x in cases:
    for bins in (95, 1000):
        row = [f"{name:26s} bins{bins:5d}"]
        for label, limits in (("cluster", ON), ("blocks", OFF)):
            _core._set_histc_cluster_limits(*limits)
            row.append(f"{label} {median_us(lambda: jitops.histc(x, bins, 0, 1), reps=30):7.1f}")
        _core._set_histc_cluster_limits(*DEFAULT)
        row.append(f"PyTorch {median_us(lambda: torch.histc(x, bins, 0, 1), reps=30):7.1f} us")
        print("  ".join(row), flush=True)
