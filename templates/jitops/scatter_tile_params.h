// Parameter block of the accumulate family's tile regime (templates/scatter_tile.cuh): the gather tiles'
// block (self as the output, src as x) and index_add_'s alpha.
#pragma once
#include "jitops/gather_tile_params.h"

namespace jitops {

template <int Dims, int Bits>
struct ScatterTileParams {
  GatherTileParams<Dims, Bits> tiles;
  double alpha;       // index_add_'s alpha for floating types
  int64_t alpha_int;  // ... for integer types
  int64_t self_lo, self_hi;  // self's span in element offsets, for paired 16-bit adds (fast_atomic_add)
};

}  // namespace jitops
