// Parameter block of the elementwise tile regime (templates/elementwise_tile.cuh),
// shared by the host planner and the kernel. The collapsed iteration space is
// seen as tiles over two dims: `a`, the walk's inner dim (the first output is
// dense along it), and `b`, the dim some other operand is dense along. The
// remaining collapsed dims are the batch, one tile of each per (a, b) tile.
#pragma once
#include "jitops/elementwise_params.h"

namespace jitops {

// Row length in elements of a staged operand's tile in shared memory: TB
// rounded up so that the row spans an odd number of 4-byte words (1- to
// 4-byte elements) or of 8-byte pairs (8-byte ones), so that lanes walking
// down a column (along a) hit distinct banks, while lanes along a row (b)
// stay consecutive. TB of 32 bytes or more gains one word (one element of 8
// bytes); a fitted TB (19 bytes) takes what rounds it up (20). 16-byte
// elements span two pairs whatever the pitch: one more element.
constexpr JITOPS_HOST_DEVICE int staged_tile_pitch(int element_bytes, int tile_b) {
  if (element_bytes > 8) return tile_b + 1;
  const int bank_unit = element_bytes >= 8 ? 8 : 4;
  const int units = (tile_b * element_bytes + bank_unit - 1) / bank_unit;
  return (units | 1) * bank_unit / element_bytes;
}

// Dims: the collapsed dims of the whole space (2, 3, or kMaxDims for any), as
// the strided layout counts them; the batch is the Dims - 2 others.
template <int Dims, int Bits>
struct ElementwiseTileParams {
  typedef OffsetTypes<Bits> T;
  static constexpr int kBatch = Dims > 2 ? Dims - 2 : 1;  // no zero-length arrays in C++
  typename T::Linear tiles;  // tiles along a x tiles along b x batch elements
  void* data[kMaxElementwiseOperands];
  uint64_t scalar[kMaxElementwiseOperands];  // a scalar operand's value, as its type's bits
  typename T::Linear size_a, size_b;
  typename T::Divider tiles_a, tiles_b;  // tiles along a, and along b
  typename T::Stride stride_a[kMaxElementwiseOperands], stride_b[kMaxElementwiseOperands];  // in elements
  int32_t batch_ndim;  // batch dims in use, outermost first
  int32_t pad;
  typename T::Divider batch_sizes[kBatch];
  typename T::Stride batch_strides[kMaxElementwiseOperands][kBatch];
};

}  // namespace jitops
