// upsample_nearest2d backward through shared memory, for windows wider than
// one output-gradient column. The row kernels sum an element's window with
// loads `scale` elements apart across the lanes of a warp (9 of them an
// element at x3, each instruction using a third of the sectors it touches).
// Here a block takes a tile of the input gradient (tile_rows rows of one
// plane, or of one image channels-last, by tile_cols W positions), copies the
// output-gradient rows its windows cover into shared memory with 16-byte
// loads at consecutive addresses across the block, and then each thread sums
// its elements' windows out of shared memory and stores them, consecutive
// threads at consecutive addresses.
//
// Order of the sums: PyTorch's (upsample_nearest2d_backward_out_frame and its
// nhwc twin) and the row kernels' (window_sum): from zero in the accumulate
// type, window rows top to bottom, each left to right, one add an element.
// Staging moves operands, never partial sums: summing each column's rows
// first (a row of vertical sums) would round differently.
//
// Shared memory: y_edge[tile_rows + 1] and x_edge[tile_cols + 1] (the tile's
// window edges), row_at[stage_rows] (where staged row r's element x * C + c
// lies: row_at[r] + x * C + c), then the staged rows, 16-byte aligned. Whole
// rows that follow each other in memory (OneSpan) are staged as one span;
// otherwise each row on its own, `pitch` elements apart. A tile whose rows
// would not fit (past the host's bound, which allows for the float rounding
// of window edges: never in practice) sums straight from global memory.
#pragma once
#include "jitops/upsample_params.h"
#include "jitops/vector_units.cuh"
#include "upsample_rows.cuh"

namespace jitops {

// Staged output-gradient rows as window_sum reads them, for channel c.
template <typename T>
struct StagedRows {
  static constexpr bool kAllInFlight = false;  // shared memory answers at once; rows past the tile have no entry
  const T* data;
  const int* row_at;
  int y0, c, C;
  struct Row {
    const T* data;
    int at, C;
    __device__ __forceinline__ T operator[](int x) const { return data[at + x * C]; }
  };
  __device__ __forceinline__ Row row(int y) const { return Row{data, row_at[y - y0] + c, C}; }
};

// One tile's place, the same in every thread of the block.
template <int Bits>
struct UpsampleTile {
  typename UpsampleTileParams<Bits>::Stride src_base;  // the output gradient's plane or image
  typename UpsampleTileParams<Bits>::Linear dst_row;   // the input gradient's row of the tile's first row
  int h0, rows, w0, cols;  // input-gradient rows [h0, h0 + rows), W positions [w0, w0 + cols)
  int y0, y1, x0, x1;      // the output-gradient rows and columns their windows cover
};

template <int Bits>
__device__ __forceinline__ UpsampleTile<Bits> place_tile(const UpsampleTileParams<Bits>& p,
                                                         typename UpsampleTileParams<Bits>::Linear t) {
  typedef typename UpsampleTileParams<Bits>::Linear L;
  typedef typename UpsampleTileParams<Bits>::Stride S;
  L chunk, block, c1;
  const L outer = p.row_blocks.divmod(p.col_chunks.divmod(t, chunk), block);
  const L c0 = p.outer1.divmod(outer, c1);
  UpsampleTile<Bits> tile;
  tile.src_base = S(c0) * p.src_outer[0] + S(c1) * p.src_outer[1];
  tile.h0 = int(block) * p.tile_rows;
  tile.rows = min(p.tile_rows, p.in_h - tile.h0);
  tile.w0 = int(chunk) * p.tile_cols;
  tile.cols = min(p.tile_cols, p.in_w - tile.w0);
  tile.dst_row = outer * L(p.in_h) + L(tile.h0);
  tile.y0 = window_edge(p.scale_h, tile.h0, p.out_h);
  tile.y1 = window_edge(p.scale_h, tile.h0 + tile.rows, p.out_h);
  tile.x0 = window_edge(p.scale_w, tile.w0, p.out_w);
  tile.x1 = window_edge(p.scale_w, tile.w0 + tile.cols, p.out_w);
  return tile;
}

// Where a span's first element sits in its 16-byte unit, in elements.
template <typename T>
__device__ __forceinline__ int span_lead(const T* from) {
  return int(uint32_t(reinterpret_cast<uint64_t>(from) & 15) / uint32_t(sizeof(T)));
}

// A span of n output-gradient elements from `from`, staged at element `to`
// + lead of shared memory so that its 16-byte units keep their alignment:
// units [lead > 0, (lead + n) / Vec) lie wholly inside it and move as
// vectors; the elements before and after them (under Vec at each end) one by
// one, so no load strays outside. (Offsets, not shared pointers: NVRTC makes
// those 64-bit generic ones, and ptxas spilled them.)
template <typename T>
struct StagedSpan {
  const T* from;
  int to, lead, n;
  __device__ __forceinline__ StagedSpan(const T* from_, int to_, int n_)
      : from(from_), to(to_), lead(span_lead(from_)), n(n_) {}
  __device__ __forceinline__ bool whole(int u) const { return u >= (lead > 0) && u < (lead + n) / int(16 / sizeof(T)); }
  // End element j of 2 * Vec (head j, or tail j - Vec): its place in the span, or -1.
  __device__ __forceinline__ int end_element(int j) const {
    constexpr int Vec = 16 / sizeof(T);
    const int head = min(n, (Vec - lead) % Vec);
    if (j < Vec) return j < head ? j : -1;
    const int e = max(head, (lead + n) / Vec * Vec - lead) + (j - Vec);
    return e < n ? e : -1;
  }
};

// Copies the tile's output-gradient rows into `data`; row_at[r] says where
// row r's element x * C + c went. OneSpan: the tile is whole rows that follow
// each other in memory (x0 is 0), one span; otherwise each row is a span,
// `pitch` elements apart.
template <typename T, int Bits, bool Nchw, bool OneSpan, int Unroll>
__device__ __forceinline__ void stage_tile(const UpsampleTileParams<Bits>& p, const UpsampleTile<Bits>& tile,
                                           const T* src, T* data, int* row_at) {
  typedef typename UpsampleTileParams<Bits>::Stride S;
  constexpr int Vec = 16 / sizeof(T);
  typedef uint4 P;  // whole units are moved as bits, whatever T is
  const int C = Nchw ? 1 : int(p.channels.divisor);
  const int rows = tile.y1 - tile.y0, n = OneSpan ? rows * p.pitch : (tile.x1 - tile.x0) * C;
  const T* first = src + tile.src_base + S(tile.y0) * p.src_row + S(tile.x0) * C;
  auto span = [&](int r) {
    return OneSpan ? StagedSpan<T>(first, 0, n) : StagedSpan<T>(first + S(r) * p.src_row, r * p.pitch, n);
  };
  const int spans = OneSpan ? min(rows, 1) : rows;
  for (int r = threadIdx.x; r < rows; r += blockDim.x)
    row_at[r] = OneSpan ? span(0).lead + r * p.pitch : r * p.pitch + span(r).lead - tile.x0 * C;
  for (int k = threadIdx.x; k < spans * 2 * Vec; k += blockDim.x) {
    const StagedSpan<T> s = span(k / (2 * Vec));
    const int e = s.end_element(k % (2 * Vec));
    if (e >= 0) data[s.to + s.lead + e] = load_readonly(s.from + e);
  }
  // Whole units, Unroll loads in flight a thread.
  if constexpr (OneSpan) {
    const StagedSpan<T> s = span(0);
    const P* from = reinterpret_cast<const P*>(s.from - s.lead);
    P* to = reinterpret_cast<P*>(data);
    const int end = (s.lead + n) / Vec;
    for (int u = (s.lead > 0) + int(threadIdx.x); u < end; u += blockDim.x * Unroll) {
      P v[Unroll];  // loads past the end read the last unit again: none predicated, none kept from the last trip
#pragma unroll
      for (int k = 0; k < Unroll; ++k) v[k] = __ldg(from + min(u + k * int(blockDim.x), end - 1));
#pragma unroll
      for (int k = 0; k < Unroll; ++k)
        if (u + k * int(blockDim.x) < end) to[u + k * int(blockDim.x)] = v[k];
    }
  } else {  // unit i of row i / stage_units; `at`: where a loaded unit goes, or -1
    const int units = rows * int(p.stage_units.divisor);
    for (int base = threadIdx.x; base < units; base += blockDim.x * Unroll) {
      P v[Unroll];
      int at[Unroll];
#pragma unroll
      for (int k = 0; k < Unroll; ++k) {
        const int i = base + k * int(blockDim.x);
        v[k] = make_uint4(0, 0, 0, 0);  // nothing carried over from the last trip
        uint32_t u;
        const int r = int(p.stage_units.divmod(uint32_t(i), u));
        const StagedSpan<T> s = span(r);
        at[k] = -1;
        if (i < units && s.whole(int(u))) {
          v[k] = __ldg(reinterpret_cast<const P*>(s.from - s.lead) + u);
          at[k] = r * p.pitch + int(u) * Vec;
        }
      }
#pragma unroll
      for (int k = 0; k < Unroll; ++k)
        if (at[k] >= 0) *reinterpret_cast<P*>(data + at[k]) = v[k];
    }
  }
}

// Every element of the tile: its window's sum, stored; an item is Per
// consecutive elements of a row (16-bit and 8-bit types: their index
// arithmetic and window edges shared, one 4-byte store). `Rows` reads the
// output gradient (staged, or global memory for a tile too big to stage).
template <typename T, typename A, int Bits, bool Nchw, int WinH, int WinW, int Per, typename Rows>
__device__ __forceinline__ void sum_tile(const UpsampleTileParams<Bits>& p, const UpsampleTile<Bits>& tile,
                                         const int* y_edge, const int* x_edge, Rows rows) {
  typedef typename UpsampleTileParams<Bits>::Linear L;
  const int C = Nchw ? 1 : int(p.channels.divisor);
  const int width = tile.cols * C, items = tile.rows * int(p.tile_elems.divisor);
  T* dst = static_cast<T*>(p.dst) + L(tile.w0) * C;
  for (int i = threadIdx.x; i < items; i += blockDim.x) {
    uint32_t group;
    const int j = int(p.tile_elems.divmod(uint32_t(i), group));
    const int e0 = int(group) * Per;
    if (e0 >= width) continue;  // past a last, narrower column chunk (widths are multiples of Per)
    const int y0 = y_edge[j], y1 = y_edge[j + 1];
    Pack<T, Per> out;
#pragma unroll
    for (int q = 0; q < Per; ++q) {
      uint32_t c = 0;
      const int w = Nchw ? e0 + q : int(p.channels.divmod(uint32_t(e0 + q), c));
      rows.c = int(c);
      out.v[q] = T(window_sum<A, WinH, WinW>(rows, y0, y1, x_edge[w], x_edge[w + 1]));
    }
    *reinterpret_cast<Pack<T, Per>*>(dst + (tile.dst_row + L(j)) * L(p.inner) + L(e0)) = out;
  }
}

// Reads the output gradient for sum_tile where a tile is not staged.
template <typename T, typename S>
struct UnstagedRows {
  static constexpr bool kAllInFlight = false;  // a path never taken in practice: registers matter more
  const T* src;
  S sh;
  int c, C;
  __device__ __forceinline__ typename GlobalRows<T, S>::Row row(int y) const {
    return typename GlobalRows<T, S>::Row{src + S(y) * sh + c, S(C)};
  }
};

template <typename T, typename A, int Bits, bool Nchw, bool OneSpan, int WinH, int WinW, int Unroll, int Per>
__device__ __forceinline__ void upsample_tiles_backward(const UpsampleTileParams<Bits>& p) {
  typedef typename UpsampleTileParams<Bits>::Linear L;
  extern __shared__ __align__(16) unsigned char upsample_tile_shared[];
  int* y_edge = reinterpret_cast<int*>(upsample_tile_shared);
  int* x_edge = y_edge + p.tile_rows + 1;
  int* row_at = x_edge + p.tile_cols + 1;
  const int table_ints = p.tile_rows + p.tile_cols + 2 + p.stage_rows;
  T* data = reinterpret_cast<T*>(upsample_tile_shared + ((table_ints * 4 + 15) / 16) * 16);
  const T* src = static_cast<const T*>(p.src);
  const int C = Nchw ? 1 : int(p.channels.divisor);
  for (L t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    const UpsampleTile<Bits> tile = place_tile(p, t);
    for (int k = threadIdx.x; k <= tile.rows; k += blockDim.x)
      y_edge[k] = window_edge(p.scale_h, tile.h0 + k, p.out_h);
    for (int k = threadIdx.x; k <= tile.cols; k += blockDim.x)
      x_edge[k] = window_edge(p.scale_w, tile.w0 + k, p.out_w);
    const bool staged = tile.y1 - tile.y0 <= p.stage_rows &&
                        (OneSpan || (tile.x1 - tile.x0) * C + 16 / int(sizeof(T)) - 1 <= p.pitch);
    if (staged) stage_tile<T, Bits, Nchw, OneSpan, Unroll>(p, tile, src, data, row_at);
    __syncthreads();
    if (staged)
      sum_tile<T, A, Bits, Nchw, WinH, WinW, Per>(p, tile, y_edge, x_edge, StagedRows<T>{data, row_at, tile.y0, 0, C});
    else
      sum_tile<T, A, Bits, Nchw, WinH, WinW, Per>(p, tile, y_edge, x_edge,
                                             UnstagedRows<T, decltype(p.src_row)>{src + tile.src_base, p.src_row, 0, C});
    __syncthreads();  // the next tile overwrites shared memory
  }
}

}  // namespace jitops
