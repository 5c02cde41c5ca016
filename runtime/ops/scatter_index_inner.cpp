#include "runtime/ops/scatter_index_inner.h"

#include <atomic>

#include "jitops/scatter_params.h"
#include "runtime/int_math.h"

namespace jitops {
namespace {

constexpr int64_t kSectorBytes = 32;
constexpr int64_t kFewIndexRows = 32;  // a warp's width: one warp can take a column's every term
constexpr int64_t kCopyRowsWithinL2 = 2048;
constexpr int64_t kMinUnits = int64_t(1) << 16;
std::atomic<int> g_index_inner_mode{-1};

// The layout: a 2-D walk whose rows go through the index (self does not move
// along them, the index does) and whose columns move self by a sector or more
// (each lane of a column-wise warp writes its own sector), while the index's
// destinations lie under a sector apart (a column's terms share sectors).
bool index_rows_share_sectors(const ScatterProblem& p) {
  const IterationSpace& s = p.space;
  return s.ndim == 2 && s.strides[kIndexOperand][0] != 0 && s.strides[kIndexOperand][1] == 0 &&
         s.strides[kSelfOperand][0] == 0 && magnitude(s.strides[kSelfOperand][1]) * p.element_bytes >= kSectorBytes &&
         magnitude(p.axis_stride) * p.element_bytes < kSectorBytes;
}

}  // namespace

int index_inner_mode() { return g_index_inner_mode.load(std::memory_order_relaxed); }
void set_index_inner_mode(int mode) { g_index_inner_mode = mode; }

// Where it pays (H100, NOTES 103). The column-wise walk's lanes write a sector
// each, a few bytes of it, and a thread takes its column's rows `unroll` at a
// time, the rest a grid of blocks later: a self past the L2 went out to DRAM
// and back once a pass (seed 1839's int64 index_add_ of 30 random rows into
// (64x1885291) transposed: 2847 us; index innermost 912, PyTorch 1054). Index
// innermost, a warp's lanes write one column's sectors and read src a row
// apart, sectors its block's other warps read next.
// - Copies (index_copy_, whose index names each destination once): 147 plans
//   of seeds 100-1900, 1.52x in geomean, 0.95x-8.1x (float16 (512x131072)
//   transposed from 443 rows 3869 -> 479 us, PyTorch 3861). Into a self
//   within the L2 only up to 2048 rows: from 3661 on, 0.77x-1.03x (the
//   column-wise walk's partly written sectors stayed in L2 until whole, and
//   its src reads were a warp's 32 neighbours).
// - Adds: up to a warp's width of rows into a self past half the L2, 52
//   plans, 1.22x (the least 0.80x: 2 or 4 repeated rows, which one thread
//   already took in one step). More rows depend on the index's values, which
//   the planner cannot see: random ones gained up to 5.2x, repeated and sorted
//   ones lost down to 0.29x (hot destinations the column-wise walk kept in L2
//   and the index-wise one made its lanes meet on); within the L2,
//   0.51x-1.29x.
// - Under 64K units a call is about its launch: 115 such plans, 0.97x.
bool index_goes_inner(const ScatterProblem& p, const DeviceInfo& device) {
  const int mode = index_inner_mode();
  if (mode == 0 || !index_rows_share_sectors(p)) return false;
  if (mode == 1) return true;
  const int64_t rows = p.space.sizes[0];
  const bool past_l2 = device.past_half_l2((p.self_hi - p.self_lo) * p.element_bytes);
  if (p.space.numel() < kMinUnits) return false;
  if (p.op == kScatterCopy) return past_l2 || rows <= kCopyRowsWithinL2;
  return p.op == kScatterAdd && rows <= kFewIndexRows && past_l2;
}

}  // namespace jitops
