"""Where the host time of a forward-plus-backward call goes (issue 19 item 5) and whether the decoder
upsample training step is host-bound: per-stage timings beside PyTorch and a plain Python
autograd.Function over PyTorch ops (the floor any Python backward node pays), cProfile of the jitops
calls, and the decoder step's wall time against its GPU kernels' time (torch.profiler)."""

import cProfile
import pstats
import sys
import time

import torch
from probe_timing import host_loop_us

import jitops
from jitops._torch import gradients


loop_us = host_loop_us


def best_of(fn, n=300, rounds=5):
    loop_us(fn, 30)
    return min(loop_us(fn, n) for _ in range(rounds))


class TorchOpsFunction(torch.autograd.Function):
    """index_select as a Python autograd.Function over PyTorch's own ops: the Python-node floor."""

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.dim, ctx.shape = dim, x.shape
        ctx.save_for_backward(index)
        return torch.index_select(x, dim, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return grad.new_zeros(ctx.shape).index_add_(ctx.dim, index, grad), None, None


def python_path(fn):
    """`fn` with the C++ autograd nodes switched off (the Python path of jitops/_torch/gradients.py)."""

    def run():
        previous = jitops._core._set_cpp_autograd(False)
        try:
            fn()
        finally:
            jitops._core._set_cpp_autograd(previous)

    return run


def stages():
    dev = "cuda"
    x = torch.randn(64, 16, device=dev, requires_grad=True)
    xd = x.detach()
    idx = torch.randint(0, 64, (8,), device=dev)
    g = torch.ones(8, 16, device=dev)
    img = torch.randn(1, 2, 8, 8, device=dev, requires_grad=True)
    gimg = torch.ones(1, 2, 16, 16, device=dev)
    zeros = torch.zeros(64, 16, device=dev)
    rows = {
        "jitops index_select no grad": lambda: jitops.index_select(xd, 0, idx),
        "torch index_select no grad": lambda: torch.index_select(xd, 0, idx),
        "jitops index_select fwd (grad)": lambda: jitops.index_select(x, 0, idx),
        "Eager.apply index_select fwd": lambda: gradients.Eager.apply("index_select", x, 0, idx),
        "torch index_select fwd (grad)": lambda: torch.index_select(x, 0, idx),
        "TorchOpsFunction fwd": lambda: TorchOpsFunction.apply(x, 0, idx),
        "jitops index_select fwd+bwd": lambda: jitops.index_select(x, 0, idx).backward(g),
        "Eager.apply index_select fwd+bwd": lambda: gradients.Eager.apply("index_select", x, 0, idx).backward(g),
        "TorchOpsFunction fwd+bwd": lambda: TorchOpsFunction.apply(x, 0, idx).backward(g),
        "torch index_select fwd+bwd": lambda: torch.index_select(x, 0, idx).backward(g),
        "torch.autograd.backward of x*1 (engine floor)": lambda: (x * 1.0).backward(torch.ones_like(xd)),
        "jitops index_add_ on zeros (backward body)": lambda: jitops.index_add_(zeros, 0, idx, g),
        "new_zeros": lambda: g.new_zeros((64, 16)),
        "jitops upsample fwd+bwd": lambda: jitops.upsample_nearest2d(img, scale_factor=2).backward(gimg),
        "torch upsample fwd+bwd": lambda: torch.nn.functional.interpolate(img, scale_factor=2,
                                                                          mode="nearest").backward(gimg),
    }
    for name in [n for n in rows if n.startswith("jitops")]:
        rows[name + " [python path]"] = python_path(rows[name])
    for name, fn in rows.items():
        print(f"{name:48s} {best_of(fn):8.1f} us")
    for name, fn in (("index_select fwd+bwd", rows["jitops index_select fwd+bwd"]),
                     ("upsample fwd+bwd", rows["jitops upsample fwd+bwd"])):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(300):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        print(f"--- {name}: costliest functions by own time (300 calls)")
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(25)


def decoder_steps():
    """The bench's decoder training step (upsample x2 of float16 (16, 64, 128, 128) and back), jitops and PyTorch."""
    dev = "cuda"
    x = torch.randn(16, 64, 128, 128, device=dev).to(torch.float16).requires_grad_()
    up = torch.randn(16, 64, 256, 256, device=dev).to(torch.float16)

    def ours():
        x.grad = None
        jitops.upsample_nearest2d(x, scale_factor=2).backward(up)

    def theirs():
        x.grad = None
        torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest").backward(up)

    return x, ours, theirs


def decoder():
    x, ours, theirs = decoder_steps()
    for name, fn in (("jitops", ours), ("jitops [python path]", python_path(ours)), ("torch", theirs)):
        wall = best_of(fn, n=100)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
        print(f"=== decoder step {name}: {wall:.1f} us a step (back-to-back, wall)")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12))


class _Ctx:
    """Enough of an autograd ctx for calling a backward formula outside the engine."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def with_kernels_only():
    from jitops._torch import library

    with library.kernels_only():
        pass


def layers():
    """Wall time of each layer of the autograd path, one at a time."""
    from jitops._torch import dispatch, library

    dev = "cuda"
    x = torch.randn(64, 16, device=dev, requires_grad=True)
    idx = torch.randint(0, 64, (8,), device=dev)
    g = torch.ones(8, 16, device=dev)
    zeros = torch.zeros(64, 16, device=dev)
    base_apply = torch._C._FunctionBase.__dict__["apply"].__get__(None, gradients.Eager)
    ctx = _Ctx(saved_tensors=(idx,), dim=0, shape=x.shape, needs_input_grad=(True, False, False))
    rows = {
        "jitops.index_select fwd (grad)": lambda: jitops.index_select(x, 0, idx),
        "dispatch.call": lambda: dispatch.call("index_select", x, 0, idx),
        "gradients.functional": lambda: gradients.functional("index_select", x, 0, idx),
        "Eager.apply": lambda: gradients.Eager.apply("index_select", x, 0, idx),
        "_FunctionBase.apply bound to Eager": lambda: base_apply("index_select", x, 0, idx),
        "library body IMPLS[index_select] (kernels_only)": lambda: library.IMPLS["index_select"](x.detach(), 0, idx),
        "x.detach()": lambda: x.detach(),
        "_index_select_backward under no_grad": lambda: gradients._index_select_backward(ctx, g),
        "torch.zeros((64,16))": lambda: torch.zeros((64, 16), device=dev),
        "torch.empty((64,16))": lambda: torch.empty((64, 16), device=dev),
        "empty + zero_": lambda: torch.empty((64, 16), device=dev).zero_(),
        "_core.index_add_ on zeros": lambda: jitops._core.index_add_(zeros, 0, idx, g),
        "kernels_only enter+exit": with_kernels_only,
        "torch.compiler.is_compiling()": torch.compiler.is_compiling,
        "torch.is_grad_enabled()": torch.is_grad_enabled,
        "deterministic_default()": library.deterministic_default,
        "functorch transforms active?": torch._C._are_functorch_transforms_active,
    }
    no_grad_rows = {"_index_select_backward under no_grad", "torch.zeros((64,16))", "empty + zero_",
                    "_core.index_add_ on zeros"}
    for name, fn in rows.items():
        if name in no_grad_rows:
            with torch.no_grad():
                t = best_of(fn)
        else:
            t = best_of(fn)
        print(f"{name:48s} {t:8.2f} us")


def decoder_timer():
    """The decoder step under the bench's own timer (L2 flushed before each run, CUDA events) and variants."""
    from jitops.bench.timing import Timer

    timer = Timer(torch, torch.device("cuda"))
    x, ours, theirs = decoder_steps()

    def ours_fwd():
        return jitops.upsample_nearest2d(x.detach(), scale_factor=2)

    for name, fn in (("jitops step", ours), ("jitops step [python path]", python_path(ours)), ("torch step", theirs),
                     ("jitops fwd no grad", ours_fwd),
                     ("jitops step again", ours), ("torch step again", theirs)):
        print(f"bench timer {name:24s} {timer.median_us(fn, reps=100):8.1f} us")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        timer.median_us(ours, reps=5, warmup=0)
    events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                     or e.name in ("cuLaunchKernel", "cudaLaunchKernel", "cudaMemsetAsync", "cudaEventRecord",
                                   "cudaStreamSynchronize", "cudaDeviceSynchronize", "cuStreamSynchronize",
                                   "cuCtxSynchronize", "cudaStreamWaitEvent", "cuMemAlloc_v2", "cudaMalloc",
                                   "cudaFree", "cuMemFree_v2")),
                    key=lambda e: e.time_range.start)
    t0 = events[0].time_range.start if events else 0
    print("--- timeline under the bench timer, 5 reps (us from the first event; device, name, duration)")
    for e in events[:120]:
        print(f"{e.time_range.start - t0:10.1f} {str(e.device_type).split('.')[-1]:5s} {e.name[:60]:60s} "
              f"{e.time_range.elapsed_us():8.1f}")


if __name__ == "__main__":
    import sys as _sys

    parts = _sys.argv[1:] or ["stages", "decoder", "layers", "decoder_timer"]
    for part in parts:
        globals()[part]()
