// The gather family: index_select, take (ONNX Gather) and gather
// (take_along_axis, ONNX GatherElements, paddle.index_sample).
//
// Two thread layouts:
// - linear: one id per output unit, decomposed into coordinates with
//   FastDivmod (32-bit) or plain division (64-bit); used for 1, 3 and more dims.
// - 2-D: threadIdx.x walks the inner (column) dimension and threadIdx.y the
//   rows, so the common [rows, cols] problem needs no division at all.
// Each thread keeps Unroll loads in flight before its first store, because a
// gather is bound by memory latency long before it is bound by bandwidth.
#pragma once
#include "jitops/gather_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

// Reads the index at `index_off`, wraps negatives when asked, and reports (and
// masks) one that is out of range. Returns false for a bad index.
template <typename IndexT, bool Wrap, typename P>
__device__ __forceinline__ bool read_index(const P& p, typename P::Stride index_off, int64_t& value) {
  int64_t v = (int64_t)load_readonly(static_cast<const IndexT*>(p.index) + index_off);
  if (Wrap && v < 0) v += p.axis_size;
  if ((uint64_t)v >= (uint64_t)p.axis_size) {
    int64_t raw = (int64_t)load_readonly(static_cast<const IndexT*>(p.index) + index_off);
    report_bad_index(p.error, raw, p.axis_size, p.op_code);
    return false;
  }
  value = v;
  return true;
}

// x offset of source element number `flat` in x's own collapsed shape (flat mode).
template <typename P>
__device__ __forceinline__ typename P::Stride flat_source_offset(const P& p, typename P::Linear flat) {
  typename P::Stride off = 0;
#pragma unroll
  for (int d = sizeof(p.x_sizes) / sizeof(p.x_sizes[0]) - 1; d >= 0; --d) {
    if (d < p.x_ndim) {
      typename P::Linear r;
      flat = p.x_sizes[d].divmod(flat, r);
      off += (typename P::Stride)r * p.x_flat_strides[d];
    }
  }
  return off;
}

// Offsets of output unit `linear` in out, x and index.
template <int Dims, bool Generic, typename P>
__device__ __forceinline__ void unit_offsets(const P& p, typename P::Linear linear, typename P::Stride& out_off,
                                             typename P::Stride& x_off, typename P::Stride& index_off) {
  typedef typename P::Stride Stride;
  out_off = 0; x_off = 0; index_off = 0;
#pragma unroll
  for (int d = Dims - 1; d >= 1; --d) {
    if (!Generic || d < p.ndim) {
      typename P::Linear r;
      linear = p.sizes[d].divmod(linear, r);
      out_off += (Stride)r * p.out_strides[d];
      x_off += (Stride)r * p.x_strides[d];
      index_off += (Stride)r * p.index_strides[d];
    }
  }
  out_off += (Stride)linear * p.out_strides[0];
  x_off += (Stride)linear * p.x_strides[0];
  index_off += (Stride)linear * p.index_strides[0];
}

template <typename Unit, typename IndexT, bool Wrap, bool Flat, typename P>
__device__ __forceinline__ Unit gather_one(const P& p, typename P::Stride x_off, typename P::Stride index_off) {
  int64_t v;
  if (!read_index<IndexT, Wrap>(p, index_off, v)) return zero_unit<Unit>();
  typename P::Stride src = Flat ? flat_source_offset(p, (typename P::Linear)v)
                                : x_off + (typename P::Stride)v * p.axis_stride;
  return load_readonly(static_cast<const Unit*>(p.x) + src);
}

template <typename Unit, typename IndexT, int Dims, bool Generic, bool Wrap, bool Flat, int Unroll, typename P>
__device__ __forceinline__ void gather_linear(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  const Linear step = (Linear)gridDim.x * blockDim.x * Unroll;
  for (Linear base = (Linear)blockIdx.x * blockDim.x * Unroll + threadIdx.x; base < p.numel; base += step) {
    Unit vals[Unroll];
    Stride out_offs[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      Linear i = base + (Linear)k * blockDim.x;
      if (i < p.numel) {
        Stride x_off, index_off;
        unit_offsets<Dims, Generic>(p, i, out_offs[k], x_off, index_off);
        vals[k] = gather_one<Unit, IndexT, Wrap, Flat>(p, x_off, index_off);
      }
    }
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      if (base + (Linear)k * blockDim.x < p.numel) static_cast<Unit*>(p.out)[out_offs[k]] = vals[k];
    }
  }
}

template <typename Unit, typename IndexT, bool Wrap, bool Flat, int Unroll, typename P>
__device__ __forceinline__ void gather_2d(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  const Linear rows = p.sizes[0].divisor, cols = p.sizes[1].divisor;
  const Linear col = (Linear)blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  const Stride out_col = (Stride)col * p.out_strides[1];
  const Stride x_col = (Stride)col * p.x_strides[1];
  const Stride index_col = (Stride)col * p.index_strides[1];
  const Linear step = (Linear)gridDim.y * blockDim.y * Unroll;
  for (Linear base = (Linear)blockIdx.y * blockDim.y * Unroll + threadIdx.y; base < rows; base += step) {
    Unit vals[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      Stride row = (Stride)(base + (Linear)k * blockDim.y);
      if ((Linear)row < rows)
        vals[k] = gather_one<Unit, IndexT, Wrap, Flat>(p, x_col + row * p.x_strides[0],
                                                       index_col + row * p.index_strides[0]);
    }
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      Stride row = (Stride)(base + (Linear)k * blockDim.y);
      if ((Linear)row < rows) static_cast<Unit*>(p.out)[out_col + row * p.out_strides[0]] = vals[k];
    }
  }
}

}  // namespace jitops
