// The order a 2-D grid's blocks take their (column range, row group) in.
// Blocks start in the order of their linear id, x (columns) fastest. Rows
// first (the planner's choice: gather_block_order.cpp, scatter_plan.cpp) renumbers
// them so that the blocks of one column range take every row group before
// the next range, as PyTorch's grids do: blocks running together then share
// what they read or write (a repeated index value's slice, a row's
// destinations) while it is in L2.
#pragma once
#include "jitops/types.h"

namespace jitops {

struct BlockPlace {
  unsigned col, row;
};

// Bands (gather_block_order.cpp, a full index): the blocks of `band` neighbouring column
// ranges take every row group before the next band, so that what blocks
// running together read spans all rows but few columns; band 1 is rows first,
// 0 the hardware's order.
__device__ __forceinline__ BlockPlace block_place_banded(unsigned band) {
  if (band == 0) return {blockIdx.x, blockIdx.y};
  const uint64_t id = (uint64_t)blockIdx.y * gridDim.x + blockIdx.x;  // 64-bit: x up to 2^31 - 1 blocks
  const uint64_t per_band = (uint64_t)band * gridDim.y, band_id = id / per_band, in_band = id - band_id * per_band;
  const unsigned first = unsigned(band_id) * band, width = min(band, gridDim.x - first);
  return {first + unsigned(in_band % width), unsigned(in_band / width)};
}

__device__ __forceinline__ BlockPlace block_place(bool rows_first) { return block_place_banded(rows_first ? 1 : 0); }

}  // namespace jitops
