// The owned walk of the accumulate family: each thread owns whole
// destinations. The iteration space's dim 0 is the one dim where self moves
// only through the index (index_add_'s indexed dim of the source, scatter's
// `dim`); every other dim moves self. So the units that differ only along
// dim 0 are the only ones that can name one element of self, and a thread
// that takes all of them, in order, is the only writer of every element it
// reaches: it updates them with plain loads and stores, no atomics, and in
// the index's order (the same bits run after run).
//
// Where it pays: updates that are slow as atomics (lone 16-bit float adds,
// compare-and-swap loops) or contend (many terms a destination), with
// enough owners to fill the GPU (the planner's owned_walk).
//
// A thread takes Unroll owners a block apart and walks their terms side by
// side: the owners' destinations differ, so their loads go out together; a
// term's update waits for the one before it (it may read what that wrote).
#pragma once
#include "scatter.cuh"

namespace jitops {

// One term applied to an element that no other thread writes, as its atomic
// would: 16-bit floats computed in float and rounded once, integers wrapping,
// max and min propagating NaN.
template <typename T, int Op, bool HasAlpha, typename P>
__device__ __forceinline__ T owned_update(const P& p, T cur, T v) {
  if constexpr (Op == kScatterAdd) return add_op(cur, HasAlpha ? scale(v, p) : v);
  if constexpr (Op == kScatterMul) return mul_op(cur, v);
  if constexpr (Op == kScatterMax) return max_op(cur, v);
  return min_op(cur, v);
}

template <typename T, typename IndexT, int Dims, bool Generic, int Op, int Vec, bool HasAlpha, int Unroll, typename P>
__device__ __forceinline__ void scatter_owned(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  const Linear terms = p.sizes[0].divisor;
  const Linear owners = p.numel / terms;
  const Stride src_step = p.src_strides[0], index_step = p.index_strides[0];
  T* self = static_cast<T*>(p.self);
  const T* src = static_cast<const T*>(p.src);
  const IndexT* index = static_cast<const IndexT*>(p.index);
  const Linear step = (Linear)gridDim.x * blockDim.x * Unroll;
  for (Linear base = (Linear)blockIdx.x * blockDim.x * Unroll + threadIdx.x; base < owners; base += step) {
    bool valid[Unroll];
    Stride off[Unroll][4];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      const Linear owner = base + (Linear)k * blockDim.x;
      valid[k] = owner < owners;  // an owner's offsets: its units' at dim 0's first term
      if (valid[k]) scatter_offsets<Dims, Generic>(p, owner, off[k]);
    }
    for (Linear t = 0; t < terms; ++t) {
      IndexT raw[Unroll];
      bool ok[Unroll];
      Pack<T, Vec> v[Unroll], cur[Unroll];
#pragma unroll
      for (int k = 0; k < Unroll; ++k) {
        raw[k] = 0;
        if (valid[k]) {
          raw[k] = load_scatter_index(p, index + off[k][2] + (Stride)t * index_step);
          v[k] = load_pack<T, Vec>(src + off[k][1] + (Stride)t * src_step);
        }
      }
#pragma unroll
      for (int k = 0; k < Unroll; ++k) {
        ok[k] = valid[k] && (uint64_t)(int64_t)raw[k] < (uint64_t)p.axis_size;
        if (ok[k]) cur[k] = load_pack_coherent<T, Vec>(self + off[k][0] + (Stride)(int64_t)raw[k] * p.axis_stride);
        else if (valid[k])
          report_bad_index(p.error, index_position(p, t * owners + base + (Linear)k * blockDim.x), (int64_t)raw[k],
                           p.axis_size, p.op_code);
      }
#pragma unroll
      for (int k = 0; k < Unroll; ++k) {
        if (ok[k]) {
#pragma unroll
          for (int e = 0; e < Vec; ++e) cur[k].v[e] = owned_update<T, Op, HasAlpha>(p, cur[k].v[e], v[k].v[e]);
          store_pack<T, Vec>(self + off[k][0] + (Stride)(int64_t)raw[k] * p.axis_stride, cur[k]);
        }
      }
    }
  }
}

}  // namespace jitops
