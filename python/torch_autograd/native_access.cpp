// jitops._core's questions about PyTorch tensors (python/bindings/torch_native.h),
// answered from the at::Tensor behind each torch.Tensor: no Python call, no
// argument parsing, on every call that takes PyTorch tensors.
#include "python/torch_autograd/native_access.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>

namespace jitops_autograd {
namespace {

// A C++ exception as the Python error PyTorch's own binding would raise.
void set_python_error(const std::exception& e) {
  if (auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    PyErr_SetString(PyExc_RuntimeError, c10_error->what_without_backtrace());
  } else {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

int describe(PyObject* tensor, int max_dims, int64_t* shape, int64_t* strides, void** data, PyObject** dtype,
             int* device) try {
  const at::Tensor& t = THPVariable_Unpack(tensor);
  const int ndim = int(t.dim());
  const int n = std::min(ndim, max_dims);
  const auto sizes = t.sizes();
  const auto steps = t.strides();
  for (int i = 0; i < n; ++i) {
    shape[i] = sizes[i];
    strides[i] = steps[i];
  }
  *data = t.data_ptr();
  *dtype = reinterpret_cast<PyObject*>(torch::getTHPDtype(t.scalar_type()));
  *device = t.is_cuda() ? int(t.get_device()) : -1;
  return ndim;
} catch (const std::exception& e) {
  set_python_error(e);
  return -1;
}

int device(PyObject* tensor) {
  const at::Tensor& t = THPVariable_Unpack(tensor);
  return t.is_cuda() ? int(t.get_device()) : -1;
}

void* data_ptr(PyObject* tensor) try {
  return THPVariable_Unpack(tensor).data_ptr();
} catch (const std::exception& e) {
  set_python_error(e);
  return nullptr;
}

bool requires_grad(PyObject* tensor) { return THPVariable_Unpack(tensor).requires_grad(); }

bool has_tangent(PyObject* tensor) { return THPVariable_Unpack(tensor)._fw_grad(/*level=*/0).defined(); }

bool grad_enabled() { return at::GradMode::is_enabled(); }

int deterministic_mode() {
  const auto& context = at::globalContext();
  if (!context.deterministicAlgorithms()) return 0;
  return context.deterministicAlgorithmsWarnOnly() ? 2 : 1;
}

void* current_stream(int device) { return c10::cuda::getCurrentCUDAStream(c10::DeviceIndex(device)).stream(); }

// torch.OutOfMemoryError (its C++ handle is not exported by libtorch_python), or MemoryError.
PyObject* out_of_memory_error() {
  static PyObject* type = [] {
    PyObject* torch = PyImport_ImportModule("torch");
    PyObject* t = torch ? PyObject_GetAttrString(torch, "OutOfMemoryError") : nullptr;
    Py_XDECREF(torch);
    if (!t) {
      PyErr_Clear();
      t = PyExc_MemoryError;
      Py_INCREF(t);
    }
    return t;
  }();
  return type;
}

PyObject* empty(const int64_t* shape, int ndim, PyObject* dtype, int device) {
  try {
    const auto scalar = reinterpret_cast<THPDtype*>(dtype)->scalar_type;
    at::Tensor t = at::empty(at::IntArrayRef(shape, size_t(ndim)),
                             at::TensorOptions().dtype(scalar).device(at::Device(at::kCUDA, c10::DeviceIndex(device))));
    return THPVariable_Wrap(std::move(t));
  } catch (const c10::OutOfMemoryError& e) {  // torch.OutOfMemoryError, as torch.empty raises it
    PyErr_SetString(out_of_memory_error(), e.what_without_backtrace());
  } catch (const std::exception& e) {
    set_python_error(e);
  }
  return nullptr;
}

bool bump_version(PyObject* tensor) {
  try {
    THPVariable_Unpack(tensor).unsafeGetTensorImpl()->bump_version();
    return true;
  } catch (const std::exception& e) {
    set_python_error(e);
    return false;
  }
}

const jitops::TorchNativeApi kApi = {
    jitops::kTorchNativeVersion, describe, device, data_ptr, requires_grad, has_tangent, grad_enabled, deterministic_mode,
    current_stream, empty, bump_version,
};

}  // namespace

const jitops::TorchNativeApi* native_api() { return &kApi; }

}  // namespace jitops_autograd
