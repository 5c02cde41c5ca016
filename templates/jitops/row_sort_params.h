// Parameter block of the row sums (templates/row_sort.cuh), shared by the
// host planner and the kernels: index_add_ / scatter_add_ where each index
// entry moves one whole contiguous row of src into one row of self.
//
// Scratch, in 32-bit words (the first destinations + tiles words zeroed):
//   counts[destinations]  rows per destination, then (scan) the sorted
//                         position of each destination's first row, then
//                         (place) a cursor past its rows
//   tile_sums[tiles]      rows per tile of kRowSortTile destinations
//   total[1]              rows whose index is valid (written by the scan)
//   perm[rows], dest[rows]  sorted position -> row, -> destination
#pragma once
#include "jitops/index_errors.h"

namespace jitops {

constexpr int kRowSortTile = 4096;     // destinations per scan block
constexpr int kRowSortMaxTiles = 1024; // tiles counted in one block's shared memory
constexpr int kRowSortRun = 32;        // sorted rows per warp in the sums

struct RowSortParams {
  typedef int64_t Stride;  // add_pack's offsets
  const void* index;
  const void* src;
  void* self;
  IndexErrorSlot* error;
  int* counts;
  int* tile_sums;
  int* total;
  int* perm;
  int* dest;
  int64_t rows;
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
  int32_t op_code;
};

}  // namespace jitops
