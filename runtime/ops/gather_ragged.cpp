#include "runtime/ops/gather_ragged.h"

#include <atomic>
#include <cstdint>

namespace jitops {
namespace {

std::atomic<int> g_mode{-1};

// Where the layout allows them at all: rows shorter than this many packs would move mostly at their ends,
// an element at a time.
constexpr int64_t kMinPacksARow = 4;
// A pack of fewer bytes is not a whole number of the words load_realigned shifts.
constexpr int kMinPackBytes = 4;

// The rule (provisional, as the scatter's: NOTES 111): rows of 32 packs or more, 1 MB written or more,
// elements of 4 bytes or less.
constexpr int64_t kRulePacksARow = 32;
constexpr int64_t kRuleMinBytes = int64_t(1) << 20;
constexpr int kRuleMaxElementBytes = 4;

}  // namespace

int set_gather_ragged_mode(int mode) { return g_mode.exchange(mode); }

int gather_ragged_packs(GatherProblem& p, int max_bytes) {
  const int mode = g_mode.load(std::memory_order_relaxed);
  if (mode == 0 || p.flat) return 0;
  const int vec = max_bytes / p.element_bytes;
  if (vec < 2 || vec * p.element_bytes < kMinPackBytes) return 0;
  IterationSpace& s = p.space;
  const int c = s.ndim - 1;
  if (c < 0 || s.strides[kOut][c] != 1 || s.strides[kX][c] != 1 || s.strides[kIndex][c] != 0) return 0;
  const int64_t row = s.sizes[c];
  if (row < kMinPacksARow * vec) return 0;
  if (mode != 1 && (row < kRulePacksARow * vec || s.numel() * p.element_bytes < kRuleMinBytes ||
                    p.element_bytes > kRuleMaxElementBytes))
    return 0;
  // A pack shifted down to its aligned address spans at most one more pack than the row.
  s.sizes[c] = (row + 2 * (vec - 1)) / vec;
  s.strides[kOut][c] = vec;
  s.strides[kX][c] = vec;
  // A bad index is reported at its row's first place: every place of the row holds that index value.
  s.strides[kIndexPosition][c] = 0;
  p.peel_len = row;
  return vec;
}

}  // namespace jitops
