// The order a 2-D grid's blocks take their (column range, row group) in.
// Blocks start in the order of their linear id, x (columns) fastest. Rows
// first (the planner's choice: gather_plan.cpp, scatter_plan.cpp) renumbers
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

__device__ __forceinline__ BlockPlace block_place(bool rows_first) {
  if (!rows_first) return {blockIdx.x, blockIdx.y};
  const uint64_t id = (uint64_t)blockIdx.y * gridDim.x + blockIdx.x;  // 64-bit: x up to 2^31 - 1 blocks
  return {unsigned(id / gridDim.y), unsigned(id % gridDim.y)};
}

}  // namespace jitops
