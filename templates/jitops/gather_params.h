// Parameter block of the gather family (index_select, take, gather), shared by
// the host planner that fills it and the kernel that reads it.
//
// Every op of the family is one loop over the output's collapsed dimensions:
//   out[o] = x[x_base(o) + idx(o) * axis_stride],  idx(o) = index[index_off(o)]
// where each dimension d adds coord_d * stride_d to the out, x and index
// offsets. index_select, take(axis=k) and gather differ only in which of those
// strides are zero. take(axis=None) on an x that does not collapse to one
// dimension ("flat" mode) instead unravels idx over x's own collapsed shape.
#pragma once
#include "jitops/fast_divmod.h"
#include "jitops/index_errors.h"

namespace jitops {

// Index reuse (templates/gather.cuh, gather_linear with Reuse > 1): the dim
// whose units stand for several rows, its rows in all, and out's and x's
// strides between two of them. Only kernels that reuse carry these: an empty
// base adds no bytes, and a parameter block grown past 128 bytes changed the
// code of every other gather kernel.
template <int Bits, bool Present>
struct GatherReuseFields {};

template <int Bits>
struct GatherReuseFields<Bits, true> {
  int32_t reuse_dim;
  typename OffsetTypes<Bits>::Linear reuse_extent;
  typename OffsetTypes<Bits>::Stride reuse_out_stride;
  typename OffsetTypes<Bits>::Stride reuse_x_stride;
};

// Ragged packs (templates/gather.cuh, RaggedVec > 0): the length of out's
// rows along the innermost dim, in elements (the walk counts them in packs).
template <int Bits, bool Present>
struct GatherRaggedFields {};

template <int Bits>
struct GatherRaggedFields<Bits, true> {
  typename OffsetTypes<Bits>::Linear peel_len;
};

template <int Bits, int Dims, int FlatDims, bool Reuse = false, bool Ragged = false>
struct GatherParams : GatherReuseFields<Bits, Reuse>, GatherRaggedFields<Bits, Ragged> {
  typedef OffsetTypes<Bits> T;
  typedef typename T::Linear Linear;
  typedef typename T::Stride Stride;
  typedef typename T::Divider Divider;

  void* out;
  const void* x;
  const void* index;
  IndexErrorSlot* error;
  Linear numel;      // output units
  int32_t ndim;      // collapsed dims in use (<= Dims)
  int32_t op_code;
  int64_t axis_size; // valid indices are [0, axis_size), or [-axis_size, axis_size) with wrap
  Stride axis_stride;
  Divider sizes[Dims];
  Stride out_strides[Dims];
  Stride x_strides[Dims];
  Stride index_strides[Dims];
  int64_t index_positions[Dims];  // C-order strides of the index's shape: where a bad index was (report only)
  // Flat mode only: x's collapsed shape, innermost last (FlatDims of them, or
  // up to kMaxDims with x_ndim in use).
  int32_t x_ndim;
  int32_t band;  // 2-D layout: 0 columns first, N bands of N column ranges, each band's rows first (gather_2d)
  Divider x_sizes[FlatDims];
  Stride x_flat_strides[FlatDims];
};

}  // namespace jitops
