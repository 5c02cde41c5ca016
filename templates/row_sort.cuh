// Row sums: index_add_ / scatter_add_ where every index entry adds one whole
// contiguous row of src to one row of self. With one atomic per element the
// adds are bound by L2 atomic throughput (scatter_add of 2^20 rows of 128
// float32: 42% of copy speed); here the rows are first sorted by destination
// (a counting sort: count, scan, place), then each warp sums a fixed run of
// kRowSortRun sorted rows, a destination at a time, and adds each sum with one
// vector reduction: ~10 rows per destination means ~10x fewer atomics than
// one per row. Work per warp is the same
// whatever the duplicates look like. Summation order follows the (atomic,
// unordered) placement, as atomics would: not deterministic.
#pragma once
#include "jitops/row_sort_params.h"
#include "scatter.cuh"

namespace jitops {

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31; }

// Row r's destination, false (and a report, when asked) for a bad index.
template <typename IndexT>
__device__ __forceinline__ bool row_destination(const RowSortParams& p, int64_t r, int& d, bool report) {
  const int64_t v = (int64_t)static_cast<const IndexT*>(p.index)[r * p.index_stride];
  if ((uint64_t)v >= (uint64_t)p.destinations) {
    if (report) report_bad_index(p.error, r * p.position_stride, v, p.destinations, p.op_code);
    return false;
  }
  d = int(v);
  return true;
}

// Calls f(r, valid, d, peers) for every row, a warp of consecutive rows at a
// time with all 32 lanes converged; `peers` are the lanes with the same
// destination, so that one lane can act for all of them (one atomic, not 32,
// when a warp's rows share a destination).
template <typename IndexT, typename F>
__device__ __forceinline__ void for_each_row_warp(const RowSortParams& p, bool report, F f) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t base = (int64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < p.rows; base += step) {
    const int64_t r = base + lane_id();
    int d = -1;
    const bool valid = r < p.rows && row_destination<IndexT>(p, r, d, report);
    const unsigned peers = __match_any_sync(0xFFFFFFFFu, valid ? d : -1);
    f(r, valid, d, peers);
  }
}

// Pass 1: rows per destination, and per tile of destinations (in shared
// memory first: a block adds each tile once).
template <typename IndexT>
__device__ __forceinline__ void row_count(const RowSortParams& p) {
  __shared__ int tile_rows[kRowSortMaxTiles];
  for (int i = threadIdx.x; i < p.tiles; i += blockDim.x) tile_rows[i] = 0;
  __syncthreads();
  for_each_row_warp<IndexT>(p, true, [&](int64_t, bool valid, int d, unsigned peers) {
    if (valid && lane_id() == unsigned(__ffs(peers) - 1)) {
      atomicAdd(&p.counts[d], __popc(peers));
      atomicAdd(&tile_rows[d / kRowSortTile], __popc(peers));
    }
  });
  __syncthreads();
  for (int i = threadIdx.x; i < p.tiles; i += blockDim.x)
    if (tile_rows[i]) atomicAdd(&p.tile_sums[i], tile_rows[i]);
}

// Sum over the block (every thread gets it).
__device__ __forceinline__ int block_sum(int v, int* warp_totals) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  __syncthreads();
  if (lane_id() == 0) warp_totals[threadIdx.x >> 5] = v;
  __syncthreads();
  int total = 0;
  for (int w = 0; w < int(blockDim.x >> 5); ++w) total += warp_totals[w];
  return total;
}

// Exclusive prefix over the block's threads.
__device__ __forceinline__ int block_exclusive_scan(int v, int* warp_totals) {
  int inclusive = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int n = __shfl_up_sync(0xFFFFFFFFu, inclusive, o);
    if (int(lane_id()) >= o) inclusive += n;
  }
  __syncthreads();
  if (lane_id() == 31) warp_totals[threadIdx.x >> 5] = inclusive;
  __syncthreads();
  int before = 0;
  for (int w = 0; w < int(threadIdx.x >> 5); ++w) before += warp_totals[w];
  return before + inclusive - v;
}

// Pass 2, one block per tile: counts -> sorted position of each destination's
// first row (rows of earlier tiles from tile_sums, then a scan in the tile).
// Each thread scans kRowSortTile / blockDim.x consecutive destinations.
__device__ __forceinline__ void row_scan(const RowSortParams& p) {
  __shared__ int warp_totals[32];
  int earlier = 0;
  for (int i = threadIdx.x; i < int(blockIdx.x); i += blockDim.x) earlier += p.tile_sums[i];
  earlier = block_sum(earlier, warp_totals);
  const int per_thread = kRowSortTile / blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * kRowSortTile + (int64_t)threadIdx.x * per_thread;
  int mine = 0;
  for (int k = 0; k < per_thread; ++k)
    if (first + k < p.destinations) mine += p.counts[first + k];
  int position = earlier + block_exclusive_scan(mine, warp_totals);
  for (int k = 0; k < per_thread; ++k) {
    if (first + k >= p.destinations) break;
    const int c = p.counts[first + k];
    p.counts[first + k] = position;
    position += c;
  }
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == blockDim.x - 1) *p.total = position;
}

// Pass 3: each valid row takes the next sorted position of its destination.
template <typename IndexT>
__device__ __forceinline__ void row_place(const RowSortParams& p) {
  for_each_row_warp<IndexT>(p, false, [&](int64_t r, bool valid, int d, unsigned peers) {
    const int leader = __ffs(peers) - 1;
    int position = 0;
    if (valid && int(lane_id()) == leader) position = atomicAdd(&p.counts[d], __popc(peers));
    position = __shfl_sync(0xFFFFFFFFu, position, leader);
    if (valid) {
      position += __popc(peers & ((1u << lane_id()) - 1u));
      p.perm[position] = int(r);
      p.dest[position] = d;
    }
  });
}

// Sums run in float (double for double), rounded once per destination.
template <typename T> struct RowAcc { typedef float type; };
template <> struct RowAcc<double> { typedef double type; };
template <typename A, typename T> __device__ __forceinline__ A widen(T v) { return A(to_float(v)); }
template <> __device__ __forceinline__ double widen<double, double>(double v) { return v; }
template <typename T, typename A> __device__ __forceinline__ T narrow(A v) { return T(v); }
template <> __device__ __forceinline__ __half narrow<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

// Adds a destination's sum (one unit of Vec elements) to self by a vector
// reduction (red.global: fire and forget). A read-add-write where the warp
// holds all of a destination's rows would save the atomic, but its load
// stalled the warp before its next rows' loads (sum kernel 191 us, float32).
template <typename T, int Vec, typename A>
__device__ __forceinline__ void flush_unit(const RowSortParams& p, int d, int64_t unit, A (&acc)[Vec]) {
  Pack<T, Vec> v;
#pragma unroll
  for (int e = 0; e < Vec; ++e) v.v[e] = narrow<T>(acc[e]);
  add_pack<T, Vec>(p, (int64_t)d * p.self_row_stride + unit * Vec, v);
}

// Pass 4: warp w sums sorted rows [w * kRowSortRun, ...), lanes along the row
// (units lane, lane + 32, ...), with about 128 bytes of loads in flight per lane.
template <typename T, int Vec, bool HasAlpha>
__device__ __forceinline__ void row_sum(const RowSortParams& p) {
  typedef typename RowAcc<T>::type A;
  constexpr int kUnitBytes = sizeof(T) * Vec;
  constexpr int kInFlight = kUnitBytes >= 16 ? 8 : 16;
  const int lane = int(lane_id());
  const int64_t begin = (((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * kRowSortRun;
  const int64_t total = *p.total;
  if (begin >= total) return;  // the whole warp
  const int count = int(min((int64_t)kRowSortRun, total - begin));
  const int my_row = lane < count ? p.perm[begin + lane] : 0;
  const int my_dest = lane < count ? p.dest[begin + lane] : -1;
  const T* src = static_cast<const T*>(p.src);
  for (int64_t first_unit = 0; first_unit < p.row_units; first_unit += 32) {
    const int64_t unit = first_unit + lane;
    const bool active = unit < p.row_units;
    A acc[Vec];
#pragma unroll
    for (int e = 0; e < Vec; ++e) acc[e] = A(0);
    int cur = __shfl_sync(0xFFFFFFFFu, my_dest, 0);
    for (int k = 0; k < count; k += kInFlight) {
      Pack<T, Vec> v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int row = __shfl_sync(0xFFFFFFFFu, my_row, (k + u) & 31);
        if (k + u < count && active) v[u] = load_pack<T, Vec>(src + (int64_t)row * p.src_row_stride + unit * Vec);
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int d = __shfl_sync(0xFFFFFFFFu, my_dest, (k + u) & 31);
        if (k + u >= count) break;
        if (d != cur) {  // the run of `cur` ends here
          if (active) flush_unit<T, Vec>(p, cur, unit, acc);
#pragma unroll
          for (int e = 0; e < Vec; ++e) acc[e] = A(0);
          cur = d;
        }
        if (active) {
#pragma unroll
          for (int e = 0; e < Vec; ++e) {
            const T t = HasAlpha ? scale(v[u].v[e], p) : v[u].v[e];
            acc[e] += widen<A>(t);
          }
        }
      }
    }
    if (active) flush_unit<T, Vec>(p, cur, unit, acc);
  }
}

}  // namespace jitops
