// The owned walk with self's rows in shared memory: index_add_ along a dim that self stores densely (the
// indexed dim innermost in self), many terms a row. There every term of the atomic walks is a lone atomic at
// a random place in a short row, bound in the L2 (seed 1912's float32 index_add_ of 107 terms into rows of
// 469: 18M red.global at 76% L2 hits, 341 us against PyTorch's 300), and 16-bit elements pay pairs besides;
// the owned walk (scatter_owned.cuh) takes a row per thread with a dependent chain of global loads and
// stores, and lost past rows of 8 bytes (NOTES 109).
//
// Here a block owns 32 x Groups rows (an owner: every dim but the terms' axis). It reads them into shared
// memory along the rows, then takes the terms in chunks: the chunk's src elements of every row staged in
// shared memory by all the block's threads (coalesced along src's dense dim: the terms' axis where
// SrcAlongTerms, else the owners), the next chunk on its way while this one is applied. Elements of 4 and 8
// bytes go through cp.async, the whole rows and a chunk in flight at once (through registers, 8 or 16 a
// thread at a time, a block's loads waited on in turn: 2-6x slower than the copy floor on rows of 1-3 KB);
// 1- and 2-byte ones, which it cannot copy alone, through registers. A lane
// owns a row, and the RowWarps warps of its group split the row's destinations (warp w takes those with
// index % RowWarps == w, listed for it by warp 0 as the chunk's index values arrive, so that no warp reads
// the others' terms), so each destination is updated by one thread, in the index's order: no atomics, the
// same bits run after run. At the end the rows go back whole.
#pragma once
#include "jitops/async_copy.cuh"
#include "jitops/elementwise_tile_params.h"
#include "scatter_owned.cuh"

namespace jitops {

// Calls visit(r, c) for the block's share of `count` rows of `len` elements, in order along the rows, each
// thread `Threads` elements after the last. The place is stepped, not divided, from one to the next.
template <int Threads, typename F>
__device__ __forceinline__ void for_row_elements(int count, int len, F&& visit) {
  const int rows_step = Threads / len, cols_step = Threads % len;
  for (int r = int(threadIdx.x) / len, c = int(threadIdx.x) % len; r < count;) {
    visit(r, c);
    c += cols_step;
    r += rows_step;
    if (c >= len) c -= len, ++r;
  }
}

// Self's rows (`self_at`: each row's first element) into the shared copy (rows `pitch` apart). 1- and 2-byte
// elements through registers, 16 a thread in flight.
template <int Threads, typename T, typename Stride>
__device__ __forceinline__ void rows_to_shared(const T* self, T* rows, const Stride* self_at, int count, int len,
                                               int pitch) {
  if constexpr (sizeof(T) >= 4) {
    for_row_elements<Threads>(count, len, [&](int r, int c) {
      copy_async<sizeof(T)>(rows + r * pitch + c, self + self_at[r] + c);
    });
  } else {
    constexpr int kAtOnce = 16;
    const int rows_step = Threads / len, cols_step = Threads % len;
    int r = int(threadIdx.x) / len, c = int(threadIdx.x) % len;
    auto step = [&](int& rr, int& cc) {
      cc += cols_step;
      rr += rows_step;
      if (cc >= len) cc -= len, ++rr;
    };
    while (r < count) {
      T v[kAtOnce];
      int rr = r, cc = c;
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k) {
        if (rr < count) v[k] = self[self_at[rr] + cc];
        step(rr, cc);
      }
#pragma unroll
      for (int k = 0; k < kAtOnce; ++k) {
        if (r < count) rows[r * pitch + c] = v[k];
        step(r, c);
      }
    }
  }
}

template <typename T, typename IndexT, int Dims, bool Generic, bool HasAlpha, int Groups, int RowWarps,
          bool SrcAlongTerms, typename P>
__device__ __forceinline__ void scatter_owned_rows(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  constexpr int kRows = 32 * Groups, kThreads = kRows * RowWarps;
  // Terms a chunk: 8 KB of src a block (8 to 128 terms), each lane's row of it an odd number of words apart;
  // two chunks, the next one filling while this one is applied.
  constexpr int kChunkRaw = 8192 / (kRows * int(sizeof(T)));
  constexpr int kChunk = kChunkRaw > 128 ? 128 : kChunkRaw < 8 ? 8 : kChunkRaw;
  constexpr int kChunkPitch = staged_tile_pitch(int(sizeof(T)), kChunk);
  constexpr int kChunkElements = kRows * kChunkPitch;
  // Each thread's share of a chunk; through registers (1- and 2-byte elements) 8 at a time
  constexpr int kSrcShare = kRows * kChunk / kThreads, kSrcAtOnce = kSrcShare < 8 ? kSrcShare : 8;
  constexpr int kPieces = (kChunk + 31) / 32;
  extern __shared__ __align__(16) unsigned char owned_rows_shared[];
  T* rows = reinterpret_cast<T*>(owned_rows_shared);
  __shared__ Stride self_at[kRows], src_at[kRows];
  __shared__ T chunks[2 * kChunkElements];
  // Each warp of a group's terms in the chunk, in the index's order: destination * kChunk + the term's place
  __shared__ int order[RowWarps * kChunk];
  __shared__ int taken[RowWarps];
  const Linear terms = p.sizes[0].divisor;
  const Linear owners = p.numel / terms;
  const int len = int(p.axis_size);
  const int pitch = staged_tile_pitch(int(sizeof(T)), len);
  const Stride src_step = p.src_strides[0], index_step = p.index_strides[0];
  T* self = static_cast<T*>(p.self);
  const T* src = static_cast<const T*>(p.src);
  const IndexT* index = static_cast<const IndexT*>(p.index);
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  const int row = (warp / RowWarps) * 32 + lane, part = warp % RowWarps;
  for (Linear first = (Linear)blockIdx.x * kRows; first < owners; first += (Linear)gridDim.x * kRows) {
    const int count = int(owners - first < (Linear)kRows ? owners - first : (Linear)kRows);
    auto in_chunk_at = [&](Linear t0) { return int(terms - t0 < (Linear)kChunk ? terms - t0 : (Linear)kChunk); };
    // A chunk's src elements of every row into chunks[buffer], and (warp 0) its index values into raw.
    auto stage = [&](Linear t0, int buffer, IndexT (&raw)[kPieces]) {
      const int in_chunk = in_chunk_at(t0);
      if (warp == 0) {
#pragma unroll
        for (int k = 0; k < kPieces; ++k)
          if (k * 32 + lane < in_chunk) raw[k] = load_scatter_index(p, index + (Stride)(t0 + k * 32 + lane) * index_step);
      }
      T* chunk = chunks + buffer * kChunkElements;
      auto place = [&](int at, int& r, int& c) {
        r = SrcAlongTerms ? at / kChunk : at % kRows;
        c = SrcAlongTerms ? at % kChunk : at / kRows;
      };
      if constexpr (sizeof(T) >= 4) {
#pragma unroll
        for (int k = 0; k < kSrcShare; ++k) {
          int r, c;
          place(k * kThreads + int(threadIdx.x), r, c);
          if (r < count && c < in_chunk)
            copy_async<sizeof(T)>(chunk + r * kChunkPitch + c, src + src_at[r] + (Stride)(t0 + c) * src_step);
        }
      } else {
        for (int pass = 0; pass < kSrcShare / kSrcAtOnce; ++pass) {
          T v[kSrcAtOnce];
#pragma unroll
          for (int k = 0; k < kSrcAtOnce; ++k) {
            int r, c;
            place((pass * kSrcAtOnce + k) * kThreads + int(threadIdx.x), r, c);
            if (r < count && c < in_chunk) v[k] = load_readonly(src + src_at[r] + (Stride)(t0 + c) * src_step);
          }
#pragma unroll
          for (int k = 0; k < kSrcAtOnce; ++k) {
            int r, c;
            place((pass * kSrcAtOnce + k) * kThreads + int(threadIdx.x), r, c);
            if (r < count && c < in_chunk) chunk[r * kChunkPitch + c] = v[k];
          }
        }
      }
      copy_async_commit();
    };
    if (int(threadIdx.x) < count) {
      Stride off[4];
      scatter_offsets<Dims, Generic>(p, first + threadIdx.x, off);
      self_at[threadIdx.x] = off[0];
      src_at[threadIdx.x] = off[1];
    }
    __syncthreads();
    rows_to_shared<kThreads>(self, rows, self_at, count, len, pitch);
    IndexT raw[kPieces], next_raw[kPieces];
    stage(0, 0, raw);  // the rows' group, then the first chunk's
    int buffer = 0;
    for (Linear t0 = 0; t0 < terms; t0 += kChunk, buffer ^= 1) {
      const int in_chunk = in_chunk_at(t0);
      if (warp == 0) {  // each warp's list: a warp reads only its own terms
        int filled[RowWarps];
#pragma unroll
        for (int w = 0; w < RowWarps; ++w) filled[w] = 0;
#pragma unroll
        for (int k = 0; k < kPieces; ++k) {
          const int c = k * 32 + lane;
          int j = -1;
          if (c < in_chunk) {
            if ((uint64_t)(int64_t)raw[k] < (uint64_t)len)
              j = int(raw[k]);
            else
              report_bad_index(p.error, index_position(p, (t0 + c) * owners + first), (int64_t)raw[k], p.axis_size,
                               p.op_code);
          }
#pragma unroll
          for (int w = 0; w < RowWarps; ++w) {
            const bool mine = j >= 0 && j % RowWarps == w;
            const unsigned ahead = __ballot_sync(0xFFFFFFFFu, mine);
            if (mine) order[w * kChunk + filled[w] + __popc(ahead & ((1u << lane) - 1u))] = j * kChunk + c;
            filled[w] += __popc(ahead);
          }
        }
        if (lane == 0) {
#pragma unroll
          for (int w = 0; w < RowWarps; ++w) taken[w] = filled[w];
        }
      }
      const bool more = t0 + kChunk < terms;
      if (more) {
        stage(t0 + kChunk, buffer ^ 1, next_raw);  // its buffer's last chunk was applied before the barrier below
        copy_async_wait<1>();
      } else {
        copy_async_wait<0>();
      }
      __syncthreads();  // the rows, this chunk and the lists are in
      if (row < count) {
        T* mine = rows + row * pitch;
        const T* my_terms = chunks + buffer * kChunkElements + row * kChunkPitch;
        const int* list = order + part * kChunk;
        for (int i = 0, n = taken[part]; i < n; ++i) {
          const int e = list[i];  // the same for every lane: one index value
          const int j = e / kChunk, c = e % kChunk;
          mine[j] = owned_update<T, kScatterAdd, HasAlpha>(p, mine[j], my_terms[c]);
        }
      }
      __syncthreads();  // this chunk applied: its buffer and the lists are free
      if (more) {
#pragma unroll
        for (int k = 0; k < kPieces; ++k) raw[k] = next_raw[k];
      }
    }
    for_row_elements<kThreads>(count, len, [&](int r, int c) { self[self_at[r] + c] = rows[r * pitch + c]; });
    __syncthreads();  // the next rows reuse self_at, src_at and the copy
  }
}

}  // namespace jitops
