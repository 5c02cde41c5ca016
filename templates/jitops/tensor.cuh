// The device side of jitops.Template: an array as the call's deduction laid
// it out, index checks that report like the built-ins', and a grid-stride
// loop. A template's source gets this header before its own first line.
//
//   template <typename T, int Dims, typename Index>
//   __global__ void scale(jitops::Tensor<T, Dims, Index> out, jitops::Tensor<const T, Dims, Index> x, float a) {
//     for (Index i : jitops::grid_stride(out.numel())) out[i] = T(a * float(x[i]));
//   }
//
// Tensor<T, Dims, Index> holds the data pointer, the element count, and per
// dim the size, the stride in elements and a divider by the size, in that
// order; the host (runtime/template_call.cpp) fills exactly this layout, and
// checks the size of each parameter against the compiled kernel's.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "jitops/fast_divmod.h"
#include "jitops/index_errors.h"
#include "jitops/types.h"

namespace jitops {

// Where check_index reports: written by jitops when it loads the module (null
// while index checks are off), with the code naming this kernel in messages.
extern "C" __device__ IndexErrorSlot* jitops_user_error_slot = nullptr;
extern "C" __device__ int jitops_user_op_code = 0;

template <typename Index>
struct IndexDivider;
template <>
struct IndexDivider<int32_t> {
  typedef FastDivmod type;  // multiply-high and shift: offsets below 2^31
  typedef uint32_t unsigned_type;
};
template <>
struct IndexDivider<int64_t> {
  typedef WideDivmod type;
  typedef uint64_t unsigned_type;
};

template <typename T, int Dims, typename Index>
struct Tensor {
  static_assert(Dims >= 1 && Dims <= kMaxDims, "jitops::Tensor: Dims must be in [1, 16]");
  typedef typename IndexDivider<Index>::type Divider;
  typedef typename IndexDivider<Index>::unsigned_type Unsigned;

  T* data_;
  Index numel_;
  Index sizes_[Dims];
  Index strides_[Dims];  // in elements; zero along a broadcast dim
  Divider dividers_[Dims];

  __device__ __forceinline__ T* data() const { return data_; }
  __device__ __forceinline__ Index numel() const { return numel_; }
  __device__ __forceinline__ Index size(int d) const { return sizes_[d]; }
  __device__ __forceinline__ Index stride(int d) const { return strides_[d]; }

  // The offset, in elements, of the element at `linear` in C order over this
  // view's dims (for a collapsed Dims: the C order of the array's own shape).
  __device__ __forceinline__ Index offset(Index linear) const {
    Unsigned rest = Unsigned(linear);
    Index off = 0;
#pragma unroll
    for (int d = Dims - 1; d > 0; --d) {
      Unsigned r;
      rest = dividers_[d].divmod(rest, r);
      off += Index(r) * strides_[d];
    }
    return off + Index(rest) * strides_[0];
  }
  __device__ __forceinline__ T& operator[](Index linear) const { return data_[offset(linear)]; }

  // The element at coordinates (one per dim).
  template <typename... I>
  __device__ __forceinline__ T& operator()(I... coords) const {
    static_assert(sizeof...(I) == Dims, "jitops::Tensor: one coordinate per dim");
    const Index c[] = {Index(coords)...};
    Index off = 0;
#pragma unroll
    for (int d = 0; d < Dims; ++d) off += c[d] * strides_[d];
    return data_[off];
  }
};

// True when 0 <= value < bound. Otherwise the bad value is reported (the
// lowest `position` wins, as in the built-ins: position is where the value
// was read, e.g. its linear index) and the caller must not use it: jitops
// raises IndexError naming this kernel at its next call or synchronize().
template <typename V, typename B, typename P>
__device__ __forceinline__ bool check_index(V value, B bound, P position) {
  const bool ok = !(value < V(0)) && (long long)value < (long long)bound;
  if (!ok)
    report_bad_index(jitops_user_error_slot, (long long)position, (long long)value, (long long)bound,
                     jitops_user_op_code);
  return ok;
}

// for (Index i : jitops::grid_stride(n)): each thread of the grid takes i, then i + (threads in the grid), ...
// Counted unsigned, so a 32-bit Index near 2^31 never wraps to a negative i.
template <int Bytes>
struct UnsignedOf {
  typedef unsigned int type;
};
template <>
struct UnsignedOf<8> {
  typedef unsigned long long type;
};

template <typename Index>
struct GridStride {
  typedef typename UnsignedOf<sizeof(Index)>::type Unsigned;
  struct Iterator {
    Unsigned i, step;
    __device__ __forceinline__ Index operator*() const { return Index(i); }
    __device__ __forceinline__ Iterator& operator++() {
      i += step;
      return *this;
    }
    __device__ __forceinline__ bool operator!=(const Iterator& end) const { return i < end.i; }
  };
  Unsigned n;
  __device__ __forceinline__ Iterator begin() const {
    return Iterator{Unsigned(blockIdx.x) * Unsigned(blockDim.x) + Unsigned(threadIdx.x),
                    Unsigned(gridDim.x) * Unsigned(blockDim.x)};
  }
  __device__ __forceinline__ Iterator end() const { return Iterator{n, 0}; }
};
template <typename Index>
__device__ __forceinline__ GridStride<Index> grid_stride(Index n) {
  return GridStride<Index>{typename GridStride<Index>::Unsigned(n < Index(0) ? Index(0) : n)};
}

}  // namespace jitops
