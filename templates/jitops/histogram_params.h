// Parameter block of histc (templates/histogram.cuh), shared by the host
// planner and the kernels.
//
// The scratch words, zeroed by one memset before the kernels run:
//   [0] ~key of the smallest value seen (atomicMax of the complement)
//   [1] key of the largest value seen
//   [2] 1 when any value was seen (auto range)
//   [3] blocks of the counting kernel that are done (the last one writes out)
//   [4, 4 + global_copies * bins) the counts, in global_copies copies: block
//       b adds into copy b % global_copies, and the last block sums them
// Keys order values as unsigned integers, so a cross-block min/max is one
// atomicMax per block: no race between blocks, no second pass.
// Atomics on one address serialize in L2 (about 2.5 ns each on an H200), so
// every block folds its own values first and sends one atomic per word; the
// copies spread the per-block adds of the counts over more addresses.
#pragma once
#include "jitops/index_errors.h"

namespace jitops {

constexpr int kHistogramHeaderWords = 4;

template <int Dims>
struct HistogramParams {
  const void* x;
  unsigned long long* scratch;
  void* out;
  IndexErrorSlot* error;  // an auto range that is not finite is reported here
  int64_t n;
  int64_t out_stride;
  int32_t bins;
  int32_t auto_range;     // 1: the range comes from scratch[0..2]
  int32_t copies;         // sub-histograms in shared memory (0: count in global memory)
  int32_t op_code;
  double lo, hi;          // explicit range of a floating x, already in x's type
  int64_t ilo, ihi;       // explicit range of an integer x
  int32_t ndim;           // strided layout (Dims > 0)
  int32_t global_copies;  // copies of the counts in scratch (at least 1)
  int64_t sizes[Dims > 0 ? Dims : 1];
  int64_t strides[Dims > 0 ? Dims : 1];
};

}  // namespace jitops
