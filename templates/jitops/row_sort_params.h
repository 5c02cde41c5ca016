// Parameter block of the row sums (templates/row_sort.cuh), shared by the
// host planner and the kernels: index_add_ / scatter_add_ where each index
// entry moves one whole contiguous row of src into one row of self.
//
// The rows are sorted by destination in two levels, with atomics in shared
// memory only: into buckets of kRowSortTile destinations ("tiles"), then
// within each bucket. Blocks of the count and place passes each take a chunk
// of chunk_rows consecutive rows.
// Scratch, in 32-bit words (none needs zeroing: every pass stores plainly):
//   tile_sums[tiles]            valid rows per tile (scan)
//   total[1]                    valid rows in all (place, block 0)
//   tile_start[tiles]           first position of each tile's bucket (place,
//                               block 0; every place block folds its own)
//   chunk_tile[tiles * chunks]  rows of chunk c in tile t at [t * chunks + c],
//                               then (scan) their first position in the bucket
//   chunk_in_order[chunks]      1 where chunk c's destinations never decrease,
//                               from the chunk's row before on, all valid (count)
//   in_order[1]                 every chunk's 1 (scan, block 0): the index is
//                               sorted, and the passes between take rows as they lie
//   bucketed[rows]              (row, destination) pairs in tile order (place)
//   sorted[rows]                (row, destination) pairs in destination order
//                               (both 8-byte aligned: the words before are even)
#pragma once
#include "jitops/index_errors.h"
#if !defined(JITOPS_DEVICE_COMPILE)
#include <vector_types.h>  // int2 (NVRTC has it built in)
#endif

namespace jitops {

constexpr int kRowSortTile = 128;        // destinations per bucket (the last level's counting sort)
constexpr int kRowSortTileShift = 7;     // log2(kRowSortTile)
constexpr int kRowSortMaxTiles = 8192;   // tiles counted in one block's shared memory (1M destinations)
constexpr int kRowSortMinChunk = 4096;   // rows per count / place block, at least
constexpr int kRowSortMaxChunks = 1024;  // count / place blocks, at most
constexpr int kRowSortRun = 32;          // sorted rows per warp in the sums
constexpr int kRowSortThreads = 256;     // threads per block of every pass
constexpr int kRowSortStaged = 4096;     // rows of a bucket sorted in shared memory (32 KB)

struct RowSortParams {
  typedef int64_t Stride;  // add_pack's offsets
  const void* index;
  const void* src;
  void* self;
  IndexErrorSlot* error;
  int* tile_sums;
  int* total;
  int* tile_start;
  int* chunk_tile;
  int* chunk_in_order;
  int* in_order;
  int2* bucketed;
  int2* sorted;
  int64_t rows;
  int64_t chunk_rows;       // rows per count / place block
  int64_t destinations;     // self's size along the axis: valid indices [0, destinations)
  int64_t index_stride;     // elements between the index entries of consecutive rows
  int64_t position_stride;  // C-order position in the index of row r's first entry: r * position_stride
  int64_t src_row_stride;   // elements
  int64_t self_row_stride;  // elements (the axis stride)
  int64_t row_units;        // units of Vec elements per row
  Stride self_lo, self_hi;  // self's span in element offsets, for paired 16-bit atomics
  double alpha;             // index_add_'s alpha
  int64_t alpha_int;
  int32_t tiles;
  int32_t chunks;
  int32_t op_code;
  int32_t copies;           // private copies of self's rows a block (row_private.cuh)
  int32_t unit_splits;      // warps a run of sorted rows is split over, each taking every unit_splits-th
                            // group of a row's units (sums; 1 where the runs alone fill the device)
};

}  // namespace jitops
