"""Where a tiny forward-plus-backward call's host time goes, jitops' C++ autograd nodes beside PyTorch's
(issue 19 item 5; take added for NOTES 94, add for 99): torch.profiler's CPU events (the engine's evaluate_function per node, the ops inside
it) over a loop of each side, and the loop's wall time per call, sides alternated."""

import statistics
import sys

import torch
from probe_timing import host_loop_us

import jitops

x = torch.randn(64, 16, device="cuda", requires_grad=True)
y = torch.randn(64, 16, device="cuda", requires_grad=True)
gidx = torch.randint(0, 16, (64, 4), device="cuda")
sidx = torch.randint(0, 64, (8, 16), device="cuda")
src = torch.randn(8, 16, device="cuda", requires_grad=True)
acc = torch.zeros(64, 16, device="cuda")
img = torch.randn(1, 2, 8, 8, device="cuda", requires_grad=True)
g_img = torch.ones(1, 2, 16, 16, device="cuda")
flat = torch.randint(0, 1024, (8,), device="cuda")
g_flat = torch.ones(8, device="cuda")
F = torch.nn.functional
cases = {
    "mul": (lambda: jitops.mul(x, y).sum().backward(), lambda: torch.mul(x, y).sum().backward()),
    "gather": (lambda: jitops.gather(x, 1, gidx).sum().backward(), lambda: torch.gather(x, 1, gidx).sum().backward()),
    "scatter_add_": (lambda: jitops.scatter_add_(acc.clone(), 0, sidx, src).sum().backward(),
                     lambda: acc.clone().scatter_add_(0, sidx, src).sum().backward()),
    "index_add_": (lambda: jitops.index_add_(acc.clone(), 0, sidx[:, 0], src).sum().backward(),
                   lambda: acc.clone().index_add_(0, sidx[:, 0], src).sum().backward()),
    "upsample": (lambda: jitops.upsample_nearest2d(img, scale_factor=2).backward(g_img),
                 lambda: F.interpolate(img, scale_factor=2, mode="nearest").backward(g_img)),
    "take": (lambda: jitops.take(x, flat).sum().backward(), lambda: torch.take(x, flat).sum().backward()),
    "take g": (lambda: jitops.take(x, flat).backward(g_flat), lambda: torch.take(x, flat).backward(g_flat)),
    "take forward": (lambda: jitops.take(x.detach(), flat), lambda: torch.take(x.detach(), flat)),
    "mul forward": (lambda: jitops.mul(x.detach(), y.detach()), lambda: torch.mul(x.detach(), y.detach())),
    "mul grad only": (lambda: torch.autograd.grad(jitops.mul(x, y).sum(), [x, y]),
                      lambda: torch.autograd.grad(torch.mul(x, y).sum(), [x, y])),
    "add": (lambda: jitops.add(x, y).sum().backward(), lambda: torch.add(x, y).sum().backward()),
    "add forward (grad)": (lambda: jitops.add(x, y), lambda: torch.add(x, y)),
    "add forward+sum (grad)": (lambda: jitops.add(x, y).sum(), lambda: torch.add(x, y).sum()),
    "add grad only": (lambda: torch.autograd.grad(jitops.add(x, y).sum(), [x, y]),
                      lambda: torch.autograd.grad(torch.add(x, y).sum(), [x, y])),
}
which = sys.argv[1:] or list(cases)
for name in which:
    ours, theirs = cases[name]
    for fn in (ours, theirs):
        host_loop_us(fn, 200)
    o, t = [], []
    for _ in range(7):
        o.append(host_loop_us(ours, 400))
        t.append(host_loop_us(theirs, 400))
    print(f"{name}: jitops {statistics.median(o):.2f} us, PyTorch {statistics.median(t):.2f} us a call", flush=True)
    for label, fn in (("jitops", ours), ("PyTorch", theirs)):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(200):
                fn()
            torch.cuda.synchronize()
        print(f"--- {name}, {label}: CPU events over 200 calls (us totals)")
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=18, max_name_column_width=60))
