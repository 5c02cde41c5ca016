// The unit a data-moving kernel copies: 1, 2, 4, 8 or 16 bytes. Ops that only
// move elements are specialized by unit size, not dtype, so float32 and int32
// share a kernel, and a contiguous inner slice moves as 16-byte vectors.
#pragma once
#include "jitops/types.h"

namespace jitops {

template <int Bytes> struct UnitOf;
template <> struct UnitOf<1> { typedef uint8_t type; };
template <> struct UnitOf<2> { typedef uint16_t type; };
template <> struct UnitOf<4> { typedef uint32_t type; };
template <> struct UnitOf<8> { typedef uint64_t type; };
template <> struct UnitOf<16> { typedef uint4 type; };

// N elements moved as one aligned vector (N * sizeof(T) <= 16).
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <typename T>
__device__ __forceinline__ T load_readonly(const T* p) { return __ldg(p); }

// A Pack through the read-only path (ld.global.nc), as one load of its size.
template <typename P>
__device__ __forceinline__ P load_pack_readonly(const P* p) {
  typedef typename UnitOf<sizeof(P)>::type U;
  const U u = __ldg(reinterpret_cast<const U*>(p));
  return *reinterpret_cast<const P*>(&u);
}

// Vec elements as one load of their size through the read-only path, and as one store.
template <typename T, int Vec>
__device__ __forceinline__ Pack<T, Vec> load_pack(const T* p) {
  typedef typename UnitOf<sizeof(T) * Vec>::type Raw;
  Raw raw = load_readonly(reinterpret_cast<const Raw*>(p));
  Pack<T, Vec> out;
  memcpy(&out, &raw, sizeof(out));
  return out;
}

template <typename T, int Vec>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, Vec>& v) {
  typedef typename UnitOf<sizeof(T) * Vec>::type Raw;
  Raw raw;
  memcpy(&raw, &v, sizeof(raw));
  *reinterpret_cast<Raw*>(p) = raw;
}

template <typename T>
__device__ __forceinline__ T zero_unit() { return T(0); }
template <>
__device__ __forceinline__ uint4 zero_unit<uint4>() { return make_uint4(0, 0, 0, 0); }

}  // namespace jitops
