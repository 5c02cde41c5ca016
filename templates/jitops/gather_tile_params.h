// Parameter block of the gather family's tile regime (templates/gather_tile.cuh),
// shared by the host planner and the kernel. The tiles are the elementwise
// tile regime's (jitops/elementwise_tile_params.h) over four operands: the
// output, x before the index's term, the index, and the index's C-order
// position of each element (for the report of a bad value).
#pragma once
#include "jitops/elementwise_tile_params.h"
#include "jitops/index_errors.h"

namespace jitops {

enum GatherTileOperand { kTileOut = 0, kTileX = 1, kTileIndex = 2, kTileIndexPosition = 3, kGatherTileOperands = 4 };

template <int Dims, int Bits>
struct GatherTileParams {
  ElementwiseTileParams<Dims, Bits> tiles;  // data: out, x, index; strides in elements
  IndexErrorSlot* error;
  int64_t axis_size;  // valid indices are [0, axis_size), or [-axis_size, axis_size) with wrap
  typename OffsetTypes<Bits>::Stride axis_stride;
  int32_t op_code;
  int32_t pad;
};

}  // namespace jitops
