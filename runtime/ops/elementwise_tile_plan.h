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
#include "runtime/int_math.h"
#include "runtime/launch.h"
#include "runtime/ops/elementwise_plan.h"
#include "jitops/elementwise_tile_params.h"

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
  int tile_a = 0;       // elements along a (the inner dim) and along b: powers of two, or fitted to a
  int tile_b = 0;       // short dim (set by the plan)

  bool tiled() const { return dim_b >= 0; }
};

// The tile's edges for blocks of `threads`: 4 elements a thread (the loads
// a thread has in flight, as the strided walk's unroll), so the block size
// tunes the tile: 256 threads take 32 x 32 (rows of 32-256 bytes, 1- to
// 8-byte elements), 1024 take 64 x 64. Four a thread keeps ~50 registers with
// two staged operands; 16 a thread (64 x 64 at 256 threads) took 176-184,
// one block an SM (byte operands at 8 or 16 a thread took 72-165 and ran no
// faster: NOTES 102). A short dim gives its share to the other, so the tile
// keeps its elements. Powers of two; the elementwise plan fits them to short
// dims, the caller shrinks them for shared memory.
void tile_edges(int64_t size_a, int64_t size_b, int threads, int& tile_a, int& tile_b);
constexpr int kTileItemsPerThread = 4;

// The block for the tile_edges tile_a x tile_b: at most `threads`, fewer where
// short dims shrank the tile (in whole warps past one, for a fitted tile), so that each thread keeps its 4 elements in
// flight and the per-tile work (the tile's origin, two barriers) is shared by
// as many. A tile shrunk after that for shared memory keeps its block (capped
// at one element a thread): shared memory bounds the tiles an SM holds there.
// Seed 599's bfloat16 (1429x69x16x16) divided by its transpose in 16 x 16
// planes: 256 threads of one element each 139.8 us, 64 of four 77.2 (PyTorch
// 92.0); over the 24 sweep plans of seeds 100-1800 it changes, elementwise and
// gathers, 1.14x faster in geomean, none slower by more than 3% (NOTES 97).
int tile_threads(int threads, int tile_a, int tile_b);

// Halves the tile's longer edge until `staged_bytes(tile_a, tile_b)`, the
// shared memory its staged operands take, fits in kTileSharedBytes.
template <typename StagedBytes>
void shrink_to_shared_memory(int& tile_a, int& tile_b, StagedBytes staged_bytes) {
  while (staged_bytes(tile_a, tile_b) > kTileSharedBytes) {
    if (tile_a >= tile_b)
      tile_a /= 2;
    else
      tile_b /= 2;
  }
}

// Tiles over the inner dim a and `dim_b`, times the batch (every other dim).
int64_t tile_count(const IterationSpace& s, int dim_b, int tile_a, int tile_b);

// The geometry of a tile parameter block, for `operands` operands of `s`:
// sizes and tile counts along a (the inner dim) and `dim_b`, the batch dims
// (outermost first), and every operand's strides along all of them.
template <int Dims, int Bits>
void fill_tile_geometry(const IterationSpace& s, int dim_b, int tile_a, int tile_b, int operands,
                        ElementwiseTileParams<Dims, Bits>& q) {
  typedef typename OffsetTypes<Bits>::Linear L;
  typedef typename OffsetTypes<Bits>::Stride S;
  typedef typename OffsetTypes<Bits>::Divider D;
  const int a = s.ndim - 1;
  q.tiles = L(tile_count(s, dim_b, tile_a, tile_b));
  q.size_a = L(s.sizes[a]);
  q.size_b = L(s.sizes[dim_b]);
  q.tiles_a = D(L(ceil_div(s.sizes[a], tile_a)));
  q.tiles_b = D(L(ceil_div(s.sizes[dim_b], tile_b)));
  for (int k = 0; k < operands; ++k) {
    q.stride_a[k] = S(s.strides[k][a]);
    q.stride_b[k] = S(s.strides[k][dim_b]);
  }
  q.batch_ndim = 0;
  for (int d = 0; d < s.ndim; ++d) {
    if (d == a || d == dim_b) continue;
    q.batch_sizes[q.batch_ndim] = D(L(s.sizes[d]));
    for (int k = 0; k < operands; ++k) q.batch_strides[k][q.batch_ndim] = S(s.strides[k][d]);
    ++q.batch_ndim;
  }
}

// Whether `p`, collapsed into `s`, is tiled, along which b and staging which operands.
ElementwiseTile choose_elementwise_tile(const ElementwiseProblem& p, const IterationSpace& s);

// Shapes the tile for the resolved tuning's block size, and fills the spec's
// tile fields, the offset width, the grid (capped at the tuning's waves) and
// the parameters.
void plan_elementwise_tiles(const ElementwiseProblem& p, const IterationSpace& s, ElementwiseTile tile,
                            bool offsets_fit_32_bits, const DeviceInfo& device, LaunchPlan& plan);

// Development knob: the tile's edges fitted to the sizes of a and b where powers of two would leave over
// a quarter idle (the default), or powers of two throughout.
void set_elementwise_tile_fitted(bool fitted);

}  // namespace jitops
