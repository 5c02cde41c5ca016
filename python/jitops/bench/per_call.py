"""Per-call wall time of every op on tiny CUDA tensors, kernels cached,
jitops beside PyTorch: the forward call alone, and forward plus backward with
a gradient needed (the autograd path). Host cost, not GPU time: the loops
queue work far faster than tiny kernels run, so each call's own overhead is
what is measured. The sides alternate over many short rounds and each
reports its median round: the host's speed drifts over seconds, and rounds of
500 forward-plus-backward calls put the same code at 0.95-1.13x PyTorch over
three repeats in one process, rounds of 20 at 0.96-1.04x (NOTES 74)."""

import statistics

from .jit_costs import _loop_us


def _pairs(torch, device):
    import jitops

    F = torch.nn.functional
    x = torch.randn(64, 16, device=device)
    idx = torch.randint(0, 64, (8,), device=device)
    gidx = torch.randint(0, 16, (64, 4), device=device)
    sidx = torch.randint(0, 64, (8, 16), device=device)
    src = torch.randn(8, 16, device=device)
    acc, acc_ref = torch.zeros(64, 16, device=device), torch.zeros(64, 16, device=device)
    img = torch.randn(1, 2, 8, 8, device=device)
    gimg = torch.randn(1, 2, 16, 16, device=device)
    y = torch.randn(64, 16, device=device)
    flat = torch.randint(0, 1024, (8,), device=device)
    forward = {
        "index_select": (lambda: jitops.index_select(x, 0, idx), lambda: torch.index_select(x, 0, idx)),
        "take": (lambda: jitops.take(x, flat), lambda: torch.take(x, flat)),
        "gather": (lambda: jitops.gather(x, 1, gidx), lambda: torch.gather(x, 1, gidx)),
        "index_add_": (lambda: jitops.index_add_(acc, 0, idx, src), lambda: acc_ref.index_add_(0, idx, src)),
        "index_copy_": (lambda: jitops.index_copy_(acc, 0, idx[:1], src[:1]),
                        lambda: acc_ref.index_copy_(0, idx[:1], src[:1])),
        "index_fill_": (lambda: jitops.index_fill_(acc, 0, idx, 1.5), lambda: acc_ref.index_fill_(0, idx, 1.5)),
        "scatter_add_": (lambda: jitops.scatter_add_(acc, 0, sidx, src), lambda: acc_ref.scatter_add_(0, sidx, src)),
        "scatter_reduce_": (lambda: jitops.scatter_reduce_(acc, 0, sidx, src, "amax"),
                            lambda: acc_ref.scatter_reduce_(0, sidx, src, "amax")),
        "histc": (lambda: jitops.histc(x, 10, -2, 2), lambda: torch.histc(x, 10, -2, 2)),
        "upsample_nearest2d": (lambda: jitops.upsample_nearest2d(img, scale_factor=2),
                               lambda: F.interpolate(img, scale_factor=2, mode="nearest")),
        "upsample_nearest2d_backward": (
            lambda: jitops.upsample_nearest2d_backward(gimg, (1, 2, 8, 8), scale_factor=2),
            lambda: torch.ops.aten.upsample_nearest2d_backward(gimg, [16, 16], [1, 2, 8, 8], 2.0, 2.0)),
        "mul": (lambda: jitops.mul(x, y), lambda: torch.mul(x, y)),
        "add number": (lambda: jitops.add(x, 2.0), lambda: torch.add(x, 2.0)),
        "add": (lambda: jitops.add(x, y), lambda: torch.add(x, y)),
        "div": (lambda: jitops.div(x, y), lambda: torch.div(x, y)),
    }
    xg, srcg, yg = x.clone().requires_grad_(), src.clone().requires_grad_(), y.clone().requires_grad_()
    imgg, gimgg = img.clone().requires_grad_(), gimg.clone().requires_grad_()
    g_sel, g_img = torch.ones(8, 16, device=device), torch.ones(1, 2, 16, 16, device=device)
    unique = torch.randperm(64, device=device)[:8]  # index_copy_'s rows, each written once
    ygp = (y.abs() + 0.5).requires_grad_()  # a divisor away from zero
    backward = {
        "index_select": (lambda: jitops.index_select(xg, 0, idx).backward(g_sel),
                         lambda: torch.index_select(xg, 0, idx).backward(g_sel)),
        "gather": (lambda: jitops.gather(xg, 1, gidx).sum().backward(), lambda: torch.gather(xg, 1, gidx).sum().backward()),
        "index_add_": (lambda: jitops.index_add_(acc.clone(), 0, idx, srcg).sum().backward(),
                       lambda: acc_ref.clone().index_add_(0, idx, srcg).sum().backward()),
        "scatter_add_": (lambda: jitops.scatter_add_(acc.clone(), 0, sidx, srcg).sum().backward(),
                         lambda: acc_ref.clone().scatter_add_(0, sidx, srcg).sum().backward()),
        "upsample_nearest2d": (lambda: jitops.upsample_nearest2d(imgg, scale_factor=2).backward(g_img),
                               lambda: F.interpolate(imgg, scale_factor=2, mode="nearest").backward(g_img)),
        "mul": (lambda: jitops.mul(xg, yg).sum().backward(), lambda: torch.mul(xg, yg).sum().backward()),
        "take": (lambda: jitops.take(xg, flat).sum().backward(), lambda: torch.take(xg, flat).sum().backward()),
        "index_copy_": (lambda: jitops.index_copy_(acc.clone(), 0, unique, srcg).sum().backward(),
                        lambda: acc_ref.clone().index_copy_(0, unique, srcg).sum().backward()),
        "index_fill_": (lambda: jitops.index_fill_(xg.clone(), 0, idx, 1.5).sum().backward(),
                        lambda: xg.clone().index_fill_(0, idx, 1.5).sum().backward()),
        "scatter_reduce_": (lambda: jitops.scatter_reduce_(acc.clone(), 0, sidx, srcg, "amax").sum().backward(),
                            lambda: acc_ref.clone().scatter_reduce_(0, sidx, srcg, "amax").sum().backward()),
        "upsample_nearest2d_backward": (
            lambda: jitops.upsample_nearest2d_backward(gimgg, (1, 2, 8, 8), scale_factor=2).sum().backward(),
            lambda: torch.ops.aten.upsample_nearest2d_backward(gimgg, [16, 16], [1, 2, 8, 8], 2.0, 2.0).sum().backward()),
        "add": (lambda: jitops.add(xg, yg).sum().backward(), lambda: torch.add(xg, yg).sum().backward()),
        "div": (lambda: jitops.div(xg, ygp).sum().backward(), lambda: torch.div(xg, ygp).sum().backward()),
    }
    return forward, backward


def _alternate(torch, device, ours, theirs, calls, rounds):
    for fn in (ours, theirs):
        _loop_us(fn, max(30, calls // 10))
    torch.cuda.synchronize(device)
    times = {"jitops_us": [], "torch_us": []}
    for _ in range(rounds):
        for label, fn in (("jitops_us", ours), ("torch_us", theirs)):
            times[label].append(_loop_us(fn, calls))
            torch.cuda.synchronize(device)
    return {label: statistics.median(v) for label, v in times.items()}


def per_call_table(torch, device, calls=100, rounds=100):
    """{"forward": {op: {jitops_us, torch_us}}, "forward_backward": {...}}: `rounds` rounds of `calls` forward
    calls a side; forward plus backward (~20x dearer) in rounds of a fifth of that, 1.25x as many."""
    forward, backward = _pairs(torch, device)
    return {"forward": {n: _alternate(torch, device, o, t, calls, rounds) for n, (o, t) in forward.items()},
            "forward_backward": {n: _alternate(torch, device, o, t, max(1, calls // 5), rounds * 5 // 4)
                                 for n, (o, t) in backward.items()}}


_AXPY = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}"""

_MUL_TEMPLATE = r"""
template <typename T, int Dims, typename Index>
__global__ void mul(jitops::Tensor<T, Dims, Index> z, jitops::Tensor<const T, Dims, Index> x,
                    jitops::Tensor<const T, Dims, Index> y) {
  for (Index i : jitops::grid_stride(z.numel())) z[i] = x[i] * y[i];
}"""


def user_kernel_table(torch, device, calls=2000, rounds=5):
    """Per-call wall time of users' kernels: a RawKernel launch beside CuPy's RawKernel (on CuPy arrays, and
    on PyTorch tensors for jitops), and a Template call beside the built-in op it matches (jitops.mul, mul)."""
    import jitops
    import numpy as np

    x, y, z = (torch.randn(64, 16, device=device) for _ in range(3))
    n = x.numel()
    raw = jitops.RawKernel(_AXPY, "axpy")
    template = jitops.Template(_MUL_TEMPLATE, "mul", grid_stride=True)
    a = np.float32(0.5)
    rows = {}
    try:
        import cupy as cp

        cx, cy = cp.asarray(x), cp.asarray(y)
        cupy_raw = cp.RawKernel(_AXPY, "axpy")
        jit_cupy = _alternate(torch, device, lambda: raw((1,), (1024,), (a, cx, cy, n)),
                              lambda: cupy_raw((1,), (1024,), (a, cx, cy, n)), calls, rounds)
        rows["RawKernel, CuPy arrays (vs cupy.RawKernel)"] = {"jitops_us": jit_cupy["jitops_us"],
                                                              "other_us": jit_cupy["torch_us"]}
        jit_torch = _alternate(torch, device, lambda: raw((1,), (1024,), (a, x, y, n)),
                               lambda: cupy_raw((1,), (1024,), (a, cx, cy, n)), calls, rounds)
        rows["RawKernel, PyTorch tensors (vs cupy.RawKernel)"] = {"jitops_us": jit_torch["jitops_us"],
                                                                  "other_us": jit_torch["torch_us"]}
    except ImportError:
        pass
    t = _alternate(torch, device, lambda: template(z, x, y), lambda: jitops.mul(x, y, out=z), calls, rounds)
    rows["Template mul out= (vs jitops.mul out=)"] = {"jitops_us": t["jitops_us"], "other_us": t["torch_us"]}
    return rows


def markdown_rows(table):
    if not table:
        return []
    lines = ["", "Per-call wall time, tiny CUDA tensors, kernels cached (us a call; PyTorch / jitops in brackets):", "",
             "| op | jitops forward | PyTorch forward | jitops fwd+bwd | PyTorch fwd+bwd |", "|---|---:|---:|---:|---:|"]
    fb = table.get("forward_backward", {})
    for name, row in table["forward"].items():
        b = fb.get(name)
        back = (f"{b['jitops_us']:.1f} | {b['torch_us']:.1f} ({b['torch_us'] / b['jitops_us']:.2f}x)" if b
                else "- | -")
        lines.append(f"| {name} | {row['jitops_us']:.2f} | {row['torch_us']:.2f} "
                     f"({row['torch_us'] / row['jitops_us']:.2f}x) | {back} |")
    return lines
