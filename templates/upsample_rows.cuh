// upsample_nearest2d forward and backward over rows of a dense tensor written:
// NCHW (a row is a run of W) or channels-last (a run of W x C). Where each
// element of a row reads from (a source column forward, a window of output
// columns backward) is worked out once per thread and kept in registers; a
// row then costs two divides by invariant divisors and the mapping of its H,
// so the index arithmetic is paid per row, not per element.
//
// Thread layout: threadIdx.x along the row in groups of `Vec` elements, a
// thread holding `Cols` groups blockDim.x groups apart (stores stay
// coalesced); threadIdx.y and the grid's y along rows, in a grid-stride loop.
#pragma once
#include "jitops/upsample_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

__device__ __forceinline__ int nearest_source(float scale, int dst, int src_size) {
  return min(static_cast<int>(floorf(dst * scale)), src_size - 1);
}

__device__ __forceinline__ int window_edge(float scale, int dst, int out_size) {
  return min(static_cast<int>(ceilf(dst * scale)), out_size);
}

// Row r's outer coordinates: `base` is the source offset of its first two
// (N and C, or N), `h` its H, the last (mapped by the caller: forward and
// backward map it differently).
template <int Bits>
__device__ __forceinline__ void row_place(const UpsampleRowParams<Bits>& p, typename UpsampleRowParams<Bits>::Linear r,
                                          typename UpsampleRowParams<Bits>::Stride& base, int& h) {
  typedef typename UpsampleRowParams<Bits>::Linear L;
  typedef typename UpsampleRowParams<Bits>::Stride S;
  L c1, c2;
  const L rest = p.outer_sizes[1].divmod(r, c2);
  const L c0 = p.outer_sizes[0].divmod(rest, c1);
  base = S(c0) * p.src_outer[0] + S(c1) * p.src_outer[1];
  h = int(c2);
}

template <typename Unit, int Vec, int Cols, int Bits, bool SrcPacked>
__device__ __forceinline__ void upsample_rows_forward(const UpsampleRowParams<Bits>& p) {
  typedef typename UpsampleRowParams<Bits>::Linear L;
  typedef typename UpsampleRowParams<Bits>::Stride S;
  typedef Pack<Unit, Vec> P;
  const int groups = p.inner / Vec;
  const int g0 = blockIdx.x * blockDim.x * Cols + threadIdx.x;
  S col[Cols][Vec];  // each element's source offset within a row
#pragma unroll
  for (int c = 0; c < Cols; ++c)
#pragma unroll
    for (int k = 0; k < Vec; ++k) {
      uint32_t ch;
      const uint32_t w = p.channels.divmod(uint32_t((g0 + c * int(blockDim.x)) * Vec + k), ch);
      col[c][k] = S(nearest_source(p.scale_w, int(w), p.src_width)) * p.src_w + S(ch) * p.src_c;
    }
  const L row_step = L(gridDim.y) * blockDim.y;
  for (L r = L(blockIdx.y) * blockDim.y + threadIdx.y; r < p.rows; r += row_step) {
    S base;
    int h = 0;
    row_place(p, r, base, h);
    base += S(nearest_source(p.scale_h, h, p.src_h)) * p.src_outer[2];
    const Unit* src = static_cast<const Unit*>(p.src) + base;
    P* dst = reinterpret_cast<P*>(static_cast<Unit*>(p.dst) + S(r) * p.inner);
    P v[Cols];
#pragma unroll
    for (int c = 0; c < Cols; ++c) {
      if (g0 + c * int(blockDim.x) >= groups) break;
      if (SrcPacked) {
        v[c] = load_pack_readonly(reinterpret_cast<const P*>(src + col[c][0]));
      } else {
#pragma unroll
        for (int k = 0; k < Vec; ++k) v[c].v[k] = load_readonly(src + col[c][k]);
      }
    }
#pragma unroll
    for (int c = 0; c < Cols; ++c) {
      const int g = g0 + c * int(blockDim.x);
      if (g >= groups) break;
      dst[g] = v[c];
    }
  }
}

// Output-gradient rows in global memory as a window sum reads them:
// row(y)[x] is element (y, x), `sh` and `sw` apart.
template <typename T, typename S>
struct GlobalRows {
  static constexpr bool kAllInFlight = true;
  const T* src;
  S sh, sw;
  struct Row {
    const T* p;
    S sw;
    __device__ __forceinline__ T operator[](int x) const { return load_readonly(p + S(x) * sw); }
  };
  __device__ __forceinline__ Row row(int y) const { return Row{src + S(y) * sh, sw}; }
};

// One element's window sum, rows then columns from zero in the accumulate
// type (PyTorch's order). Win > 0: windows are at most Win wide and the
// loops unroll, every load predicated; rows in global memory (kAllInFlight)
// have all their loads in flight at once, staged rows are looked up only
// where the window has them (their table ends with the tile); 0: any width.
template <typename A, int WinH, int WinW, typename Rows>
__device__ __forceinline__ A window_sum(const Rows& rows, int y0, int y1, int x0, int x1) {
  A sum = A(0);
  if (WinH > 0 && WinW > 0) {
#pragma unroll
    for (int ty = 0; ty < WinH; ++ty) {
      if (!Rows::kAllInFlight && y0 + ty >= y1) continue;
      const auto row = rows.row(y0 + ty);
#pragma unroll
      for (int tx = 0; tx < WinW; ++tx)
        if (y0 + ty < y1 && x0 + tx < x1) sum += A(row[x0 + tx]);
    }
  } else {
    for (int y = y0; y < y1; ++y) {
      const auto row = rows.row(y);
      for (int x = x0; x < x1; ++x) sum += A(row[x]);
    }
  }
  return sum;
}

// The input gradient's rows: each element sums the output gradient over its window.
template <typename T, typename A, int Vec, int Cols, int Bits, int WinH, int WinW>
__device__ __forceinline__ void upsample_rows_backward(const UpsampleRowParams<Bits>& p) {
  typedef typename UpsampleRowParams<Bits>::Linear L;
  typedef typename UpsampleRowParams<Bits>::Stride S;
  typedef Pack<T, Vec> P;
  const int groups = p.inner / Vec;
  const int g0 = blockIdx.x * blockDim.x * Cols + threadIdx.x;
  int x0[Cols][Vec], x1[Cols][Vec];  // each element's window of output-gradient columns
  S channel[Cols][Vec];              // and its channel's offset
#pragma unroll
  for (int c = 0; c < Cols; ++c)
#pragma unroll
    for (int k = 0; k < Vec; ++k) {
      uint32_t ch;
      const int w = int(p.channels.divmod(uint32_t((g0 + c * int(blockDim.x)) * Vec + k), ch));
      x0[c][k] = window_edge(p.scale_w, w, p.src_width);
      x1[c][k] = window_edge(p.scale_w, w + 1, p.src_width);
      channel[c][k] = S(ch) * p.src_c;
    }
  const L row_step = L(gridDim.y) * blockDim.y;
  for (L r = L(blockIdx.y) * blockDim.y + threadIdx.y; r < p.rows; r += row_step) {
    S base;
    int h = 0;
    row_place(p, r, base, h);
    const int y0 = window_edge(p.scale_h, h, p.src_h), y1 = window_edge(p.scale_h, h + 1, p.src_h);
    const T* src = static_cast<const T*>(p.src) + base;
    P* dst = reinterpret_cast<P*>(static_cast<T*>(p.dst) + S(r) * p.inner);
#pragma unroll
    for (int c = 0; c < Cols; ++c) {
      const int g = g0 + c * int(blockDim.x);
      if (g >= groups) break;
      P out;
#pragma unroll
      for (int k = 0; k < Vec; ++k)
        out.v[k] = T(window_sum<A, WinH, WinW>(GlobalRows<T, S>{src + channel[c][k], p.src_outer[2], p.src_w}, y0, y1,
                                               x0[c][k], x1[c][k]));
      dst[g] = out;
    }
  }
}

}  // namespace jitops
