// Reading PyTorch tensors on the per-call path, without linking PyTorch.
//
// Where jitops._torch_autograd was built (against the PyTorch installed), its
// `native` table answers from PyTorch's C++ API (torch_native.h). Otherwise
// each read is one CPython call with an interned name (PyObject_GetAttr,
// PyObject_CallMethodNoArgs): no temporary strings, no bound-method objects,
// no pybind11 casts. A tensor is described by get_device(), dtype, shape,
// stride() and data_ptr().
#pragma once
#include <pybind11/pybind11.h>

#include <cuda.h>

#include <exception>
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

// What a call on PyTorch tensors must hand to jitops._torch (autograd,
// tracing): the fast path computes only on plain tensors that need no graph.
enum class TorchRoute : uint8_t {
  None,      // compute here whatever the tensors are (the custom ops' own kernels)
  Subclass,  // hand over tensor subclasses (FakeTensor, FunctionalTensor, ...): ops without a gradient
  Autograd,  // ... and calls where a tensor requires grad with grad mode on
};
// Raised (and caught in fast_entry) when a call must go to jitops._torch.dispatch.
struct TorchDispatch : std::exception {
  const char* what() const noexcept override { return "the call goes through PyTorch's dispatcher"; }
};
// The current thread's routing: set per op by fast_entry; None while the
// custom ops run their kernels (jitops._core._torch_routing).
TorchRoute& torch_route();
// Throws TorchDispatch when `tensor` needs the dispatcher under the current routing.
void check_torch_route(PyObject* tensor);

// Whether a call with these parameters goes to the dispatcher under the
// current routing, decided before any work and without an exception (a C++
// throw costs microseconds in a process that has PyTorch's libraries loaded).
// When it answers no having seen every parameter, it clears the call's
// routing, so the operands are not checked twice. Until the first PyTorch
// tensor is met it answers no and leaves the checks to the operands.
bool torch_dispatch_needed(PyObject* const* params, int count);

// True when `tensor` requires grad and grad mode is on, or carries a
// forward-mode tangent: a kernel with no derivative must refuse it rather
// than give an output outside the graph.
bool torch_needs_grad(PyObject* tensor);

// Bumps a tensor's version counter (torch._C._increment_version), as every
// in-place op and out= write does, so autograd sees the write.
void torch_bump_version(PyObject* tensor);

// torch.use_deterministic_algorithms: 0 off, 1 on, 2 on with warn_only.
int torch_deterministic_mode();

// The payload of capsule `name` of jitops._torch_autograd (loaded once, when
// the first PyTorch tensor is met), or nullptr where that module is absent,
// switched off (JITOPS_TORCH_EXTENSION=0) or not loadable (with a warning).
void* torch_extension_capsule(const char* name);

}  // namespace jitops
