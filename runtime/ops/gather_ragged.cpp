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

// The rule (H100, NOTES 113), the scatter's (NOTES 111) and one more condition: no uniform pack of two
// elements or more fits. Over 134 sweep plans of seeds 100-2399 that ragged packs change, taking them
// wherever the layout allows ran 0.94x in geomean: calls under 1 MB lost (0.89x-0.93x: V times fewer units,
// each waiting on its index before its two loads), rows under 16 packs lost (0.71x), 8-byte elements lost
// (0.89x), and so did calls that a narrower uniform pack already served (2 elements 0.88x, 4 of them 0.85x:
// a pack read as two loads against one). Fitted there: rows of 32 packs or more, 1 MB written or more,
// elements of 4 bytes or less, an element a unit otherwise (those 25 plans 1.235x, 20 faster by 3% or more,
// 2 slower; below PyTorch 0 -> 0). On 70 plans of seeds 2400-3599, drawn at the same time and not looked
// at for the fit: the 10 it takes 1.51x (8 faster, 2 slower by 3-4%), below PyTorch 2 -> 0.
constexpr int64_t kRulePacksARow = 32;
constexpr int64_t kRuleMinBytes = int64_t(1) << 20;
constexpr int kRuleMaxElementBytes = 4;

}  // namespace

int set_gather_ragged_mode(int mode) { return g_mode.exchange(mode); }

int gather_ragged_packs(GatherProblem& p, int max_bytes, int (*uniform_pack)(const GatherProblem&, int)) {
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
  const int uniform_vec = uniform_pack(p, max_bytes);
  if (uniform_vec * p.element_bytes == max_bytes || (mode != 1 && uniform_vec > 1)) return 0;
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
