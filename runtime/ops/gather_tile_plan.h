// Planning of the gather family's tile regime (templates/gather_tile.cuh):
// index_select and take along an axis whose output is dense along its inner
// dim a while x is dense along another dim b (channels_last or transposed x
// against the contiguous output). The index varies along neither (one value a
// tile), or along a or b (a value per element: a the indexed dim itself,
// torch.gather's index along b, or b the indexed dim itself where x is stored
// with the indexed axis innermost: x read along the axis at the values).
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/gather_plan.h"

namespace jitops {

struct GatherTileChoice {
  int dim_b = -1;             // the collapsed dim x is dense along; -1: the strided walk stays
  bool index_each = false;    // the index varies along a or b: each element loads its own value
  bool index_staged = false;  // and it is denser along a than along b: loaded along a into shared memory
};

// Whether `p` is tiled, and along which dims; `tuning`: the strided walk's launch configuration, which the
// tiles must beat.
GatherTileChoice gather_tile_choice(const GatherProblem& p, const DeviceInfo& device, const LaunchTuning& tuning);

// Shapes the tile for `threads`, and fills the spec's tile fields, the grid
// (capped at `waves`) and the parameters.
void plan_gather_tiles(const GatherProblem& p, const GatherTileChoice& choice, bool offsets_fit_32_bits,
                       IndexErrorSlot* error_slot, const DeviceInfo& device, LaunchPlan& plan);

}  // namespace jitops
