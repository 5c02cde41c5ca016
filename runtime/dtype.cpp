#include "runtime/dtype.h"

namespace jitops {
namespace {

// DLPack type codes: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
const DTypeInfo kTable[kNumDTypes] = {
    {DType::Bool, "bool", 6, 8, DTypeKind::Bool},
    {DType::Int8, "int8", 0, 8, DTypeKind::Signed},
    {DType::UInt8, "uint8", 1, 8, DTypeKind::Unsigned},
    {DType::Int16, "int16", 0, 16, DTypeKind::Signed},
    {DType::UInt16, "uint16", 1, 16, DTypeKind::Unsigned},
    {DType::Int32, "int32", 0, 32, DTypeKind::Signed},
    {DType::UInt32, "uint32", 1, 32, DTypeKind::Unsigned},
    {DType::Int64, "int64", 0, 64, DTypeKind::Signed},
    {DType::UInt64, "uint64", 1, 64, DTypeKind::Unsigned},
    {DType::Float16, "float16", 2, 16, DTypeKind::Float},
    {DType::BFloat16, "bfloat16", 4, 16, DTypeKind::Float},
    {DType::Float32, "float32", 2, 32, DTypeKind::Float},
    {DType::Float64, "float64", 2, 64, DTypeKind::Float},
    {DType::Complex64, "complex64", 5, 64, DTypeKind::Complex},
    {DType::Complex128, "complex128", 5, 128, DTypeKind::Complex},
};

}  // namespace

const DTypeInfo& dtype_info(DType dtype) { return kTable[int(dtype)]; }
const DTypeInfo* dtype_table() { return kTable; }

bool dtype_from_dlpack(uint8_t code, uint8_t bits, uint16_t lanes, DType* out) {
  if (lanes != 1) return false;
  for (const DTypeInfo& row : kTable) {
    if (row.dlpack_code == code && row.bits == bits) {
      *out = row.dtype;
      return true;
    }
  }
  return false;
}

bool dtype_from_name(const std::string& name, DType* out) {
  for (const DTypeInfo& row : kTable) {
    if (name == row.name) {
      *out = row.dtype;
      return true;
    }
  }
  return false;
}

}  // namespace jitops
