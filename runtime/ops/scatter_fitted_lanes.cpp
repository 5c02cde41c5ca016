#include "runtime/ops/scatter_fitted_lanes.h"

#include <algorithm>
#include <atomic>

#include "runtime/int_math.h"

namespace jitops {
namespace {

std::atomic<int> g_fitted_lanes_mode{-1};

}  // namespace

int fitted_lanes_mode() { return g_fitted_lanes_mode.load(std::memory_order_relaxed); }
void set_fitted_lanes_mode(int mode) { g_fitted_lanes_mode = mode; }

// H100, NOTES 103: 180 of the 4496 sweep plans of seeds 100-1900 it changes,
// both ways in one build. Adds and copies: 86 plans 1.042x in geomean,
// 0.89x-1.60x, below 0.97x of PyTorch 12 -> 1 (seed 478's float16 index_add_
// of 10 sorted columns into (262144x3), 16 lanes a row: 33.5 -> 23.4 us,
// PyTorch 27.8; the least, 502's int64 scatter_add_ along rows of 300 in two
// blocks of 150 rather than 256 and 44, 491.6 -> 552.1, PyTorch 768.0).
// Fills 1.00x (down to 0.78x), products 0.97x, max and min 0.98x, the
// identity stores before them 1.02x (down to 0.91x): they keep their blocks.
// A block of 32 lanes or more that would fit under 32 (45 columns in two
// blocks of 23) loses the run combining lane_runs_2d gives blocks of 32 lanes
// or more: 0.41x-1.67x, so it stays. One that fits at 32 or more keeps that
// combining even where its warps then span two rows (35 columns in 35 lanes):
// lanes combine by destination, so that is only a question of speed, and such
// plans were among the 86 (seed 641's float32 scatter_add_ of 35 columns
// 281.6 -> 221.6 us).
void fit_block_columns(const IterationSpace& s, int threads, LaunchShape& shape) {
  if (fitted_lanes_mode() == 0 || shape.dims != 2) return;
  const int64_t cols = s.sizes[1], rows = s.sizes[0];
  const int64_t lanes = shape.block[0], fitted = fitted_width(cols, lanes);
  if (fitted == lanes || (lanes >= 32 && fitted < 32)) return;
  const int64_t block_rows = std::max<int64_t>(1, threads / fitted);
  shape.block[0] = unsigned(fitted);
  if (shape.block[1] > 1) {
    shape.block[1] = unsigned(block_rows);
    const int64_t row_blocks = ceil_div(rows, block_rows * shape.unroll);
    shape.grid[1] = unsigned(std::min<int64_t>(shape.grid[1], row_blocks));
  }
}

}  // namespace jitops
