"""index_fill_ along the inner dim with many index values: jitops' scattered stores (a lane an index value)
against a dense pass over self with a column mask (predicated stores, a warp a row's run of columns), built
here with RawKernel, beside PyTorch's index_fill_ and masked_fill_ (a read and a write of every element).
Usage: python3 dense_fill_probe.py"""
import numpy as np
import torch

import jitops
from probe_timing import median_us

CODE = r"""
template <typename T>
__device__ void fill(T* self, const unsigned char* mask, long long rows, int cols, T value) {
  const long long n = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    if (mask[i % cols]) self[i] = value;
}
extern "C" __global__ void fill_f64(double* s, const unsigned char* m, long long r, int c, double v) { fill(s, m, r, c, v); }
extern "C" __global__ void fill_f32(float* s, const unsigned char* m, long long r, int c, float v) { fill(s, m, r, c, v); }
extern "C" __global__ void fill_c64(float2* s, const unsigned char* m, long long r, int c, float v) {
  fill(s, m, r, c, make_float2(v, 0.f)); }
"""

# (dtype, rows, cols, index count, kind): sweep seeds 915, 913, 914 (complex64 (71429x8x8x27) as rows of 27)
CASES = [("float64", 24922, 1024, 305, "random"), ("int32", 99139, 128, 12, "random"),
         ("complex64", 71429 * 64, 27, 11, "repeated"), ("float32", 8192, 4096, 1024, "random"),
         ("float32", 8192, 4096, 64, "random"), ("float64", 100000, 256, 128, "sorted")]


def main():
    module = jitops.RawModule(CODE)
    kernels = {"float64": module.get_function("fill_f64"), "int32": module.get_function("fill_f32"),
               "float32": module.get_function("fill_f32"), "complex64": module.get_function("fill_c64")}
    rng = np.random.default_rng(5)
    for dtype, rows, cols, count, kind in CASES:
        tdtype = getattr(torch, dtype)
        self = torch.zeros(rows, cols, dtype=tdtype, device="cuda")
        if kind == "repeated":
            values = rng.choice(rng.integers(0, cols, 8), count)
        else:
            values = rng.integers(0, cols, count)
            if kind == "sorted":
                values.sort()
        idx = torch.from_numpy(values).cuda()
        mask = torch.zeros(cols, dtype=torch.uint8, device="cuda")
        view = self.view(torch.float32) if dtype == "int32" else self  # the int32 case moves as 4-byte floats

        def dense():
            mask.zero_()
            mask[idx] = 1
            kernels[dtype]((132 * 16,), (256,), (view, mask, np.int64(rows), np.int32(cols), value))

        fill = 1.5 if tdtype.is_floating_point or tdtype.is_complex else 3
        value = {"float64": np.float64(1.5), "int32": np.array(3, np.int32).view(np.float32)[()]}.get(dtype, np.float32(1.5))
        ours = median_us(lambda: jitops.index_fill_(self, 1, idx, fill), reps=30)
        theirs = median_us(lambda: self.index_fill_(1, idx, fill), reps=30)
        dense_us = median_us(dense, reps=30)
        row_mask = torch.zeros(cols, dtype=torch.bool, device="cuda")
        row_mask[idx] = True
        masked = median_us(lambda: self.masked_fill_(row_mask, fill), reps=30)
        expected = torch.zeros_like(self).index_fill_(1, idx, fill)
        self.zero_()
        dense()
        same = torch.equal(view, expected.view(torch.float32) if dtype == "int32" else expected)
        touched = 1 - (1 - len(set(values.tolist())) / cols) ** max(1, 32 // self.element_size())
        print(f"{dtype:9s} ({rows}x{cols}) {count:5d} {kind:8s} sectors touched {touched:4.0%}: jitops {ours:8.1f} us "
              f"PyTorch {theirs:8.1f}  dense mask {dense_us:8.1f} ({'same' if same else 'DIFFERS'})  "
              f"masked_fill_ {masked:8.1f}", flush=True)


if __name__ == "__main__":
    main()
