"""Read rates on the GPU at hand (issue 4: histc's auto range reads its input
twice and must fit in one copy's time): PyTorch's own reductions over 2^26
float32, jitops' histc passes with each tuning candidate, and a copy."""
import torch

import jitops
from jitops.bench.timing import Timer

x = torch.randn(1 << 26, device="cuda")
t = Timer(torch, torch.device("cuda"))
mb = x.numel() * 4 / 1e6
rows = {
    "copy (read + write)": t.copy_us(x.numel() * 4),
    "torch.amax": t.median_us(lambda: torch.amax(x)),
    "torch.aminmax": t.median_us(lambda: torch.aminmax(x)),
    "torch.sum": t.median_us(lambda: torch.sum(x)),
    "jitops.histc auto": t.median_us(lambda: jitops.histc(x, 100)),
    "jitops.histc range": t.median_us(lambda: jitops.histc(x, 100, min=-3, max=3)),
}
for name, us in rows.items():
    print(f"{name:24s} {us:8.1f} us  {mb / us:6.2f} TB/s of input read")
for kwargs in ({}, dict(min=-3, max=3)):
    r = jitops.tune(jitops.histc, x, 100, reps=20, **kwargs)
    print(kwargs or "auto", r)
