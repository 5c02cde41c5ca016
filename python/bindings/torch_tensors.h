// Reading PyTorch tensors on the per-call path, without linking PyTorch.
//
// Each read is one CPython call with an interned name (PyObject_GetAttr,
// PyObject_CallMethodNoArgs): no temporary strings, no bound-method objects,
// no pybind11 casts. A tensor is described by get_device(), dtype, shape,
// stride() and data_ptr().
#pragma once
#include <pybind11/pybind11.h>

#include <cuda.h>

#include <vector>

#include "runtime/tensor_desc.h"

namespace jitops {

// CUDA ordinal of a tensor, or -1 for a CPU tensor.
int torch_device(PyObject* tensor);

// Fills `desc` (everything but the device); TypeError naming `arg` for a dtype jitops lacks.
void torch_describe(PyObject* tensor, const char* arg, TensorDesc& desc);

// PyTorch's current stream on `device` (torch._C._cuda_getCurrentRawStream).
CUstream torch_current_stream(int device);

// A new contiguous tensor of `dtype` on CUDA `device`, from PyTorch's caching allocator.
pybind11::object torch_empty(const std::vector<int64_t>& shape, DType dtype, int device);

// The data pointer of a tensor.
void* torch_data_ptr(PyObject* tensor);

}  // namespace jitops
