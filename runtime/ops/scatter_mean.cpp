#include "runtime/ops/scatter_mean.h"

#include <atomic>
#include <numeric>

#include "runtime/collapse.h"

namespace jitops {

namespace {
std::atomic<int> g_memory_order{1};
std::atomic<int> g_reset_mode{-1};
std::atomic<int> g_counts_with_adds{1};
std::atomic<int> g_finish_unroll{4};
}  // namespace

int mean_memory_order() { return g_memory_order.load(std::memory_order_relaxed); }
void set_mean_memory_order(int mode) { g_memory_order = mode; }
int mean_reset_mode() { return g_reset_mode.load(std::memory_order_relaxed); }
void set_mean_reset_mode(int mode) { g_reset_mode = mode; }
void set_mean_counts_with_adds(int mode) { g_counts_with_adds = mode; }
int mean_finish_unroll() { return g_finish_unroll.load(std::memory_order_relaxed); }
int set_mean_finish_unroll(int unroll) { return g_finish_unroll.exchange(unroll); }

// Over 140 include_self=True means of seeds 100-1900 (H100, NOTES 106), the
// counts in the adds' pass ran 1.13x faster in geomean than a pass of their
// own, up to 1.7x (float32 into 117510 elements 61.6 -> 36.2 us), but up to
// 2x slower where self and its counts passed ~25 MB (float32 one column of
// 5.1M, 1516 -> 2707 us: the adds' and the counts' atomics in one pass
// thrashed the L2) or 16-bit adds in packs lost them (bfloat16 rows of 8 from
// 9.7M units, 153 -> 229). With both kept to their pass of their own, the
// same plans 1.17x (fitted on them).
bool mean_counts_with_adds(const TensorDesc& self, const DeviceInfo& device) {
  if (g_counts_with_adds.load(std::memory_order_relaxed) == 0) return false;
  return !device.past_half_l2(self.numel() * (self.element_bytes() + int64_t(sizeof(int))));
}

void counts_strides(const TensorDesc& self, int64_t* out) {
  // self's dims in the order the passes over self walk them (memory_order, as
  // plan_scatter orders those passes): no allocation on the call's path.
  int order[kMaxDims + 16];
  std::iota(order, order + self.ndim, 0);
  if (mean_memory_order() != 0) {
    IterationSpace space;
    space.ndim = self.ndim;
    space.operands = 1;
    for (int d = 0; d < self.ndim; ++d) {
      space.sizes[d] = self.shape[d];
      space.strides[0][d] = self.strides[d] < 0 ? -self.strides[d] : self.strides[d];
    }
    const int priority[] = {0};
    memory_order(space, priority, 1, order);
  }
  int64_t s = 1;
  for (int k = self.ndim - 1; k >= 0; --k) {
    out[order[k]] = s;
    s *= self.shape[order[k]];
  }
}

bool mean_reset_by_counts(int64_t units) {
  const int mode = mean_reset_mode();
  if (mode >= 0) return mode == 1;
  // From half a million units: below that the extra launch (2-3 us) cost
  // more than the stores it saved. Over 160 sweep plans of seeds 100-699 (an
  // A/B on H100, NOTES 105) the rule ran 1.05x faster in geomean than never,
  // always 1.01x: random indices gained up to 1.9x (float64 into 11.4M
  // elements, 2650 -> 1377 us against PyTorch's 2777), sorted ones lost up to
  // 1.15x (their stores already ran in order), all still ahead of PyTorch.
  return units >= (int64_t(1) << 19);
}

}  // namespace jitops
