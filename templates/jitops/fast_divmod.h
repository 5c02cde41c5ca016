// Division by a loop-invariant divisor, done with a multiply-high and a shift.
// Offsets of 32-bit problems are computed with FastDivmod (ONNX Runtime's
// fast_divmod, after Granlund & Montgomery): for divisor d, l = ceil(log2 d),
// m = floor(2^32 (2^l - d) / d) + 1, and n / d = (umulhi(m, n) + n) >> l for
// every n < 2^31. 64-bit problems use WideDivmod, a plain division, because
// the multiply-high trick needs a 128-bit product there.
#pragma once
#include "jitops/types.h"

namespace jitops {

struct FastDivmod {
  uint32_t divisor;
  uint32_t multiplier;
  uint32_t shift;

#if !defined(JITOPS_DEVICE_COMPILE)
  FastDivmod() : divisor(1), multiplier(1), shift(0) {}
  // Host only: d must be in [1, 2^31].
  explicit FastDivmod(uint32_t d) : divisor(d) {
    uint32_t l = 0;
    while ((uint64_t(1) << l) < d) ++l;
    shift = l;
    multiplier = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << l) - d)) / d + 1);
  }
#endif

#if defined(JITOPS_DEVICE_COMPILE)
  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, multiplier) + n) >> shift;
  }
  __device__ __forceinline__ uint32_t divmod(uint32_t n, uint32_t& remainder) const {
    uint32_t q = div(n);
    remainder = n - q * divisor;
    return q;
  }
#endif
};

struct WideDivmod {
  uint64_t divisor;

#if !defined(JITOPS_DEVICE_COMPILE)
  WideDivmod() : divisor(1) {}
  explicit WideDivmod(uint64_t d) : divisor(d) {}
#endif

#if defined(JITOPS_DEVICE_COMPILE)
  __device__ __forceinline__ uint64_t divmod(uint64_t n, uint64_t& remainder) const {
    uint64_t q = n / divisor;
    remainder = n - q * divisor;
    return q;
  }
#endif
};

// Linear index, stride and divider types of one offset width.
template <int Bits>
struct OffsetTypes;

template <>
struct OffsetTypes<32> {
  typedef uint32_t Linear;
  typedef int32_t Stride;
  typedef FastDivmod Divider;
};

template <>
struct OffsetTypes<64> {
  typedef uint64_t Linear;
  typedef int64_t Stride;
  typedef WideDivmod Divider;
};

}  // namespace jitops
