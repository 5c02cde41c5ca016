// The gather family: index_select, take (ONNX Gather) and gather
// (take_along_axis, ONNX GatherElements, paddle.index_sample).
//
// Two thread layouts:
// - linear: one id per output unit, decomposed into coordinates with
//   FastDivmod (32-bit) or plain division (64-bit); used for 1, 3 and more dims.
// - 2-D: threadIdx.x walks the inner (column) dimension and threadIdx.y the
//   rows, so the common [rows, cols] problem needs no division at all.
// Each thread keeps Unroll index loads, then Unroll element loads, in flight
// before its first store: a gather is bound by memory latency long before it
// is bound by bandwidth.
#pragma once
#include "jitops/block_order.cuh"
#include "jitops/gather_params.h"
#include "jitops/ragged_packs.cuh"
#include "jitops/vector_units.cuh"

namespace jitops {

// Each thread handles Unroll output units in three passes: load every index,
// then check them and load every source element, then store. Keeping the
// bounds report (a call) out of the load passes lets all Unroll index loads,
// and then all Unroll element loads, be in flight at once; interleaving them
// with the check serialized them into 2 x Unroll dependent DRAM round trips.

// The index value for bounds and addressing: wrapped when negative if asked.
template <bool Wrap>
__device__ __forceinline__ bool index_in_range(int64_t& v, int64_t axis_size) {
  if (Wrap && v < 0) v += axis_size;
  return (uint64_t)v < (uint64_t)axis_size;
}

// x offset of source element number `flat` in x's own collapsed shape (flat
// mode): x's dims are the array's length, or at most that with the generic
// kMaxDims one. The generic loop for every x (its 16 tests of x_ndim an
// element) cost take through a strided x up to 1.47x (seed 454's float16
// channels_last, 8M values: 43.5 -> 29.6 us; 34 sweep plans 1.095x, none
// slower; H100, NOTES 87).
template <typename P>
__device__ __forceinline__ typename P::Stride flat_source_offset(const P& p, typename P::Linear flat) {
  constexpr int kDims = sizeof(p.x_sizes) / sizeof(p.x_sizes[0]);
  typename P::Stride off = 0;
#pragma unroll
  for (int d = kDims - 1; d >= 0; --d) {
    if (kDims < kMaxDims || d < p.x_ndim) {
      typename P::Linear r;
      flat = p.x_sizes[d].divmod(flat, r);
      off += (typename P::Stride)r * p.x_flat_strides[d];
    }
  }
  return off;
}

// Offsets of output unit `linear` in out, x and index; with Reuse, `chunk`
// gets its coordinate along p.reuse_dim; with Place, `place` gets its
// coordinate along the innermost dim (a ragged pack's place in its row).
template <int Dims, bool Generic, int Reuse, typename P, bool Place = false>
__device__ __forceinline__ void unit_offsets(const P& p, typename P::Linear linear, typename P::Stride& out_off,
                                             typename P::Stride& x_off, typename P::Stride& index_off,
                                             typename P::Linear& chunk, typename P::Linear* place = nullptr) {
  typedef typename P::Stride Stride;
  out_off = 0; x_off = 0; index_off = 0;
  if constexpr (Place) *place = linear;  // one dim: the unit's own number
#pragma unroll
  for (int d = Dims - 1; d >= 1; --d) {
    if (!Generic || d < p.ndim) {
      typename P::Linear r;
      linear = p.sizes[d].divmod(linear, r);
      if constexpr (Place) {
        if (d == (Generic ? p.ndim - 1 : Dims - 1)) *place = r;
      }
      out_off += (Stride)r * p.out_strides[d];
      x_off += (Stride)r * p.x_strides[d];
      index_off += (Stride)r * p.index_strides[d];
      if constexpr (Reuse > 1) {
        if (d == p.reuse_dim) chunk = r;
      }
    }
  }
  out_off += (Stride)linear * p.out_strides[0];
  x_off += (Stride)linear * p.x_strides[0];
  index_off += (Stride)linear * p.index_strides[0];
  if constexpr (Reuse > 1) {
    if (p.reuse_dim == 0) chunk = linear;
  }
}

// Passes 2 and 3 and the report, shared by both layouts: `valid[k]` says
// unit k exists, `x_off[k]` is its source offset before the index term.
// `position_of(k)` gives unit k's position in the index, for the report.
template <typename Unit, typename IndexT, bool Wrap, bool Flat, int Unroll, typename P, typename PositionOf>
__device__ __forceinline__ void gather_units(const P& p, const bool (&valid)[Unroll], const IndexT (&raw)[Unroll],
                                             const typename P::Stride (&x_off)[Unroll],
                                             const typename P::Stride (&out_off)[Unroll], PositionOf position_of) {
  typedef typename P::Stride Stride;
  Unit vals[Unroll];
  bool bad[Unroll];
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    int64_t v = (int64_t)raw[k];
    bad[k] = valid[k] && !index_in_range<Wrap>(v, p.axis_size);
    vals[k] = zero_unit<Unit>();
    if (valid[k] && !bad[k]) {
      Stride src = Flat ? flat_source_offset(p, (typename P::Linear)v) : x_off[k] + (Stride)v * p.axis_stride;
      vals[k] = load_readonly(static_cast<const Unit*>(p.x) + src);
    }
  }
#pragma unroll
  for (int k = 0; k < Unroll; ++k)
    if (valid[k]) static_cast<Unit*>(p.out)[out_off[k]] = vals[k];
#pragma unroll
  for (int k = 0; k < Unroll; ++k)
    if (bad[k]) report_bad_index(p.error, position_of(k), (int64_t)raw[k], p.axis_size, p.op_code);
}

// Passes 2 and 3 for ragged packs (RaggedVec > 0; jitops/ragged_packs.cuh):
// unit k is the pack of out's row at place `place[k]` (in packs), out_off
// and x_off its nominal first element's offsets (in elements). out's pack is
// aligned; x's row lies at whatever phase the index picks, so a whole pack is
// read by load_realigned, a row's ends element by element. A bad index
// stores zeros, as gather_units does.
template <typename T, typename IndexT, bool Wrap, int Vec, int Unroll, typename P, typename PositionOf>
__device__ __forceinline__ void gather_ragged_units(const P& p, const bool (&valid)[Unroll],
                                                    const IndexT (&raw)[Unroll],
                                                    const typename P::Stride (&x_off)[Unroll],
                                                    const typename P::Stride (&out_off)[Unroll],
                                                    const typename P::Linear (&place)[Unroll],
                                                    PositionOf position_of) {
  typedef typename P::Stride Stride;
  T* const out = static_cast<T*>(p.out);
  PackSpans<Unroll> spans;
  bool live[Unroll], bad[Unroll];
  Stride shift[Unroll];
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    spans.lo[k] = spans.hi[k] = 0;
    shift[k] = 0;
    live[k] = false;
    if (valid[k]) {
      shift[k] = pack_shift<T, Vec>(out + out_off[k]);
      live[k] = pack_span<Vec>((int64_t)place[k], int(shift[k]), (int64_t)p.peel_len, spans.lo[k], spans.hi[k]);
    }
  }
  Pack<T, Vec> vals[Unroll];
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    int64_t v = (int64_t)raw[k];
    bad[k] = live[k] && !index_in_range<Wrap>(v, p.axis_size);
#pragma unroll
    for (int j = 0; j < Vec; ++j) vals[k].v[j] = T(0);
    if (live[k] && !bad[k]) {
      const T* s = static_cast<const T*>(p.x) + (x_off[k] - shift[k] + (Stride)v * p.axis_stride);
      if (spans.lo[k] == 0 && spans.hi[k] == Vec) {
        vals[k] = load_realigned<T, Vec>(s);
      } else {
#pragma unroll
        for (int j = 0; j < Vec; ++j)  // unrolled: a pack indexed at run time would go to local memory
          if (j >= spans.lo[k] && j < spans.hi[k]) vals[k].v[j] = load_readonly(s + j);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    if (!live[k]) continue;
    T* d = out + (out_off[k] - shift[k]);
    if (spans.lo[k] == 0 && spans.hi[k] == Vec) {
      store_pack<T, Vec>(d, vals[k]);
    } else {
#pragma unroll
      for (int j = 0; j < Vec; ++j)
        if (j >= spans.lo[k] && j < spans.hi[k]) d[j] = vals[k].v[j];
    }
  }
#pragma unroll
  for (int k = 0; k < Unroll; ++k)
    if (bad[k]) report_bad_index(p.error, position_of(k), (int64_t)raw[k], p.axis_size, p.op_code);
}

// Reuse > 1: the index does not vary along dim p.reuse_dim (an expanded
// index), and each unit of that dim stands for Reuse consecutive rows of it
// (p.reuse_extent in all). A thread loads each index value once and moves it
// for Reuse rows: an index expanded over 1024 rows was otherwise read 1024
// times, 4x the bytes of a bfloat16 output.
// RaggedVec > 0: Unit is the element, and each unit a ragged pack of RaggedVec
// of them (Reuse 1, not Flat).
template <typename Unit, typename IndexT, int Dims, bool Generic, bool Wrap, bool Flat, int Unroll, int Reuse,
          int RaggedVec = 0, typename P>
__device__ __forceinline__ void gather_linear(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  constexpr int kUnits = Unroll * Reuse;
  const Linear step = (Linear)gridDim.x * blockDim.x * Unroll;
  for (Linear base = (Linear)blockIdx.x * blockDim.x * Unroll + threadIdx.x; base < p.numel; base += step) {
    bool valid[kUnits];
    IndexT raw[kUnits];
    Stride x_off[kUnits], out_off[kUnits];
    Linear place[kUnits];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      Linear i = base + (Linear)k * blockDim.x;
      Linear chunk = 0;
      if constexpr (Reuse == 1) {
        valid[k] = i < p.numel;
        raw[k] = 0;
        if (valid[k]) {
          Stride index_off;
          unit_offsets<Dims, Generic, Reuse, P, (RaggedVec > 0)>(p, i, out_off[k], x_off[k], index_off, chunk,
                                                                  &place[k]);
          raw[k] = load_readonly(static_cast<const IndexT*>(p.index) + index_off);
        }
      } else {
        const bool unit_valid = i < p.numel;
        IndexT value = 0;
        Stride index_off, x0 = 0, out0 = 0;
        if (unit_valid) {
          unit_offsets<Dims, Generic, Reuse>(p, i, out0, x0, index_off, chunk);
          value = load_readonly(static_cast<const IndexT*>(p.index) + index_off);
        }
#pragma unroll
        for (int r = 0; r < Reuse; ++r) {
          valid[k * Reuse + r] = unit_valid && chunk * Reuse + r < p.reuse_extent;
          raw[k * Reuse + r] = value;
          x_off[k * Reuse + r] = x0 + (Stride)r * p.reuse_x_stride;
          out_off[k * Reuse + r] = out0 + (Stride)r * p.reuse_out_stride;
        }
      }
    }
    auto position_of = [&](int k) { return index_position(p, base + (Linear)(k / Reuse) * blockDim.x); };
    if constexpr (RaggedVec > 0)
      gather_ragged_units<Unit, IndexT, Wrap, RaggedVec, kUnits>(p, valid, raw, x_off, out_off, place, position_of);
    else
      gather_units<Unit, IndexT, Wrap, Flat, kUnits>(p, valid, raw, x_off, out_off, position_of);
  }
}

// ShareIndex: the index does not vary along rows, so a thread's Unroll rows
// share the first one's index load.
// p.band: the blocks' order (jitops/block_order.cuh).
// RowLocal (gather_row_local.cpp): one block a row, its threads walking
// every column of it, Unroll columns a thread at a time, so that the row of x
// they pick from stays in the SM's L1 while all its picks are made (the
// hardware's order otherwise spreads one row's picks over many SMs, each
// reading 32-byte sectors of the row from L2 for one element).
// RaggedVec > 0: Unit is the element and each column a ragged pack of
// RaggedVec of them (not RowLocal, not Flat).
template <typename Unit, typename IndexT, bool Wrap, bool Flat, int Unroll, bool ShareIndex, bool RowLocal,
          int RaggedVec = 0, typename P>
__device__ __forceinline__ void gather_2d(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  const Linear rows = p.sizes[0].divisor, cols = p.sizes[1].divisor;
  if constexpr (RowLocal) {
    // Unroll columns a thread at a time, blockDim.x apart, their loads in flight together.
    for (Linear row = (Linear)blockIdx.y * blockDim.y + threadIdx.y; row < rows; row += (Linear)gridDim.y * blockDim.y) {
      const Stride out_row = (Stride)row * p.out_strides[0], x_row = (Stride)row * p.x_strides[0];
      const Stride index_row = (Stride)row * p.index_strides[0];
      for (Linear base = threadIdx.x; base < cols; base += (Linear)blockDim.x * Unroll) {
        bool valid[Unroll];
        IndexT raw[Unroll];
        Stride x_off[Unroll], out_off[Unroll];
#pragma unroll
        for (int k = 0; k < Unroll; ++k) {
          const Linear col = base + (Linear)k * blockDim.x;
          valid[k] = col < cols;
          raw[k] = valid[k] ? load_readonly(static_cast<const IndexT*>(p.index) + index_row + (Stride)col * p.index_strides[1])
                            : IndexT(0);
          x_off[k] = x_row + (Stride)col * p.x_strides[1];
          out_off[k] = out_row + (Stride)col * p.out_strides[1];
        }
        gather_units<Unit, IndexT, Wrap, Flat, Unroll>(p, valid, raw, x_off, out_off, [&](int k) {
          return (int64_t)row * p.index_positions[0] + (int64_t)(base + (Linear)k * blockDim.x) * p.index_positions[1];
        });
      }
    }
    return;
  }
  const BlockPlace block = block_place_banded(p.band);
  const Linear col = (Linear)block.col * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  const Stride out_col = (Stride)col * p.out_strides[1];
  const Stride x_col = (Stride)col * p.x_strides[1];
  const Stride index_col = (Stride)col * p.index_strides[1];
  const Linear step = (Linear)gridDim.y * blockDim.y * Unroll;
  for (Linear base = (Linear)block.row * blockDim.y * Unroll + threadIdx.y; base < rows; base += step) {
    bool valid[Unroll];
    IndexT raw[Unroll];
    Stride x_off[Unroll], out_off[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      Stride row = (Stride)(base + (Linear)k * blockDim.y);
      valid[k] = (Linear)row < rows;
      raw[k] = 0;
      x_off[k] = x_col + row * p.x_strides[0];
      out_off[k] = out_col + row * p.out_strides[0];
      if (ShareIndex && k > 0)
        raw[k] = raw[0];
      else if (valid[k])
        raw[k] = load_readonly(static_cast<const IndexT*>(p.index) + index_col + row * p.index_strides[0]);
    }
    auto position_of = [&](int k) {
      return (int64_t)(base + (Linear)k * blockDim.y) * p.index_positions[0] + (int64_t)col * p.index_positions[1];
    };
    if constexpr (RaggedVec > 0) {
      Linear place[Unroll];
#pragma unroll
      for (int k = 0; k < Unroll; ++k) place[k] = col;
      gather_ragged_units<Unit, IndexT, Wrap, RaggedVec, Unroll>(p, valid, raw, x_off, out_off, place, position_of);
    } else {
      gather_units<Unit, IndexT, Wrap, Flat, Unroll>(p, valid, raw, x_off, out_off, position_of);
    }
  }
}

}  // namespace jitops
