#include "runtime/ops/gather_row_local.h"

#include <algorithm>
#include <cstdlib>

#include "runtime/int_math.h"

namespace jitops {
namespace {

constexpr int64_t kSectorBytes = 32;
// x's rows between these sizes: below, a warp's picks in a row already share
// sectors and a block's row is little work; above, the rows of the blocks an
// SM runs no longer fit its L1.
constexpr int64_t kMinRowBytes = 4 * 1024, kMaxRowBytes = 24 * 1024;
// Picks a row at least this many times the row's sectors: each sector then
// serves several picks from L1 (and a block's pass of 4 columns a thread is
// full: 128 sectors, 1024 picks).
constexpr int64_t kPicksPerSector = 8;
// Units of fewer bytes keep the walk: its 4 rows a thread share an index
// load, where a row-local thread loads one an element.
constexpr int kMinUnitBytes = 4;
// Columns a thread at a time: their index loads, then their x loads, in flight together.
constexpr int kColumnsAThread = 4;

}  // namespace

// The 2-D walk gives a block one column range of a few rows, and the
// hardware runs a row's column ranges on different SMs: a warp's 32 picks
// from a row of x read 32 of its sectors from L2 for 32 elements, L2 moving
// 32 bytes for every element of 8 or fewer (seed 1807's float64 take of 6069
// random picks from each of 5086 rows of 16 KB: 226.4 us, PyTorch 206.1). A
// block over every column of its row reads the row's sectors from L2 once
// and serves the rest of its picks from L1 (141.9 us).
// Measured on H100 (NOTES 99) over the sweep plans of seeds 100-3400 with
// rows of 1-32 KB and 8 picks a sector or more, by what the planner cannot
// see: random picks gain up to 2.6x (seed 1732's int8, 508 -> 196 us,
// PyTorch 429); sorted or repeated ones, whose warps the walk already serves
// from a few sectors, lose up to 1.76x. The losses gather where this rule
// stops: units of 1 and 2 bytes (13 random plans 0.79x the time, 19 sorted
// or repeated 1.19x), rows under 4 KB (seed 2468's uint32 rows of 2 KB, 663
// sorted picks: 81.3 -> 113.5 us), rows of 32 KB, and under 1.5 waves of
// blocks (a second wave for a few: seed 1721's int64, 23.1 -> 32.8 us).
// Within it, 26 plans 0.85x the time in geomean, below PyTorch's 10 -> 2;
// the 9 of them from seeds 1810-3400, drawn after the rule was fitted,
// 1.00x (seed 1942's int32, 499.5 -> 266.7 us, PyTorch 307.6; seed 2319's
// repeated uint32 picks 41.7 -> 49.4, PyTorch 55.1).
int gather_row_local_columns(const GatherProblem& p, const LaunchShape& shape, const DeviceInfo& device,
                             int threads) {
  const IterationSpace& s = p.space;
  if (p.flat || shape.dims != 2 || s.ndim != 2 || std::abs(p.axis_stride) != 1) return 0;
  if (s.strides[kX][1] != 0 || s.strides[kIndex][1] == 0) return 0;  // dim 1: the picks
  if (p.element_bytes < kMinUnitBytes) return 0;
  const int64_t row_bytes = p.axis_size * p.element_bytes;
  if (row_bytes < kMinRowBytes || row_bytes > kMaxRowBytes) return 0;
  if (s.sizes[1] < kPicksPerSector * ceil_div(row_bytes, kSectorBytes)) return 0;
  const int64_t wave = int64_t(device.sm_count) * std::max(1, device.max_threads_per_sm / threads);
  if (2 * s.sizes[0] < 3 * wave) return 0;
  return kColumnsAThread;
}

}  // namespace jitops
