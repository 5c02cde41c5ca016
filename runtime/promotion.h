// The result dtype of an arithmetic op over mixed inputs, by PyTorch's rules
// for PyTorch callers and by NumPy's (NEP 50) for everyone else.
//
// Both treat a Python number as weak: it takes the type of the arrays when it
// is of their category (bool < integer < floating) and promotes them only
// when it is of a higher one (to float32 in PyTorch, float64 in NumPy).
// PyTorch also lets arrays with dimensions win over 0-d ones of the same
// category; NumPy 2 treats 0-d arrays like any other.
#pragma once
#include "runtime/dtype.h"
#include "runtime/scalar.h"

namespace jitops {

enum class PromotionRules : uint8_t { Torch, NumPy };

struct PromotionInput {
  DType dtype = DType::Float32;  // a number: Bool, Int64 or Float64 after its Python type
  bool number = false;
  bool zero_dim = false;
};

// The type both arrays promote to (torch.promote_types / numpy.promote_types);
// TypeError where PyTorch refuses (its uint16/32/64 with other types).
DType promote_pair(DType a, DType b, PromotionRules rules);

// The result type of an arithmetic op over `count` inputs (at least one an array).
DType promote_inputs(const PromotionInput* inputs, int count, PromotionRules rules);

// True division's result: the promoted type, or the default float where that is
// an integer or bool (float32 in PyTorch, float64 in NumPy).
DType true_division_type(DType promoted, PromotionRules rules);

// The type a number operand is computed in for a result of `result`:
// float32 for 16-bit floats (PyTorch's opmath), the result type otherwise.
inline DType number_compute_type(DType result) {
  return result == DType::Float16 || result == DType::BFloat16 ? DType::Float32 : result;
}

// PyTorch divides by a number as a product with the number's reciprocal,
// computed once in the compute type `compute` (float32 or float64;
// BinaryDivTrueKernel.cu: "compute a * reciprocal(b)"), which differs from a
// true division by an ulp now and then: that reciprocal, as a Scalar.
Scalar torch_reciprocal(DType compute, const Scalar& divisor);

}  // namespace jitops
