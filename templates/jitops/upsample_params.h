// Parameter block of the upsample_nearest2d family (templates/upsample.cuh),
// shared by the host planner and the kernel.
//
// The generic kernels walk the tensor they write (the output forward, the
// input gradient backward) in its own memory order: four dims, outermost
// first, of which positions h_pos and w_pos are its height and width. The 2x
// kernels walk dense NCHW rows: row r of the input (or input gradient) and
// rows 2r, 2r+1 of the output (or output gradient).
#pragma once
#include "jitops/fast_divmod.h"

namespace jitops {

template <int Bits>
struct UpsampleParams {
  typedef OffsetTypes<Bits> T;
  typedef typename T::Linear Linear;
  typedef typename T::Stride Stride;
  typedef typename T::Divider Divider;

  const void* src;  // forward: the input; backward: the output gradient
  void* dst;        // forward: the output; backward: the input gradient
  Linear work;      // items: elements of dst, or groups of `vec` dst/src elements (2x)
  // Generic kernels.
  Divider sizes[4];
  Stride dst_strides[4];
  Stride src_strides[4];
  int32_t h_pos, w_pos;
  int32_t src_h, src_w;  // forward: input H, W (clamp); backward: output H, W (window end)
  float scale_h, scale_w;
  // 2x kernels.
  Divider row_groups;  // groups of `vec` elements in one input row
  Stride width;        // input (gradient) row length, elements
};

// Parameter block of the row kernels (templates/upsample_rows.cuh): the tensor
// written (the output forward, the input gradient backward) is dense, NCHW or
// channels-last. A row is its run of W (NCHW) or W x C (channels-last)
// elements; rows are numbered over the three dims before the run, in memory
// order: r = (c0 * size1 + c1) * size2 + c2 (N, C, H; or 1, N, H: H is last).
template <int Bits>
struct UpsampleRowParams {
  typedef OffsetTypes<Bits> T;
  typedef typename T::Linear Linear;
  typedef typename T::Stride Stride;
  typedef typename T::Divider Divider;

  const void* src;  // forward: the input; backward: the output gradient
  void* dst;
  Linear rows;
  Divider outer_sizes[2];  // size1 and size2
  Stride src_outer[3];     // the source's stride along each outer dim
  FastDivmod channels;     // elements of the run per W position: C (channels-last) or 1
  Stride src_w, src_c;     // the source's W and C strides
  int32_t inner;           // elements per row
  int32_t src_h, src_width;  // forward: input H, W (clamp); backward: output H, W (window end)
  float scale_h, scale_w;  // as in UpsampleParams
};

// Parameter block of the tile kernel (templates/upsample_tiles.cuh), backward
// only: the input gradient is dense NCHW or channels-last and the output
// gradient's rows are dense in the same order (W, or W x C). Tile t is
// ((outer * row_blocks) + row_block) * col_chunks + col_chunk; outer numbers
// the planes (N, C) of NCHW or the images (1, N) of channels-last, and splits
// as outer = c0 * outer1 + c1.
template <int Bits>
struct UpsampleTileParams {
  typedef OffsetTypes<Bits> T;
  typedef typename T::Linear Linear;
  typedef typename T::Stride Stride;
  typedef typename T::Divider Divider;

  const void* src;  // the output gradient
  void* dst;        // the input gradient
  Linear tiles;
  Divider col_chunks, row_blocks, outer1;
  Stride src_outer[2];     // the output gradient's strides along c0 and c1
  Stride src_row;          // ... along H
  FastDivmod channels;     // C (channels-last) or 1
  FastDivmod tile_elems;   // items in one row of a whole tile: tile_cols x C / Per
  FastDivmod stage_units;  // 16-byte units per staged row (rows staged one by one)
  int32_t inner;           // elements per input-gradient row: W x C
  int32_t in_h, in_w, out_h, out_w;
  int32_t tile_rows, tile_cols;  // input-gradient rows and W positions of a whole tile
  int32_t stage_rows;      // output-gradient rows shared memory holds
  int32_t pitch;           // elements between staged rows (out_w x C where a tile is staged as one span)
  float scale_h, scale_w;  // out / in, or scale_factor (PyTorch's backward scales)
};

}  // namespace jitops
