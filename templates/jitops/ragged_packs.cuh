// Ragged packs: rows dense along the innermost dim whose length, pitch or
// start no pack size divides (rows of 215945 int32, a slice of 1292157
// float32 at any offset, int16 rows of 54385). There each element went alone,
// one store, load or atomic of 1-4 bytes at a time. Instead a unit is the pack
// aligned in memory that holds the destination's row place u * Vec: shifted
// down to the aligned address, it moves whole where it lies inside the row,
// element by element at the row's two ends. scatter.cuh's Peeled walk (self
// the destination) and gather.cuh's RaggedVec walk (out the destination) use
// it; their planners give each unit its place u.
#pragma once
#include "jitops/vector_units.cuh"

namespace jitops {

template <int Unroll>
struct PackSpans {
  unsigned char lo[Unroll], hi[Unroll];  // the unit's elements in its row: [lo, hi) of its pack
};

// How many elements below `at` (the unit's nominal first element, row place
// u * Vec) its aligned pack begins.
template <typename T, int Vec>
__device__ __forceinline__ int pack_shift(const T* at) {
  return int((reinterpret_cast<unsigned long long>(at) / sizeof(T)) % Vec);
}

// The row's elements in unit u's pack, shifted down by `shift`, of a row of
// `len`: [lo, hi) of the pack; false where the pack lies wholly past the row's
// end (a row's places need one unit more than its packs at some phases).
template <int Vec>
__device__ __forceinline__ bool pack_span(int64_t u, int shift, int64_t len, unsigned char& lo, unsigned char& hi) {
  const int64_t first = u * Vec - shift;  // the pack's first element's place in the row
  const int64_t begin = first < 0 ? -first : 0;
  const int64_t end = first + Vec > len ? len - first : Vec;
  if (end <= begin) return false;
  lo = (unsigned char)begin;
  hi = (unsigned char)end;
  return true;
}

// A whole pack's elements from `s`, wherever it lies, in two steps: the
// loads (start_realigned) and the shift (finish_realigned). A gather's x rows
// lie at the phases its index picks, unlike out's: the two aligned packs
// around s are read, their words funnel-shifted into place. No branch
// between: where s is aligned, the second load reads the first pack again
// (an L1 hit) and the shift is zero, so a thread's units can all have their
// loads in flight before the first shift waits on them (with a branch a unit,
// each unit's shift held back the next unit's loads). Both loads stay inside
// aligned packs that hold an element of the row, so they touch no page the
// row does not. The shift moves words by selects, never by an index into a
// register array (that would put the array in local memory). Packs of 4
// bytes or more.
template <typename T, int Vec>
struct RealignedLoad {
  enum : int { kBytes = int(sizeof(T)) * Vec, kWords = kBytes / 4 };  // an enum: no symbol in the PTX
  static_assert(kBytes >= 4 && kBytes % 4 == 0, "ragged packs of whole words");
  Pack<uint32_t, kWords> low, high;
  unsigned misaligned;  // bytes past the aligned pack below s
};

template <typename T, int Vec>
__device__ __forceinline__ RealignedLoad<T, Vec> start_realigned(const T* s) {
  typedef RealignedLoad<T, Vec> L;
  L r;
  const unsigned long long at = reinterpret_cast<unsigned long long>(s);
  r.misaligned = unsigned(at % L::kBytes);
  const uint32_t* base = reinterpret_cast<const uint32_t*>(at - r.misaligned);
  r.low = load_pack<uint32_t, L::kWords>(base);
  r.high = load_pack<uint32_t, L::kWords>(base + (r.misaligned ? L::kWords : 0));
  return r;
}

template <typename T, int Vec>
__device__ __forceinline__ Pack<T, Vec> finish_realigned(const RealignedLoad<T, Vec>& r) {
  constexpr int kWords = RealignedLoad<T, Vec>::kWords;
  uint32_t w[2 * kWords];
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    w[i] = r.low.v[i];
    w[kWords + i] = r.high.v[i];
  }
  const unsigned words = r.misaligned / 4, bits = (r.misaligned % 4) * 8;
  if (kWords > 2 && (words & 2)) {
#pragma unroll
    for (int i = 0; i + 2 < 2 * kWords; ++i) w[i] = w[i + 2];
  }
  if (kWords > 1 && (words & 1)) {
#pragma unroll
    for (int i = 0; i + 1 < 2 * kWords; ++i) w[i] = w[i + 1];
  }
  Pack<uint32_t, kWords> words_out;
#pragma unroll
  for (int i = 0; i < kWords; ++i) words_out.v[i] = __funnelshift_r(w[i], w[i + 1], bits);
  Pack<T, Vec> out;
  memcpy(&out, &words_out, sizeof(out));
  return out;
}

}  // namespace jitops
