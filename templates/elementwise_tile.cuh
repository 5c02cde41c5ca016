// The tile regime of the elementwise family: the batched transpose for
// operands whose layouts disagree. A block takes a tile of TA x TB elements
// over dims (a, b) of one batch element. Operands dense along b ("staged")
// are read with the lanes along b into shared memory, then every element is
// computed with the lanes along a, where the other operands are dense; staged
// outputs go back through shared memory and are written along b. So every
// access to memory is coalesced along the dim its operand is dense in, and
// each sector is fetched once, where the strided layout left a transposed
// operand's sectors to the caches between rows (NOTES item 39: ~4 reads each).
//
// The specialized source holds the loops (jit/elementwise_tile_source.cpp);
// these are the pieces they are built from.
#pragma once
#include "elementwise.cuh"
#include "jitops/elementwise_tile_params.h"

namespace jitops {

// One tile: each operand's offset at its first element, and how many of its
// TA x TB elements lie inside the array (fewer at the ends of a and b).
template <int Bits, int Operands>
struct TileOrigin {
  typedef typename OffsetTypes<Bits>::Stride S;
  S base[Operands];
  int rows_a, rows_b;

  __device__ __forceinline__ bool inside(int a, int b) const { return a < rows_a && b < rows_b; }
  template <int Dims>
  __device__ __forceinline__ S at(const ElementwiseTileParams<Dims, Bits>& p, int k, int a, int b) const {
    return base[k] + S(a) * p.stride_a[k] + S(b) * p.stride_b[k];
  }
  // The element at (a, b), or the nearest one inside the array. Loads at the
  // ends of a and b read duplicates rather than wait on a predicate: a thread
  // has more loads in flight than the 7 predicate registers, and predicated
  // ones made ptxas store each to shared memory before issuing the next.
  template <int Dims>
  __device__ __forceinline__ S at_clamped(const ElementwiseTileParams<Dims, Bits>& p, int k, int a, int b) const {
    return at(p, k, a < rows_a ? a : rows_a - 1, b < rows_b ? b : rows_b - 1);
  }
};

// Tile `tile`, numbered along a first, then along b, then over the batch
// (innermost batch dim first): neighbouring blocks share the sectors at the
// tiles' edges. BatchFirst: along a, then over the batch, then along b, so
// that the tiles of one stretch of b run together: an operand that does not
// move along a batch dim (a gather's x along its axis, an input broadcast
// along it) reads that stretch again for each of the batch's elements, from
// L2 instead of DRAM.
template <int TA, int TB, int Operands, bool BatchFirst = false, int Dims, int Bits>
__device__ __forceinline__ TileOrigin<Bits, Operands> tile_origin(const ElementwiseTileParams<Dims, Bits>& p,
                                                                  typename OffsetTypes<Bits>::Linear tile) {
  typedef typename OffsetTypes<Bits>::Linear L;
  typedef typename OffsetTypes<Bits>::Stride S;
  L ta, tb;
  L rest = p.tiles_a.divmod(tile, ta);
  TileOrigin<Bits, Operands> o;
  constexpr int kBatch = ElementwiseTileParams<Dims, Bits>::kBatch;
  if constexpr (BatchFirst) {
#pragma unroll
    for (int k = 0; k < Operands; ++k) o.base[k] = 0;
#pragma unroll
    for (int d = kBatch - 1; d >= 0; --d) {
      if (d >= p.batch_ndim) continue;
      L c;
      rest = p.batch_sizes[d].divmod(rest, c);
#pragma unroll
      for (int k = 0; k < Operands; ++k) o.base[k] += S(c) * p.batch_strides[k][d];
    }
    tb = rest;  // b takes what is left
  } else {
    rest = p.tiles_b.divmod(rest, tb);
#pragma unroll
    for (int k = 0; k < Operands; ++k) o.base[k] = S(ta * TA) * p.stride_a[k] + S(tb * TB) * p.stride_b[k];
#pragma unroll
    for (int d = kBatch - 1; d >= 0; --d) {
      if (d >= p.batch_ndim) continue;
      L c = rest;  // the outermost batch dim takes what is left
      if (d > 0) rest = p.batch_sizes[d].divmod(rest, c);
#pragma unroll
      for (int k = 0; k < Operands; ++k) o.base[k] += S(c) * p.batch_strides[k][d];
    }
  }
  const L a0 = ta * TA, b0 = tb * TB;
  if constexpr (BatchFirst) {
#pragma unroll
    for (int k = 0; k < Operands; ++k) o.base[k] += S(a0) * p.stride_a[k] + S(b0) * p.stride_b[k];
  }
  o.rows_a = int(p.size_a - a0 < L(TA) ? p.size_a - a0 : L(TA));
  o.rows_b = int(p.size_b - b0 < L(TB) ? p.size_b - b0 : L(TB));
  return o;
}

// Whether item j of this thread lies inside a tile of `Elements`: a tile fitted
// to a short b (19 x 128) is no multiple of the block, and its last pass has
// threads past the end. Known at compile time for all but the last item.
template <int Elements, int Threads>
__device__ __forceinline__ bool tile_item_in(int j) {
  return (j + 1) * Threads <= Elements || int(threadIdx.x) + j * Threads < Elements;
}

// Item j of this thread when the block walks a tile with `Fast` elements
// along the dim its lanes follow: the coordinates along that dim and the other.
template <int Fast, int Threads>
__device__ __forceinline__ void tile_item(int j, int& fast, int& slow) {
  const int i = int(threadIdx.x) + j * Threads;
  fast = i % Fast;
  slow = i / Fast;
}

}  // namespace jitops
