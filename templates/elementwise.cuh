// The vectorized elementwise template (after OneFlow's elementwise.cuh): the
// specialized source defines the per-element function and the loop that loads
// operands, calls it and stores; these are the pieces it is built from.
//
// Dense operands move in packs of up to 16 bytes (every pointer aligned to
// its pack), the tail of fewer than one pack is handled by the first threads
// of the same launch, and the grid is sized by waves on the host.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "jitops/elementwise_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

template <typename T>
__device__ __forceinline__ T scalar_operand(uint64_t bits) {
  return *reinterpret_cast<const T*>(&bits);
}

// Mixed arithmetic of 16-bit floats with C++ numbers, so that user
// operations such as "z = x * y + 1" read as they would on float (cuda_fp16
// alone finds them ambiguous). With an int the result keeps the 16-bit type;
// with float or double it is that wider type, as C++ promotion would give.
#define JITOPS_MIXED_OPS(H)                                                                          \
  JITOPS_MIXED_OP(H, +) JITOPS_MIXED_OP(H, -) JITOPS_MIXED_OP(H, *) JITOPS_MIXED_OP(H, /)            \
  JITOPS_MIXED_CMP(H, <) JITOPS_MIXED_CMP(H, >) JITOPS_MIXED_CMP(H, <=) JITOPS_MIXED_CMP(H, >=)      \
  JITOPS_MIXED_CMP(H, ==) JITOPS_MIXED_CMP(H, !=)
#define JITOPS_MIXED_OP(H, OP)                                                                               \
  __device__ __forceinline__ H operator OP(H a, int b) { return H(float(a) OP float(b)); }                  \
  __device__ __forceinline__ H operator OP(int a, H b) { return H(float(a) OP float(b)); }                  \
  __device__ __forceinline__ float operator OP(H a, float b) { return float(a) OP b; }                      \
  __device__ __forceinline__ float operator OP(float a, H b) { return a OP float(b); }                      \
  __device__ __forceinline__ double operator OP(H a, double b) { return double(float(a)) OP b; }            \
  __device__ __forceinline__ double operator OP(double a, H b) { return a OP double(float(b)); }
#define JITOPS_MIXED_CMP(H, OP)                                                                        \
  __device__ __forceinline__ bool operator OP(H a, int b) { return float(a) OP float(b); }            \
  __device__ __forceinline__ bool operator OP(int a, H b) { return float(a) OP float(b); }            \
  __device__ __forceinline__ bool operator OP(H a, float b) { return float(a) OP b; }                 \
  __device__ __forceinline__ bool operator OP(float a, H b) { return a OP float(b); }                 \
  __device__ __forceinline__ bool operator OP(H a, double b) { return double(float(a)) OP b; }        \
  __device__ __forceinline__ bool operator OP(double a, H b) { return a OP double(float(b)); }
}  // namespace jitops
JITOPS_MIXED_OPS(__half)
JITOPS_MIXED_OPS(__nv_bfloat16)
#undef JITOPS_MIXED_OPS
#undef JITOPS_MIXED_OP
#undef JITOPS_MIXED_CMP
namespace jitops {

__device__ __forceinline__ int64_t global_thread() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_threads() { return int64_t(gridDim.x) * blockDim.x; }

// The element offset of every operand at item `i` of a strided layout: its
// coordinates over the collapsed sizes (innermost last), one divide by an
// invariant divisor per dim.
template <int Dims, int Bits, int Operands>
__device__ __forceinline__ void operand_offsets(const ElementwiseParams<Dims, Bits>& p,
                                                typename OffsetTypes<Bits>::Linear i,
                                                typename OffsetTypes<Bits>::Stride (&o)[Operands]) {
  typedef typename OffsetTypes<Bits>::Linear L;
  typedef typename OffsetTypes<Bits>::Stride S;
#pragma unroll
  for (int k = 0; k < Operands; ++k) o[k] = 0;
#pragma unroll
  for (int d = Dims - 1; d >= 0; --d) {
    if (d >= p.ndim) continue;
    L c = i;  // the outermost dim takes what is left
    if (d > 0) i = p.sizes[d].divmod(i, c);
#pragma unroll
    for (int k = 0; k < Operands; ++k) o[k] += S(c) * p.strides[k][d];
  }
}

}  // namespace jitops
