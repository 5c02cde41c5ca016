"""Gathers along a contiguous inner axis (out[r][c] = x[r][index[c]]) with many picks a row: what the
L2 costs the 2-D walk, whose warp reads 32 random sectors of a row for 32 picks, against a block that
makes all of a row's picks while the row sits in its SM (L1), or in shared memory (NOTES 99). Raw
kernels on the sweep's shapes, random and sorted picks, beside jitops' and torch's index_select; median of
CUDA-event runs, L2 flushed."""
import sys

import numpy as np
import torch
from probe_timing import median_us

import jitops

SRC = r"""
typedef __UNIT__ U;
// the 2-D walk: a thread one column, Unroll rows sharing its index load
extern "C" __global__ void walk2d(const U* x, const long long* idx, U* out, long long rows, long long a, long long c) {
  long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= c) return;
  const long long v = idx[col];
  for (long long r0 = (long long)blockIdx.y * 4; r0 < rows; r0 += (long long)gridDim.y * 4) {
    U vals[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) if (r0 + k < rows) vals[k] = __ldg(x + (r0 + k) * a + v);
#pragma unroll
    for (int k = 0; k < 4; ++k) if (r0 + k < rows) out[(r0 + k) * c + col] = vals[k];
  }
}
// a block a row group: RB rows, every column, the rows read through L1
extern "C" __global__ void rowlocal(const U* x, const long long* idx, U* out, long long rows, long long a, long long c,
                                    int rb) {
  for (long long r0 = (long long)blockIdx.x * rb; r0 < rows; r0 += (long long)gridDim.x * rb) {
    for (long long col = threadIdx.x; col < c; col += blockDim.x) {
      const long long v = __ldg(idx + col);
      for (int k = 0; k < rb; ++k) if (r0 + k < rows) out[(r0 + k) * c + col] = __ldg(x + (r0 + k) * a + v);
    }
  }
}
// the same with the rows staged in shared memory
extern "C" __global__ void staged(const U* x, const long long* idx, U* out, long long rows, long long a, long long c,
                                  int rb) {
  extern __shared__ __align__(16) unsigned char smem[];
  U* s = reinterpret_cast<U*>(smem);
  for (long long r0 = (long long)blockIdx.x * rb; r0 < rows; r0 += (long long)gridDim.x * rb) {
    const int n = (int)min((long long)rb, rows - r0);
    __syncthreads();
    for (long long i = threadIdx.x; i < n * a; i += blockDim.x) s[i] = x[r0 * a + i];
    __syncthreads();
    for (long long col = threadIdx.x; col < c; col += blockDim.x) {
      const long long v = __ldg(idx + col);
      for (int k = 0; k < n; ++k) out[(r0 + k) * c + col] = s[k * a + v];
    }
  }
}
"""

UNITS = {1: ("unsigned char", torch.uint8), 2: ("unsigned short", torch.int16), 4: ("unsigned int", torch.int32),
         8: ("unsigned long long", torch.int64)}
SHAPES = [  # (unit bytes, rows, row length, picks): the sweep's cases they stand for
    (8, 5086, 2048, 6069),    # seed 1807's float64 take along axis 3 (0.92x)
    (8, 2195, 4096, 15302),   # 283's float64 index_select
    (4, 16384, 1024, 2374),   # 485's shape, 4 bytes
    (2, 16384, 1024, 2374),   # 485's float16
    (4, 2048, 3359, 1677),    # 1373's uint32
    (1, 8192, 4096, 9874),    # 1687's uint8
    (4, 131072, 128, 371),    # 705's float32 rows of 512 B
    (2, 32768, 1024, 163),    # 647's bfloat16, few picks
    (8, 1024, 8192, 3096),    # 1668's int64 (64 KB rows)
]


def L(*v):
    return [np.int64(n) for n in v]


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    kernels = {}
    for unit, (ctype, dtype) in UNITS.items():
        src = SRC.replace("__UNIT__", ctype)
        kernels[unit] = {n: jitops.RawKernel(src, n) for n in ("walk2d", "rowlocal", "staged")}
    for (unit, rows, a, c), order in [(shape, o) for shape in SHAPES for o in ("random", "sorted")]:
        dtype = UNITS[unit][1]
        x = torch.randint(-100, 100, (rows, a), device="cuda").to(dtype)
        idx = torch.randint(0, a, (c,), device="cuda")
        if order == "sorted":
            idx = idx.sort().values
        ref = torch.index_select(x, 1, idx)
        k = kernels[unit]
        res = {"torch": median_us(lambda: torch.index_select(x, 1, idx)),
               "jitops": median_us(lambda: jitops.index_select(x, 1, idx))}
        out = torch.empty_like(ref)

        def check(name):
            if not torch.equal(out, ref):
                print(f"  {name}: WRONG", flush=True)
            out.fill_(7)

        gy = min(65535, (rows + 3) // 4, 16 * sms * 8 // max(1, (c + 255) // 256))
        fn = lambda: k["walk2d"](((c + 255) // 256, max(1, gy)), (256,), (x, idx, out, *L(rows, a, c)))
        fn(); check("walk2d"); res["walk2d"] = median_us(fn)
        for rb in (1, 2, 4):
            blocks = min((rows + rb - 1) // rb, sms * 64)
            fn = lambda: k["rowlocal"]((blocks,), (256,), (x, idx, out, *L(rows, a, c), np.int32(rb)))
            fn(); check(f"rowlocal{rb}"); res[f"rowlocal rb={rb}"] = median_us(fn)
            smem = rb * a * unit
            if smem <= 96 * 1024:
                fn = lambda: k["staged"]((blocks,), (256,), (x, idx, out, *L(rows, a, c), np.int32(rb)), shared_mem=smem)
                try:
                    fn(); check(f"staged{rb}"); res[f"staged rb={rb}"] = median_us(fn)
                except Exception as e:  # past the default 48 KB without the opt-in attribute
                    res[f"staged rb={rb}"] = float("nan")
        moved = (rows * a + rows * c) * unit + c * 8
        line = "  ".join(f"{n} {t:8.1f}" for n, t in res.items())
        print(f"{order} unit {unit} rows {rows} row {a} picks {c} ({moved / 1e6:.0f} MB, floor {moved / 3.0e6:.1f} us): {line}",
              flush=True)


if __name__ == "__main__":
    main()
