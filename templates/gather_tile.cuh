// The tile regime of the gather family: index_select and take along an axis
// where the output is dense along a dim (a) that x is not, and x is dense along
// another (b): a channels_last or transposed x against the contiguous output.
// The strided walk read x a sector per element there, leaving the rest of each
// sector to the caches until the next row (take of uint16 from channels_last
// (9, 167, 65536, 1) along axis 0: 35% of copy speed, PyTorch 37%).
// Where the index varies along the batch dims only, a tile has one index
// value: the block loads it once, reads x's tile along b into shared memory,
// and writes the output along a. IndexEach: the index varies along a or b (a
// is the indexed dim itself: an index_select along a dim x is not dense in,
// into a contiguous output whose inner dim it is; or torch.gather's index
// varies along b; or b is the indexed dim, x stored with the axis innermost:
// its stride 0 along b, each lane reads the row of its own value): each element
// loads its own index value (from L1: a warp's lanes lie along b), and x's
// reads still run along b. IndexEach 2: the
// index varies along both and is denser along a (torch.gather's full index
// into a contiguous output): loaded along b, each lane's value would sit in
// its own sector; the block loads the tile's values along a into shared
// memory first.
#pragma once
#include "elementwise_tile.cuh"
#include "gather.cuh"
#include "jitops/gather_tile_params.h"

namespace jitops {

template <typename Unit, typename IndexT, bool Wrap, int TA, int TB, int Threads, int IndexEach, int Dims, int Bits>
__device__ __forceinline__ void gather_tiles(const GatherTileParams<Dims, Bits>& p) {
  typedef typename OffsetTypes<Bits>::Linear L;
  typedef typename OffsetTypes<Bits>::Stride S;
  constexpr int kItems = TA * TB / Threads;
  static_assert(kItems <= 64, "a thread's bad items are one 64-bit mask");
  constexpr bool kStagedIndex = IndexEach == 2;
  __shared__ Unit tile[TA][staged_tile_pitch(int(sizeof(Unit)), TB)];
  __shared__ IndexT staged_index[kStagedIndex ? TA : 1][kStagedIndex ? staged_tile_pitch(int(sizeof(IndexT)), TB) : 1];
  const Unit* x = static_cast<const Unit*>(p.tiles.data[kTileX]);
  Unit* out = static_cast<Unit*>(p.tiles.data[kTileOut]);
  for (L t = blockIdx.x; t < p.tiles.tiles; t += gridDim.x) {
    // The index staged (torch.gather's full index): the tiles of one stretch of x's dense dim b run together
    // over the batch, x's axis among it (a channels_last int8 x along H: x read 7 times from DRAM, 313 us;
    // in a row from L2, 260). Other tiles keep b before the batch (index_select's tiles: 0.967x batch first).
    TileOrigin<Bits, kGatherTileOperands> o =
        tile_origin<TA, TB, kGatherTileOperands, kStagedIndex>(p.tiles, t);
    const IndexT* index = static_cast<const IndexT*>(p.tiles.data[kTileIndex]);
    bool good = true;
    IndexT raw = 0;
    unsigned long long bad_items = 0;  // IndexEach: reported after the stores, off the loads' path
    if constexpr (kStagedIndex) {  // along a, the index's dense dim; the barrier: every value stored
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        int a, b;
        tile_item<TA, Threads>(j, a, b);
        staged_index[a][b] = load_readonly(index + o.at_clamped(p.tiles, kTileIndex, a, b));
      }
      __syncthreads();
    }
    if constexpr (!IndexEach) {
      raw = load_readonly(index + o.base[kTileIndex]);
      int64_t v = (int64_t)raw;
      good = index_in_range<Wrap>(v, p.axis_size);
      o.base[kTileX] += S(good ? v : 0) * p.axis_stride;
    }
    Unit vals[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      int a, b;
      tile_item<TB, Threads>(j, b, a);
      if constexpr (IndexEach) {
        IndexT own;
        if constexpr (kStagedIndex)
          own = staged_index[a][b];
        else
          own = load_readonly(index + o.at_clamped(p.tiles, kTileIndex, a, b));
        int64_t v = (int64_t)own;
        const bool in_range = index_in_range<Wrap>(v, p.axis_size);
        vals[j] = in_range ? load_readonly(x + o.at_clamped(p.tiles, kTileX, a, b) + S(v) * p.axis_stride)
                           : zero_unit<Unit>();
        if (!in_range && o.inside(a, b)) bad_items |= 1ull << j;
      } else {
        vals[j] = good ? load_readonly(x + o.at_clamped(p.tiles, kTileX, a, b)) : zero_unit<Unit>();
      }
    }
    __syncwarp();  // every load issued before the first store to shared memory waits on its own
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      int a, b;
      tile_item<TB, Threads>(j, b, a);
      tile[a][b] = vals[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      int a, b;
      tile_item<TA, Threads>(j, a, b);
      if (o.inside(a, b)) out[o.at(p.tiles, kTileOut, a, b)] = tile[a][b];
    }
    if (!good && threadIdx.x == 0)
      report_bad_index(p.error, (int64_t)o.base[kTileIndexPosition], (int64_t)raw, p.axis_size, p.op_code);
    if (IndexEach && bad_items) {
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        if (!((bad_items >> j) & 1)) continue;
        int a, b;
        tile_item<TB, Threads>(j, b, a);
        report_bad_index(p.error, (int64_t)o.at(p.tiles, kTileIndexPosition, a, b),
                         (int64_t)load_readonly(index + o.at(p.tiles, kTileIndex, a, b)), p.axis_size, p.op_code);
      }
    }
    __syncthreads();  // the next tile reuses the shared tile
  }
}

}  // namespace jitops
