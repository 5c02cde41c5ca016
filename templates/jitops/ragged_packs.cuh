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

// A whole pack's elements from `s`, wherever it lies: one load where s is
// aligned like a pack, else the two aligned packs around it, their words
// funnel-shifted into place (a gather's x rows lie at the phases its index
// picks, unlike out's). Both loads stay inside aligned packs that hold an
// element of the row, so they touch no page the row does not. A shift chosen
// at run time moves words by selects, never by an index into a register
// array (that would put the array in local memory). Packs of 4 bytes or more.
template <typename T, int Vec>
__device__ __forceinline__ Pack<T, Vec> load_realigned(const T* s) {
  constexpr int kBytes = int(sizeof(T)) * Vec;
  constexpr int kWords = kBytes / 4;
  static_assert(kBytes >= 4 && kBytes % 4 == 0, "ragged packs of whole words");
  const unsigned long long at = reinterpret_cast<unsigned long long>(s);
  const unsigned misaligned = unsigned(at % kBytes);
  if (misaligned == 0) return load_pack<T, Vec>(s);
  const uint32_t* base = reinterpret_cast<const uint32_t*>(at - misaligned);
  const Pack<uint32_t, kWords> low = load_pack<uint32_t, kWords>(base);
  const Pack<uint32_t, kWords> high = load_pack<uint32_t, kWords>(base + kWords);
  uint32_t w[2 * kWords];
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    w[i] = low.v[i];
    w[kWords + i] = high.v[i];
  }
  const unsigned words = misaligned / 4, bits = (misaligned % 4) * 8;
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
