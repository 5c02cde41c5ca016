// CUDA's device vocabulary on the host, enough to run a template's index
// arithmetic and summation order on the CPU where no GPU is at hand: a block's
// threads are std::threads, blocks run one after another, __syncthreads is a
// barrier, shared memory one buffer. Checks logic, never speed; no warp
// intrinsics, no 16-bit float types.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#define JITOPS_DEVICE_COMPILE 1
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __shared__
#define __align__(n)
#define __launch_bounds__(...)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

void __syncthreads();  // host_kernel_runner.h

template <typename T>
T __ldg(const T* p) {
  return *p;
}
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((uint64_t(a) * b) >> 32); }

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

using std::max;
using std::min;
