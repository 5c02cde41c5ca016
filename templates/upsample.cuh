// upsample_nearest2d forward and backward, after PyTorch's index rules and
// OneFlow's exact-2x kernels.
//   forward:  out[h][w] = in[min(floor(h * scale_h), H - 1)][...]   (scale = in/out, or 1/scale_factor)
//   backward: gin[h][w] = sum of gout[y][x], y in [ceil(h * s), ceil((h + 1) * s)) clipped to the output
//             (s = out/in, or scale_factor), summed row by row in the accumulate type, as PyTorch does.
// The exact-2x kernels move packed pairs: forward reads `Vec` inputs and
// writes 2*Vec to each of two output rows; backward reads 2*Vec from each of
// two rows and writes Vec sums; no atomics, no memset. Dense results of other
// scales take the row kernels (upsample_rows.cuh); the backward with windows
// wider than a column, the tile kernel (upsample_tiles.cuh).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "jitops/upsample_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

template <typename T> struct AccumulateOf { typedef T type; };
template <> struct AccumulateOf<__half> { typedef float type; };
template <> struct AccumulateOf<__nv_bfloat16> { typedef float type; };
template <> struct AccumulateOf<unsigned char> { typedef unsigned int type; };

}  // namespace jitops

#include "upsample_rows.cuh"
#include "upsample_tiles.cuh"

namespace jitops {

template <int Bits>
__device__ __forceinline__ void unravel4(const UpsampleParams<Bits>& p, typename UpsampleParams<Bits>::Linear i,
                                         int64_t c[4]) {
  typedef typename UpsampleParams<Bits>::Linear L;
#pragma unroll
  for (int d = 3; d >= 0; --d) {
    L r;
    i = p.sizes[d].divmod(i, r);
    c[d] = int64_t(r);
  }
}

__device__ __forceinline__ int forward_source(float scale, int dst, int src_size) {
  return min(static_cast<int>(floorf(dst * scale)), src_size - 1);
}

__device__ __forceinline__ int backward_window(float scale, int dst, int out_size) {
  return min(static_cast<int>(ceilf(dst * scale)), out_size);
}

// Item i of a 2x kernel (Vec elements of row r, group g) and where its two
// doubled rows start, in units of 2 * Vec elements: row 2r at
// r * 2 * (W / Vec) + g, row 2r + 1 one row (W / Vec units) further.
template <int Vec, int Bits>
__device__ __forceinline__ typename UpsampleParams<Bits>::Stride doubled_row_unit(
    const UpsampleParams<Bits>& p, typename UpsampleParams<Bits>::Linear i) {
  typedef typename UpsampleParams<Bits>::Stride S;
  typename UpsampleParams<Bits>::Linear g;
  const typename UpsampleParams<Bits>::Linear r = p.row_groups.divmod(i, g);
  return S(r) * 2 * (p.width / Vec) + S(g);
}

// One thread per output element, in the output's memory order.
template <typename Unit, int Bits, int Unroll>
__device__ __forceinline__ void upsample_forward(const UpsampleParams<Bits>& p) {
  typedef typename UpsampleParams<Bits>::Linear L;
  typedef typename UpsampleParams<Bits>::Stride S;
  const L stride = L(gridDim.x) * blockDim.x;
  for (L base = L(blockIdx.x) * blockDim.x + threadIdx.x; base < p.work; base += stride * Unroll) {
    Unit v[Unroll];
    S dst_off[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const L i = base + L(u) * stride;
      if (i >= p.work) break;
      int64_t c[4];
      unravel4(p, i, c);
      S src = 0, dst = 0;
#pragma unroll
      for (int d = 0; d < 4; ++d) {
        dst += S(c[d]) * p.dst_strides[d];
        int64_t s = c[d];
        if (d == p.h_pos) s = forward_source(p.scale_h, int(c[d]), p.src_h);
        if (d == p.w_pos) s = forward_source(p.scale_w, int(c[d]), p.src_w);
        src += S(s) * p.src_strides[d];
      }
      dst_off[u] = dst;
      v[u] = load_readonly(static_cast<const Unit*>(p.src) + src);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      if (base + L(u) * stride >= p.work) break;
      static_cast<Unit*>(p.dst)[dst_off[u]] = v[u];
    }
  }
}

// Exact 2x, dense NCHW: item i is `Vec` inputs of one row.
template <typename Unit, int Vec, int Bits, int Unroll>
__device__ __forceinline__ void upsample_forward_2x(const UpsampleParams<Bits>& p) {
  typedef typename UpsampleParams<Bits>::Linear L;
  typedef typename UpsampleParams<Bits>::Stride S;
  typedef Pack<Unit, Vec> In;
  typedef Pack<Unit, 2 * Vec> Out;
  const L stride = L(gridDim.x) * blockDim.x;
  for (L base = L(blockIdx.x) * blockDim.x + threadIdx.x; base < p.work; base += stride * Unroll) {
    In v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const L i = base + L(u) * stride;
      if (i < p.work) v[u] = static_cast<const In*>(p.src)[i];
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const L i = base + L(u) * stride;
      if (i >= p.work) break;
      Out o;
#pragma unroll
      for (int k = 0; k < Vec; ++k) o.v[2 * k] = o.v[2 * k + 1] = v[u].v[k];
      const S row0 = doubled_row_unit<Vec>(p, i);
      static_cast<Out*>(p.dst)[row0] = o;
      static_cast<Out*>(p.dst)[row0 + p.width / Vec] = o;
    }
  }
}

// One thread per input-gradient element, in its memory order: the window sum.
template <typename T, int Bits>
__device__ __forceinline__ void upsample_backward(const UpsampleParams<Bits>& p) {
  typedef typename UpsampleParams<Bits>::Linear L;
  typedef typename UpsampleParams<Bits>::Stride S;
  typedef typename AccumulateOf<T>::type A;
  const L stride = L(gridDim.x) * blockDim.x;
  const T* src = static_cast<const T*>(p.src);
  for (L i = L(blockIdx.x) * blockDim.x + threadIdx.x; i < p.work; i += stride) {
    int64_t c[4];
    unravel4(p, i, c);
    S base = 0, dst = 0;
    int h = 0, w = 0;
#pragma unroll
    for (int d = 0; d < 4; ++d) {
      dst += S(c[d]) * p.dst_strides[d];
      if (d == p.h_pos) h = int(c[d]);
      else if (d == p.w_pos) w = int(c[d]);
      else base += S(c[d]) * p.src_strides[d];
    }
    const int y0 = backward_window(p.scale_h, h, p.src_h), y1 = backward_window(p.scale_h, h + 1, p.src_h);
    const int x0 = backward_window(p.scale_w, w, p.src_w), x1 = backward_window(p.scale_w, w + 1, p.src_w);
    const S sh = p.src_strides[p.h_pos], sw = p.src_strides[p.w_pos];
    A sum = A(0);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) sum += A(load_readonly(src + base + S(y) * sh + S(x) * sw));
    static_cast<T*>(p.dst)[dst] = T(sum);
  }
}

// Exact 2x, dense NCHW: item i is `Vec` input-gradient elements of one row.
template <typename T, int Vec, int Bits, int Unroll>
__device__ __forceinline__ void upsample_backward_2x(const UpsampleParams<Bits>& p) {
  typedef typename UpsampleParams<Bits>::Linear L;
  typedef typename UpsampleParams<Bits>::Stride S;
  typedef typename AccumulateOf<T>::type A;
  typedef Pack<T, 2 * Vec> In;
  typedef Pack<T, Vec> Out;
  const L stride = L(gridDim.x) * blockDim.x;
  for (L base = L(blockIdx.x) * blockDim.x + threadIdx.x; base < p.work; base += stride * Unroll) {
    In top[Unroll], bottom[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const L i = base + L(u) * stride;
      if (i >= p.work) break;
      const S row0 = doubled_row_unit<Vec>(p, i);
      top[u] = static_cast<const In*>(p.src)[row0];
      bottom[u] = static_cast<const In*>(p.src)[row0 + p.width / Vec];
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const L i = base + L(u) * stride;
      if (i >= p.work) break;
      Out o;
#pragma unroll
      for (int k = 0; k < Vec; ++k) {
        A sum = A(0);  // PyTorch's order: from zero, row by row, left to right
        sum += A(top[u].v[2 * k]);
        sum += A(top[u].v[2 * k + 1]);
        sum += A(bottom[u].v[2 * k]);
        sum += A(bottom[u].v[2 * k + 1]);
        o.v[k] = T(sum);
      }
      static_cast<Out*>(p.dst)[i] = o;
    }
  }
}

}  // namespace jitops
