"""One sweep case (seed, a piece of its name), jitops' call and PyTorch's once each: a target for ncu
(`ncu --metrics ... python3 case_once_probe.py SEED NAME`), which times and counts each kernel alone."""
import sys

import torch

from jitops.bench.layouts import build_torch
from jitops.bench.sweep import _runners
from jitops.bench.sweep_cases import draw_cases

seed, name = int(sys.argv[1]), sys.argv[2]
(case,) = [c for c in draw_cases(seed, 10) if name in c.name][:1]
built = build_torch(torch, case.operands, torch.device("cuda"), seed)
ours, theirs = _runners(torch, case, built, long_indices=True)
for fn in (ours, theirs, ours, theirs):
    fn()
torch.cuda.synchronize()
print(case.name)
