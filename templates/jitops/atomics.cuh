// Atomic read-modify-write on every element type the accumulate family takes.
//
// Hardware atomics where they exist (float, double, int32, int64 add; int32
// and int64 max/min; half2 / bfloat162 add; float4 add on sm_90); a CAS loop
// where they do not (products, 16-bit float max/min, 8- and 16-bit integers).
// float and double max/min go as integer reductions on their bits
// (float_extremum.cuh).
// fast_atomic_add is PyTorch's FastAtomicAdd: a lone half or bfloat16 is
// added through the aligned half2 that holds it, with zero for the neighbour.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "jitops/bits.cuh"
#include "jitops/float_extremum.cuh"
#include "jitops/types.h"

namespace jitops {

template <typename A, typename B> struct same_type { static constexpr bool value = false; };
template <typename A> struct same_type<A, A> { static constexpr bool value = true; };
template <typename T> struct is_integer {
  static constexpr bool value = same_type<T, signed char>::value || same_type<T, unsigned char>::value ||
                                same_type<T, short>::value || same_type<T, int>::value ||
                                same_type<T, long long>::value;
};

// Widening conversions for arithmetic on 16-bit floats.
template <typename T> __device__ __forceinline__ float to_float(T v) { return float(v); }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// *addr = f(*addr) atomically, by compare-and-swap: on the aligned 32-bit word
// holding an 8- or 16-bit element (a 16-bit atomicCAS is itself a 32-bit CAS
// loop in SASS, so a loop around it nested two: scatter_reduce_ amin of float16
// rows ran at 0.71x PyTorch's, NOTES item 53), on the element itself otherwise.
// kSkipUnchanged (max and min): a value f leaves as it is needs no write. A
// stale read is safe there: max only raises what memory holds (min only
// lowers it), so f(stale) == stale implies f(current) == current.
template <typename T, bool kSkipUnchanged = false, typename F>
__device__ __forceinline__ void cas_update(T* addr, F f) {
  if constexpr (sizeof(T) <= 2) {
    typedef typename Bits<T>::type Narrow;
    constexpr unsigned int kMask = sizeof(T) == 1 ? 0xFFu : 0xFFFFu;
    unsigned int* word = (unsigned int*)((size_t)addr & ~(size_t)3);
    const unsigned int shift = ((size_t)addr & 3) * 8;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const Narrow cur_bits = (Narrow)((assumed >> shift) & kMask);
      const Narrow next_bits = bits_of<T>(f(from_bits<T>(cur_bits)));
      if (kSkipUnchanged && next_bits == cur_bits) return;
      unsigned int next = (assumed & ~(kMask << shift)) | ((unsigned int)next_bits << shift);
      old = atomicCAS(word, assumed, next);
    } while (old != assumed);
  } else {
    typedef typename Bits<T>::type Word;  // 32- or 64-bit: CAS on the element itself
    Word* p = (Word*)addr;
    Word old = *p, assumed;
    do {
      assumed = old;
      const Word next = bits_of<T>(f(from_bits<T>(assumed)));
      if (kSkipUnchanged && next == assumed) return;
      old = atomicCAS(p, assumed, next);
    } while (old != assumed);
  }
}

// *addr[j] = f(j, *addr[j]) for the Vec adjacent elements that fill an
// aligned 32-bit word, by one compare-and-swap of the word: lone 16-bit
// elements along a row had lanes 2k and 2k+1 race for it, one of each pair
// losing and retrying, a CAS round trip an element. kSkipUnchanged as in
// cas_update, for the whole word.
template <typename T, int Vec, bool kSkipUnchanged = false, typename F>
__device__ __forceinline__ void cas_update_pack(T* addr, F f) {
  static_assert(sizeof(T) * Vec == 4, "a pack fills one 32-bit word");
  unsigned int* word = (unsigned int*)addr;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    T v[Vec];
    memcpy(v, &assumed, 4);
#pragma unroll
    for (int j = 0; j < Vec; ++j) v[j] = f(j, v[j]);
    unsigned int next;
    memcpy(&next, v, 4);
    if (kSkipUnchanged && next == assumed) return;
    old = atomicCAS(word, assumed, next);
  } while (old != assumed);
}

// Arithmetic that keeps 16-bit floats' rounding (compute in float, round once)
// and propagates NaN through max/min as torch.maximum does.
template <typename T> __device__ __forceinline__ T add_op(T a, T b) { return T(a + b); }
template <> __device__ __forceinline__ __half add_op<__half>(__half a, __half b) { return __float2half(to_float(a) + to_float(b)); }
template <> __device__ __forceinline__ __nv_bfloat16 add_op<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16(to_float(a) + to_float(b));
}
template <typename T> __device__ __forceinline__ T mul_op(T a, T b) { return T(a * b); }
template <> __device__ __forceinline__ __half mul_op<__half>(__half a, __half b) { return __float2half(to_float(a) * to_float(b)); }
template <> __device__ __forceinline__ __nv_bfloat16 mul_op<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16(to_float(a) * to_float(b));
}
template <typename T> __device__ __forceinline__ bool is_nan(T v) { return false; }
template <> __device__ __forceinline__ bool is_nan<float>(float v) { return v != v; }
template <> __device__ __forceinline__ bool is_nan<double>(double v) { return v != v; }
template <> __device__ __forceinline__ bool is_nan<__half>(__half v) { return __hisnan(v); }
template <> __device__ __forceinline__ bool is_nan<__nv_bfloat16>(__nv_bfloat16 v) { return __hisnan(v); }
template <typename T> __device__ __forceinline__ bool less(T a, T b) { return a < b; }
template <> __device__ __forceinline__ bool less<__half>(__half a, __half b) { return to_float(a) < to_float(b); }
template <> __device__ __forceinline__ bool less<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return to_float(a) < to_float(b);
}
template <typename T> __device__ __forceinline__ T max_op(T a, T b) {
  return is_nan(a) ? a : is_nan(b) ? b : less(a, b) ? b : a;
}
template <typename T> __device__ __forceinline__ T min_op(T a, T b) {
  return is_nan(a) ? a : is_nan(b) ? b : less(b, a) ? b : a;
}

// index_add_'s alpha, applied as PyTorch does: alpha converted to the element
// type, the product computed in float for 16-bit floats.
template <typename T, typename P> __device__ __forceinline__ T scale(T v, const P& p) { return T(v * (T)p.alpha_int); }
template <typename P> __device__ __forceinline__ float scale(float v, const P& p) { return v * (float)p.alpha; }
template <typename P> __device__ __forceinline__ double scale(double v, const P& p) { return v * p.alpha; }
template <typename P> __device__ __forceinline__ __half scale(__half v, const P& p) {
  return __float2half(to_float(v) * to_float(__double2half(p.alpha)));
}
template <typename P> __device__ __forceinline__ __nv_bfloat16 scale(__nv_bfloat16 v, const P& p) {
  return __float2bfloat16(to_float(v) * to_float(__double2bfloat16(p.alpha)));
}

// ---- adds into global memory whose result nobody reads: reductions
// (red.global), fire and forget in L2. NVRTC kept atomicAdd's ATOM, a round
// trip per add, where the result was unused: scatter_reduce_ sum of one
// float32 column (23.5M adds) took 400 us with 35.3M ATOM sectors, against
// PyTorch's 315 us with RED (ncu, H100; NOTES item 37).
__device__ __forceinline__ void red_add(float* a, float v) {
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(a), "f"(v) : "memory");
}
__device__ __forceinline__ void red_add(double* a, double v) {
  asm volatile("red.global.add.f64 [%0], %1;" ::"l"(a), "d"(v) : "memory");
}
__device__ __forceinline__ void red_add(int* a, int v) {
  asm volatile("red.global.add.s32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void red_add(unsigned long long* a, unsigned long long v) {
  asm volatile("red.global.add.u64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
__device__ __forceinline__ void red_add(__half2* a, __half2 v) {
  unsigned w;
  memcpy(&w, &v, 4);
  asm volatile("red.global.add.noftz.f16x2 [%0], %1;" ::"l"(a), "r"(w) : "memory");
}
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void red_add(__nv_bfloat162* a, __nv_bfloat162 v) {
  unsigned w;
  memcpy(&w, &v, 4);
  asm volatile("red.global.add.noftz.bf16x2 [%0], %1;" ::"l"(a), "r"(w) : "memory");
}
#else
__device__ __forceinline__ void red_add(__nv_bfloat162* a, __nv_bfloat162 v) { atomicAdd(a, v); }
#endif

// ---- add (into global memory)
template <typename T>
__device__ __forceinline__ void atomic_add(T* addr, T v) {
  cas_update(addr, [v](T cur) { return add_op(cur, v); });
}
template <> __device__ __forceinline__ void atomic_add<float>(float* a, float v) { red_add(a, v); }
template <> __device__ __forceinline__ void atomic_add<double>(double* a, double v) { red_add(a, v); }
template <> __device__ __forceinline__ void atomic_add<int>(int* a, int v) { red_add(a, v); }
template <> __device__ __forceinline__ void atomic_add<long long>(long long* a, long long v) {
  red_add((unsigned long long*)a, (unsigned long long)v);
}
template <> __device__ __forceinline__ void atomic_add<__half>(__half* a, __half v) { atomicAdd(a, v); }
template <> __device__ __forceinline__ void atomic_add<__nv_bfloat16>(__nv_bfloat16* a, __nv_bfloat16 v) {
#if __CUDA_ARCH__ >= 800
  atomicAdd(a, v);
#else
  cas_update(a, [v](__nv_bfloat16 cur) { return add_op(cur, v); });
#endif
}

// A lone 16-bit float through its aligned pair; `lo`/`hi` bound the element
// offsets (from `base`) whose memory belongs to the tensor.
template <typename T, typename Pair, typename Stride>
__device__ __forceinline__ void pair_add(T* base, Stride off, Stride lo, Stride hi, T v, T zero) {
  T* addr = base + off;
  if (((size_t)addr & 3) == 0) {
    if (off + 1 <= hi) { Pair p; p.x = v; p.y = zero; red_add((Pair*)addr, p); return; }
  } else if (off - 1 >= lo) {
    Pair p; p.x = zero; p.y = v; red_add((Pair*)(addr - 1), p); return;
  }
  atomic_add(addr, v);
}

template <typename T, typename Stride>
__device__ __forceinline__ void fast_atomic_add(T* base, Stride off, Stride lo, Stride hi, T v) { atomic_add(base + off, v); }
template <typename Stride>
__device__ __forceinline__ void fast_atomic_add(__half* base, Stride off, Stride lo, Stride hi, __half v) {
  pair_add<__half, __half2>(base, off, lo, hi, v, __float2half(0.f));
}
#if __CUDA_ARCH__ >= 800
template <typename Stride>
__device__ __forceinline__ void fast_atomic_add(__nv_bfloat16* base, Stride off, Stride lo, Stride hi, __nv_bfloat16 v) {
  pair_add<__nv_bfloat16, __nv_bfloat162>(base, off, lo, hi, v, __float2bfloat16(0.f));
}
#endif

// ---- mul, max, min
template <typename T> __device__ __forceinline__ void atomic_mul(T* a, T v) {
  cas_update(a, [v](T cur) { return mul_op(cur, v); });
}
template <typename T> __device__ __forceinline__ void atomic_max(T* a, T v) {
  cas_update<T, true>(a, [v](T cur) { return max_op(cur, v); });
}
template <> __device__ __forceinline__ void atomic_max<int>(int* a, int v) { atomicMax(a, v); }
template <> __device__ __forceinline__ void atomic_max<long long>(long long* a, long long v) { atomicMax(a, v); }
template <> __device__ __forceinline__ void atomic_max<float>(float* a, float v) { float_extremum<true>(a, v); }
template <> __device__ __forceinline__ void atomic_max<double>(double* a, double v) { float_extremum<true>(a, v); }
template <typename T> __device__ __forceinline__ void atomic_min(T* a, T v) {
  cas_update<T, true>(a, [v](T cur) { return min_op(cur, v); });
}
template <> __device__ __forceinline__ void atomic_min<int>(int* a, int v) { atomicMin(a, v); }
template <> __device__ __forceinline__ void atomic_min<long long>(long long* a, long long v) { atomicMin(a, v); }
template <> __device__ __forceinline__ void atomic_min<float>(float* a, float v) { float_extremum<false>(a, v); }
template <> __device__ __forceinline__ void atomic_min<double>(double* a, double v) { float_extremum<false>(a, v); }

}  // namespace jitops
