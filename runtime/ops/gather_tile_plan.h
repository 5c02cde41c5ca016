// Planning of the gather family's tile regime (templates/gather_tile.cuh):
// index_select and take along an axis whose output is dense along its inner
// dim a while x is dense along another dim b (channels_last or transposed x
// against the contiguous output), the index varying along neither.
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/gather_plan.h"

namespace jitops {

// The collapsed dim b that x is dense along, for a tiled launch of `p`, or -1
// where the strided walk stays.
int gather_tile_dim(const GatherProblem& p);

// Shapes the tile for `threads`, and fills the spec's tile fields, the grid
// (capped at `waves`) and the parameters.
void plan_gather_tiles(const GatherProblem& p, int dim_b, bool offsets_fit_32_bits, IndexErrorSlot* error_slot,
                       const DeviceInfo& device, LaunchPlan& plan);

}  // namespace jitops
