// Floating max and min as integer reductions on the value's bits, where a
// compare-and-swap loop lost to every other update in flight on its address:
// float32 amax of rows of 16, 12M values into 340K elements (35 a
// destination), ran at 0.77x PyTorch's (seed 710, NOTES 85).
//
// IEEE floats of sign 0 order as their bits do as signed integers, and floats
// of sign 1 in reverse as unsigned ones; every sign-0 value is a
// non-negative signed integer, every sign-1 value an unsigned integer above
// every sign-0 one. So max(x, v) for v of sign 0 is a signed integer max on
// the bits, and for v of sign 1 an unsigned min; min likewise with the roles
// swapped. Both reductions are fire-and-forget (red), like the adds.
//
// NaN propagates (torch.maximum's rule). A NaN of sign 0 stays under every
// max reduction (the greatest signed value of sign 0, below no unsigned of
// sign 1 in the unsigned min), a NaN of sign 1 under every min reduction: a
// NaN value goes in as that "absorbing" NaN. A NaN that self held from the
// start with the other sign would be overwritten, so each update reads the
// element first: the first write to an element comes after its writer's
// read, which can only see the value self started with (coherence on one
// address), and a writer that sees a NaN writes the absorbing NaN instead.
// The same read skips updates that leave the element as it stands (a stale
// read is safe: max only raises what memory holds, min only lowers it).
#pragma once
#include "jitops/bits.cuh"

namespace jitops {

__device__ __forceinline__ void red_max_signed(unsigned int* a, unsigned int v) {
  asm volatile("red.global.max.s32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void red_min_signed(unsigned int* a, unsigned int v) {
  asm volatile("red.global.min.s32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void red_max_unsigned(unsigned int* a, unsigned int v) {
  asm volatile("red.global.max.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void red_min_unsigned(unsigned int* a, unsigned int v) {
  asm volatile("red.global.min.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void red_max_signed(unsigned long long* a, unsigned long long v) {
  asm volatile("red.global.max.s64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
__device__ __forceinline__ void red_min_signed(unsigned long long* a, unsigned long long v) {
  asm volatile("red.global.min.s64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
__device__ __forceinline__ void red_max_unsigned(unsigned long long* a, unsigned long long v) {
  asm volatile("red.global.max.u64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
__device__ __forceinline__ void red_min_unsigned(unsigned long long* a, unsigned long long v) {
  asm volatile("red.global.min.u64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}

// *addr = max(*addr, v) (kMax) or min, for float and double, where `cur` is
// what this thread read at addr before (float_extremum_read); a caller with
// several updates reads all of them first, so that the reads go out together
// rather than each after the reduction before it (scatter.cuh's apply loop).
template <bool kMax, typename F>
__device__ __forceinline__ void float_extremum_from(F* addr, F cur, F v) {
  typedef typename Bits<F>::type Word;
  constexpr Word kSign = Word(1) << (8 * sizeof(Word) - 1);
  Word* word = (Word*)addr;
  const Word cur_bits = bits_of(cur), bits = bits_of(v);
  const bool v_nan = v != v, cur_nan = cur != cur;
  if (cur_nan && ((cur_bits & kSign) == 0) == kMax) return;  // the absorbing NaN stands
  if (v_nan || cur_nan) {
    const Word nan_bits = v_nan ? bits : cur_bits;
    if (kMax) red_max_signed(word, nan_bits & ~kSign);
    else red_max_unsigned(word, nan_bits | kSign);
    return;
  }
  if (kMax ? !(cur < v) : !(v < cur)) return;  // v leaves the element as it stands
  const bool negative = (bits & kSign) != 0;
  if (kMax) {
    if (negative) red_min_unsigned(word, bits);
    else red_max_signed(word, bits);
  } else {
    if (negative) red_max_unsigned(word, bits);
    else red_min_signed(word, bits);
  }
}

template <typename F> __device__ __forceinline__ F float_extremum_read(const F* addr) { return *addr; }

template <bool kMax, typename F>
__device__ __forceinline__ void float_extremum(F* addr, F v) {
  float_extremum_from<kMax>(addr, float_extremum_read(addr), v);
}

}  // namespace jitops
