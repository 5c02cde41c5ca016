// Parameter block of the elementwise family (templates/elementwise.cuh),
// shared by the host planner and the kernel. Operands are the op's inputs,
// then its outputs; a scalar operand carries its value instead of a pointer.
#pragma once
#include "jitops/fast_divmod.h"

namespace jitops {

constexpr int kMaxElementwiseOperands = 8;

// Dims == 0: every array operand is dense in one order (one collapsed dim of
// stride 1) or the same element everywhere (stride 0), read and written in
// packs. Dims > 0: any strides, broadcasting included (stride 0), with `ndim`
// collapsed dims in use, offsets of `Bits` bits. With packs there, the inner
// dim counts packs and every operand's inner stride is `pack` (dense) or 0.
template <int Dims, int Bits = 64>
struct ElementwiseParams {
  typedef OffsetTypes<Bits> T;
  typename T::Linear n;  // items: elements, or packs
  void* data[kMaxElementwiseOperands];
  uint64_t scalar[kMaxElementwiseOperands];  // a scalar operand's value, as its type's bits
  int32_t ndim;
  int32_t pad;
  typename T::Divider sizes[Dims];
  typename T::Stride strides[kMaxElementwiseOperands][Dims];  // in elements
};

template <int Bits>
struct ElementwiseParams<0, Bits> {
  int64_t n;
  void* data[kMaxElementwiseOperands];
  uint64_t scalar[kMaxElementwiseOperands];
};

}  // namespace jitops
