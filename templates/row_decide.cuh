// Row sums' pass 0, where the planner cannot tell whether sorting the rows
// pays (runtime/ops/row_sum_plan.cpp): the answer lies in the index's values,
// which only the device sees. Sorting pays where many rows share a
// destination (8 hot destinations: 2-4x faster than the atomics, whose adds
// contend on a few rows); it loses where the index is sorted already (the
// atomic kernel combines its runs: float64 rows of 512, 37264 sorted rows,
// 132 against 69 us) and where few rows share one (float64 rows of 96, 1.9 a
// destination at random: 125 against 82 us; benchmarks/NOTES.md item 114).
// One block reads kRowDecideSamples index entries spread evenly over the
// rows, and stores into *p.taken whether the sorted passes run (1) or return
// at once and leave the rows to the gated atomic kernel after them (0):
// sorted where the samples are not in order and at least p.hot_pairs pairs of
// them share a destination (the planner's count for the rows a destination it
// wants at least, had the index that many equal entries throughout).
#pragma once
#include "row_sort.cuh"

namespace jitops {

template <typename IndexT>
__device__ __forceinline__ void row_decide(const RowSortParams& p) {
  constexpr int kPerThread = kRowDecideSamples / kRowSortThreads;
  static_assert(kPerThread * kRowSortThreads == kRowDecideSamples, "samples: a whole number a thread");
  __shared__ long long sample[kRowDecideSamples];
  __shared__ unsigned long long slot_key[kRowDecideSlots];  // a destination + 1; 0: empty
  __shared__ int slot_count[kRowDecideSlots];
  __shared__ int pairs;
  for (int s = threadIdx.x; s < kRowDecideSlots; s += blockDim.x) {
    slot_key[s] = 0;
    slot_count[s] = 0;
  }
  if (threadIdx.x == 0) pairs = 0;
  const IndexT* index = static_cast<const IndexT*>(p.index);
  const int n = p.rows < kRowDecideSamples ? int(p.rows) : kRowDecideSamples;
  long long v[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {  // every load in flight before the first is used
    const int k = j * kRowSortThreads + int(threadIdx.x);
    if (k < n) v[j] = (long long)load_readonly(index + ((int64_t)k * p.rows / n) * p.index_stride);
  }
  __syncthreads();
  const unsigned lane = lane_id();
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int k = j * kRowSortThreads + int(threadIdx.x);
    if (k < n) sample[k] = v[j];
    const bool valid = k < n && (unsigned long long)v[j] < (unsigned long long)p.destinations;
    const unsigned long long key = valid ? (unsigned long long)v[j] + 1 : 0;
    // A warp's equal destinations go in once, as a group of g: the samples of a hot index would
    // otherwise serialize on a few slots' shared atomics.
    const unsigned group = __match_any_sync(0xFFFFFFFFu, key);
    if (valid && lane == unsigned(__ffs(group) - 1)) {
      unsigned h = unsigned((key * 0x9E3779B97F4A7C15ull) >> 40) & (kRowDecideSlots - 1);
      for (;;) {
        const unsigned long long held = atomicCAS(&slot_key[h], 0ull, key);
        if (held == 0 || held == key) break;
        h = (h + 1) & (kRowDecideSlots - 1);
      }
      const int g = __popc(group);
      const int before = atomicAdd(&slot_count[h], g);
      atomicAdd(&pairs, before * g + g * (g - 1) / 2);  // pairs this group makes, with itself and before
    }
  }
  __syncthreads();
  bool descends = false;
  for (int k = threadIdx.x; k + 1 < n; k += blockDim.x) descends = descends || sample[k] > sample[k + 1];
  descends = __syncthreads_or(descends);
  if (threadIdx.x == 0) *p.taken = descends && pairs >= p.hot_pairs ? 1 : 0;
}

}  // namespace jitops
