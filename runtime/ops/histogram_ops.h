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

// How a histc call runs, chosen once a call (histc_launches) and read by the
// binding (what to zero before the launches) and by plan_histc:
// - cluster: one sm_90 cluster of blocks counts x and writes out itself (an
//   explicit range, a small x, a row of bins per block in shared memory and,
//   where the count kernel could add into out, many bins for the values);
// - single_block: one block does (an explicit range, a tiny x);
// - otherwise the count kernel (after the range kernel for an automatic
//   range), whose blocks add their counts straight into out where
//   counts_into_out (counters in shared memory, an output whose adds of
//   integer counts are exact: float32 for x under 2^24 values, float64,
//   int32, int64; zeroed first by a memset for an explicit range into a
//   contiguous out, or by the range kernel; 12.4 -> 8.1 us for 406817
//   float32 values on the H100, NOTES 77) or hand them to its last block.
// One launch (cluster or single block) and counts into out need no scratch.
struct HistcLaunches {
  bool automatic = false;
  bool cluster = false;
  bool single_block = false;
  bool counts_into_out = false;
  bool one_launch() const { return cluster || single_block; }
};
HistcLaunches histc_launches(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r,
                             const DeviceInfo& device);

// Strategy override for measurement: 0 heuristic, 1 shared memory, 2 global.
void set_histogram_strategy(int strategy);
// The most one sm_90 cluster counts: bytes of a dense x, values of a strided one.
void set_histc_cluster_limits(int64_t dense_bytes, int64_t strided_values);

// Appends the launches: range (when automatic), then count; or the one
// launch of a single block or cluster.
void plan_histc(const TensorDesc& x, const TensorDesc& out, const HistcRequest& r, const HistcLaunches& launches,
                unsigned long long* scratch, const DeviceInfo& device, IndexErrorSlot* error_slot,
                std::vector<LaunchPlan>& plans);

}  // namespace jitops
