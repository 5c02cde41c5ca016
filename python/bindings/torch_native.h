// What jitops._core asks of PyTorch tensors on the per-call path, answered
// through PyTorch's C++ API. jitops._torch_autograd (built against PyTorch,
// python/torch_autograd/native_access.cpp) exports this table in its capsule
// `native`; where it is absent, torch_tensors.cpp asks through Python
// (attribute reads and method calls, a few hundred nanoseconds each).
// Plain C types only: the two modules are built separately.
#pragma once
#include <Python.h>

#include <cstdint>

namespace jitops {

constexpr int kTorchNativeVersion = 2;

struct TorchNativeApi {
  int version;  // kTorchNativeVersion
  // Of a torch.Tensor (or subclass): its dims (the return value; shape and
  // strides filled up to max_dims), data pointer, dtype (a borrowed
  // torch.dtype) and CUDA ordinal (-1 off CUDA); -1 with a Python error set.
  int (*describe)(PyObject* tensor, int max_dims, int64_t* shape, int64_t* strides, void** data, PyObject** dtype,
                  int* device);
  int (*device)(PyObject* tensor);
  void* (*data_ptr)(PyObject* tensor);  // nullptr: check PyErr_Occurred()
  bool (*requires_grad)(PyObject* tensor);
  // Whether it carries a forward-mode AD tangent (a dual tensor, which need not require grad).
  bool (*has_tangent)(PyObject* tensor);
  bool (*grad_enabled)();
  // 0 off, 1 on, 2 on with warn_only (torch.use_deterministic_algorithms).
  int (*deterministic_mode)();
  // PyTorch's current stream on a CUDA device (a CUstream).
  void* (*current_stream)(int device);
  // A new contiguous CUDA tensor from PyTorch's allocator; nullptr with a Python error set.
  PyObject* (*empty)(const int64_t* shape, int ndim, PyObject* dtype, int device);
  // Bumps the version counter (as an in-place write does); false with a Python error set.
  bool (*bump_version)(PyObject* tensor);
};

}  // namespace jitops
