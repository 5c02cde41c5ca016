// Planning of the elementwise tile regime (templates/elementwise_tile.cuh):
// after the dims are ordered by memory and collapsed, the walk's inner dim a
// is where the first output is dense. When another array operand is dense
// along some other dim b (a transposed view against a contiguous one), the
// strided walk reads it a sector per element and leaves the rest of each
// sector to the caches until the next row along b comes (NOTES item 39: ~4
// fetches a sector for a float64 transpose). Tiles over (a, b) read such
// operands along b through shared memory instead.
#pragma once
#include <cstdint>

#include "runtime/collapse.h"
#include "runtime/launch.h"
#include "runtime/ops/elementwise_plan.h"

namespace jitops {

// The shortest a and b a tile is taken for. From 16 on, a staged operand's
// run along b fills a 32-byte sector for 2-byte elements and wider (half of
// one for 1-byte), and the agreeing operands' runs along a as much. A tile is
// always more than half full along each dim (its edges are powers of two, 17
// takes 32), so the threshold is not about idle lanes: it keeps the shapes
// whose gain is unmeasured (a or b under 16, where a warp of the strided walk
// spans several rows or the runs are a few elements) on the strided walk, as
// they were. The sweep is to say whether 8 pays too (NOTES item 49).
constexpr int64_t kMinTileExtent = 16;

// Static shared memory of a block: the staged tiles fit in it, the tile
// shrinks when many operands are staged (at most 7: the first output never is).
constexpr int kTileSharedBytes = 48 * 1024;

struct ElementwiseTile {
  int dim_b = -1;       // the collapsed dim the staged operands are dense along; -1: no tile
  uint32_t staged = 0;  // bit k: operand k moves through shared memory
  int tile_a = 0;       // elements along a (the inner dim) and along b, powers of two (set by the plan)
  int tile_b = 0;

  bool tiled() const { return dim_b >= 0; }
};

// Whether `p`, collapsed into `s`, is tiled, along which b and staging which operands.
ElementwiseTile choose_elementwise_tile(const ElementwiseProblem& p, const IterationSpace& s);

// Shapes the tile for the resolved tuning's block size, and fills the spec's
// tile fields, the offset width, the grid (capped at the tuning's waves) and
// the parameters.
void plan_elementwise_tiles(const ElementwiseProblem& p, const IterationSpace& s, ElementwiseTile tile,
                            bool offsets_fit_32_bits, const DeviceInfo& device, LaunchPlan& plan);

}  // namespace jitops
