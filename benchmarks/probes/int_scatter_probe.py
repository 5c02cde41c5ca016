"""scatter_add_ of expanded rows, int32 against float32 (sweep seed 15's worst case, 0.58x): is the int
path slower than the float one, or PyTorch's int path faster? jitops and PyTorch, bench timing."""

import torch
from probe_timing import median_us

import jitops


def main():
    g = torch.Generator(device="cuda").manual_seed(15)
    idx = torch.randint(0, 34067, (146337, 1), device="cuda", generator=g).expand(146337, 64)
    for dtype in (torch.int32, torch.float32, torch.int64):
        src = torch.randint(-9, 9, (146337, 64), device="cuda", generator=g).to(dtype)
        self_t = torch.zeros(34067, 64, device="cuda", dtype=dtype)
        ours = median_us(lambda: jitops.scatter_add_(self_t, 0, idx, src))
        theirs = median_us(lambda: self_t.scatter_add_(0, idx, src))
        print(f"{dtype}: jitops {ours:.1f} us, PyTorch {theirs:.1f} us, {theirs / ours:.2f}x")


if __name__ == "__main__":
    main()
