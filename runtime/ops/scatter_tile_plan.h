// Planning of the tile regime of index_copy_ and index_add_ (templates/scatter_tile.cuh): self dense along
// the walk's inner dim a, src dense along another dim b (a transposed or channels_last src against a
// contiguous self). src goes through shared memory, read along b, then stored or added to self along a, as
// the gather tiles read x (runtime/ops/gather_tile_plan.h) with the index on the other side.
#pragma once
#include "runtime/launch.h"
#include "runtime/ops/scatter_plan.h"

namespace jitops {

struct IndexTileChoice {
  ScatterProblem problem;  // its space ordered by self's memory and collapsed, as the tiles walk it
  int dim_b = -1;          // the collapsed dim src is dense along; -1: the strided walk stays
  bool index_each = false; // b is the indexed dim: each of the tile's rows has its own index value
};

// Whether copies or adds `p` (its space as built, in src's dims) are tiled; if so, along which dims in `choice`
// (left as it was otherwise: the per-call path of calls that do not tile copies nothing).
bool index_tile_choice(const ScatterProblem& p, const DeviceInfo& device, IndexTileChoice& choice);

// Shapes the tile for the resolved tuning's block size (plan.tuning), and fills the spec's tile fields, the
// grid (capped at the tuning's waves) and the parameters.
void plan_index_tiles(const IndexTileChoice& choice, bool offsets_fit_32_bits, IndexErrorSlot* error_slot,
                     const DeviceInfo& device, LaunchPlan& plan);

// Development knob: 1 (the default) tiles where index_tile_choice says, 0 never; returns the previous mode.
int set_scatter_tiles(int mode);

}  // namespace jitops
