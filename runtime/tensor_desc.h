// What the C++ core knows of an array: pointer, dtype, shape and strides in
// elements, device. Built by the binding layer from DLPack or framework
// tensors; the core never sees a Python object.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace jitops {

constexpr int kMaxTensorDims = 32;

struct TensorDesc {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int device = -1;  // CUDA ordinal
  int ndim = 0;
  // Only [0, ndim) is meaningful; left uninitialized past it (per-call path).
  int64_t shape[kMaxTensorDims];
  int64_t strides[kMaxTensorDims];  // in elements; may be zero or negative

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
  int element_bytes() const { return dtype_info(dtype).bytes(); }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expected) return false;
      expected *= shape[i];
    }
    return true;
  }
  // The strides of a C-contiguous array of this shape, into `out`.
  void c_order_strides(int64_t* out) const {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      out[i] = s;
      s *= shape[i];
    }
  }
  void set_contiguous_strides() { c_order_strides(strides); }
};

// "(5,3)": a shape as error messages print it.
inline std::string shape_str(const int64_t* shape, int ndim) {
  std::string s = "(";
  for (int i = 0; i < ndim; ++i) s += std::to_string(shape[i]) + (i + 1 < ndim || ndim == 1 ? "," : "");
  return s + ")";
}
inline std::string shape_str(const TensorDesc& t) { return shape_str(t.shape, t.ndim); }
// "(5, 3)": the spelling of out= shape messages.
inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += std::to_string(shape[i]) + (i + 1 < shape.size() ? ", " : "");
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace jitops
