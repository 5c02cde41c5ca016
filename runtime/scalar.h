// A Python scalar (fill value, identity) as the bits of an element type, on
// the host, so kernels take it as raw bytes whatever the dtype.
#pragma once
#include <cstdint>

#include "runtime/dtype.h"

namespace jitops {

struct Scalar {
  bool integral = false;  // true: `i` holds the value exactly
  bool boolean = false;   // a Python bool (integral too): promotion ranks it below integers
  double f = 0.0;
  int64_t i = 0;
};

// Round-to-nearest-even conversions (as numpy and CUDA do).
uint16_t float_to_half_bits(float value);
uint16_t float_to_bfloat16_bits(float value);
float half_bits_to_float(uint16_t bits);
float bfloat16_bits_to_float(uint16_t bits);

// Writes `value` converted to `dtype` into out[0, element bytes); integers
// from floats truncate toward zero, as a C cast and torch.fill_ do.
void encode_scalar(DType dtype, const Scalar& value, unsigned char out[16]);
// The first 8 bytes of that encoding: a number operand of an elementwise kernel.
uint64_t scalar_bits(DType dtype, const Scalar& value);

// The identity of a reduction ("sum", "prod", "amax", "amin") for `dtype`.
Scalar reduction_identity(DType dtype, int op);

}  // namespace jitops
