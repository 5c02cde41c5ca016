// The tile regime of index_copy_ and index_add_: self dense along the walk's
// inner dim (a) and src dense along another (b), a transposed or
// channels_last src against a contiguous self. The strided walk, in self's
// order, read src a sector per element there (seed 1909's bfloat16
// index_copy_ of (64x17x1x4096) from src strides (1, 64, 1088, 1088): each
// lane's read 2176 bytes from its neighbour's, 37.5 us against PyTorch's
// 33.4 for 17.8 MB moved). A block reads src's tile with its lanes along b
// into shared memory, then stores (copies) or adds (native atomics: float32,
// float64, int32, int64, float16, bfloat16) self's tile along a. The index varies along
// the indexed dim only, where self does not move but through it: a batch dim
// (one value a tile, loaded once), or b itself (IndexEach: the value of each
// of the tile's rows, the same for a warp's lanes along a). Index values name
// self's elements along the axis, [0, axis_size), as PyTorch's index_copy_
// and index_add_ take them.
#pragma once
#include "elementwise_tile.cuh"
#include "jitops/atomics.cuh"
#include "jitops/scatter_tile_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

// Stores, or adds: a lone 16-bit float through its aligned pair (PyTorch's FastAtomicAdd, as the walk's
// lone units): the 16-bit atomics of the element alone ran 0.61x the walk's speed over 94 plans (NOTES 116).
template <typename T, bool Add, bool HasAlpha, typename S, typename P>
__device__ __forceinline__ void tile_update(T* self, S off, T v, const P& p) {
  if constexpr (Add)
    fast_atomic_add(self, off, S(p.self_lo), S(p.self_hi), HasAlpha ? scale(v, p) : v);
  else
    self[off] = v;
}

template <typename T, typename IndexT, int TA, int TB, int Threads, bool IndexEach, bool Add, bool HasAlpha,
          int Dims, int Bits>
__device__ __forceinline__ void index_tiles(const ScatterTileParams<Dims, Bits>& sp) {
  typedef typename OffsetTypes<Bits>::Linear L;
  typedef typename OffsetTypes<Bits>::Stride S;
  const GatherTileParams<Dims, Bits>& p = sp.tiles;
  constexpr int kItems = TA * TB / Threads;
  __shared__ T tile[TA][staged_tile_pitch(int(sizeof(T)), TB)];
  const T* src = static_cast<const T*>(p.tiles.data[kTileX]);
  T* self = static_cast<T*>(p.tiles.data[kTileOut]);
  const IndexT* index = static_cast<const IndexT*>(p.tiles.data[kTileIndex]);
  for (L t = blockIdx.x; t < p.tiles.tiles; t += gridDim.x) {
    TileOrigin<Bits, kGatherTileOperands> o = tile_origin<TA, TB, kGatherTileOperands>(p.tiles, t);
    // The tile's one value, in flight with src's loads (nothing waits on it before the updates).
    IndexT raw = 0;
    if constexpr (!IndexEach) raw = load_readonly(index + o.base[kTileIndex]);
    T vals[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      int a, b;
      tile_item<TB, Threads>(j, b, a);
      vals[j] = load_readonly(src + o.at_clamped(p.tiles, kTileX, a, b));
    }
    __syncwarp();  // every load issued before the first store to shared memory waits on its own
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      int a, b;
      tile_item<TB, Threads>(j, b, a);
      tile[a][b] = vals[j];
    }
    __syncthreads();
    const bool good = IndexEach || (uint64_t)(int64_t)raw < (uint64_t)p.axis_size;
    const S step = good ? S((int64_t)raw) * p.axis_stride : S(0);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      int a, b;
      tile_item<TA, Threads>(j, a, b);
      if (!o.inside(a, b)) continue;
      if constexpr (IndexEach) {
        const IndexT own = load_readonly(index + o.at(p.tiles, kTileIndex, a, b));
        if ((uint64_t)(int64_t)own < (uint64_t)p.axis_size)
          tile_update<T, Add, HasAlpha>(self, o.at(p.tiles, kTileOut, a, b) + S((int64_t)own) * p.axis_stride,
                                        tile[a][b], sp);
        else if (a == 0)  // one report a row: its value is the row's
          report_bad_index(p.error, (int64_t)o.at(p.tiles, kTileIndexPosition, a, b), (int64_t)own, p.axis_size,
                           p.op_code);
      } else if (good) {
        tile_update<T, Add, HasAlpha>(self, o.at(p.tiles, kTileOut, a, b) + step, tile[a][b], sp);
      }
    }
    if (!good && threadIdx.x == 0)
      report_bad_index(p.error, (int64_t)o.base[kTileIndexPosition], (int64_t)raw, p.axis_size, p.op_code);
    __syncthreads();  // the next tile reuses the shared tile
  }
}

}  // namespace jitops
