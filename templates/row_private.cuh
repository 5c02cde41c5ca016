// Heavy duplicates into a small self: index_add_ / scatter_add_ of whole
// rows where self's rows fit in shared memory (a few hot destinations, or
// every index equal). The atomic kernels serialize there (every reduction
// lands on the same few L2 addresses) and the sort has nothing to spread.
//
// A block keeps p.copies private copies of self's rows in shared memory
// (float, or double for double); each copy belongs to a few warps, which
// take the same run of rows and split each row's units among them. They add
// with plain loads and stores: sm_90 has no shared-memory float atomic
// (atomicAdd on a shared float compiles to a compare-and-swap loop), and no
// two threads ever touch one word (a lane owns one unit of a row in its
// copy). Runs of equal destinations are summed in registers first. At the
// end the block folds its copies and adds each touched unit to self with one
// vector reduction. Not deterministic: blocks add in whatever order they
// finish.
#pragma once
#include "row_sort.cuh"

namespace jitops {

// -0 is the identity of float addition (x + -0 == x for every x, -0 and
// NaN included), so a copy starts at -0 and a unit still -0 adds nothing.
__device__ __forceinline__ bool is_identity(float v) { return __float_as_uint(v) == 0x80000000u; }
__device__ __forceinline__ bool is_identity(double v) {
  return (unsigned long long)__double_as_longlong(v) == 0x8000000000000000ull;
}

template <typename A, int Vec>
__device__ __forceinline__ void add_into_copy(A* unit, const A (&run)[Vec]) {
  Pack<A, Vec> c = load_pack_coherent<A, Vec>(unit);
#pragma unroll
  for (int e = 0; e < Vec; ++e) c.v[e] += run[e];
  store_pack<A, Vec>(unit, c);  // a plain store: shared memory too
}

// Rows [first, first + Half) of this warp's run: each lane's unit of each.
template <typename T, int Vec, int Half>
__device__ __forceinline__ void load_rows(const RowSortParams& p, int64_t first, int64_t end, int64_t unit,
                                          Pack<T, Vec> (&v)[Half]) {
  const T* src = static_cast<const T*>(p.src);
#pragma unroll
  for (int u = 0; u < Half; ++u)
    if (first + u < end && unit < p.row_units) v[u] = load_pack<T, Vec>(src + (first + u) * p.src_row_stride + unit * Vec);
}

// Adds rows v[0, Half) into the warp's copy; their destinations are my_dest
// of lanes lane0 + u (-1: no row, or a bad index). A run of equal
// destinations is summed in registers and added once.
template <typename T, int Vec, bool HasAlpha, int Half, typename A>
__device__ __forceinline__ void add_rows(const RowSortParams& p, A* copy, int64_t unit, int my_dest, int lane0,
                                         const Pack<T, Vec> (&v)[Half]) {
  A run[Vec];
  int run_dest = -1;
#pragma unroll
  for (int u = 0; u < Half; ++u) {
    const int d = __shfl_sync(0xFFFFFFFFu, my_dest, lane0 + u);
    if (d < 0 || unit >= p.row_units) continue;
    if (d != run_dest) {
      if (run_dest >= 0) add_into_copy<A, Vec>(copy + (run_dest * p.row_units + unit) * Vec, run);
#pragma unroll
      for (int e = 0; e < Vec; ++e) run[e] = A(-0.0);
      run_dest = d;
    }
    add_row_unit<HasAlpha>(p, v[u], run);
  }
  if (run_dest >= 0) add_into_copy<A, Vec>(copy + (run_dest * p.row_units + unit) * Vec, run);
}

// One launch; the block's dynamic shared memory holds p.copies copies
// (destinations x row_units units of Vec accumulators each). The warps of a
// copy take the same run of rows, each its own 32 units of a row (and every
// warps-per-copy-th 32 after). A warp takes InFlight rows at a time (lane k
// loads row k's index) in two halves, and loads each half's next rows as soon
// as it has added them: half a batch or more stays in flight while it adds.
template <typename T, typename IndexT, int Vec, bool HasAlpha, int InFlight>
__device__ __forceinline__ void row_private(const RowSortParams& p) {
  typedef typename RowAcc<T>::type A;
  constexpr int Half = InFlight / 2;
  static_assert(InFlight <= 32 && Half * 2 == InFlight, "a lane per row's index");
  extern __shared__ __align__(16) unsigned char row_private_shared[];
  A* const copies = reinterpret_cast<A*>(row_private_shared);
  const int64_t copy_units = p.destinations * p.row_units;
  const int warps_per_copy = int(blockDim.x >> 5) / p.copies;
  const int warp = int(threadIdx.x >> 5), lane = int(lane_id());
  const int copy = warp / warps_per_copy, group = warp % warps_per_copy;
  for (int64_t i = threadIdx.x; i < copy_units * Vec * p.copies; i += blockDim.x) copies[i] = A(-0.0);
  __syncthreads();

  A* const mine = copies + copy * copy_units * Vec;
  const int64_t all_copies = (int64_t)gridDim.x * p.copies;
  const int64_t per_copy = (p.rows + all_copies - 1) / all_copies;
  const int64_t begin = min(p.rows, ((int64_t)blockIdx.x * p.copies + copy) * per_copy);
  const int64_t end = min(p.rows, begin + per_copy);
  const IndexT* index = static_cast<const IndexT*>(p.index);
  auto load_index = [&](int64_t base) {
    const int64_t r = base + lane;
    return lane < InFlight && r < end ? (int64_t)load_readonly(index + r * p.index_stride) : int64_t(0);
  };
  for (int64_t first_unit = group * 32; first_unit < p.row_units; first_unit += warps_per_copy * 32) {
    const int64_t unit = first_unit + lane;
    Pack<T, Vec> lo[Half], hi[Half];
    int64_t raw = load_index(begin);
    load_rows<T, Vec, Half>(p, begin, end, unit, lo);
    load_rows<T, Vec, Half>(p, begin + Half, end, unit, hi);
    for (int64_t base = begin; base < end; base += InFlight) {
      const int64_t next = base + InFlight;
      const int64_t next_raw = load_index(next);
      int my_dest = -1;
      if (lane < InFlight && base + lane < end) {
        if ((uint64_t)raw < (uint64_t)p.destinations) my_dest = int(raw);
        else if (first_unit == 0) report_bad_index(p.error, (base + lane) * p.position_stride, raw, p.destinations, p.op_code);
      }
      add_rows<T, Vec, HasAlpha, Half>(p, mine, unit, my_dest, 0, lo);
      load_rows<T, Vec, Half>(p, next, end, unit, lo);
      add_rows<T, Vec, HasAlpha, Half>(p, mine, unit, my_dest, Half, hi);
      load_rows<T, Vec, Half>(p, next + Half, end, unit, hi);
      raw = next_raw;
    }
  }
  __syncthreads();
  for (int64_t s = threadIdx.x; s < copy_units; s += blockDim.x) {
    A sum[Vec];
    Pack<A, Vec> c = load_pack_coherent<A, Vec>(copies + s * Vec);
#pragma unroll
    for (int e = 0; e < Vec; ++e) sum[e] = c.v[e];
    for (int w = 1; w < p.copies; ++w) {
      c = load_pack_coherent<A, Vec>(copies + (w * copy_units + s) * Vec);
#pragma unroll
      for (int e = 0; e < Vec; ++e) sum[e] += c.v[e];
    }
    bool touched = false;
#pragma unroll
    for (int e = 0; e < Vec; ++e) touched |= !is_identity(sum[e]);
    if (touched) flush_unit<T, Vec>(p, int(s / p.row_units), s % p.row_units, sum);
  }
}

}  // namespace jitops
