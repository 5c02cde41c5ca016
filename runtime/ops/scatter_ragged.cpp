#include "runtime/ops/scatter_ragged.h"

#include <atomic>
#include <cstdint>

#include "jit/scatter_source.h"
#include "jitops/scatter_params.h"

namespace jitops {
namespace {

std::atomic<int> g_mode{-1};

// Where the layout allows them at all: rows shorter than this many packs would move mostly at their ends,
// an element at a time.
constexpr int64_t kMinPacksARow = 4;

// The rule (H100, NOTES 111). Over 144 sweep plans of seeds 100-2399 that ragged packs change, taking them
// wherever the layout allows ran 1.10x faster in geomean, but rows under 16 packs lost (25 plans 0.89x),
// calls under 8 us lost (44 plans 0.97x: V times fewer units a thread, each waiting on its index before
// its src where rows lie at different phases), and 8-byte elements lost (packs of 2: 14 plans 0.90x).
// Fitted there: rows of 32 packs or more, 1 MB written or more, elements of 4 bytes or less (those 76 plans
// 1.29x, all 144 1.14x; below PyTorch 3 -> 2). On 87 plans of seeds 2400-3599, drawn after: the 49 it takes
// 1.45x, all 1.23x; below PyTorch 1 -> 1.
constexpr int64_t kRulePacksARow = 32;
constexpr int64_t kRuleMinBytes = int64_t(1) << 20;
constexpr int kRuleMaxElementBytes = 4;

}  // namespace

int set_ragged_packs_mode(int mode) { return g_mode.exchange(mode); }

int ragged_packs(ScatterProblem& p, int max_bytes) {
  const int mode = g_mode.load(std::memory_order_relaxed);
  if (mode == 0 || p.counts) return 1;
  // Plain stores of any element, and the adds whose packs go out as one reduction (float32 red.v4, 16-bit
  // floats as packed pairs): other adds and compare-and-swap updates take an element an atomic anyway.
  const bool vector_add =
      p.op == kScatterAdd && (p.element == kElemFloat32 || p.element == kElemFloat16 || p.element == kElemBFloat16);
  if (p.op != kScatterCopy && p.op != kScatterFill && !vector_add) return 1;
  const int vec = max_bytes / p.element_bytes;
  IterationSpace& s = p.space;
  const int c = s.ndim - 1;
  if (vec < 2 || c < 0 || s.strides[kSelfOperand][c] != 1 || s.strides[kIndexOperand][c] != 0) return 1;
  const bool has_src = p.op != kScatterFill;
  const int64_t src_step = has_src ? s.strides[kSrcOperand][c] : 0;
  if (src_step != 0 && src_step != 1) return 1;
  const int64_t row = s.sizes[c];
  if (row < kMinPacksARow * vec) return 1;
  if (mode != 1 && (row < kRulePacksARow * vec || s.numel() * p.element_bytes < kRuleMinBytes ||
                    p.element_bytes > kRuleMaxElementBytes))
    return 1;
  // A pack shifted down to its aligned address spans at most one more pack than the row.
  s.sizes[c] = (row + 2 * (vec - 1)) / vec;
  s.strides[kSelfOperand][c] = vec;
  if (has_src) s.strides[kSrcOperand][c] = src_step * vec;
  s.strides[kIndexPositionOperand][c] *= vec;
  for (int d = 0; d < s.ndim; ++d) s.strides[kCountsOperand][d] = d == c ? 1 : 0;  // the unit's place u
  p.peel_len = row;
  p.peel_src_step = int(src_step);
  p.peel_fixed_phase = p.axis_size <= 1 || p.axis_stride % vec == 0;
  collapse(s);
  return vec;
}

}  // namespace jitops
