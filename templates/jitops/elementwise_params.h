// Parameter block of the elementwise family (templates/elementwise.cuh),
// shared by the host planner and the kernel. Operands are the op's inputs,
// then its outputs; a scalar operand carries its value instead of a pointer.
#pragma once
#include "jitops/types.h"

namespace jitops {

constexpr int kMaxElementwiseOperands = 8;

// Dims == 0: every array operand is dense in one order (one collapsed dim of
// stride 1), read and written in packs. Dims > 0: any strides, broadcasting
// included (stride 0), with `ndim` collapsed dims in use.
template <int Dims>
struct ElementwiseParams {
  int64_t n;
  void* data[kMaxElementwiseOperands];
  uint64_t scalar[kMaxElementwiseOperands];  // a scalar operand's value, as its type's bits
  int32_t ndim;
  int32_t pad;
  int64_t sizes[Dims];
  int64_t strides[kMaxElementwiseOperands][Dims];  // in elements
};

template <>
struct ElementwiseParams<0> {
  int64_t n;
  void* data[kMaxElementwiseOperands];
  uint64_t scalar[kMaxElementwiseOperands];
};

}  // namespace jitops
