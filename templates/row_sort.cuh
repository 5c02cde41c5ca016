// Row sums: index_add_ / scatter_add_ where every index entry adds one whole
// contiguous row of src to one row of self. With one atomic per element the
// adds are bound by L2 atomic throughput (scatter_add of 2^20 rows of 128
// float32: 42% of copy speed); here the rows are first sorted by destination
// (a two-level counting sort with atomics in shared memory only: count rows
// per bucket of kRowSortTile destinations, scan, place into buckets, sort each
// bucket; one L2 atomic per row had made the sort ~70 us for 2^20 rows),
// then each warp sums a fixed run of
// kRowSortRun sorted rows, a destination at a time, and adds each sum with one vector
// reduction: ~10 rows per destination means ~10x fewer atomics than one per
// row. Work per warp is the same whatever the duplicates look like. Summation order follows the (atomic,
// unordered) placement, as atomics would: not deterministic. An index that is
// already sorted (the count pass sees it) skips the sort: the passes between
// return at once and the sums take the rows as they lie (float64 rows of 32
// from 1192768 sorted rows: 253 -> 220 us, PyTorch 203, seed 36). The atomic
// kernels stay faster on sorted rows (float32 rows of 300, 208171 rows into
// 131648: 208 against 250 us), but the planner cannot see the order, and an
// atomic launch after the sums that ran only on a sorted index cost random
// ones 10-15 us (benchmarks/NOTES.md item 70).
#pragma once
#include "jitops/row_sort_params.h"
#include "scatter.cuh"

namespace jitops {

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31; }

// Rows per thread whose index loads are in flight together: a loop that
// loads one index, then waits on it, ran at one DRAM round trip per row.
constexpr int kRowSortBatch = 16;
static_assert(kRowSortBatch * kRowSortThreads == kRowSortStaged, "a staged chunk is one batch of the block's threads");

// Walks this block's chunk, Batch rows a thread at a time (their index loads
// in flight together): valid(k, r, d, before) for every row r whose
// destination d is valid (k: which of the batch's), bad(r, v) for the others.
// With RowsBefore, `before` is the index of the row before r (r's own for
// the first row: a neighbour lane's load, from L1); otherwise 0.
template <typename IndexT, int Batch, bool RowsBefore, typename Valid, typename Bad>
__device__ __forceinline__ void for_each_row_of_chunk(const RowSortParams& p, Valid valid, Bad bad) {
  const IndexT* index = static_cast<const IndexT*>(p.index);
  const int64_t begin = (int64_t)blockIdx.x * p.chunk_rows, end = min(p.rows, begin + p.chunk_rows);
  for (int64_t base = begin + threadIdx.x; base < end; base += (int64_t)Batch * blockDim.x) {
    int64_t v[Batch], before[Batch];
#pragma unroll
    for (int k = 0; k < Batch; ++k) {
      const int64_t r = base + (int64_t)k * blockDim.x;
      before[k] = 0;
      if (r < end) {
        v[k] = (int64_t)load_readonly(index + r * p.index_stride);
        if (RowsBefore) before[k] = r > 0 ? (int64_t)load_readonly(index + (r - 1) * p.index_stride) : v[k];
      }
    }
#pragma unroll
    for (int k = 0; k < Batch; ++k) {
      const int64_t r = base + (int64_t)k * blockDim.x;
      if (r >= end) break;
      if ((uint64_t)v[k] >= (uint64_t)p.destinations)
        bad(r, v[k]);
      else
        valid(k, r, int(v[k]), before[k]);
    }
  }
}

__device__ __forceinline__ void skip_bad_row(int64_t, int64_t) {}

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

// Turns counts[0, n) in shared memory into exclusive prefix sums plus `base`
// (each thread scans a run of them) and returns their total. Syncs first and
// last, so counts written before it are seen and its results are seen after.
__device__ __forceinline__ int exclusive_scan_shared(int* counts, int n, int base, int* warp_totals) {
  __syncthreads();
  const int per_thread = (n + int(blockDim.x) - 1) / int(blockDim.x), first = int(threadIdx.x) * per_thread;
  const int last = min(n, first + per_thread);
  int mine = 0;
  for (int i = first; i < last; ++i) mine += counts[i];
  int start = base + block_exclusive_scan(mine, warp_totals);
  const int total = block_sum(mine, warp_totals);  // its syncs also order the reads above before the writes
  for (int i = first; i < last; ++i) {
    const int c = counts[i];
    counts[i] = start;
    start += c;
  }
  __syncthreads();
  return total;
}

// Pass 1, one block per chunk of rows: its rows per tile, counted in shared
// memory and stored plainly (chunk_tile). No atomics in L2: ending each of
// 256 blocks with an atomic per tile for the tile totals (200K in all) cost
// ~2 us of this pass's 10, and the totals a memset first. It also stores
// whether the chunk's destinations, from the row before it on, never
// decrease and are all valid (chunk_in_order): a sorted index skips the sort.
template <typename IndexT>
__device__ __forceinline__ void row_count(const RowSortParams& p) {
  __shared__ int tile_rows[kRowSortMaxTiles];
  for (int t = threadIdx.x; t < p.tiles; t += blockDim.x) tile_rows[t] = 0;
  __syncthreads();
  bool out_of_order = false;  // a bad index too: the sort path skips its row
  // Half a batch of rows, each with the row before's index: as many loads in flight as a batch, and the
  // registers of one (a whole batch and its rows before took 124 registers, two blocks an SM, and the count
  // 6 us longer on 208171 random rows).
  for_each_row_of_chunk<IndexT, kRowSortBatch / 2, true>(
      p,
      [&](int, int64_t, int d, int64_t before) {
        atomicAdd(&tile_rows[d >> kRowSortTileShift], 1);
        out_of_order = out_of_order || before > d;
      },
      [&](int64_t r, int64_t v) {
        report_bad_index(p.error, r * p.position_stride, v, p.destinations, p.op_code);
        out_of_order = true;
      });
  out_of_order = __syncthreads_or(out_of_order);
  for (int t = threadIdx.x; t < p.tiles; t += blockDim.x) p.chunk_tile[(int64_t)t * p.chunks + blockIdx.x] = tile_rows[t];
  if (threadIdx.x == 0) p.chunk_in_order[blockIdx.x] = !out_of_order;
}

// Whether every chunk was in order (count pass): the rows then lie sorted by
// destination, all valid, and place and sort leave them where they are.
__device__ __forceinline__ bool rows_in_order(const RowSortParams& p) {
  bool all = true;
  for (int c = threadIdx.x; c < p.chunks; c += blockDim.x) all = all && p.chunk_in_order[c];
  return __syncthreads_and(all);
}

// Pass 2, one block per tile: where each chunk's rows go in the tile's bucket
// (a scan over the chunks, from 0), and the tile's total, stored plainly.
__device__ __forceinline__ void row_scan(const RowSortParams& p) {
  __shared__ int warp_totals[32];
  const bool in_order = rows_in_order(p);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *p.in_order = in_order;
    if (in_order) *p.total = int(p.rows);
  }
  if (in_order) return;
  const int tile = blockIdx.x;
  int* counts = p.chunk_tile + (int64_t)tile * p.chunks;
  int position = 0;
  for (int first = 0; first < p.chunks; first += blockDim.x) {
    const int c = first + int(threadIdx.x);
    const int rows = c < p.chunks ? counts[c] : 0;
    const int before = block_exclusive_scan(rows, warp_totals);
    if (c < p.chunks) counts[c] = position + before;
    position += block_sum(rows, warp_totals);
  }
  if (threadIdx.x == 0) p.tile_sums[tile] = position;
}

// Pass 3, one block per chunk: each valid row into its tile's bucket, at the
// chunk's positions there. Every block folds the tile totals into bucket
// starts (a scan in shared memory); block 0 also stores them, and the rows in
// all, for the passes after. A chunk of up to kRowSortStaged rows is first put
// in tile order in shared memory, so that a tile's rows go out as one run of
// neighbouring stores; a larger chunk stores each row where it goes (a
// transaction each). Dynamic shared memory: the chunk's first position in
// each bucket and its rows per tile (2 x tiles words), then the staged rows.
template <typename IndexT>
__device__ __forceinline__ void row_place(const RowSortParams& p) {
  if (*p.in_order) return;
  extern __shared__ int place_shared[];
  int* base = place_shared;              // [tiles] this chunk's first position in each bucket
  int* local = place_shared + p.tiles;   // [tiles] its rows per tile, then where each tile's run starts in `staged`
  int2* staged = reinterpret_cast<int2*>(place_shared + 2 * p.tiles);
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  __shared__ int warp_totals[32];
  for (int t = tid; t < p.tiles; t += threads) {  // both loads of a tile in flight together
    base[t] = p.tile_sums[t];
    local[t] = p.chunk_tile[(int64_t)t * p.chunks + blockIdx.x];
  }
  const int total = exclusive_scan_shared(base, p.tiles, 0, warp_totals);  // each bucket's start
  if (blockIdx.x == 0 && tid == 0) *p.total = total;
  for (int t = tid; t < p.tiles; t += threads) {
    if (blockIdx.x == 0) p.tile_start[t] = base[t];
    base[t] += local[t];
    local[t] = 0;
  }
  __syncthreads();
  const int64_t first_row = (int64_t)blockIdx.x * p.chunk_rows;
  const int rows = int(min(p.chunk_rows, p.rows - first_row));
  if (rows > kRowSortStaged) {
    auto bucket = [&](int, int64_t r, int d, int64_t) {
      p.bucketed[atomicAdd(&base[d >> kRowSortTileShift], 1)] = make_int2(int(r), d);
    };
    for_each_row_of_chunk<IndexT, kRowSortBatch, false>(p, bucket, skip_bad_row);
    return;
  }
  // rows <= kRowSortStaged = kRowSortBatch * blockDim.x: one batch, kept in registers.
  int dest[kRowSortBatch];
#pragma unroll
  for (int k = 0; k < kRowSortBatch; ++k) dest[k] = -1;
  for_each_row_of_chunk<IndexT, kRowSortBatch, false>(p, [&](int k, int64_t, int d, int64_t) { dest[k] = d; },
                                                      skip_bad_row);
  int rank[kRowSortBatch];
#pragma unroll
  for (int k = 0; k < kRowSortBatch; ++k)
    if (dest[k] >= 0) rank[k] = atomicAdd(&local[dest[k] >> kRowSortTileShift], 1);
  const int valid = exclusive_scan_shared(local, p.tiles, 0, warp_totals);
#pragma unroll
  for (int k = 0; k < kRowSortBatch; ++k)
    if (dest[k] >= 0)
      staged[local[dest[k] >> kRowSortTileShift] + rank[k]] = make_int2(int(first_row) + k * threads + tid, dest[k]);
  __syncthreads();
  for (int i = tid; i < valid; i += threads) {
    const int2 v = staged[i];
    const int t = v.y >> kRowSortTileShift;
    p.bucketed[base[t] + (i - local[t])] = v;
  }
}

// Pass 4, one block per tile: a counting sort of its bucket by destination
// (kRowSortTile counters in shared memory) into `sorted`. A bucket of up to
// kRowSortStaged rows is sorted in shared memory and written out in order
// (each store lands next to its neighbours'); a larger one (a few hot
// destinations) is scattered straight into `sorted`, a transaction a row,
// kRowSortBatch rows a thread loaded before any is counted or placed, and a
// warp's rows to one destination taking one shared atomic between them: one
// row at a time, each row waited out an L2 round trip and its lanes queued
// on one counter (8 hot tiles of 145K rows: the sort 386 us of the call's
// 576; now 448 in all, NOTES 77).
__device__ __forceinline__ void row_tile_sort(const RowSortParams& p) {
  if (*p.in_order) return;
  __shared__ int slot[kRowSortTile];
  __shared__ int warp_totals[32];
  __shared__ int2 staged[kRowSortStaged];
  const int tile = blockIdx.x, first_dest = tile << kRowSortTileShift;
  const int begin = p.tile_start[tile], rows = p.tile_sums[tile];
  const int threads = int(blockDim.x), tid = int(threadIdx.x);
  for (int i = tid; i < kRowSortTile; i += threads) slot[i] = 0;
  __syncthreads();
  if (rows <= kRowSortBatch * threads) {
    // Pairs held in registers; counted, then staged by cursors (ranks kept
    // beside them took 97 registers and two blocks per SM; reloading the
    // pairs instead cost 2 us of the sort's 36).
    int2 row[kRowSortBatch];
#pragma unroll
    for (int k = 0; k < kRowSortBatch; ++k)
      if (k * threads + tid < rows) {
        row[k] = p.bucketed[begin + k * threads + tid];
        atomicAdd(&slot[row[k].y - first_dest], 1);
      }
    exclusive_scan_shared(slot, kRowSortTile, 0, warp_totals);
#pragma unroll
    for (int k = 0; k < kRowSortBatch; ++k)
      if (k * threads + tid < rows) staged[atomicAdd(&slot[row[k].y - first_dest], 1)] = row[k];
    __syncthreads();
    for (int i = tid; i < rows; i += threads) p.sorted[begin + i] = staged[i];
    return;
  }
  // Block-uniform trip counts: every lane of a warp takes part in its matches.
  const int end = begin + rows, lane = tid & 31, step = threads * kRowSortBatch;
  for (int base = begin; base < end; base += step) {
    int d[kRowSortBatch];  // the row's destination in the tile; -1 past the bucket
#pragma unroll
    for (int k = 0; k < kRowSortBatch; ++k) {
      const int i = base + k * threads + tid;
      d[k] = i < end ? p.bucketed[i].y - first_dest : -1;
    }
#pragma unroll
    for (int k = 0; k < kRowSortBatch; ++k) {
      const unsigned peers = __match_any_sync(0xFFFFFFFFu, d[k]);
      if (d[k] >= 0 && lane == __ffs(peers) - 1) atomicAdd(&slot[d[k]], __popc(peers));
    }
  }
  exclusive_scan_shared(slot, kRowSortTile, begin, warp_totals);
  for (int base = begin; base < end; base += step) {
    int2 v[kRowSortBatch];
#pragma unroll
    for (int k = 0; k < kRowSortBatch; ++k) {
      const int i = base + k * threads + tid;
      v[k] = i < end ? p.bucketed[i] : make_int2(0, first_dest - 1);
    }
#pragma unroll
    for (int k = 0; k < kRowSortBatch; ++k) {
      const int d = v[k].y - first_dest;
      const unsigned peers = __match_any_sync(0xFFFFFFFFu, d);
      const int leader = __ffs(peers) - 1;
      int start = 0;
      if (d >= 0 && lane == leader) start = atomicAdd(&slot[d], __popc(peers));
      start = __shfl_sync(0xFFFFFFFFu, start, leader);
      if (d >= 0) p.sorted[start + __popc(peers & ((1u << lane) - 1))] = v[k];
    }
  }
}

// Sums run in float (double for double), rounded once per destination.
template <typename T> struct RowAcc { typedef float type; };
template <> struct RowAcc<double> { typedef double type; };
template <typename A, typename T> __device__ __forceinline__ A widen(T v) { return A(to_float(v)); }
template <> __device__ __forceinline__ double widen<double, double>(double v) { return v; }
template <typename T, typename A> __device__ __forceinline__ T narrow(A v) { return T(v); }
template <> __device__ __forceinline__ __half narrow<__half, float>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

// Adds one row's unit (times alpha where given) to a running sum.
template <bool HasAlpha, typename T, int Vec, typename A>
__device__ __forceinline__ void add_row_unit(const RowSortParams& p, const Pack<T, Vec>& v, A (&acc)[Vec]) {
#pragma unroll
  for (int e = 0; e < Vec; ++e) acc[e] += widen<A>(HasAlpha ? scale(v.v[e], p) : v.v[e]);
}

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

// A group of a warp's lanes takes rows of the warp's batch (Half of them,
// from pair lane lane0 on) and each lane its unit of each; `pair` holds the
// batch's (row, destination) pairs, a lane each ((-1, -1) past the run).
template <typename T, int Vec, int Half>
__device__ __forceinline__ void load_sorted_rows(const RowSortParams& p, int2 pair, int lane0, int64_t unit,
                                                 bool active, Pack<T, Vec> (&v)[Half]) {
  const T* src = static_cast<const T*>(p.src);
  int row[Half];  // every shuffle first, while the warp is converged
#pragma unroll
  for (int u = 0; u < Half; ++u) row[u] = __shfl_sync(0xFFFFFFFFu, pair.x, lane0 + u);
#pragma unroll
  for (int u = 0; u < Half; ++u)
    if (row[u] >= 0 && active) v[u] = load_pack<T, Vec>(src + (int64_t)row[u] * p.src_row_stride + unit * Vec);
}

// Adds rows v[0, Half) (pair lanes lane0 + u) into the lane's running sum of
// destination `cur`, adding that sum to self where the destination changes.
template <typename T, int Vec, bool HasAlpha, int Half, typename A>
__device__ __forceinline__ void sum_sorted_rows(const RowSortParams& p, int2 pair, int lane0, int64_t unit,
                                                bool active, const Pack<T, Vec> (&v)[Half], A (&acc)[Vec],
                                                int& cur) {
#pragma unroll
  for (int u = 0; u < Half; ++u) {
    const int d = __shfl_sync(0xFFFFFFFFu, pair.y, lane0 + u);
    if (d < 0) continue;
    if (d != cur) {  // the run of `cur` ends here
      if (cur >= 0 && active) flush_unit<T, Vec>(p, cur, unit, acc);
#pragma unroll
      for (int e = 0; e < Vec; ++e) acc[e] = A(0);
      cur = d;
    }
    if (active) add_row_unit<HasAlpha>(p, v[u], acc);
  }
}

// Pass 5: warp w sums sorted rows [w * kRowSortRun, ...), a destination at a
// time. A batch is InFlight rows per group of lanes: where a row has 16 units
// or fewer, the warp's lanes split into groups that each take their own rows
// (a 128-wide float16 row is 16 units of 16 bytes), so that a load moves a
// warp's width whatever the dtype (float16 sums 174 -> 121 us on the bench's
// scatter_add). Loads stay in flight as in the private copies: two halves,
// each half's next rows loaded as soon as it has been added, the pairs a
// batch ahead. Short runs and few rows in flight a warp, so many warps a SM,
// measured best: longer spans or more rows in flight a warp were slower
// (benchmarks/NOTES.md item 32).
template <typename T, typename IndexT, int Vec, bool HasAlpha, int InFlight>
__device__ __forceinline__ void row_sum(const RowSortParams& p) {
  typedef typename RowAcc<T>::type A;
  constexpr int Half = InFlight / 2;
  static_assert(InFlight <= 32 && Half * 2 == InFlight, "a pair lane per row of a batch");
  int row_lanes = 32;  // lanes per row: halved while a row still has a lane per unit and a batch a pair lane per row
  while (row_lanes > 1 && row_lanes / 2 >= p.row_units && (64 / row_lanes) * InFlight <= 32) row_lanes /= 2;
  const int lane = int(lane_id()), group = lane / row_lanes, batch = (32 / row_lanes) * InFlight;
  const int64_t total = *p.total;
  const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int64_t begin = min(total, warp / p.unit_splits * kRowSortRun);
  const int split = int(warp % p.unit_splits);
  const int64_t end = min(total, begin + kRowSortRun);
  if (begin >= end) return;  // the whole warp
  // A sorted index (count pass) is its own pairs: row i goes to index[i].
  const bool in_order = *p.in_order;
  const IndexT* index = static_cast<const IndexT*>(p.index);
  auto load_pairs = [&](int64_t base) {
    const int64_t i = base + lane;
    if (!(lane < batch && i < end)) return make_int2(-1, -1);
    return in_order ? make_int2(int(i), int(load_readonly(index + i * p.index_stride))) : p.sorted[i];
  };
  const int lo_lane = group * InFlight, hi_lane = lo_lane + Half;
  for (int64_t first_unit = (int64_t)split * row_lanes; first_unit < p.row_units;
       first_unit += (int64_t)row_lanes * p.unit_splits) {
    const int64_t unit = first_unit + lane % row_lanes;
    const bool active = unit < p.row_units;
    Pack<T, Vec> lo[Half], hi[Half];
    int2 pair = load_pairs(begin), next = load_pairs(begin + batch);
    load_sorted_rows<T, Vec, Half>(p, pair, lo_lane, unit, active, lo);
    load_sorted_rows<T, Vec, Half>(p, pair, hi_lane, unit, active, hi);
    A acc[Vec];
#pragma unroll
    for (int e = 0; e < Vec; ++e) acc[e] = A(0);
    int cur = -1;
    for (int64_t base = begin; base < end; base += batch) {
      const int2 after = load_pairs(base + 2 * batch);
      sum_sorted_rows<T, Vec, HasAlpha, Half>(p, pair, lo_lane, unit, active, lo, acc, cur);
      load_sorted_rows<T, Vec, Half>(p, next, lo_lane, unit, active, lo);
      sum_sorted_rows<T, Vec, HasAlpha, Half>(p, pair, hi_lane, unit, active, hi, acc, cur);
      load_sorted_rows<T, Vec, Half>(p, next, hi_lane, unit, active, hi);
      pair = next;
      next = after;
    }
    if (cur >= 0 && active) flush_unit<T, Vec>(p, cur, unit, acc);
  }
}

}  // namespace jitops
