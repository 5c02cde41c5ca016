"""Elementwise mul (issue 4): where do jitops.mul and torch.mul part at copy
speed? Hand-written dense mul kernels (CuPy RawKernel) over 32M float32 and
float16, timed as the bench times (L2 flushed before each run, CUDA events,
median of 100), beside torch.mul, jitops.mul and a copy of the same bytes,
in rounds so that drift shows:
  - one 16-byte pack per thread per step (jitops' template), grid capped at
    32 waves of 8 blocks per SM, or uncapped;
  - U packs per thread, all loaded before any is multiplied, each block one
    contiguous run of threads x U packs;
  - the same with streaming cache hints (ld.global.cs / st.global.cs).
Usage: python3 benchmarks/mul_probe.py [rounds]"""
import sys

import cupy
import torch
from probe_timing import median_us

try:
    import jitops
except ImportError:  # the probe also runs without jitops built
    jitops = None

N = 32 << 20
SMS = torch.cuda.get_device_properties(0).multi_processor_count

SOURCE = r"""
#include <cuda_fp16.h>
struct __align__(16) Pack { T v[16 / sizeof(T)]; };
constexpr int kLanes = 16 / sizeof(T);

__device__ __forceinline__ Pack load(const Pack* p, long long i) {
#if HINTS
  float4 r = __ldcs(reinterpret_cast<const float4*>(p) + i);
  return *reinterpret_cast<Pack*>(&r);
#else
  return p[i];
#endif
}
__device__ __forceinline__ void store(Pack* p, long long i, const Pack& v) {
#if HINTS
  __stcs(reinterpret_cast<float4*>(p) + i, *reinterpret_cast<const float4*>(&v));
#else
  p[i] = v;
#endif
}
__device__ __forceinline__ Pack mul(const Pack& a, const Pack& b) {
  Pack c;
#pragma unroll
  for (int l = 0; l < kLanes; ++l) c.v[l] = T(float(a.v[l]) * float(b.v[l]));
  return c;
}

extern "C" __global__ void mul_stride(const Pack* x, const Pack* y, Pack* z, long long packs) {
  const long long threads = (long long)gridDim.x * blockDim.x;
  for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < packs; q += threads)
    store(z, q, mul(load(x, q), load(y, q)));
}

extern "C" __global__ void mul_chunk(const Pack* x, const Pack* y, Pack* z, long long packs) {
  const long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
  Pack a[U], b[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const long long q = base + (long long)u * blockDim.x;
    if (q < packs) { a[u] = load(x, q); b[u] = load(y, q); }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const long long q = base + (long long)u * blockDim.x;
    if (q < packs) store(z, q, mul(a[u], b[u]));
  }
}
"""


def kernels(ctype):
    out = {}
    for hints in (0, 1):
        for u in (1, 2, 4):
            mod = cupy.RawModule(code=f"#define T {ctype}\n#define U {u}\n#define HINTS {hints}\n" + SOURCE,
                                 options=("-std=c++17",))
            out[(hints, u)] = mod
    return out


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    for dtype, ctype in ((torch.float32, "float"), (torch.float16, "__half")):
        x = torch.randn(N, device="cuda").to(dtype)
        y = torch.randn(N, device="cuda").to(dtype)
        z = torch.empty_like(x)
        cx, cy, cz = cupy.asarray(x), cupy.asarray(y), cupy.asarray(z)
        packs = N * x.element_size() // 16
        ref = torch.mul(x, y)
        mods = kernels(ctype)
        src = torch.empty(3 * N * x.element_size() // 2, dtype=torch.int8, device="cuda")
        dst = torch.empty_like(src)
        cases = {"torch.mul": lambda: torch.mul(x, y), "torch.mul out=": lambda: torch.mul(x, y, out=z),
                 "copy of the bytes": lambda: dst.copy_(src)}
        if jitops is not None:
            cases["jitops.mul"] = lambda: jitops.mul(x, y)
        for (hints, u), mod in mods.items():
            h = " cs" if hints else ""
            for threads in (128, 256, 512):
                grid = -(-packs // (threads * u))
                k = mod.get_function("mul_chunk")
                cases[f"chunk U={u} T={threads}{h}"] = (lambda k=k, g=grid, t=threads:
                                                         k((g,), (t,), (cx, cy, cz, cupy.int64(packs))))
            if u == 1:
                k = mod.get_function("mul_stride")
                for cap in (8, 32):
                    grid = min(-(-packs // 256), SMS * 8 * cap)
                    cases[f"stride T=256 waves<={cap}{h}"] = (lambda k=k, g=grid:
                                                               k((g,), (256,), (cx, cy, cz, cupy.int64(packs))))
        for name, fn in cases.items():  # each checked once against torch.mul
            if "copy" in name or name.startswith("torch"):
                continue
            z.fill_(float("nan"))
            got = fn()
            got = z if got is None else got
            torch.cuda.synchronize()
            assert torch.equal(got, ref), name
        print(f"== {dtype}, {N >> 20}M elements, {3 * N * x.element_size() / 1e6:.0f} MB")
        results = {name: [] for name in cases}
        for _ in range(rounds):
            for name, fn in cases.items():
                results[name].append(median_us(fn))
        for name, times in results.items():
            print(f"{name:32s} " + " ".join(f"{t:7.1f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
