"""Sweep seed 18's histc failure (float32, 109M values, 17 bins, auto range): jitops' counts beside
PyTorch's float32 counts (which stop at 2^24), its float64 counts, and exact counts of float32 binning."""
import torch

import jitops


def main():
    g = torch.Generator(device="cuda").manual_seed(18)
    for n, bins in ((109247543, 17), (70740615, 4), (40000000, 3)):
        x = torch.randn(n, device="cuda", generator=g)
        ours, theirs = jitops.histc(x, bins, 0, 0), torch.histc(x, bins, 0, 0)
        exact64 = torch.histc(x.double(), bins, 0, 0)
        mn, mx = x.min(), x.max()
        b = ((x - mn) * bins / (mx - mn)).long().clamp_(max=bins - 1)  # PyTorch's getBin order, in float32
        exact32 = torch.bincount(b, minlength=bins).double()
        print(f"n={n} bins={bins} min={mn.item()!r} max={mx.item()!r}")
        for i in range(bins):
            print(f"  bin {i:2d}: jitops {ours[i].item():12.0f} torch {theirs[i].item():12.0f} "
                  f"float64 {exact64[i].item():12.0f} float32-binned {exact32[i].item():12.0f} "
                  f"jitops-f32exact {ours[i].item() - exact32[i].item():+6.0f} f64-f32exact {exact64[i].item() - exact32[i].item():+6.0f}")


if __name__ == "__main__":
    main()
