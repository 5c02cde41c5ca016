// Parameter block of histc (templates/histogram.cuh), shared by the host
// planner and the kernels.
//
// The scratch words (64-bit):
//   [0] blocks of the counting kernel that are done (the last one writes out)
//   [1, 1 + global_copies * bins) the counts, in global_copies copies: block
//       b adds into copy b % global_copies, and the last block sums them
//   then, with an automatic range, 3 words per block of the range kernel:
//       ~key of its smallest value, key of its largest, 1 if it saw any
// With an explicit range one memset zeroes [0, 1 + global_copies * bins),
// except for a small x counted by a single block, which needs no scratch,
// and for counts added straight into the output (counts_into_out: each block
// adds its counts into `out`, which a memset zeroed, and no block waits for
// the others: no counter, no copies, no scratch);
// with an automatic range there is no memset: the range kernel zeroes those
// words (or the output, when the counts go straight into it), and each counting block folds the range kernel's partials itself
// (at most kHistogramMaxRangeBlocks of them, a few per thread).
// Keys order values as unsigned integers, so min and max fold by max.
// Atomics on one address serialize in L2 (about 2.5 ns each on an H200), so
// the copies spread the per-block adds of the counts over more addresses.
#pragma once
#include "jitops/index_errors.h"

namespace jitops {

constexpr int kHistogramHeaderWords = 1;
constexpr int kHistogramMaxRangeBlocks = 4096;

template <int Dims>
struct HistogramParams {
  const void* x;
  unsigned long long* scratch;
  void* out;
  IndexErrorSlot* error;  // an auto range that is not finite is reported here
  int64_t n;
  int64_t out_stride;
  int32_t bins;
  int32_t auto_range;     // 1: the range comes from the range kernel's partials
  int32_t copies;         // sub-histograms in shared memory (0: count in global memory)
  int32_t op_code;
  double lo, hi;          // explicit range of a floating x, already in x's type
  int64_t ilo, ihi;       // explicit range of an integer x
  int32_t ndim;           // strided layout (Dims > 0)
  int32_t global_copies;  // copies of the counts in scratch (at least 1)
  int32_t range_blocks;   // blocks of the range kernel (partials to fold)
  int32_t single_block;   // 1: one block counts everything and writes out itself (no scratch, no memset)
  int32_t counts_into_out;  // 1: each block adds its counts into out (zeroed before it); no last block
  int32_t out_bytes;        // bytes of an output element (the range kernel zeroes out with them)
  int64_t sizes[Dims > 0 ? Dims : 1];
  int64_t strides[Dims > 0 ? Dims : 1];
};

}  // namespace jitops
