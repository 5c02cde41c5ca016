// The dtype table: one row per element type jitops knows, with its DLPack
// code and width. Bindings, planners and (through _core.dtypes()) the tests'
// parametrization all read this one table.
#pragma once
#include <cstdint>
#include <string>

namespace jitops {

enum class DType : uint8_t {
  Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64,
  Float16, BFloat16, Float32, Float64, Complex64, Complex128,
};
constexpr int kNumDTypes = 15;

enum class DTypeKind : uint8_t { Bool, Signed, Unsigned, Float, Complex };

struct DTypeInfo {
  DType dtype;
  const char* name;  // numpy / PyTorch spelling
  uint8_t dlpack_code;
  uint8_t bits;
  DTypeKind kind;
  int bytes() const { return bits / 8; }
};

const DTypeInfo& dtype_info(DType dtype);
inline bool is_floating(DType d) { return dtype_info(d).kind == DTypeKind::Float; }
inline bool is_integer(DType d) {
  return dtype_info(d).kind == DTypeKind::Signed || dtype_info(d).kind == DTypeKind::Unsigned;
}
const DTypeInfo* dtype_table();  // kNumDTypes rows

// From DLPack's (code, bits, lanes); false when jitops has no such dtype.
bool dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, DType* out);
bool dtype_from_name(const std::string& name, DType* out);

}  // namespace jitops
