"""upsample_nearest2d_backward's tile kernel (NOTES item 44): is it at copy
speed where the row kernels were not, and never slower than them? Each case
timed as the bench times (L2 flushed, CUDA events, median of 50): jitops as
planned (the tile kernel where it applies), jitops with the tile kernel off
(the row kernels), PyTorch's aten kernel, and a device copy of the same
bytes (grad_output read once + grad_input written once); results checked bit
for bit against PyTorch. Then jitops.tune's table of launch configurations
for the two sweep cases (threads x loads in flight x waves).
Usage: python3 benchmarks/probes/upsample_backward_probe.py [--no-tune]"""
import sys

import torch

import jitops
from jitops.bench.timing import Timer

CASES = [  # (dtype, grad_output shape, input size, scale_factor or None for size=, channels-last)
    ("float32", (1, 256, 441, 417), (1, 256, 147, 139), 3.0, False),   # sweep seed 2: 113.6 vs 95.1 us
    ("float32", (4, 32, 231, 307), (4, 32, 194, 283), None, False),    # sweep seed 2: 55.6 vs 47.7 us
    ("bfloat16", (16, 16, 384, 192), (16, 16, 128, 64), 3.0, False),   # sweep seed 1
    ("float16", (2, 1, 309, 765), (2, 1, 103, 255), 3.0, False),       # sweep seed 1
    ("bfloat16", (8, 1, 327, 403), (8, 1, 218, 269), 1.5, False),      # sweep seed 2
    ("float16", (1, 128, 99, 31), (1, 128, 66, 21), 1.5, False),       # sweep seed 2
    ("float32", (8, 3, 960, 960), (8, 3, 320, 320), 3.0, True),        # channels-last, 12-byte pixels
    ("float64", (4, 32, 300, 300), (4, 32, 100, 100), 3.0, False),
    ("float16", (16, 16, 48, 48), (16, 16, 32, 32), 1.5, True),        # 32-byte pixels: row kernels (control)
    ("float32", (16, 32, 160, 160), (16, 32, 80, 80), 2.0, False),     # exact 2x: packed pairs (control)
]


def same_bits(a, b):
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def grad_of(dtype, shape, channels_last):
    g = torch.randn(shape, device="cuda").to(getattr(torch, dtype))
    return g.contiguous(memory_format=torch.channels_last) if channels_last else g


def main():
    timer = Timer(torch, "cuda")
    copy_bw = timer.copy_bandwidth()
    print(f"{torch.cuda.get_device_name(0)}, copy {copy_bw / 1e12:.2f} TB/s")
    print("| case | regime | tiles us | rows us | PyTorch us | copy us | tiles % of copy | tiles / PyTorch |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for dtype, shape, in_size, factor, cl in CASES:
        grad = grad_of(dtype, shape, cl)
        nbytes = grad.numel() * grad.element_size() + torch.Size(in_size).numel() * grad.element_size()

        def ours():
            return jitops.upsample_nearest2d_backward(grad, in_size, scale_factor=factor)

        def theirs():
            return torch.ops.aten.upsample_nearest2d_backward(grad, list(shape[2:]), list(in_size), factor, factor)

        (report,) = jitops.explain(jitops.upsample_nearest2d_backward, grad, in_size, scale_factor=factor)
        expected = theirs()
        assert same_bits(ours(), expected), "tile kernel differs from PyTorch"
        tiles = timer.median_us(ours, reps=50)
        jitops._core._set_upsample_tiles(False)
        try:
            assert same_bits(ours(), expected), "row kernels differ from PyTorch"
            rows = timer.median_us(ours, reps=50)
        finally:
            jitops._core._set_upsample_tiles(True)
        pt = timer.median_us(theirs, reps=50)
        copy = nbytes / copy_bw * 1e6
        name = f"{dtype} {shape}{' cl' if cl else ''} {'x' + str(factor) if factor else 'size=' + str(shape[2:])}"
        print(f"| {name} | {report['regime'][:24]} | {tiles:.1f} | {rows:.1f} | {pt:.1f} | {copy:.1f} | "
              f"{100 * copy / tiles:.0f}% | {pt / tiles:.2f}x |")
    if "--no-tune" in sys.argv:
        return
    for dtype, shape, in_size, factor, cl in CASES[:2]:
        grad = grad_of(dtype, shape, cl)
        result = jitops.tune(jitops.upsample_nearest2d_backward, grad, in_size, scale_factor=factor, reps=30)
        print(f"\ntune {dtype} {shape}: chosen {result.chosen} {result.best_us} us (heuristic {result.default_us} us)")
        for row in list(result)[:8]:
            print(f"  {row['config']}: {row['median_us']} {row['error'] or ''}")


if __name__ == "__main__":
    main()
