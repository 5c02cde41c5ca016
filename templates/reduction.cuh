// User reductions (jitops.ReductionKernel): each output element is the
// reduction of map(inputs) over the reduced dims, then post-mapped. The
// specialized source defines Op (the user's map, reduce, post-map and
// identity, and how to load the inputs) and calls one of these bodies:
//
// - reduce_inner: the reduced dims are the fast ones in memory (a row sum).
//   A group of G lanes takes one output; with a dense reduced dim they load
//   V-element vectors, U at a time, and fold them with shuffles.
// - reduce_outer: the kept dims are the fast ones (a column sum). A warp's
//   lanes take consecutive outputs (V each, as one vector load), the block's
//   rows split the reduced dims, and shared memory folds the rows.
// - reduce_finish: where one output's reduction was split over blockIdx.y to
//   fill the GPU, the partial results of the splits folded by groups of lanes.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "jitops/reduction_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

// __shfl_xor_sync for any trivially copyable type of up to 16 bytes, in 32-bit words.
template <typename T>
__device__ __forceinline__ T shuffle_xor(const T& value, int mask, int width) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  unsigned words[kWords] = {};
  memcpy(words, &value, sizeof(T));
#pragma unroll
  for (int w = 0; w < kWords; ++w) words[w] = __shfl_xor_sync(0xffffffffu, words[w], mask, width);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

// Offsets of output `o` in each input (slots [0, inputs)) and in the output
// (slot kMaxReductionInputs).
template <int Inputs, typename P>
__device__ __forceinline__ void output_offsets(const P& p, typename P::Linear o,
                                               typename P::Stride (&off)[kMaxReductionInputs + 1]) {
#pragma unroll
  for (int k = 0; k <= kMaxReductionInputs; ++k) off[k] = 0;
#pragma unroll
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d < p.o_ndim) {
      typename P::Linear r = o;
      if (d > 0) o = p.o_div[d].divmod(o, r);
#pragma unroll
      for (int k = 0; k < Inputs; ++k) off[k] += typename P::Stride(r) * p.o_stride[k][d];
      off[kMaxReductionInputs] += typename P::Stride(r) * p.o_stride[kMaxReductionInputs][d];
    }
  }
}

// Offsets of reduced position `r` in each input, added to `base`. RD == 1:
// one reduced dim after collapsing (no division).
template <int Inputs, int RD, typename P>
__device__ __forceinline__ void reduced_offsets(const P& p, typename P::Linear r,
                                                const typename P::Stride (&base)[kMaxReductionInputs + 1],
                                                typename P::Stride (&off)[kMaxReductionInputs]) {
#pragma unroll
  for (int k = 0; k < Inputs; ++k) off[k] = base[k];
  if (RD == 1) {
#pragma unroll
    for (int k = 0; k < Inputs; ++k) off[k] += typename P::Stride(r) * p.r_stride[k][0];
    return;
  }
#pragma unroll
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d < p.r_ndim) {
      typename P::Linear q = r;
      if (d > 0) r = p.r_div[d].divmod(r, q);
#pragma unroll
      for (int k = 0; k < Inputs; ++k) off[k] += typename P::Stride(q) * p.r_stride[k][d];
    }
  }
}

// Folds `acc` over the G lanes of each group (G a power of two; a group of
// more than 32 lanes spans G / 32 whole warps). Lane 0 of the group gets the result.
template <class Op, int G>
__device__ __forceinline__ typename Op::R group_reduce(typename Op::R acc) {
  typedef typename Op::R R;
  constexpr int kWarpWidth = G < 32 ? G : 32;
#pragma unroll
  for (int s = kWarpWidth / 2; s > 0; s >>= 1) acc = Op::reduce(acc, shuffle_xor(acc, s, kWarpWidth));
  if (G > 32) {
    __shared__ alignas(16) unsigned char storage[32 * sizeof(R)];
    R* warps = reinterpret_cast<R*>(storage);
    constexpr int kWarpsPerGroup = G / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int first = warp / kWarpsPerGroup * kWarpsPerGroup;  // the group's first warp
    if (lane == 0) warps[warp] = acc;
    __syncthreads();
    if (warp == first) {
      acc = lane < kWarpsPerGroup ? warps[first + lane] : Op::identity();
#pragma unroll
      for (int s = 16; s > 0; s >>= 1) acc = Op::reduce(acc, shuffle_xor(acc, s, 32));
    }
  }
  return acc;
}

// U steps of V mapped elements from reduced position r on, `step` apart; past
// `end`, the identity. Every step's loads are issued before any is folded.
template <class Op, int RD, int V, int U, typename P>
__device__ __forceinline__ void map_steps(const P& p, const typename P::Stride (&base)[kMaxReductionInputs + 1],
                                          typename P::Linear r, typename P::Linear step, typename P::Linear end,
                                          typename Op::R (&m)[U][V]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const typename P::Linear ru = r + typename P::Linear(u) * step;
    if (ru < end) {
      typename P::Stride off[kMaxReductionInputs];
      reduced_offsets<Op::kInputs, RD>(p, ru, base, off);
      Op::template map<V>(p, off, m[u]);
    } else {
#pragma unroll
      for (int v = 0; v < V; ++v) m[u][v] = Op::identity();
    }
  }
}

template <class Op, int Bits>
__device__ __forceinline__ void store_result(const ReductionParams<Bits>& p, typename ReductionParams<Bits>::Linear o,
                                             typename ReductionParams<Bits>::Stride out_offset,
                                             const typename Op::R& acc, bool split) {
  if (split)
    static_cast<typename Op::R*>(p.partial)[typename ReductionParams<Bits>::Linear(blockIdx.y) * p.outputs + o] = acc;
  else
    Op::post(acc, static_cast<typename Op::Y*>(p.out)[out_offset], p.in_size, (long long)p.outputs);
}

template <class Op, int Bits, int RD, int V, int G, int U, bool Split>
__device__ __forceinline__ void reduce_inner(const ReductionParams<Bits>& p) {
  typedef ReductionParams<Bits> P;
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  typedef typename Op::R R;
  const unsigned lane = threadIdx.x % G;
  const Linear o = Linear(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  const bool active = o < p.outputs;
  R acc = Op::identity();
  Stride base[kMaxReductionInputs + 1];
  if (active) {
    output_offsets<Op::kInputs>(p, o, base);
    const Linear begin = Linear(blockIdx.y) * p.per_split;
    const Linear end = p.reduced - begin < p.per_split ? p.reduced : begin + p.per_split;
    for (Linear r = begin + lane * V; r < end; r += Linear(G) * V * U) {
      R m[U][V];
      map_steps<Op, RD, V, U>(p, base, r, Linear(G) * V, end, m);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int v = 0; v < V; ++v) acc = Op::reduce(acc, m[u][v]);
    }
  }
  acc = group_reduce<Op, G>(acc);
  if (active && lane == 0) store_result<Op, Bits>(p, o, base[kMaxReductionInputs], acc, Split);
}

template <class Op, int Bits, int RD, int V, int U, bool Split>
__device__ __forceinline__ void reduce_outer(const ReductionParams<Bits>& p) {
  typedef ReductionParams<Bits> P;
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  typedef typename Op::R R;
  const Linear o0 = (Linear(blockIdx.x) * 32 + threadIdx.x) * V;
  const bool active = o0 < p.outputs;
  R acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = Op::identity();
  Stride base[kMaxReductionInputs + 1];
  if (active) {
    output_offsets<Op::kInputs>(p, o0, base);
    const Linear begin = Linear(blockIdx.y) * p.per_split;
    const Linear end = p.reduced - begin < p.per_split ? p.reduced : begin + p.per_split;
    for (Linear r = begin + threadIdx.y; r < end; r += Linear(blockDim.y) * U) {
      R m[U][V];  // lane v: output o0 + v (V consecutive outputs are dense in every input)
      map_steps<Op, RD, V, U>(p, base, r, Linear(blockDim.y), end, m);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = Op::reduce(acc[v], m[u][v]);
    }
  }
  // The block's rows fold in shared memory: [row][lane * V + v].
  extern __shared__ __align__(16) unsigned char jitops_rows[];
  R* rows = reinterpret_cast<R*>(jitops_rows);
  const int width = 32 * V;
#pragma unroll
  for (int v = 0; v < V; ++v) rows[threadIdx.y * width + threadIdx.x * V + v] = acc[v];
  __syncthreads();
  for (int s = blockDim.y / 2; s > 0; s >>= 1) {
    if (threadIdx.y < s) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        R& mine = rows[threadIdx.y * width + threadIdx.x * V + v];
        mine = Op::reduce(mine, rows[(threadIdx.y + s) * width + threadIdx.x * V + v]);
      }
    }
    __syncthreads();
  }
  if (threadIdx.y != 0 || !active) return;
#pragma unroll
  for (int v = 0; v < V; ++v)
    if (o0 + v < p.outputs)  // the output is dense along the V outputs (the host checks)
      store_result<Op, Bits>(p, o0 + v, base[kMaxReductionInputs] + v, rows[threadIdx.x * V + v], Split);
}

// `splits` partial results per output ([split][output]), folded by G lanes each.
template <class Op, int Bits, int G>
__device__ __forceinline__ void reduce_finish(const ReductionParams<Bits>& p) {
  const int splits = p.splits;
  typedef ReductionParams<Bits> P;
  typedef typename P::Linear Linear;
  typedef typename Op::R R;
  const unsigned lane = threadIdx.x % G;
  const Linear o = Linear(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  const bool active = o < p.outputs;
  R acc = Op::identity();
  const R* partial = static_cast<const R*>(p.partial);
  if (active)
    for (int s = int(lane); s < splits; s += G) acc = Op::reduce(acc, partial[Linear(s) * p.outputs + o]);
  acc = group_reduce<Op, G>(acc);
  if (active && lane == 0) {
    typename P::Stride base[kMaxReductionInputs + 1];
    output_offsets<0>(p, o, base);
    Op::post(acc, static_cast<typename Op::Y*>(p.out)[base[kMaxReductionInputs]], p.in_size, (long long)p.outputs);
  }
}

// The special variables of CuPy's reduction kernels: _in_ind.size() is the
// element count of the (broadcast) inputs, _out_ind.size() of the output.
struct ReductionIndexSize {
  long long n;
  __device__ __forceinline__ long long size() const { return n; }
};

}  // namespace jitops
