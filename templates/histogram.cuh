// histc: bins equally wide over [lo, hi], the last bin closed, values outside
// and NaN ignored, with PyTorch's bin arithmetic:
//   bin = (int)((x - lo) * bins / (hi - lo)), in float for 16- and 32-bit
//   floats, double for double, int64 for integers.
// With an automatic range, a first kernel finds min/max into scratch words
// and the counting kernel reads them from device memory: no host round trip.
// Counting uses 32-bit counters in shared memory, one column per lane (the
// counter of bin b for lane l at b * copies + l % copies, copies a power of
// two up to 32: with 32 columns a warp's 32 atomics always hit 32 different
// banks), or 64-bit atomics in global memory when the bins do not fit;
// the last block to finish converts the counts into the output, or, for an
// output whose adds of integer counts are exact (float32 under 2^24 values,
// float64, int32, int64), each block adds its counts into it. With an
// automatic range the counting kernel reads x backwards: the first values it
// reads are the last ones the range kernel read, still in L2.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "jitops/atomics.cuh"
#include "jitops/histogram_params.h"
#include "jitops/vector_units.cuh"

namespace jitops {

template <bool C, typename A, typename B> struct Select { typedef A type; };
template <typename A, typename B> struct Select<false, A, B> { typedef B type; };

// Keys order values as unsigned integers of the narrowest width that holds
// them (32 bits up to float and int32: cheaper to fold than 64). A key is
// stored zero-extended in a 64-bit scratch word; the smallest is kept as the
// complement of its key, so that both fold with atomicMax from a zeroed word.
template <typename T> struct IsSignedInteger { static constexpr bool value = false; };
template <> struct IsSignedInteger<signed char> { static constexpr bool value = true; };
template <> struct IsSignedInteger<short> { static constexpr bool value = true; };
template <> struct IsSignedInteger<int> { static constexpr bool value = true; };
template <> struct IsSignedInteger<long long> { static constexpr bool value = true; };

template <typename T, bool Signed = IsSignedInteger<T>::value, bool Wide = (sizeof(T) > 4)>
struct HistogramTraits {  // integers
  typedef typename Select<Wide, unsigned long long, unsigned int>::type Key;
  typedef long long Acc;  // PyTorch's accumulate type for integers
  static constexpr bool kFloat = false;
  static constexpr Key kSign = Key(1) << (sizeof(Key) * 8 - 1);
  __device__ static Key key(T v) {
    return Signed ? Key((typename Select<Wide, long long, int>::type)v) ^ kSign : Key(v);
  }
  __device__ static Acc from_key(Key k) {
    return Signed ? Acc((typename Select<Wide, long long, int>::type)(k ^ kSign)) : Acc(k);
  }
};

__device__ __forceinline__ unsigned int float_key(float f) {
  const unsigned int b = __float_as_uint(f);
  return (b >> 31) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float float_from_key(unsigned int k) {
  return __uint_as_float((k >> 31) ? (k & 0x7FFFFFFFu) : ~k);
}
__device__ __forceinline__ unsigned long long double_key(double d) {
  const unsigned long long b = (unsigned long long)__double_as_longlong(d);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ double double_from_key(unsigned long long k) {
  return __longlong_as_double((long long)((k >> 63) ? (k & 0x7FFFFFFFFFFFFFFFull) : ~k));
}

template <typename T>
struct NarrowFloatTraits {  // float16, bfloat16, float32: float arithmetic, 32-bit keys
  typedef unsigned int Key;
  typedef float Acc;
  static constexpr bool kFloat = true;
  __device__ static Key key(T v) { return float_key(float(v)); }
  __device__ static double from_key(Key k) { return double(float_from_key(k)); }
};
template <> struct HistogramTraits<__half, false, false> : NarrowFloatTraits<__half> {};
template <> struct HistogramTraits<__nv_bfloat16, false, false> : NarrowFloatTraits<__nv_bfloat16> {};
template <> struct HistogramTraits<float, false, false> : NarrowFloatTraits<float> {};
template <> struct HistogramTraits<double, false, true> {
  typedef unsigned long long Key;
  typedef double Acc;
  static constexpr bool kFloat = true;
  __device__ static Key key(double v) { return double_key(v); }
  __device__ static double from_key(Key k) { return double_from_key(k); }
};

// Offset of the i-th element of x (C order) from its strides; i itself when
// dense. The outermost dim needs no remainder: i < n leaves rem < sizes[0].
template <int Dims>
__device__ __forceinline__ long long element_offset(const HistogramParams<Dims>& p, long long i) {
  if (Dims == 0) return i;
  long long rem = i, off = 0;
#pragma unroll
  for (int d = (Dims > 0 ? Dims : 1) - 1; d >= 1; --d) {
    if (d >= p.ndim) continue;
    off += (rem % p.sizes[d]) * p.strides[d];
    rem /= p.sizes[d];
  }
  return off + rem * p.strides[0];
}

// Calls f(value) for every element of x, one at a time, grid-stride: the walk
// of a strided x, and of a float x's rare cases (counts in global memory; a
// width the fast binner cannot divide by), small code so that a kernel
// unrolls only the walk it mostly runs (two unrolled walks tripled NVRTC's
// time for the count kernel). Up to 3 strided dims, a thread's next
// kBatch values are loaded before any is counted: each load waits out a
// DRAM latency, and one at a time a small x's walk was latency-bound (a
// sliced 28K-value x: 9.3 us in one cluster against 8.3 for PyTorch).
template <typename T, int Dims, typename F>
__device__ __forceinline__ void for_each_value_simply(const HistogramParams<Dims>& p, F& f) {
  const long long threads = (long long)gridDim.x * blockDim.x;
  const T* x = static_cast<const T*>(p.x);
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if constexpr (Dims >= 1 && Dims <= 3) {
    constexpr int kBatch = 4;
    for (long long base = first; base < p.n; base += threads * kBatch) {
      T v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (base + u * threads < p.n) v[u] = x[element_offset(p, base + u * threads)];
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (base + u * threads < p.n) f(v[u]);
    }
  } else {
    for (long long i = first; i < p.n; i += threads) f(x[element_offset(p, i)]);
  }
}

// Calls f(value) for every element of x, in packs of Vec when dense (Dims 0),
// last pack first when `backwards`.
template <typename T, int Vec, int Dims, typename F>
__device__ __forceinline__ void for_each_value(const HistogramParams<Dims>& p, F& f, bool backwards = false) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long threads = (long long)gridDim.x * blockDim.x;
  const T* x = static_cast<const T*>(p.x);
  if (Dims == 0) {
    // Double-buffered: the next batch of packs is in flight while this one
    // is binned (with one batch at a time, reads ran at 2.7 TB/s on an H200).
    constexpr int kUnroll = 4;
    typedef Pack<T, Vec> P;
    const long long packs = p.n / Vec;
    const long long step = threads * kUnroll;
    // Pack i of the walk; backwards maps it to packs - 1 - i.
    const P* first = reinterpret_cast<const P*>(x) + (backwards ? packs - 1 : 0);
    const long long dir = backwards ? -1 : 1;
    P cur[kUnroll], next[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (tid + u * threads < packs) cur[u] = load_pack_readonly(first + dir * (tid + u * threads));
    for (long long base = tid; base < packs; base += step) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + step + u * threads < packs) next[u] = load_pack_readonly(first + dir * (base + step + u * threads));
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * threads < packs) {
#pragma unroll
          for (int k = 0; k < Vec; ++k) f(cur[u].v[k]);
        }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) cur[u] = next[u];
    }
    const long long tail = packs * Vec + tid;
    if (tail < p.n) f(x[tail]);
  } else {
    for_each_value_simply<T>(p, f);
  }
}

__device__ __forceinline__ unsigned int acc_key(float a) { return float_key(a); }
__device__ __forceinline__ unsigned long long acc_key(double a) { return double_key(a); }

// One thread's min and max. Integers fold ordered keys; floats fold in their
// accumulate type with fmin/fmax, which skip NaN (two instructions a value
// instead of a key conversion and a NaN test), and become keys at the end.
template <typename T, bool Float = HistogramTraits<T>::kFloat>
struct RangeFolder {
  typedef typename HistogramTraits<T>::Key Key;
  Key lo_inv = 0, hi = 0;  // complement of the smallest key, largest key
  bool seen = false;
  __device__ __forceinline__ void operator()(T v) {
    const Key k = HistogramTraits<T>::key(v);
    lo_inv = max(lo_inv, Key(~k));
    hi = max(hi, k);
    seen = true;
  }
  __device__ __forceinline__ bool keys(unsigned long long& lo_key_inv, unsigned long long& hi_key) const {
    lo_key_inv = lo_inv;
    hi_key = hi;
    return seen;
  }
};
template <typename T>
struct RangeFolder<T, true> {
  typedef typename HistogramTraits<T>::Acc A;
  typedef typename HistogramTraits<T>::Key Key;
  A lo = A(__int_as_float(0x7f800000)), hi = -A(__int_as_float(0x7f800000));  // +inf, -inf
  __device__ __forceinline__ void operator()(T v) {
    const A a = A(v);
    lo = fmin(lo, a);
    hi = fmax(hi, a);
  }
  __device__ __forceinline__ bool keys(unsigned long long& lo_key_inv, unsigned long long& hi_key) const {
    const bool seen = lo <= hi;  // false only when every value was NaN
    lo_key_inv = seen ? Key(~acc_key(lo)) : 0;
    hi_key = seen ? acc_key(hi) : 0;
    return seen;
  }
};

__device__ __forceinline__ unsigned long long warp_max(unsigned long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

// Folds (complement of the smallest key, largest key, seen) over the block;
// every thread gets the result. Uses all threads of the block.
__device__ __forceinline__ bool block_fold_range(unsigned long long& lo_inv, unsigned long long& hi, bool seen) {
  __shared__ unsigned long long warp_lo_inv[32], warp_hi[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  lo_inv = warp_max(lo_inv);
  hi = warp_max(hi);
  if (lane == 0) {
    warp_lo_inv[warp] = lo_inv;
    warp_hi[warp] = hi;
  }
  seen = __syncthreads_or(seen);
  lo_inv = 0;
  hi = 0;
  for (int w = 0; w < warps; ++w) {
    lo_inv = max(lo_inv, warp_lo_inv[w]);
    hi = max(hi, warp_hi[w]);
  }
  __syncthreads();  // the slots are free again
  return seen;
}

// The range kernel's partials: 3 words per block, after the counts.
template <int Dims>
__device__ __forceinline__ unsigned long long* range_partials(const HistogramParams<Dims>& p) {
  return p.scratch + kHistogramHeaderWords + (long long)p.global_copies * p.bins;
}

// Kernel 1 (auto range): min and max of this block's non-NaN values as its
// partial (plain stores: no atomics on two addresses, no memset first), and
// the counting kernel's words zeroed on the way (the output's, when the
// counts go straight into it).
template <typename T, int Vec, int Dims>
__device__ __forceinline__ void histogram_range(const HistogramParams<Dims>& p) {
  const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x, threads = (long long)gridDim.x * blockDim.x;
  if (p.counts_into_out) {
    for (long long bin = thread; bin < p.bins; bin += threads) {
      char* at = static_cast<char*>(p.out) + bin * p.out_stride * p.out_bytes;
      if (p.out_bytes == 8) *reinterpret_cast<unsigned long long*>(at) = 0;
      else *reinterpret_cast<unsigned int*>(at) = 0;
    }
  } else {
    const long long zeroed = kHistogramHeaderWords + (long long)p.global_copies * p.bins;
    for (long long i = thread; i < zeroed; i += threads) p.scratch[i] = 0;
  }
  RangeFolder<T> r;
  for_each_value<T, Vec>(p, r);
  unsigned long long lo_inv, hi;
  const bool seen = block_fold_range(lo_inv, hi, r.keys(lo_inv, hi));
  if (threadIdx.x == 0) {
    unsigned long long* mine = range_partials(p) + 3ll * blockIdx.x;
    mine[0] = lo_inv;
    mine[1] = hi;
    mine[2] = seen;
  }
}

// (num / width), rounded as an IEEE division rounds, for num in [0, width * scale].
// float: Markstein's correction of num * RN(1 / width), which is the correctly
// rounded quotient when nothing overflows or underflows: three instructions
// instead of a division (reciprocal, refinement and a range check each value).
// `exact` is false where the range could overflow or underflow; those divide.
template <typename A>
struct BinDivider {
  A width;
  __device__ __forceinline__ void init(A w) { width = w; }
  __device__ __forceinline__ A operator()(A num) const { return num / width; }
};
template <>
struct BinDivider<float> {
  float width, inverse;
  bool exact;
  __device__ __forceinline__ void init(float w) {
    width = w;
    inverse = __frcp_rn(w);
    // Quotients below 1/2 (all that an underflow can touch) land in bin 0
    // however they round, so only widths and numerators far from the ends
    // of the exponent range need the division.
    exact = w >= 0x1p-100f && w <= 0x1p+100f;
  }
  __device__ __forceinline__ float operator()(float num) const {
    if (!exact) return num / width;
    const float q = num * inverse;
    return fmaf(fmaf(-width, q, num), inverse, q);
  }
};

template <typename T, int Dims>
struct Binner {
  typedef typename HistogramTraits<T>::Acc A;
  A lo, hi, scale;
  BinDivider<A> divide;
  int bins;
  unsigned int* shared;  // this lane's column of counters, or nullptr: global counts
  int stride;            // columns
  unsigned long long* global;
  __device__ __forceinline__ void operator()(T v) {
    const A a = A(v);
    if (!(a >= lo && a <= hi)) return;  // also drops NaN
    int bin = int(divide((a - lo) * scale));
    if (bin >= bins) bin = bins - 1;  // the last bin is closed: x == hi lands in it
    if (bin < 0) bin = 0;             // an integer range so wide that the product wrapped
    if (shared) atomicAdd(&shared[bin * stride], 1u);
    else red_add(&global[bin], 1ull);
  }
};

// Binner's fast case, with no branch per value: counters in shared memory,
// float arithmetic (float16, bfloat16, float32) and a width whose quotients
// need no division. A NaN or an outside value adds into a spare row of
// counters past the last bin (never read), chosen by a select, so the atomic
// needs no branch; the bin is floor(q) by one round-down addition of 2^23
// (q < 2^23: the bits of 2^23 + floor(q)), then one min for x == hi: no F2I
// (a quarter-rate instruction). Binner's SASS was ~24 instructions and 7
// branches a value.
template <typename T>
struct SharedFloatBinner {
  static constexpr int kTwo23Bits = 0x4B000000;  // the bits of 2^23
  float lo, hi, scale, width, inverse;
  int last_bits, spare_bits;  // the bits of 2^23 + bins - 1, of 2^23 + bins
  unsigned int* column;  // this thread's column
  unsigned stride, bias;  // columns; 2^23's bits times columns (wraps: bits * stride - bias is the row)
  __device__ __forceinline__ void operator()(T v) {
    const float a = float(v);
    const bool inside = a >= lo && a <= hi;  // false for NaN
    const float num = (a - lo) * scale;
    const float q0 = num * inverse;
    const float q = fmaf(fmaf(-width, q0, num), inverse, q0);
    const int bits = min(__float_as_int(__fadd_rd(q, 8388608.f)), last_bits);
    atomicAdd(&column[unsigned(inside ? bits : spare_bits) * stride - bias], 1u);
  }
};

// Counts every value (last pack first when `backwards`), through the fast
// binner where it applies; a float x's other cases take the simple walk.
template <typename T, int Vec, int Dims>
__device__ __forceinline__ void count_values(const HistogramParams<Dims>& p, Binner<T, Dims>& b, bool backwards) {
  typedef typename HistogramTraits<T>::Acc A;
  if constexpr (sizeof(A) == 4 && HistogramTraits<T>::kFloat) {
    if (b.shared && b.divide.exact && p.bins < (1 << 22)) {
      SharedFloatBinner<T> f;
      f.lo = b.lo;
      f.hi = b.hi;
      f.scale = b.scale;
      f.width = b.divide.width;
      f.inverse = b.divide.inverse;
      f.last_bits = SharedFloatBinner<T>::kTwo23Bits + p.bins - 1;
      f.spare_bits = f.last_bits + 1;
      f.stride = unsigned(b.stride);
      f.bias = unsigned(SharedFloatBinner<T>::kTwo23Bits) * f.stride;
      f.column = b.shared;
      for_each_value<T, Vec>(p, f, backwards);
    } else {
      for_each_value_simply<T>(p, b);
    }
    return;
  }
  for_each_value<T, Vec>(p, b, backwards);
}

// The range the counting kernel uses; false (nothing counted) when the
// automatic range is not finite, which is reported. Called by every thread
// of the block (an automatic range is folded across it).
template <typename T, int Dims>
__device__ __forceinline__ bool counting_range(const HistogramParams<Dims>& p, typename HistogramTraits<T>::Acc& lo,
                                               typename HistogramTraits<T>::Acc& hi) {
  typedef HistogramTraits<T> Tr;
  typedef typename Tr::Acc A;
  if (!p.auto_range) {
    lo = Tr::kFloat ? A(p.lo) : A(p.ilo);
    hi = Tr::kFloat ? A(p.hi) : A(p.ihi);
    return true;
  }
  // Fold the range kernel's partials (a few per thread).
  unsigned long long lo_word = 0, hi_word = 0;
  bool any = false;
  const unsigned long long* partials = range_partials(p);
  for (int b = threadIdx.x; b < p.range_blocks; b += blockDim.x)
    if (partials[3 * b + 2]) {
      lo_word = max(lo_word, partials[3 * b]);
      hi_word = max(hi_word, partials[3 * b + 1]);
      any = true;
    }
  const bool seen = block_fold_range(lo_word, hi_word, any);
  if (Tr::kFloat) {
    if (!seen) {  // only NaN: PyTorch's range [nan, nan] is not finite
      if (blockIdx.x == 0 && threadIdx.x == 0) report_bad_index(p.error, 0, 0, 0, p.op_code);
      return false;
    }
    typedef typename Tr::Key Key;
    double dlo = Tr::from_key(Key(~Key(lo_word))), dhi = Tr::from_key(Key(hi_word));
    if (dlo == dhi) {  // [min - 1, max + 1], rounded to x's type as PyTorch does
      dlo = double(T(dlo - 1.0));
      dhi = double(T(dhi + 1.0));
    }
    if (isinf(dlo) || isinf(dhi)) {
      if (blockIdx.x == 0 && threadIdx.x == 0)
        report_bad_index(p.error, 0, __double_as_longlong(dlo), __double_as_longlong(dhi), p.op_code);
      return false;
    }
    lo = A(dlo);
    hi = A(dhi);
  } else {
    typedef typename Tr::Key Key;
    long long ilo = (long long)Tr::from_key(Key(~Key(lo_word))), ihi = (long long)Tr::from_key(Key(hi_word));
    if (!seen) ilo = ihi = 0;
    if (ilo == ihi) {
      ilo = (long long)T(ilo - 1);
      ihi = (long long)T(ihi + 1);
    }
    lo = A(ilo);
    hi = A(ihi);
  }
  return true;
}

template <typename Out> __device__ __forceinline__ Out count_as(unsigned long long c) { return Out(c); }
template <> __device__ __forceinline__ __half count_as<__half>(unsigned long long c) { return __float2half_rn(float(c)); }
template <> __device__ __forceinline__ __nv_bfloat16 count_as<__nv_bfloat16>(unsigned long long c) {
  return __float2bfloat16_rn(float(c));
}

// A block's count of a bin added into an output the host zeroed. Only for
// outputs that add integers exactly: float32 (the host keeps x under 2^24
// values), float64, int32, int64; the host sets counts_into_out for no other.
template <typename Out> __device__ __forceinline__ void add_count(Out*, unsigned long long) {}
__device__ __forceinline__ void add_count(float* a, unsigned long long c) { if (c) red_add(a, float(c)); }
__device__ __forceinline__ void add_count(double* a, unsigned long long c) { if (c) red_add(a, double(c)); }
__device__ __forceinline__ void add_count(int* a, unsigned long long c) { if (c) red_add(a, int(c)); }
__device__ __forceinline__ void add_count(long long* a, unsigned long long c) {
  if (c) red_add(reinterpret_cast<unsigned long long*>(a), c);
}

// Kernel 2: count, then the last block writes the output (or each block adds
// its counts into it).
template <typename T, typename Out, int Vec, int Dims>
__device__ __forceinline__ void histogram_count(const HistogramParams<Dims>& p) {
  extern __shared__ unsigned int sub_histograms[];
  unsigned long long* counts = p.scratch + kHistogramHeaderWords;
  unsigned long long* block_counts = counts + (long long)(blockIdx.x % p.global_copies) * p.bins;
  Binner<T, Dims> b;
  b.bins = p.bins;
  b.global = block_counts;
  // Columns per lane (while they fit): a warp's shared atomics that share a
  // bank replay, and normal data sends many lanes to the same few bins.
  b.shared = p.copies > 0 ? sub_histograms + (threadIdx.x & (p.copies - 1)) : nullptr;
  b.stride = p.copies;
  if (p.copies > 0) {
    for (int i = threadIdx.x; i < p.copies * (p.bins + 1); i += blockDim.x) sub_histograms[i] = 0;
    __syncthreads();
  }
  if (counting_range<T>(p, b.lo, b.hi)) {
    typedef typename HistogramTraits<T>::Acc A;
    // Integers: int64 arithmetic as PyTorch's; its bin is truncated by the int cast.
    b.scale = A(b.bins);
    b.divide.init(b.hi - b.lo);
    count_values<T, Vec>(p, b, p.auto_range != 0);
  }
  if (p.copies > 0) {
    __syncthreads();
    for (int bin = threadIdx.x; bin < p.bins; bin += blockDim.x) {
      unsigned long long c = 0;
      // Rotated so that the lanes of a warp read different banks.
      for (int k = 0; k < p.copies; ++k) c += sub_histograms[bin * p.copies + ((k + bin) & (p.copies - 1))];
      Out* out = static_cast<Out*>(p.out) + (long long)bin * p.out_stride;
      if (p.single_block) *out = count_as<Out>(c);
      else if (p.counts_into_out) add_count(out, c);
      else if (c) red_add(&block_counts[bin], c);
    }
    // One launch in all, or every block's counts added into out: nothing left for a last block.
    if (p.single_block || p.counts_into_out) return;
  }
  // The last block done converts the counts (threadfence: its adds are seen).
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&p.scratch[0], 1ull) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  Out* out = static_cast<Out*>(p.out);
  for (int bin = threadIdx.x; bin < p.bins; bin += blockDim.x) {
    unsigned long long c = 0;
    for (int g = 0; g < p.global_copies; ++g) c += __ldcg(&counts[(long long)g * p.bins + bin]);  // L2, not L1
    out[(long long)bin * p.out_stride] = count_as<Out>(c);
  }
}

#if __CUDA_ARCH__ >= 900
// The cluster's own registers and barrier (PTX: no cooperative_groups header
// to find at run time).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_blocks() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
// Every thread of the cluster arrives; the writes to shared memory before it
// are seen by every block after it.
__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The word at `local`'s place in block `rank`'s shared memory.
__device__ __forceinline__ unsigned load_from_cluster_block(const unsigned* local, unsigned rank) {
  const unsigned mine = unsigned(__cvta_generic_to_shared(local));
  unsigned theirs, v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(mine), "r"(rank));
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(theirs) : "memory");
  return v;
}

// Kernel 3 (sm_90 and newer, explicit range, a small x): one cluster counts
// and writes the output in one launch, with no scratch and no memset. Each
// block counts its share into shared columns and folds them into one row;
// after the cluster barrier, block r sums bins r*threads + t, (r + blocks) *
// threads + t, ... over every block's row through distributed shared memory.
// A second barrier keeps each block's shared memory alive until all have read.
template <typename T, typename Out, int Vec, int Dims>
__device__ __forceinline__ void histogram_cluster(const HistogramParams<Dims>& p) {
  extern __shared__ unsigned int sub_histograms[];  // copies * (bins + 1) counters, then the folded row
  unsigned int* row = sub_histograms + p.copies * (p.bins + 1);
  for (int i = threadIdx.x; i < p.copies * (p.bins + 1); i += blockDim.x) sub_histograms[i] = 0;
  __syncthreads();
  Binner<T, Dims> b;
  b.bins = p.bins;
  b.global = nullptr;
  b.shared = sub_histograms + (threadIdx.x & (p.copies - 1));
  b.stride = p.copies;
  counting_range<T>(p, b.lo, b.hi);  // explicit: no exchange, never fails
  b.scale = typename HistogramTraits<T>::Acc(b.bins);
  b.divide.init(b.hi - b.lo);
  count_values<T, Vec>(p, b, false);
  __syncthreads();
  for (int bin = threadIdx.x; bin < p.bins; bin += blockDim.x) {
    unsigned c = 0;
    for (int k = 0; k < p.copies; ++k) c += sub_histograms[bin * p.copies + ((k + bin) & (p.copies - 1))];
    row[bin] = c;
  }
  cluster_barrier();
  const unsigned blocks = cluster_blocks();
  Out* out = static_cast<Out*>(p.out);
  for (long long bin = (long long)cluster_rank() * blockDim.x + threadIdx.x; bin < p.bins;
       bin += (long long)blocks * blockDim.x) {
    unsigned long long c = 0;
    for (unsigned r = 0; r < blocks; ++r) c += load_from_cluster_block(row + bin, r);
    out[bin * p.out_stride] = count_as<Out>(c);
  }
  cluster_barrier();
}
#endif

}  // namespace jitops
