// Adds and products into a small self (scatter_add_, index_add_,
// scatter_reduce_'s sums and products) with many terms a destination, through
// a private copy of self in each block's shared memory: the block's terms go
// to its copy with shared-memory atomics (compare-and-swap loops for
// products), then the copy goes to self, an update a touched element (a pack
// of them where self is contiguous, for adds). The index walk sends every term
// to L2, where the updates of an address serialize: float16 into 1157
// elements by 264029 terms ran 72.5 us against PyTorch's 63.3 (seed 1817,
// NOTES 100); float64 products into (884x2) by 181262 rows, each a CAS loop
// that lost to every other in flight on its element, 328 against 285 (seed
// 1894, NOTES 110).
//
// The copy spans self's offsets [self_lo, self_hi]; only touched slots are
// flushed, so a strided self's gaps are never written. Sums accumulate in
// float (16-bit floats) or their own type from -0.0, the identity of addition
// (an untouched slot then adds nothing, even to a -0.0); integers in int or
// unsigned long long, wrapping as the element's own adds would. Products from
// 1 in float (16-bit floats) or their own type, integers in int or long long
// (the low bits of a wrapped product are the narrow type's); a slot still 1
// multiplies nothing, so it is left out.
#pragma once
#include "scatter.cuh"

namespace jitops {

template <typename T> struct PrivateSum { typedef float type; };
template <> struct PrivateSum<double> { typedef double type; };
template <> struct PrivateSum<signed char> { typedef int type; };
template <> struct PrivateSum<unsigned char> { typedef int type; };
template <> struct PrivateSum<short> { typedef int type; };
template <> struct PrivateSum<int> { typedef int type; };
template <> struct PrivateSum<long long> { typedef unsigned long long type; };

// Products take the sums' slots, but int64's stays signed (combine<kScatterMul> wraps it as unsigned).
template <typename T> struct PrivateProduct : PrivateSum<T> {};
template <> struct PrivateProduct<long long> { typedef long long type; };

template <typename T, int Op> struct PrivateSlot { typedef typename PrivateSum<T>::type type; };
template <typename T> struct PrivateSlot<T, kScatterMul> { typedef typename PrivateProduct<T>::type type; };

template <typename A> __device__ __forceinline__ A private_identity() { return A(-0.0); }
template <> __device__ __forceinline__ int private_identity<int>() { return 0; }
template <> __device__ __forceinline__ unsigned long long private_identity<unsigned long long>() { return 0ull; }

// Whether a slot holds the identity, bit for bit (a sum of -0.0 included: adding it changes nothing).
__device__ __forceinline__ bool untouched(float v) { return __float_as_uint(v) == 0x80000000u; }
__device__ __forceinline__ bool untouched(double v) {
  return (unsigned long long)__double_as_longlong(v) == 0x8000000000000000ull;
}
__device__ __forceinline__ bool untouched(int v) { return v == 0; }
__device__ __forceinline__ bool untouched(unsigned long long v) { return v == 0ull; }
// Products: a slot that still holds 1, bit for bit (multiplying by it changes nothing).
__device__ __forceinline__ bool untouched_product(float v) { return __float_as_uint(v) == 0x3F800000u; }
__device__ __forceinline__ bool untouched_product(double v) {
  return (unsigned long long)__double_as_longlong(v) == 0x3FF0000000000000ull;
}
__device__ __forceinline__ bool untouched_product(int v) { return v == 1; }
__device__ __forceinline__ bool untouched_product(long long v) { return v == 1ll; }

template <typename T, typename A> __device__ __forceinline__ A to_private(T v) { return A(v); }
template <> __device__ __forceinline__ float to_private<__half, float>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_private<__nv_bfloat16, float>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <> __device__ __forceinline__ unsigned long long to_private<long long, unsigned long long>(long long v) {
  return (unsigned long long)v;
}

template <typename T, typename A> __device__ __forceinline__ T from_private(A v) { return T(v); }
template <> __device__ __forceinline__ __half from_private<__half, float>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_private<__nv_bfloat16, float>(float v) {
  return __float2bfloat16(v);
}
template <> __device__ __forceinline__ long long from_private<long long, unsigned long long>(unsigned long long v) {
  return (long long)v;
}

// Op: kScatterAdd or kScatterMul. FlushVec: slots a flush packs (adds, self
// contiguous from self_lo, aligned for it), else 1.
template <typename T, typename IndexT, int Dims, bool Generic, bool HasAlpha, int Unroll, int FlushVec,
          int Op = kScatterAdd, typename P>
__device__ __forceinline__ void scatter_private(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  typedef typename PrivateSlot<T, Op>::type A;
  static_assert(Op == kScatterAdd || Op == kScatterMul, "private copies take adds and products");
  static_assert(Op == kScatterAdd || FlushVec == 1, "products flush an element at a time");
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  A* copy = reinterpret_cast<A*>(shared_bytes);
  const Stride span = p.self_hi - p.self_lo + 1;
  for (Stride i = threadIdx.x; i < span; i += blockDim.x) copy[i] = Op == kScatterAdd ? private_identity<A>() : A(1);
  __syncthreads();

  const Linear step = (Linear)gridDim.x * blockDim.x * Unroll;
  for (Linear base = (Linear)blockIdx.x * blockDim.x * Unroll + threadIdx.x; base < p.numel; base += step) {
    bool valid[Unroll], bad[Unroll], merged[Unroll];
    IndexT raw[Unroll];
    Stride off[Unroll][4];
    Pack<T, 1> src[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      const Linear i = base + (Linear)k * blockDim.x;
      valid[k] = i < p.numel;
      raw[k] = 0;
      merged[k] = false;
      if (valid[k]) {
        scatter_offsets<Dims, Generic>(p, i, off[k]);
        raw[k] = load_scatter_index(p, static_cast<const IndexT*>(p.index) + off[k][2]);
        src[k].v[0] = load_readonly(static_cast<const T*>(p.src) + off[k][1]);  // by position: no wait on the index
      }
      bad[k] = valid[k] && (uint64_t)(int64_t)raw[k] >= (uint64_t)p.axis_size;
    }
    // Runs of lanes on one element (sorted values) add up first: their shared-memory atomics on one
    // address would serialize as the global ones do (a sorted float32 column, 244 terms an element:
    // 11.5 -> 87.9 us without).
    combine_runs<T, Op, Unroll, 1>(p, valid, bad, raw, off, src, merged);
    // Products: a warp's other peers too, each a compare-and-swap loop on the slot they share. Rows of a
    // few elements through a sorted index put one slot's terms a row apart, never in a run.
    if constexpr (Op == kScatterMul) combine_peers<T, Op, Unroll, 1, true>(p, valid, bad, raw, off, src, merged);
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      if (bad[k])
        report_bad_index(p.error, index_position(p, base + (Linear)k * blockDim.x), (int64_t)raw[k], p.axis_size,
                         p.op_code);
      if (!valid[k] || bad[k] || merged[k]) continue;
      const T v = HasAlpha ? scale(src[k].v[0], p) : src[k].v[0];
      const Stride slot = off[k][0] + (Stride)(int64_t)raw[k] * p.axis_stride - p.self_lo;
      const A term = to_private<T, A>(v);
      if constexpr (Op == kScatterAdd)
        atomicAdd(copy + slot, term);
      else
        cas_update(copy + slot, [term](A cur) { return combine<kScatterMul>(cur, term); });  // integers wrap
    }
  }
  __syncthreads();

  if constexpr (Op == kScatterMul) {
    for (Stride i = threadIdx.x; i < span; i += blockDim.x) {
      const A a = copy[i];
      if (untouched_product(a)) continue;
      T* elem = static_cast<T*>(p.self) + p.self_lo + i;
      // 16-bit floats: the block's product multiplies in float, rounded once with the element's; rounded to
      // the element's type first, a partial past its range would be inf or 0 where the whole is not.
      if constexpr (IsNarrowFloat<T>::value)
        cas_update(elem, [a](T cur) { return T(to_float(cur) * a); });
      else
        atomic_mul(elem, from_private<T, A>(a));
    }
  } else {
    // The copy to self: FlushVec slots at a time where self is contiguous, each
    // pack whose slots are all untouched left out.
    for (Stride first = Stride(threadIdx.x) * FlushVec; first < span; first += Stride(blockDim.x) * FlushVec) {
      Pack<T, FlushVec> pack;
      bool any = false;
#pragma unroll
      for (int e = 0; e < FlushVec; ++e) {
        const A a = first + e < span ? copy[first + e] : private_identity<A>();
        any |= !untouched(a);
        pack.v[e] = from_private<T, A>(a);
      }
      if (any) add_pack<T, FlushVec>(p, p.self_lo + first, pack);
    }
  }
}

}  // namespace jitops
