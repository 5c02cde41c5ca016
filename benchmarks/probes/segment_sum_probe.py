"""Prototype (issue 3): adds of whole rows combined before memory, instead of
one atomic per element. Rows are sorted by destination with a counting sort
(count, scan, place) and each warp then sums a fixed run of C sorted rows:
a destination whose rows all fall inside one warp's run is written with a
plain read-add-write, one cut by a run boundary with atomics. Work per warp
is the same whatever the duplicates look like. Timed as the bench times
(L2 flushed before each run, median of 100), beside torch.index_add_."""

import cupy
import torch
from probe_timing import median_us

SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void count_rows(const long long* idx, int n, int* counts) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&counts[idx[i]], 1);
}
extern "C" __global__ void place_rows(const long long* idx, int n, int* cursor, int* perm, int* dest) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int d = (int)idx[i];
  const int p = atomicAdd(&cursor[d], 1);
  perm[p] = i;
  dest[p] = d;
}
struct Acc { float v[4]; };
__device__ __forceinline__ void load_row(const float* src, long long row, int cols, int lane, Acc& a) {
  const float4 f = reinterpret_cast<const float4*>(src + row * cols)[lane];
  a.v[0] = f.x; a.v[1] = f.y; a.v[2] = f.z; a.v[3] = f.w;
}
__device__ __forceinline__ void load_row(const __half* src, long long row, int cols, int lane, Acc& a) {
  const uint2 u = reinterpret_cast<const uint2*>(src + row * cols)[lane];
  const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  a.v[0] = lo.x; a.v[1] = lo.y; a.v[2] = hi.x; a.v[3] = hi.y;
}
__device__ __forceinline__ void flush(float* self, int d, int cols, int lane, const Acc& a, bool owned) {
  float4* p = reinterpret_cast<float4*>(self + (long long)d * cols) + lane;
  if (owned) { float4 o = *p; o.x += a.v[0]; o.y += a.v[1]; o.z += a.v[2]; o.w += a.v[3]; *p = o; }
  else { float* q = reinterpret_cast<float*>(p); for (int k = 0; k < 4; ++k) atomicAdd(q + k, a.v[k]); }
}
__device__ __forceinline__ void flush(__half* self, int d, int cols, int lane, const Acc& a, bool owned) {
  __half2* p = reinterpret_cast<__half2*>(self + (long long)d * cols) + 2 * lane;
  if (owned) {
    float2 x = __half22float2(p[0]), y = __half22float2(p[1]);
    p[0] = __floats2half2_rn(x.x + a.v[0], x.y + a.v[1]);
    p[1] = __floats2half2_rn(y.x + a.v[2], y.y + a.v[3]);
  } else {
    atomicAdd(p, __floats2half2_rn(a.v[0], a.v[1]));
    atomicAdd(p + 1, __floats2half2_rn(a.v[2], a.v[3]));
  }
}
extern "C" __global__ void segment_sum(const T* src, const int* perm, const int* dest, int n, int cols, T* self) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  const int begin = warp * C;
  if (begin >= n) return;
  const int end = min(n, begin + C);
  Acc acc = {{0.f, 0.f, 0.f, 0.f}};
  int cur = dest[begin], run_start = begin;
  for (int r = begin; r < end; r += 4) {
    int p[4], d[4];
    Acc v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) { p[u] = r + u < end ? perm[r + u] : 0; d[u] = r + u < end ? dest[r + u] : -1; }
#pragma unroll
    for (int u = 0; u < 4; ++u) if (r + u < end) load_row(src, p[u], cols, lane, v[u]);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (r + u >= end) break;
      if (d[u] != cur) {
        const bool owned = (run_start > begin || begin == 0 || dest[begin - 1] != cur);
        flush(self, cur, cols, lane, acc, owned);
        for (int k = 0; k < 4; ++k) acc.v[k] = 0.f;
        cur = d[u];
        run_start = r + u;
      }
      for (int k = 0; k < 4; ++k) acc.v[k] += v[u].v[k];
    }
  }
  const bool owned = (run_start > begin || begin == 0 || dest[begin - 1] != cur) && (end == n || dest[end] != cur);
  flush(self, cur, cols, lane, acc, owned);
}
"""



def probe(dtype, rows, dests, cols=128, c=32):
    ctype = {torch.float32: "float", torch.float16: "__half"}[dtype]
    mod = cupy.RawModule(code=f"#define T {ctype}\n#define C {c}\n" + SOURCE, options=("-std=c++17",))
    count_rows, place_rows, segment_sum = (mod.get_function(k) for k in ("count_rows", "place_rows", "segment_sum"))
    src = torch.randn(rows, cols, device="cuda", dtype=dtype)
    idx = torch.randint(0, dests, (rows,), device="cuda")
    self_t = torch.randn(dests, cols, device="cuda", dtype=dtype)
    s, i = cupy.asarray(src), cupy.asarray(idx)
    counts = cupy.zeros(dests, cupy.int32)
    perm = cupy.empty(rows, cupy.int32)
    dest = cupy.empty(rows, cupy.int32)
    blocks = (rows + 255) // 256
    warps_blocks = ((rows + c - 1) // c * 32 + 255) // 256

    def sort_rows():
        counts.fill(0)
        count_rows((blocks,), (256,), (i, cupy.int32(rows), counts))
        cursor = cupy.cumsum(counts, dtype=cupy.int32) - counts
        place_rows((blocks,), (256,), (i, cupy.int32(rows), cursor, perm, dest))

    def run(target):
        sort_rows()
        segment_sum((warps_blocks,), (256,), (s, perm, dest, cupy.int32(rows), cupy.int32(cols), target))

    out = self_t.clone()
    run(cupy.asarray(out))
    ref = self_t.float().index_add_(0, idx, src.float())
    err = (out.float() - ref).abs().max().item()
    work = self_t.clone()
    w = cupy.asarray(work)
    name = f"{str(dtype)[6:]} rows={rows} dests={dests} C={c}"
    print(f"{name}: sort {median_us(sort_rows):.1f} us, sort+sum {median_us(lambda: run(w)):.1f} us, "
          f"torch index_add_ {median_us(lambda: work.index_add_(0, idx, src)):.1f} us, max err {err:.2e}", flush=True)


def main():
    for c in (16, 32, 64):
        probe(torch.float32, 1 << 20, 100000, c=c)
    probe(torch.float16, 1 << 20, 100000)
    probe(torch.float32, 1 << 20, 64)
    probe(torch.float32, 1 << 20, 1)


if __name__ == "__main__":
    main()
