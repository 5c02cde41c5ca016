// index_fill_ as one pass over self. Each block first marks, in shared
// memory, the positions along the axis that the index names (a byte each,
// repeats landing on one mark, bad values reported); then its threads walk
// self in memory order, a unit of Vec neighbouring elements at a time, and
// store the value where the unit's position is marked.
//
// Why: along an inner axis of a few elements the index walk (scatter.cuh)
// stores an element per index value a row, each store a partial sector a row
// apart, and every repeated value again; this pass writes each marked
// element once, in whole units side by side (NOTES 100).
#pragma once
#include "jitops/fill_marked_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

// Whether none / all of N neighbouring marks (bytes of 0 or 1) are set,
// read as words of up to 8 bytes.
template <int N>
struct MarkRun {
  typedef typename UnitOf<(N < 8 ? N : 8)>::type Word;
  static constexpr int kWords = N < 8 ? 1 : N / 8;
  static constexpr Word kAllSet = Word(~Word(0) / 255);  // 0x0101...01
  __device__ __forceinline__ static void read(const unsigned char* m, bool& none, bool& all) {
    none = all = true;
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
      const Word word = reinterpret_cast<const Word*>(m)[w];
      none = none && word == Word(0);
      all = all && word == kAllSet;
    }
  }
};

template <typename T, typename IndexT, int Vec, typename P>
__device__ __forceinline__ void fill_marked(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  typedef typename UnitOf<sizeof(T) * Vec>::type Unit;
  extern __shared__ __align__(16) unsigned char marks[];

  const int64_t padded = (p.axis_size + 15) & ~int64_t(15);
  for (int64_t i = int64_t(threadIdx.x) * 16; i < padded; i += int64_t(blockDim.x) * 16)
    *reinterpret_cast<uint4*>(marks + i) = make_uint4(0, 0, 0, 0);
  __syncthreads();
  // Every block reads the whole index, 4 values a thread in flight at a time.
  const IndexT* index = static_cast<const IndexT*>(p.index);
  constexpr int kInFlight = 4;
  for (int64_t first = threadIdx.x; first < p.index_count; first += int64_t(blockDim.x) * kInFlight) {
    IndexT v[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int64_t i = first + int64_t(k) * blockDim.x;
      v[k] = i < p.index_count ? load_readonly(index + i * p.index_stride) : IndexT(0);
    }
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int64_t i = first + int64_t(k) * blockDim.x;
      if (i >= p.index_count) break;
      if (v[k] >= 0 && v[k] < p.axis_size)
        marks[v[k]] = 1;
      else if (blockIdx.x == 0)  // one block reports; every block skips the value
        report_bad_index(p.error, i, (int64_t)v[k], p.axis_size, p.op_code);
    }
  }
  const bool flat = p.elements != 0;
  if (flat) {  // the marks again past the axis's end, so that a unit's Vec positions read on without wrapping
    __syncthreads();
    for (int i = threadIdx.x; i < Vec; i += blockDim.x) marks[p.axis_size + i] = marks[i % p.axis_size];
  }
  __syncthreads();

  T value;
  memcpy(&value, p.value, sizeof(T));
  Pack<T, Vec> full;
#pragma unroll
  for (int j = 0; j < Vec; ++j) full.v[j] = value;
  Unit full_unit;
  memcpy(&full_unit, &full, sizeof(Unit));
  T* self = static_cast<T*>(p.self);
  const Linear step = Linear(gridDim.x) * blockDim.x;
  for (Linear u = Linear(blockIdx.x) * blockDim.x + threadIdx.x; u < p.units; u += step) {
    Stride at = 0, mark = 0;
    if (flat) {
      Linear position;
      p.period.divmod(u * Vec, position);
      at = Stride(u) * Vec;
      mark = Stride(position);
    } else {
      Linear rest = u;
#pragma unroll
      for (int d = P::kDims - 1; d >= 0; --d) {
        Linear r = rest;
        if (d > 0) rest = p.sizes[d].divmod(rest, r);
        at += Stride(r) * p.self_strides[d];
        mark += Stride(r) * p.mark_strides[d];
      }
    }
    Unit* unit = reinterpret_cast<Unit*>(self + at);
    if (Vec == 1 || !p.marks_inner) {
      if (marks[mark]) *unit = full_unit;
      continue;
    }
    bool none = true, all = true;
    if (flat) {  // at any position: byte by byte
#pragma unroll
      for (int j = 0; j < Vec; ++j) {
        none = none && !marks[mark + j];
        all = all && marks[mark + j];
      }
    } else {
      MarkRun<Vec>::read(marks + mark, none, all);
    }
    if (none) continue;
    if (all) {
      *unit = full_unit;
      continue;
    }
    // Some marked: the others keep their values, and the unit goes back whole.
    const Unit old = *unit;
    Pack<T, Vec> out;
    memcpy(&out, &old, sizeof(Unit));
#pragma unroll
    for (int j = 0; j < Vec; ++j)
      if (marks[mark + j]) out.v[j] = value;
    Unit merged;
    memcpy(&merged, &out, sizeof(Unit));
    *unit = merged;
  }
  if (flat && blockIdx.x == 0) {  // the last elements, past the whole units
    for (Linear e = p.units * Vec + threadIdx.x; e < p.elements; e += blockDim.x) {
      Linear position;
      p.period.divmod(e, position);
      if (marks[position]) self[e] = value;
    }
  }
}

}  // namespace jitops
