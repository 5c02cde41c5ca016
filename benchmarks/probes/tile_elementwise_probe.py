"""NOTES item 49's case: float64 minimum of x (128,16,65536) and y, the same shape with strides
(16, 1, 2048) (a permuted array), jitops' tile regime beside PyTorch and a copy of the same bytes,
in both output layouts; the regime explain() reports."""

import torch

import jitops
from probe_timing import median_us


def main():
    x = torch.randn(128, 16, 65536, device="cuda", dtype=torch.float64)
    y = torch.randn(65536, 128, 16, device="cuda", dtype=torch.float64).permute(1, 2, 0)  # strides (16, 1, 2048)
    out_y = torch.empty_like(y)  # the output in y's layout
    copy_src = torch.empty(3 * x.numel() // 2, device="cuda", dtype=torch.float64)
    copy_dst = torch.empty_like(copy_src)
    print("regime:", jitops.explain(jitops.minimum, x, y)[0]["regime"], "strides", tuple(y.stride()))
    rows = {
        "jitops (output like x)": lambda: jitops.minimum(x, y),
        "PyTorch": lambda: torch.minimum(x, y),
        "jitops out= like y": lambda: jitops.minimum(x, y, out=out_y),
        "copy of the same bytes": lambda: copy_dst.copy_(copy_src),
    }
    assert torch.equal(jitops.minimum(x, y), torch.minimum(x, y))
    for name, fn in rows.items():
        print(f"{name}: {median_us(fn, reps=30):.1f} us")


if __name__ == "__main__":
    main()
