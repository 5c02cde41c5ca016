#include "runtime/promotion.h"

#include <string>

#include "runtime/arg_error.h"

namespace jitops {
namespace {

enum Category { kBool = 0, kInteger = 1, kFloating = 2, kComplex = 3 };

Category category(DType d) {
  switch (dtype_info(d).kind) {
    case DTypeKind::Bool: return kBool;
    case DTypeKind::Signed: case DTypeKind::Unsigned: return kInteger;
    case DTypeKind::Float: return kFloating;
    case DTypeKind::Complex: return kComplex;
  }
  return kFloating;
}

int bits(DType d) { return dtype_info(d).bits; }
bool is_unsigned(DType d) { return dtype_info(d).kind == DTypeKind::Unsigned; }
// PyTorch's uint16/32/64 promote only with floating types (c10::promoteTypes refuses the rest).
bool wide_unsigned(DType d) { return is_unsigned(d) && d != DType::UInt8; }

DType signed_of_bits(int b) {
  switch (b) {
    case 8: return DType::Int8;
    case 16: return DType::Int16;
    case 32: return DType::Int32;
    default: return DType::Int64;
  }
}

DType float_of_bits(int b) { return b <= 16 ? DType::Float16 : b <= 32 ? DType::Float32 : DType::Float64; }

DType promote_floats(DType a, DType b) {
  if (a == b) return a;
  if (bits(a) == 16 && bits(b) == 16) return DType::Float32;  // float16 with bfloat16
  return bits(a) > bits(b) ? a : b;
}

DType promote_integers(DType a, DType b) {
  if (is_unsigned(a) == is_unsigned(b)) return bits(a) >= bits(b) ? a : b;
  const DType s = is_unsigned(a) ? b : a, u = is_unsigned(a) ? a : b;
  if (bits(s) > bits(u)) return s;
  if (bits(u) < 64) return signed_of_bits(2 * bits(u));
  return DType::Float64;  // NumPy: uint64 with a signed integer
}

DType default_float(PromotionRules rules) { return rules == PromotionRules::Torch ? DType::Float32 : DType::Float64; }

// PyTorch's combine_categories (aten/src/ATen/native/TypeProperties.cpp): the
// higher-priority group's type wins unless the lower one is of a higher category.
DType combine(bool has_higher, DType higher, bool has_lower, DType lower, PromotionRules rules) {
  if (!has_higher) return lower;
  if (!has_lower) return higher;
  if (category(higher) >= kFloating) return higher;
  if (higher == DType::Bool || category(lower) == kFloating) return promote_pair(higher, lower, rules);
  return higher;
}

}  // namespace

DType promote_pair(DType a, DType b, PromotionRules rules) {
  if (a == b) return a;
  const Category ca = category(a), cb = category(b);
  if (ca == kComplex || cb == kComplex)
    throw type_error(std::string("complex dtypes are not supported by the elementwise ops (got ") +
                     dtype_info(ca == kComplex ? a : b).name + ")");
  if (rules == PromotionRules::Torch && (wide_unsigned(a) || wide_unsigned(b)) && ca != kFloating && cb != kFloating)
    throw type_error(std::string("PyTorch does not promote ") + dtype_info(a).name + " with " + dtype_info(b).name +
                     "; convert one of them first");
  if (ca == kBool) return b;
  if (cb == kBool) return a;
  if (ca == kFloating && cb == kFloating) return promote_floats(a, b);
  if (ca == kInteger && cb == kInteger) return promote_integers(a, b);
  const DType f = ca == kFloating ? a : b, i = ca == kFloating ? b : a;
  if (rules == PromotionRules::Torch) return f;
  // NumPy: the smallest float that holds every value of the integer type.
  const DType holds = float_of_bits(bits(i) <= 8 ? 16 : bits(i) <= 16 ? 32 : 64);
  return bits(f) >= bits(holds) ? f : holds;
}

DType promote_inputs(const PromotionInput* inputs, int count, PromotionRules rules) {
  bool has[3] = {false, false, false};  // arrays with dims, 0-d arrays, numbers
  DType type[3] = {};
  for (int k = 0; k < count; ++k) {
    const PromotionInput& in = inputs[k];
    int group = in.number ? 2 : (in.zero_dim && rules == PromotionRules::Torch) ? 1 : 0;
    DType d = in.dtype;
    if (in.number && category(d) == kFloating) d = default_float(rules);
    if (in.number && category(d) == kInteger) d = DType::Int64;
    type[group] = has[group] ? promote_pair(type[group], d, rules) : d;
    has[group] = true;
  }
  const DType weaker = combine(has[1], type[1], has[2], type[2], rules);
  return combine(has[0], type[0], has[1] || has[2], weaker, rules);
}

DType true_division_type(DType promoted, PromotionRules rules) {
  return category(promoted) <= kInteger ? default_float(rules) : promoted;
}

Scalar torch_reciprocal(DType compute, const Scalar& divisor) {
  const double v = divisor.integral ? double(divisor.i) : divisor.f;
  Scalar r;
  r.f = compute == DType::Float64 ? 1.0 / v : double(1.0f / float(v));
  return r;
}

}  // namespace jitops
