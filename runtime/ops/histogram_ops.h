// histc as the core sees them: the range (explicit, converted to x's type as
// PyTorch converts it, or found on the device), the counting strategy, and
// the launches.
#pragma once
#include <vector>

#include "runtime/launch.h"
#include "runtime/scalar.h"
#include "runtime/tensor_desc.h"

namespace jitops {

struct HistcRequest {
  int64_t bins = 100;
  double min = 0, max = 0;  // min == max: the data's own range
  DType counts = DType::Float32;
};

// Checks x's dtype, bins and the range; TypeError/ValueError naming the argument.
void check_histc(const TensorDesc& x, const HistcRequest& r);

// Copies of the counts in scratch (templates/jitops/histogram_params.h).
int histogram_global_copies(int64_t bins);

// True when the range comes from the data (min == max on a non-empty x).
bool histc_range_is_automatic(const TensorDesc& x, const HistcRequest& r);

// 64-bit words of scratch the launches need, and how many of them must be
// zeroed before the launches (none with an automatic range: its range
// kernel zeroes them).
size_t histc_scratch_words(int64_t bins);
size_t histc_zeroed_words(int64_t bins, bool automatic);

// True when one block counts x and writes the output itself: an explicit
// range, a small x, bins that fit in shared memory. Then nothing is zeroed
// before the launch and it is the only one.
bool histc_single_block(const TensorDesc& x, const HistcRequest& r, const DeviceInfo& device);

// True when one cluster of blocks (sm_90 and newer) counts x and writes the
// output itself: an explicit range, a small x, a row of bins per block that
// fits in shared memory, and (where the count kernel could add into `out`)
// many bins for the values. Then, as for a single block, no scratch.
bool histc_in_one_cluster(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r,
                          const DeviceInfo& device);

// Either of the two: one launch that needs no scratch.
inline bool histc_in_one_launch(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r,
                                const DeviceInfo& device) {
  return histc_in_one_cluster(x, out, r, device) || histc_single_block(x, r, device);
}

// True when the count kernel's blocks add their counts straight into `out`
// (no scratch counts, no last block summing them: 12.4 -> 8.1 us for 406817
// float32 values on the H100, NOTES 77): counts in shared memory, outputs that
// add integers exactly (float32 for x under 2^24 values, float64, int32,
// int64), zeroed before the count kernel by a memset (explicit range, a
// contiguous out) or by the range kernel (automatic range, any out).
bool histc_counts_into_out(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r,
                           const DeviceInfo& device);

// Strategy override for measurement: 0 heuristic, 1 shared memory, 2 global.
void set_histogram_strategy(int strategy);
// The most one sm_90 cluster counts: bytes of a dense x, values of a strided one; and the values a bin
// from which the count kernel adding into out is taken instead.
void set_histc_cluster_limits(int64_t dense_bytes, int64_t strided_values, int64_t values_per_bin = 256);
// The most values one block counts straight into the output.
void set_histc_single_block_values(int64_t values);

// Appends the launches: range (when automatic), then count; or the one
// launch of a single block or cluster.
void plan_histc(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r, unsigned long long* scratch,
                const DeviceInfo& device, IndexErrorSlot* error_slot, std::vector<LaunchPlan>& plans);

}  // namespace jitops
