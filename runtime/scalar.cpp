#include "runtime/scalar.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "jitops/scatter_params.h"

namespace jitops {

uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) return uint16_t(sign | 0x7C00u | (mant ? 0x200u | (mant >> 13) : 0u));
  const int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7C00u);
  if (e <= 0) {  // subnormal half, or zero
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = sign | (uint32_t(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds into the exponent, as it should
  return uint16_t(h);
}

uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // NaN stays NaN
  x += 0x7FFFu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(mant), -24);  // zero or subnormal
    return sign ? -f : f;
  }
  uint32_t x = exp == 0x1F ? (sign | 0x7F800000u | (mant << 13)) : (sign | ((exp - 15 + 127) << 23) | (mant << 13));
  std::memcpy(&f, &x, 4);
  return f;
}

float bfloat16_bits_to_float(uint16_t b) {
  const uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

namespace {
template <typename T>
void put(const T& v, unsigned char out[16]) {
  std::memcpy(out, &v, sizeof(T));
}
template <typename T>
T as_integer(const Scalar& s) {
  return s.integral ? T(s.i) : T(int64_t(s.f));
}
}  // namespace

void encode_scalar(DType dtype, const Scalar& s, unsigned char out[16]) {
  std::memset(out, 0, 16);
  const double f = s.integral ? double(s.i) : s.f;
  switch (dtype) {
    case DType::Bool: put<uint8_t>(f != 0.0 ? 1 : 0, out); break;
    case DType::Int8: put(as_integer<int8_t>(s), out); break;
    case DType::UInt8: put(as_integer<uint8_t>(s), out); break;
    case DType::Int16: put(as_integer<int16_t>(s), out); break;
    case DType::UInt16: put(as_integer<uint16_t>(s), out); break;
    case DType::Int32: put(as_integer<int32_t>(s), out); break;
    case DType::UInt32: put(as_integer<uint32_t>(s), out); break;
    case DType::Int64: put(as_integer<int64_t>(s), out); break;
    case DType::UInt64: put(as_integer<uint64_t>(s), out); break;
    case DType::Float16: put(float_to_half_bits(float(f)), out); break;
    case DType::BFloat16: put(float_to_bfloat16_bits(float(f)), out); break;
    case DType::Float32: put(float(f), out); break;
    case DType::Float64: put(f, out); break;
    case DType::Complex64: put(float(f), out); break;  // real part; imaginary zero
    case DType::Complex128: put(f, out); break;
  }
}

Scalar reduction_identity(DType dtype, int op) {
  Scalar s;
  const DTypeInfo& info = dtype_info(dtype);
  const bool is_float = info.kind == DTypeKind::Float;
  if (op == kScatterAdd) {
    s.integral = true;
    s.i = 0;
  } else if (op == kScatterMul) {
    s.integral = true;
    s.i = 1;
  } else if (is_float) {
    s.f = op == kScatterMax ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  } else {
    s.integral = true;
    const int bits = info.bits;
    const bool is_signed = info.kind == DTypeKind::Signed;
    const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0;
    const int64_t hi = bits == 64 ? std::numeric_limits<int64_t>::max()
                                  : (is_signed ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1);
    s.i = op == kScatterMax ? lo : hi;
  }
  return s;
}

uint64_t scalar_bits(DType dtype, const Scalar& value) {
  unsigned char bytes[16];
  encode_scalar(dtype, value, bytes);
  uint64_t bits = 0;
  std::memcpy(&bits, bytes, 8);
  return bits;
}

}  // namespace jitops
