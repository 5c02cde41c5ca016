// The accumulate family: index_add_, index_copy_, index_fill_, scatter_add_
// and scatter_reduce_ (PyTorch's indexFuncSmallIndex / LargeIndex and
// scatter kernels, on collapsed dimensions).
//
// Layouts as in gather.cuh: linear (FastDivmod offsets) or 2-D, threadIdx.x
// along the inner (contiguous) dimension and threadIdx.y / the unrolled loop
// along the rows. With a 2-D grid of one block row per index ("small index"
// regime) a thread loads each index once and walks the slice; otherwise the
// (index, slice) pairs spread over the grid ("large index" regime).
// Each thread loads all its indices, then all its source units, then applies
// them, so Unroll loads of each kind are in flight together.
#pragma once
#include "jitops/atomics.cuh"
#include "jitops/block_order.cuh"
#include "jitops/ragged_packs.cuh"
#include "jitops/scatter_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

// An index as the kernels use it: negative ones moved up by p.index_wrap (a
// select, no branch), so that equal destinations compare equal from here on.
template <typename IndexT, typename P>
__device__ __forceinline__ IndexT load_scatter_index(const P& p, const IndexT* at) {
  const IndexT raw = load_readonly(at);
  return raw < 0 ? IndexT(raw + p.index_wrap) : raw;
}

// A pack through the coherent path, as one load of its size: memory this
// thread wrote (shared memory, or self in the owned walk, where the
// read-only path may serve a line from before the write).
template <typename T, int Vec>
__device__ __forceinline__ Pack<T, Vec> load_pack_coherent(const T* p) {
  typedef typename UnitOf<sizeof(T) * Vec>::type Raw;
  const Raw raw = *reinterpret_cast<const Raw*>(p);
  Pack<T, Vec> out;
  memcpy(&out, &raw, sizeof(out));
  return out;
}


// Shifts each unit's self and src offsets to its aligned pack and sets the
// pack's span in the row; a unit wholly past its row's end is left out. Where
// rows lie at different phases the pack follows from the destination, and a
// unit with a bad index keeps an empty span (it is reported, nothing moves);
// at one phase (peel_fixed_phase) it follows from the unit's own place, so
// that src's loads go out beside the index's, as the element walk's do.
template <typename T, int Vec, int Unroll, typename P, typename IndexT>
__device__ __forceinline__ void peel_units(const P& p, bool (&valid)[Unroll], const IndexT (&raw)[Unroll],
                                           typename P::Stride (&off)[Unroll][4], PackSpans<Unroll>& spans) {
  typedef typename P::Stride Stride;
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    spans.lo[k] = spans.hi[k] = 0;
    if (!valid[k]) continue;
    Stride dst = off[k][0];
    if (!p.peel_fixed_phase) {
      if ((uint64_t)(int64_t)raw[k] >= (uint64_t)p.axis_size) continue;
      dst += (Stride)(int64_t)raw[k] * p.axis_stride;
    }
    const int shift = pack_shift<T, Vec>(static_cast<T*>(p.self) + dst);
    if (!pack_span<Vec>((int64_t)off[k][3], shift, p.peel_len, spans.lo[k], spans.hi[k])) {
      valid[k] = false;
      continue;
    }
    off[k][0] -= shift;
    off[k][1] -= (Stride)shift * p.peel_src_step;
  }
}

// A ragged pack's source: one value for all where src is broadcast along the
// row (step 0), one load where the pack is whole and src aligned like self,
// else its elements one at a time (src's rows need not lie as self's do).
template <typename T, int Vec>
__device__ __forceinline__ Pack<T, Vec> load_ragged(const T* s, int step, int lo, int hi) {
  Pack<T, Vec> out;
  if (step == 0) {
    const T v = load_readonly(s);
#pragma unroll
    for (int j = 0; j < Vec; ++j) out.v[j] = v;
    return out;
  }
  if (lo == 0 && hi == Vec && reinterpret_cast<unsigned long long>(s) % (sizeof(T) * Vec) == 0) return load_pack<T, Vec>(s);
#pragma unroll
  for (int j = 0; j < Vec; ++j) out.v[j] = j >= lo && j < hi ? load_readonly(s + j) : T();
  return out;
}

// Adds Vec adjacent elements: one float4 / float2 reduction on sm_90, packed
// half2 / bfloat162 pairs, FastAtomicAdd for a lone 16-bit float.
template <typename T, int Vec, typename P>
__device__ __forceinline__ void add_pack(const P& p, typename P::Stride off, const Pack<T, Vec>& v) {
  T* self = static_cast<T*>(p.self);
#if __CUDA_ARCH__ >= 900
  if constexpr (same_type<T, float>::value && Vec == 4) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(self + off), "f"(v.v[0]), "f"(v.v[1]),
                 "f"(v.v[2]), "f"(v.v[3]) : "memory");
    return;
  }
  if constexpr (same_type<T, float>::value && Vec == 2) {
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(self + off), "f"(v.v[0]), "f"(v.v[1]) : "memory");
    return;
  }
#endif
#if __CUDA_ARCH__ >= 900
  // sm_90's vector reductions: the whole 8- or 16-byte pack in one instruction.
  // Four separate half2 atomics per thread would each stride 16 bytes across the
  // warp, touching four times the sectors (measured: scatter_add float16 0.90x
  // of PyTorch that way).
  if constexpr ((same_type<T, __half>::value || same_type<T, __nv_bfloat16>::value) && (Vec == 8 || Vec == 4)) {
    unsigned w[Vec / 2];
    memcpy(w, &v, sizeof(w));
    T* addr = self + off;
    if constexpr (Vec == 8 && same_type<T, __half>::value)
      asm volatile("red.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};" ::"l"(addr), "r"(w[0]), "r"(w[1]),
                   "r"(w[2]), "r"(w[3]) : "memory");
    if constexpr (Vec == 8 && same_type<T, __nv_bfloat16>::value)
      asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(addr), "r"(w[0]), "r"(w[1]),
                   "r"(w[2]), "r"(w[3]) : "memory");
    if constexpr (Vec == 4 && same_type<T, __half>::value)
      asm volatile("red.global.add.noftz.v2.f16x2 [%0], {%1, %2};" ::"l"(addr), "r"(w[0]), "r"(w[1]) : "memory");
    if constexpr (Vec == 4 && same_type<T, __nv_bfloat16>::value)
      asm volatile("red.global.add.noftz.v2.bf16x2 [%0], {%1, %2};" ::"l"(addr), "r"(w[0]), "r"(w[1]) : "memory");
    return;
  }
#endif
  if constexpr (Vec >= 2) {
    if constexpr (same_type<T, __half>::value) {
#pragma unroll
      for (int j = 0; j < Vec; j += 2) red_add(reinterpret_cast<__half2*>(self + off + j), __halves2half2(v.v[j], v.v[j + 1]));
      return;
    }
#if __CUDA_ARCH__ >= 800
    if constexpr (same_type<T, __nv_bfloat16>::value) {
#pragma unroll
      for (int j = 0; j < Vec; j += 2)
        red_add(reinterpret_cast<__nv_bfloat162*>(self + off + j), __halves2bfloat162(v.v[j], v.v[j + 1]));
      return;
    }
#endif
  }
  if constexpr (Vec == 1) {
    fast_atomic_add(self, off, p.self_lo, p.self_hi, v.v[0]);
  } else if constexpr (is_integer<T>::value && sizeof(T) <= 2) {  // 8- and 16-bit integers: one CAS a pack
    cas_update_pack<T, Vec>(self + off, [&](int j, T cur) { return add_op(cur, v.v[j]); });
  } else {
#pragma unroll
    for (int j = 0; j < Vec; ++j) atomic_add(self + off + j, v.v[j]);
  }
}

template <typename T, int Op, int Vec, bool HasAlpha, typename P>
__device__ __forceinline__ void apply(const P& p, typename P::Stride self_off, const Pack<T, Vec>& src,
                                      typename P::Stride counts_off) {
  T* self = static_cast<T*>(p.self) + self_off;
  if constexpr (Op == kScatterFill || Op == kScatterPrepare) {
    // Prepare resets self to the identity only when self is not part of the
    // reduction, and counts the values each element will receive (mean).
    if (Op == kScatterFill || !p.include_self) {
      T value;
      memcpy(&value, p.value, sizeof(T));
      Pack<T, Vec> pk;
#pragma unroll
      for (int j = 0; j < Vec; ++j) pk.v[j] = value;
      store_pack<T, Vec>(self, pk);
    }
    if (Op == kScatterPrepare && p.counts) atomicAdd(p.counts + counts_off, 1);
  } else if constexpr (Op == kScatterCopy) {
    store_pack<T, Vec>(self, src);
  } else if constexpr (Op == kScatterAdd) {
    Pack<T, Vec> v = src;
    if constexpr (HasAlpha) {
#pragma unroll
      for (int j = 0; j < Vec; ++j) v.v[j] = scale(v.v[j], p);
    }
    add_pack<T, Vec>(p, self_off, v);
  } else if constexpr (Vec > 1) {  // a pack of compare-and-swap updates: one loop on the word it fills
    if constexpr (Op == kScatterMul) cas_update_pack<T, Vec>(self, [&](int j, T cur) { return mul_op(cur, src.v[j]); });
    if constexpr (Op == kScatterMax)
      cas_update_pack<T, Vec, true>(self, [&](int j, T cur) { return max_op(cur, src.v[j]); });
    if constexpr (Op == kScatterMin)
      cas_update_pack<T, Vec, true>(self, [&](int j, T cur) { return min_op(cur, src.v[j]); });
  } else {
    if constexpr (Op == kScatterMul) atomic_mul(self, src.v[0]);
    if constexpr (Op == kScatterMax) atomic_max(self, src.v[0]);
    if constexpr (Op == kScatterMin) atomic_min(self, src.v[0]);
  }
}

// Offsets of iteration unit `linear` in self, src, index and counts.
template <int Dims, bool Generic, typename P>
__device__ __forceinline__ void scatter_offsets(const P& p, typename P::Linear linear, typename P::Stride (&off)[4]) {
  typedef typename P::Stride Stride;
  off[0] = off[1] = off[2] = off[3] = 0;
#pragma unroll
  for (int d = Dims - 1; d >= 0; --d) {
    if (!Generic || d < p.ndim) {
      typename P::Linear r = linear;
      if (d > 0) linear = p.sizes[d].divmod(linear, r);
      off[0] += (Stride)r * p.self_strides[d];
      off[1] += (Stride)r * p.src_strides[d];
      off[2] += (Stride)r * p.index_strides[d];
      off[3] += (Stride)r * p.counts_strides[d];
    }
  }
}

// Whether Op on T reads the element before it updates it: a compare-and-swap
// loop (no hardware atomic: products, and max and min but of int32 / int64),
// or float32 / float64 max and min (a read, then a reduction where the value
// changes: FloatExtremum). Updates of one element then contend, so a warp's
// peers on one destination combine first.
template <typename T, int Op>
struct ReadsFirst {
  static constexpr bool value = Op == kScatterMul ||
                                ((Op == kScatterMax || Op == kScatterMin) &&
                                 !(same_type<T, int>::value || same_type<T, long long>::value));
};

// float and double max and min: integer reductions on the bits, each after a
// read of the element (jitops/float_extremum.cuh).
template <typename T, int Op>
struct FloatExtremum {
  static constexpr bool value =
      (Op == kScatterMax || Op == kScatterMin) && (same_type<T, float>::value || same_type<T, double>::value);
};

// Updates that take a compare-and-swap loop a pack: ReadsFirst's, and adds of 8-
// and 16-bit integers (no hardware atomic of their width). The planner packs
// them to fill one 32-bit word where self's inner dim is dense.
template <typename T, int Op>
struct CasPack {
  static constexpr bool value = ReadsFirst<T, Op>::value || (Op == kScatterAdd && is_integer<T>::value && sizeof(T) <= 2);
};

// What a run is combined in: float for 16-bit floats, int for 8- and 16-bit
// integers (shuffles move 32 or 64 bits; a wrapped product's low bits are the
// narrow type's), the type itself otherwise.
template <typename T> struct RunValue { typedef T type; };
template <> struct RunValue<__half> { typedef float type; };
template <> struct RunValue<__nv_bfloat16> { typedef float type; };
template <> struct RunValue<signed char> { typedef int type; };
template <> struct RunValue<unsigned char> { typedef int type; };
template <> struct RunValue<short> { typedef int type; };

// Native atomics whose runs combine too: adds of 32- and 64-bit types, and
// int32/int64 max and min, each element its own red. A sorted column of
// float64 (60M adds into 836K destinations, ~72 a destination) sent every one
// to L2, where updates of one address serialize: 0.80x PyTorch's (NOTES 55);
// amax of a sorted int32 column (16.6M into 66056) 0.58x (NOTES 64).
template <typename T, int Op>
struct CombinesNativeRuns {
  static constexpr bool wide = same_type<T, int>::value || same_type<T, long long>::value;
  static constexpr bool value =
      (Op == kScatterAdd && (same_type<T, float>::value || same_type<T, double>::value || wide)) ||
      ((Op == kScatterMax || Op == kScatterMin) && wide);
};

template <int Op, typename A>
__device__ __forceinline__ A combine(A a, A b) {
  if constexpr (Op == kScatterAdd) {
    if constexpr (same_type<A, int>::value) return int(unsigned(a) + unsigned(b));  // wraps, as the atomic does
    else if constexpr (same_type<A, long long>::value)
      return (long long)((unsigned long long)a + (unsigned long long)b);
    else return a + b;
  }
  if constexpr (Op == kScatterMul) {
    if constexpr (same_type<A, int>::value) return int(unsigned(a) * unsigned(b));  // wraps, no overflow
    else if constexpr (same_type<A, long long>::value)
      return (long long)((unsigned long long)a * (unsigned long long)b);
    else return a * b;
  }
  if constexpr (Op == kScatterMax) return max_op(a, b);
  return min_op(a, b);
}

// Runs of lanes in a warp whose single elements go to one destination (sorted
// indices) combine them, and the run's first lane applies one CAS loop instead
// of the run contending on one address (a 32-way contention retries up to 32
// times). A segmented tree over shuffles, in float for 16-bit floats (one
// rounding, fewer than a chain of CAS updates); a warp with no run pays one
// shuffle and one vote a unit. Lanes that share a destination but not a run
// (A B A) stay apart, which is only slower.
template <typename T, int Op, int Unroll, int Vec, typename P, typename IndexT>
__device__ __forceinline__ void combine_runs(const P& p, const bool (&valid)[Unroll], const bool (&bad)[Unroll],
                                             const IndexT (&raw)[Unroll], const typename P::Stride (&off)[Unroll][4],
                                             Pack<T, Vec> (&src)[Unroll], bool (&merged)[Unroll]) {
  typedef typename RunValue<T>::type A;
  const unsigned active = __activemask();
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    const bool live = valid[k] && !bad[k] && !merged[k];
    const long long dest = live ? (long long)(off[k][0] + (typename P::Stride)(int64_t)raw[k] * p.axis_stride)
                                : -1ll - (long long)lane;
    const long long before = __shfl_up_sync(active, dest, 1);
    const bool head = lane == 0 || !((active >> (lane - 1)) & 1) || before != dest;
    const unsigned heads = __ballot_sync(active, head) | ~active;  // inactive lanes end runs
    if (heads == 0xFFFFFFFFu) continue;
    // This lane's run ends at the next head above it (or 32).
    const unsigned above = lane == 31 ? 0u : heads & (0xFFFFFFFFu << (lane + 1));
    const unsigned end = above ? unsigned(__ffs(above) - 1) : 32u;
    A v[Vec];
#pragma unroll
    for (int e = 0; e < Vec; ++e) v[e] = A(src[k].v[e]);
#pragma unroll
    for (unsigned step = 1; step < 32; step <<= 1) {
#pragma unroll
      for (int e = 0; e < Vec; ++e) {
        const A other = __shfl_down_sync(active, v[e], step);
        if (lane + step < end) v[e] = combine<Op>(v[e], other);
      }
    }
    if (live) {
      if (head) {
#pragma unroll
        for (int e = 0; e < Vec; ++e) src[k].v[e] = T(v[e]);
      } else {
        merged[k] = true;
      }
    }
  }
}

// The lanes of a warp whose single elements share a destination, in any
// order (__match_any_sync), are combined (in float for 16-bit floats) and
// applied by the group's first lane. 16-bit float adds: a hot destination
// otherwise takes one float16 rounding per term: ~4M terms into each of 8
// rows (31M values) stalled at twice PyTorch's error in one run and within it
// in another; the groups' sums round once per group, and the atomics drop by
// the group's size. Compare-and-swap ops (products, floating max and min)
// into a few hot elements: a warp's lanes over 8 random destinations made 32
// CAS loops contending on 8 words, where runs (A A B) merged almost none
// (bfloat16 products of 77295 values into 8 elements, 0.60x PyTorch's, seed
// 39). Each round of the tree combines the next remaining peer's partial;
// lanes of odd rank are then spent.
template <typename T> struct IsNarrowFloat {
  static constexpr bool value = same_type<T, __half>::value || same_type<T, __nv_bfloat16>::value;
};

template <typename T, int Op, int Unroll, int Vec, bool AfterRuns, bool Tested = false, typename P, typename IndexT>
__device__ __forceinline__ void combine_peers(const P& p, const bool (&valid)[Unroll], const bool (&bad)[Unroll],
                                              const IndexT (&raw)[Unroll], const typename P::Stride (&off)[Unroll][4],
                                              Pack<T, Vec> (&src)[Unroll], bool (&merged)[Unroll]) {
  typedef typename P::Stride Stride;
  typedef typename RunValue<T>::type A;
  const unsigned active = __activemask();
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  const unsigned below = (1u << lane) - 1u;
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    const bool live = valid[k] && !bad[k] && !merged[k];
    const Stride dest = live ? off[k][0] + (Stride)(int64_t)raw[k] * p.axis_stride : Stride(0);
    // The match runs unless a full warp's destinations rise strictly (then
    // they share none, and one shuffle and one vote decide it). A neighbour
    // test that skipped on no equal neighbours missed hot warps whose units
    // had partly merged in their threads (8 hot rows: 3383 -> 4258 us, NOTES
    // 68); spread destinations (float16, 16M random into 16M) ran as fast
    // with the match. Matching every warp made 16-bit adds along dense rows
    // issue-bound (float16 index_add_ of (17x4x3x47163) rows: 113.8 -> 54.4
    // us, PyTorch 60.6; 185 cases of seeds 40-99 1.02x in geomean, index_add_
    // 1.16x; sorted one-column sums, whose runs still take the match, up to
    // 7% slower; NOTES 72).
    // AfterRuns: runs are combined already, and a sorted index leaves their
    // heads, rising among the live lanes: the match would find nothing.
    // Tested: the caller's sign found peers already (lanes_repeat).
    if constexpr (Tested) {
    } else if constexpr (AfterRuns) {
      const unsigned live_below = __ballot_sync(active, live) & below;
      const Stride prev = __shfl_sync(active, dest, live_below ? 31 - __clz(live_below) : lane);
      if (__all_sync(active, !live || live_below == 0u || prev < dest)) continue;
    } else if (active == 0xFFFFFFFFu) {
      const Stride prev = __shfl_up_sync(active, dest, 1);
      if (__all_sync(active, live && (lane == 0 || prev < dest))) continue;
    }
    unsigned peers = __match_any_sync(active, dest) & __ballot_sync(active, live);
    if (!live) peers = 0;
    unsigned higher = peers & ~below & ~(1u << lane);
    if (!__any_sync(active, higher != 0)) continue;  // no two live lanes share a destination
    unsigned rank = __popc(peers & below);
    A v[Vec];
#pragma unroll
    for (int e = 0; e < Vec; ++e) v[e] = A(src[k].v[e]);
    while (__any_sync(active, higher != 0)) {
      const int next = __ffs(higher);  // 0: none left
#pragma unroll
      for (int e = 0; e < Vec; ++e) {
        const A other = __shfl_sync(active, v[e], next ? next - 1 : 0);
        if (next) v[e] = combine<Op>(v[e], other);
      }
      higher &= ~__ballot_sync(active, rank & 1u);
      rank >>= 1;
    }
    if (live) {
      if (__popc(peers & below) == 0) {
#pragma unroll
        for (int e = 0; e < Vec; ++e) src[k].v[e] = T(v[e]);
      } else {
        merged[k] = true;
      }
    }
  }
}

// Whether two live lanes of a warp two apart name one destination, after the
// runs: a sorted index's run heads all differ and a random one's over a wide
// range almost never meet, while a few hot values meet in most warps (8:
// a pair of lanes 1 in 8, 30 pairs). One shuffle a unit and one vote for
// all of them; the warp's peers are matched only where it fires. A test a
// unit inside the match, on every 2-D walk along a row's index, cost sorted
// and random indices 0.87x; this one, where a row fills the GPU, random
// 1.00x and sorted 0.95x (the match's code, never run there), NOTES 88.
// `apart`: the lanes compared, 2 by default; RowsAlwaysMeet's products compare
// a lane with the one a row above it (the block's lanes a row), where a sorted
// index's run of rows lies.
template <int Unroll, typename P, typename IndexT>
__device__ __forceinline__ bool lanes_repeat(const P& p, const bool (&valid)[Unroll], const bool (&bad)[Unroll],
                                             const IndexT (&raw)[Unroll], const typename P::Stride (&off)[Unroll][4],
                                             const bool (&merged)[Unroll], unsigned apart = 2) {
  typedef typename P::Stride Stride;
  const unsigned active = __activemask();
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  const bool pair_active = lane >= apart && ((active >> (lane - apart)) & 1u);
  bool hit = false;
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    const bool live = valid[k] && !bad[k] && !merged[k];
    // dead lanes get keys of their own, below every destination
    const Stride key = live ? off[k][0] + (Stride)(int64_t)raw[k] * p.axis_stride : Stride(-1) - Stride(lane);
    const Stride below = __shfl_up_sync(active, key, apart);  // every active lane takes part
    hit |= pair_active && below == key;
  }
  return __any_sync(active, hit);
}

// Pass 2 and 3 for Unroll units whose index loads are done.
// `position_of(k)` gives unit k's position in the index, for the report.
// LanesShareRows: a warp's lanes walk the units in order (the linear walk,
// where the planner finds they may share a destination), so sorted indices
// put runs in it and native adds combine them and hot peers; in the 2-D walk
// its lanes take columns of a row, and where the index is the same along it
// their destinations differ and combining adds only cost (int32 rows of 64:
// 0.97x against 1.00x without; AddsCombineRuns is for full indices). RunsInLanes (2-D walk): the index varies
// along the columns, so neighbouring lanes may share a destination and
// compare-and-swap ops combine their runs; where it does not (expanded and
// narrow rows), the runs' code alone cost up to 1.6x (float32 amin of
// expanded rows (903, 300): 422 -> 299 us; 68 plans of seeds 40-99 1.10x in
// geomean, NOTES 73), while full indices along the lanes need it (float64
// products along dim 1: 25 -> 42 us without).
template <typename T, typename IndexT, int Op, int Vec, bool HasAlpha, int Unroll, bool LanesShareRows,
          bool RunsInLanes, bool AddsCombineRuns, bool RowsMayMeet, bool HotRepeats, bool RowsAlwaysMeet = false,
          bool Peeled = false, typename P, typename PositionOf>
__device__ __forceinline__ void scatter_units(const P& p, const bool (&valid)[Unroll], const IndexT (&raw)[Unroll],
                                              const typename P::Stride (&off)[Unroll][4], PositionOf position_of,
                                              const PackSpans<Unroll>& spans) {
  typedef typename P::Stride Stride;
  bool bad[Unroll];
  Pack<T, Vec> src[Unroll];
#pragma unroll
  for (int k = 0; k < Unroll; ++k) {
    bad[k] = valid[k] && (uint64_t)(int64_t)raw[k] >= (uint64_t)p.axis_size;
    // The source's offset comes from the position, not from the index, so it
    // is loaded even where the index is bad: guarded by the index's range
    // test, the load waited for the index's (two DRAM round trips in a row,
    // most of a small index_add's time above the launch).
    if constexpr (Op != kScatterFill && Op != kScatterPrepare) {
      if constexpr (Peeled) {
        if (valid[k] && spans.hi[k] > spans.lo[k])
          src[k] = load_ragged<T, Vec>(static_cast<const T*>(p.src) + off[k][1], p.peel_src_step, spans.lo[k],
                                       spans.hi[k]);
      } else if (valid[k]) {
        src[k] = load_pack<T, Vec>(static_cast<const T*>(p.src) + off[k][1]);
      }
    }
  }
  // Heavy duplicates: units of this thread that land on the same element are
  // combined here first, so a hot row takes one atomic per thread, not Unroll.
  // Products, max and min too: their compare-and-swap loops contend on a hot
  // element, and a thread's 8 units in turn still made every one of them
  // (float32 products of 232 rows of 32 into one row: 97 us against
  // PyTorch's 84, seed 31).
  bool merged[Unroll];
#pragma unroll
  for (int k = 0; k < Unroll; ++k) merged[k] = false;
  constexpr bool kMergesUnits = Op == kScatterAdd || Op == kScatterMul || Op == kScatterMax || Op == kScatterMin;
  if constexpr (kMergesUnits && Unroll > 1) {
#pragma unroll
    for (int k = 1; k < Unroll; ++k) {
#pragma unroll
      for (int j = 0; j < k; ++j) {
        // ragged packs at one address hold the same elements only with the same span (a row's last pack
        // and the next row's first may share an aligned address)
        if (!merged[k] && valid[k] && !bad[k] && valid[j] && !bad[j] && !merged[j] &&
            off[k][0] + (Stride)(int64_t)raw[k] * p.axis_stride == off[j][0] + (Stride)(int64_t)raw[j] * p.axis_stride &&
            (!Peeled || (spans.lo[k] == spans.lo[j] && spans.hi[k] == spans.hi[j]))) {
          if constexpr (Op == kScatterAdd) {
#pragma unroll
            for (int e = 0; e < Vec; ++e) src[j].v[e] = add_op(src[j].v[e], src[k].v[e]);
          } else {  // combined as a run is (RunValue)
            typedef typename RunValue<T>::type A;
#pragma unroll
            for (int e = 0; e < Vec; ++e) src[j].v[e] = T(combine<Op>(A(src[j].v[e]), A(src[k].v[e])));
          }
          merged[k] = true;
        }
      }
    }
  }
  // Native atomics into a few hot destinations (8 hot rows of millions): a
  // thread whose units 256 apart met on one destination is the sign, and two
  // such lanes make the warp match its peers after its runs. 257 plans of
  // seeds 40-108 (H100): hot indices 1.70x (int32 8.1M adds into 8 rows:
  // 771 -> 265 us, PyTorch 775), sorted 0.98x, random 0.99x. 4 lanes left a
  // small hot int32 sum at 0.78x of 2 lanes; 8 lost half the hot gain. Sorted
  // float32 one-column sums lose up to 32% with this code present, though
  // they never match (NOTES 75).
  // RowsMayMeet (the 2-D walk, a warp across rows whose lanes of one row
  // never meet): the same sign lets lanes of different rows at one column
  // combine, for every op and pack (float32 rows of 8 into 8 hot rows, a
  // warp 16 rows and red.v4 adds, seed 262: 489 -> 250 us, NOTES 86).
  // (Not ragged packs: peers would match on an aligned address that two spans may share.)
  constexpr bool kCombinesHotPeers = !Peeled &&
      ((LanesShareRows && CombinesNativeRuns<T, Op>::value) || RowsMayMeet) && kMergesUnits && Unroll > 1;
  bool merged_in_thread = false;
  if constexpr (kCombinesHotPeers) {
#pragma unroll
    for (int k = 0; k < Unroll; ++k) merged_in_thread |= merged[k];
  }
  // In the linear walk a warp's lanes may share destinations in any order: compare-and-swap ops and 16-bit
  // float adds combine every group of peers; native atomics only runs (sorted indices), where a match would
  // cost every warp of spread destinations more than the atomics it saves. Compare-and-swap ops combine
  // runs first: a sorted index's groups are runs, and the runs' tree is the cheaper one (float32 amax of
  // 51120 sorted values into 2393: 17.1 us with the peers' tree alone, 15.5 with runs first, PyTorch
  // 15.1-15.5, seed 38); the match then finds nothing left and ends.
  // The 2-D walk's lanes along a full index (RunsInLanes) may share destinations in any order too: its
  // compare-and-swap ops combine every group of peers after their runs (float16 products of 1.2M values into
  // 8 hot elements a row, seed 121: 41.4 -> 9.3 ms, PyTorch 26.8; 24 such sweep cases of seeds 90-121 1.15x
  // in geomean, 1.18x with their index made 8 hot values; NOTES 77).
  constexpr bool kCombinesPeers = (LanesShareRows && (ReadsFirst<T, Op>::value || (Op == kScatterAdd && IsNarrowFloat<T>::value))) ||
                                  (RunsInLanes && ReadsFirst<T, Op>::value);
  // AddsCombineRuns (the 2-D walk, where the planner says so): adds too combine their runs. A sorted full
  // index names one destination for most of a row, so a warp's lanes all added to one element, each its own
  // atomic, serialized in L2 (bfloat16 of (6737x1639) sorted along dim 1, ~1639 terms a destination: 859 us
  // against PyTorch's 517; combined, 81.5 us).
  constexpr bool kCombinesRuns = (RunsInLanes && ReadsFirst<T, Op>::value) || (AddsCombineRuns && Op == kScatterAdd) ||
                                 (LanesShareRows && CombinesNativeRuns<T, Op>::value);
  // Packs of compare-and-swap updates (CasPack) combine as single elements do; other packs do not.
  constexpr bool kCombines = Vec == 1 || CasPack<T, Op>::value;
  if constexpr (kCombines && kCombinesRuns) combine_runs<T, Op, Unroll, Vec>(p, valid, bad, raw, off, src, merged);
  // HotRepeats (the 2-D walk's adds along a row's index, where a row's blocks
  // fill the GPU, so that every block in flight adds into that row): lanes
  // that repeat a destination out of order combine too. 8 hot values of
  // float64 rows of 285464 sent 32 atomics a warp into 8 elements that the
  // whole GPU shared: 4853 us against PyTorch's 1138; matched, 1067 (NOTES 88).
  if constexpr (kCombines && HotRepeats) {
    if (lanes_repeat<Unroll>(p, valid, bad, raw, off, merged))
      combine_peers<T, Op, Unroll, Vec, true, true>(p, valid, bad, raw, off, src, merged);
  }
  if constexpr (kCombines && kCombinesPeers)
    combine_peers<T, Op, Unroll, Vec, false>(p, valid, bad, raw, off, src, merged);
  // RowsAlwaysMeet: products whose rows meet at a column without a thread's
  // units meeting (a sorted index, the same along a row: a run of rows on one
  // destination lies in one warp, units a block of rows apart in a thread);
  // the sign, beside the threads' own, is a lane and the one a row above it on
  // one destination.
  if constexpr ((kCombines || RowsMayMeet) && kCombinesHotPeers) {
    if (__popc(__ballot_sync(__activemask(), merged_in_thread)) >= 2 ||
        (RowsAlwaysMeet && lanes_repeat<Unroll>(p, valid, bad, raw, off, merged, blockDim.x)))
      combine_peers<T, Op, Unroll, Vec, !RowsMayMeet>(p, valid, bad, raw, off, src, merged);
  }
  if constexpr (FloatExtremum<T, Op>::value && Vec == 1) {
    // Every unit's element is read before the first reduction, so that the
    // reads go out together rather than each after the red before it (the
    // asm's memory clobber orders them): 118 float max / min cases at 4 units
    // a thread 1.03x faster in geomean, across two runs (NOTES 85).
    T* elem[Unroll];
    T cur[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      if (valid[k] && !bad[k] && !merged[k]) {
        elem[k] = static_cast<T*>(p.self) + off[k][0] + (Stride)(int64_t)raw[k] * p.axis_stride;
        cur[k] = float_extremum_read(elem[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < Unroll; ++k)
      if (valid[k] && !bad[k] && !merged[k]) float_extremum_from<Op == kScatterMax>(elem[k], cur[k], src[k].v[0]);
  } else {
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      if (valid[k] && !bad[k] && !merged[k]) {
        Stride i = (Stride)(int64_t)raw[k];
        if (Peeled && (spans.lo[k] != 0 || spans.hi[k] != Vec)) {  // a row's end: the span's elements alone
#pragma unroll
          for (int j = 0; j < Vec; ++j) {  // unrolled: a pack indexed at run time would go to local memory
            if (j < spans.lo[k] || j >= spans.hi[k]) continue;
            Pack<T, 1> one;
            one.v[0] = src[k].v[j];
            apply<T, Op, 1, HasAlpha>(p, off[k][0] + i * p.axis_stride + j, one, 0);
          }
        } else {
          apply<T, Op, Vec, HasAlpha>(p, off[k][0] + i * p.axis_stride, src[k], off[k][3] + i * p.counts_axis_stride);
        }
      }
    }
  }
#pragma unroll
  for (int k = 0; k < Unroll; ++k)
    if (bad[k]) report_bad_index(p.error, position_of(k), (int64_t)raw[k], p.axis_size, p.op_code);
}

// mean's counts in the adds' own pass (include_self=True: no pass needs them
// before the adds): each unit in range counted on its own, whatever the adds
// then merge; a pass of its own read the whole index again (float32 mean of
// 15M units into one column of 157190: 264 us counting beside 211 adding,
// against PyTorch's 205 and 204, NOTES 106).
template <int Unroll, typename P, typename IndexT>
__device__ __forceinline__ void count_units(const P& p, const bool (&valid)[Unroll], const IndexT (&raw)[Unroll],
                                            const typename P::Stride (&off)[Unroll][4]) {
  typedef typename P::Stride Stride;
#pragma unroll
  for (int k = 0; k < Unroll; ++k)
    if (valid[k] && (uint64_t)(int64_t)raw[k] < (uint64_t)p.axis_size)
      atomicAdd(p.counts + off[k][3] + (Stride)(int64_t)raw[k] * p.counts_axis_stride, 1);
}

// LanesMayShare: whether two of a warp's 32 consecutive units can name one
// destination; the planner rules it out where the innermost dim is not the
// indexed one (self moves along it) and spans a warp, so the lanes' units
// differ there. Their tests (a shuffle and a vote, a match for 16-bit float
// adds) then go: bfloat16 of a random index in [0, 4) along dim 1 of
// (1024x4x2048) matched every warp for nothing.
template <typename T, typename IndexT, int Dims, bool Generic, int Op, int Vec, bool HasAlpha, int Unroll,
          bool LanesMayShare, bool Counts = false, bool Peeled = false, typename P>
__device__ __forceinline__ void scatter_linear(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  const Linear step = (Linear)gridDim.x * blockDim.x * Unroll;
  for (Linear base = (Linear)blockIdx.x * blockDim.x * Unroll + threadIdx.x; base < p.numel; base += step) {
    bool valid[Unroll];
    IndexT raw[Unroll];
    Stride off[Unroll][4];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      Linear i = base + (Linear)k * blockDim.x;
      valid[k] = i < p.numel;
      raw[k] = 0;
      if (valid[k]) {
        scatter_offsets<Dims, Generic>(p, i, off[k]);
        raw[k] = load_scatter_index(p, static_cast<const IndexT*>(p.index) + off[k][2]);
      }
    }
    PackSpans<Unroll> spans;
    if constexpr (Peeled) peel_units<T, Vec>(p, valid, raw, off, spans);
    scatter_units<T, IndexT, Op, Vec, HasAlpha, Unroll, LanesMayShare, LanesMayShare, false, false, false, false,
                  Peeled>(p, valid, raw, off, [&](int k) {
      return index_position(p, base + (Linear)k * blockDim.x);
    }, spans);
    if constexpr (Counts) count_units<Unroll>(p, valid, raw, off);
  }
}

// LaneRuns (lane_runs_2d in scatter_plan.cpp): 0, no two lanes of a warp
// share a destination (the index is the same along a row, or self moves along
// the lanes within one row); 1, they may (compare-and-swap ops combine runs and
// peers); 2, the lanes walk the indexed dim within one row: adds combine runs
// too; 3, as 0 within a row, but a warp spans rows that may meet at a column:
// hot peers combine (RowsMayMeet); 4, as 2, and lanes that repeat a
// destination out of order combine (HotRepeats); 5, as 3, with the peers
// matched in every warp, not only where threads' units met (RowsAlwaysMeet).
template <typename T, typename IndexT, int Op, int Vec, bool HasAlpha, int Unroll, int LaneRuns, bool Counts = false,
          bool Peeled = false, typename P>
__device__ __forceinline__ void scatter_2d(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  const Linear rows = p.sizes[0].divisor, cols = p.sizes[1].divisor;
  const BlockPlace block = block_place(p.rows_first);
  // a block of fewer rows than blockDim.y (block_rows) takes groups of them side by side
  const unsigned block_rows = p.block_rows ? unsigned(p.block_rows) : blockDim.y;
  const unsigned group = threadIdx.y / block_rows, row_in_block = threadIdx.y - group * block_rows;
  const Linear col = ((Linear)block.col * (blockDim.y / block_rows) + group) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  Stride col_off[4];
  col_off[0] = (Stride)col * p.self_strides[1];
  col_off[1] = (Stride)col * p.src_strides[1];
  col_off[2] = (Stride)col * p.index_strides[1];
  col_off[3] = (Stride)col * p.counts_strides[1];
  const Linear step = (Linear)gridDim.y * block_rows * Unroll;
  for (Linear base = (Linear)block.row * block_rows * Unroll + row_in_block; base < rows; base += step) {
    bool valid[Unroll];
    IndexT raw[Unroll];
    Stride off[Unroll][4];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      Stride row = (Stride)(base + (Linear)k * block_rows);
      valid[k] = (Linear)row < rows;
      off[k][0] = col_off[0] + row * p.self_strides[0];
      off[k][1] = col_off[1] + row * p.src_strides[0];
      off[k][2] = col_off[2] + row * p.index_strides[0];
      off[k][3] = col_off[3] + row * p.counts_strides[0];
      raw[k] = valid[k] ? load_scatter_index(p, static_cast<const IndexT*>(p.index) + off[k][2]) : IndexT(0);
    }
    PackSpans<Unroll> spans;
    if constexpr (Peeled) peel_units<T, Vec>(p, valid, raw, off, spans);
    scatter_units<T, IndexT, Op, Vec, HasAlpha, Unroll, false, (LaneRuns == 1 || LaneRuns == 2 || LaneRuns == 4),
                  (LaneRuns == 2 || LaneRuns == 4), (LaneRuns == 3 || LaneRuns == 5), (LaneRuns == 4),
                  (LaneRuns == 5), Peeled>(
        p, valid, raw, off, [&](int k) {
      return (int64_t)(base + (Linear)k * block_rows) * p.index_positions[0] + (int64_t)col * p.index_positions[1];
    }, spans);
    if constexpr (Counts) count_units<Unroll>(p, valid, raw, off);
  }
}

// scatter_reduce_(reduce="mean")'s passes over self's own elements. The last
// divides by the number of values reduced there (floor division for
// integers). Reset (include_self=False, after a pass that only counted)
// zeroes the elements that will receive values: one dense pass rather than a
// random store at every unit, which beside the counts' atomics spilled the L2
// (float16 into 18M elements: 2488 us against PyTorch's 531-us fill, NOTES 105).
template <typename T, int Dims, bool Generic, bool Reset, int Unroll, typename P>
__device__ __forceinline__ void scatter_mean_finish(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  const Linear step = (Linear)gridDim.x * blockDim.x * Unroll;
  for (Linear base = (Linear)blockIdx.x * blockDim.x * Unroll + threadIdx.x; base < p.numel; base += step) {
    // the counts first, all in flight, then the self elements counted: a
    // self element waits on its count, not on the element before it
    Stride off[Unroll][4];
    int n[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      const Linear i = base + (Linear)k * blockDim.x;
      n[k] = 0;
      if (i < p.numel) {
        scatter_offsets<Dims, Generic>(p, i, off[k]);
        n[k] = p.counts[off[k][3]];
      }
    }
    T* self = static_cast<T*>(p.self);
    if constexpr (Reset) {
#pragma unroll
      for (int k = 0; k < Unroll; ++k)
        if (n[k] != 0) self[off[k][0]] = T(0);
      continue;
    }
    T v[Unroll];
#pragma unroll
    for (int k = 0; k < Unroll; ++k)
      if (n[k] != 0) v[k] = self[off[k][0]];
#pragma unroll
    for (int k = 0; k < Unroll; ++k) {
      if (n[k] == 0) continue;
      const int count = n[k] + p.include_self;
      T out;
      if constexpr (is_integer<T>::value) {  // floor division, as PyTorch's integer mean
        long long q = (long long)v[k] / count;
        if (((long long)v[k] % count != 0) && (((long long)v[k] < 0) != (count < 0))) --q;
        out = T(q);
      } else if constexpr (same_type<T, double>::value) {
        out = v[k] / count;
      } else {
        out = T(to_float(v[k]) / float(count));  // float, and 16-bit floats rounded once
      }
      self[off[k][0]] = out;
    }
  }
}

// ---- Deterministic sums (deterministic=True): every unit gets the key
// (destination element << 32 | unit); after an ascending sort, the first unit
// of each destination's run adds the run's terms in unit order and writes the
// result once. Same inputs, same order, same bits, run after run.
constexpr unsigned long long kNoKey = ~0ull;

template <typename T, typename IndexT, int Dims, bool Generic, typename P>
__device__ __forceinline__ void scatter_det_keys(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  for (Linear u = (Linear)blockIdx.x * blockDim.x + threadIdx.x; u < p.numel; u += (Linear)gridDim.x * blockDim.x) {
    Stride off[4];
    scatter_offsets<Dims, Generic>(p, u, off);
    const IndexT raw = load_scatter_index(p, static_cast<const IndexT*>(p.index) + off[2]);
    unsigned long long key = kNoKey;
    if ((uint64_t)(int64_t)raw < (uint64_t)p.axis_size) {
      const unsigned long long dest = (unsigned long long)(off[3] + (Stride)(int64_t)raw * p.counts_axis_stride);
      key = (dest << 32) | (unsigned long long)u;
    } else {
      report_bad_index(p.error, index_position(p, u), (int64_t)raw, p.axis_size, p.op_code);
    }
    p.keys[u] = key;
  }
}

template <typename T> struct Accumulator { typedef float type; };
template <> struct Accumulator<double> { typedef double type; };
template <> struct Accumulator<long long> { typedef long long type; };
template <> struct Accumulator<int> { typedef long long type; };

template <typename T, typename IndexT, int Dims, bool Generic, bool HasAlpha, typename P>
__device__ __forceinline__ void scatter_det_reduce(const P& p) {
  typedef typename P::Linear Linear;
  typedef typename P::Stride Stride;
  typedef typename Accumulator<T>::type Acc;
  for (Linear s = (Linear)blockIdx.x * blockDim.x + threadIdx.x; s < p.numel; s += (Linear)gridDim.x * blockDim.x) {
    const unsigned long long key = p.keys[s];
    if (key == kNoKey) continue;
    const unsigned long long dest = key >> 32;
    if (s > 0 && p.keys[s - 1] != kNoKey && (p.keys[s - 1] >> 32) == dest) continue;  // not the run's first
    Stride off[4];
    scatter_offsets<Dims, Generic>(p, (Linear)(key & 0xFFFFFFFFull), off);
    const IndexT raw = load_scatter_index(p, static_cast<const IndexT*>(p.index) + off[2]);
    T* self = static_cast<T*>(p.self) + off[0] + (Stride)(int64_t)raw * p.axis_stride;
    Acc acc = Acc(0);
    if (p.include_self) {
      if constexpr (same_type<Acc, float>::value) acc = to_float(*self);
      else acc = (Acc)*self;
    }
    int64_t terms = 0;
    for (Linear t = s; t < p.numel; ++t) {
      const unsigned long long k = p.keys[t];
      if (k == kNoKey || (k >> 32) != dest) break;
      Stride o[4];
      scatter_offsets<Dims, Generic>(p, (Linear)(k & 0xFFFFFFFFull), o);
      T v = load_readonly(static_cast<const T*>(p.src) + o[1]);
      if constexpr (HasAlpha) v = scale(v, p);
      if constexpr (same_type<Acc, float>::value) acc += to_float(v);
      else acc += (Acc)v;
      ++terms;
    }
    if (p.mean) acc = acc / (Acc)(terms + p.include_self);
    *self = T(acc);
  }
}

}  // namespace jitops
