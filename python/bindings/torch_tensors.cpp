#include "python/bindings/torch_tensors.h"

#include <atomic>
#include <string>

#include <cstdlib>

#include "python/bindings/torch_native.h"
#include "runtime/arg_error.h"

namespace py = pybind11;

namespace jitops {
namespace {

struct TorchApi {
  PyObject* get_device;
  PyObject* dtype;
  PyObject* shape;
  PyObject* stride;
  PyObject* data_ptr;
  PyObject* empty_strided;   // torch.empty_strided
  PyObject* dtype_device;    // kwnames ("dtype", "device")
  PyObject* current_stream;  // torch._C._cuda_getCurrentRawStream
  PyObject* requires_grad;   // interned name
  PyObject* grad_enabled;    // torch._C.is_grad_enabled
  PyObject* forward_ad;      // torch.autograd.forward_ad (its _current_level: -1 outside dual_level())
  PyObject* current_level;   // interned name
  PyObject* increment_version;  // torch._C._increment_version
  PyObject* deterministic;      // torch._C._get_deterministic_algorithms
  PyObject* deterministic_warn_only;
  PyTypeObject* tensor_type;     // torch.Tensor
  PyTypeObject* parameter_type;  // torch.nn.Parameter
  PyObject* dtype_objects[kNumDTypes] = {};
  PyObject* devices[64] = {};  // torch.device("cuda", i), made on first use
  const TorchNativeApi* native = nullptr;  // jitops._torch_autograd's answers, where it loaded
};

std::atomic<TorchApi*> ready_api{nullptr};  // set once api() has been built

// Built on first use of a tensor (torch is imported by then); never freed.
TorchApi& api() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<TorchApi*> storage;  // see fastcall.cpp
  return *storage.call_once_and_store_result([] {
    auto* a = new TorchApi();
    a->get_device = PyUnicode_InternFromString("get_device");
    a->dtype = PyUnicode_InternFromString("dtype");
    a->shape = PyUnicode_InternFromString("shape");
    a->stride = PyUnicode_InternFromString("stride");
    a->data_ptr = PyUnicode_InternFromString("data_ptr");
    py::module_ torch = py::module_::import("torch");
    a->empty_strided = py::object(torch.attr("empty_strided")).release().ptr();
    a->dtype_device = py::make_tuple("dtype", "device").release().ptr();
    a->current_stream = py::object(torch.attr("_C").attr("_cuda_getCurrentRawStream")).release().ptr();
    a->requires_grad = PyUnicode_InternFromString("requires_grad");
    py::object C = torch.attr("_C");
    a->grad_enabled = py::object(C.attr("is_grad_enabled")).release().ptr();
    a->forward_ad = py::module_::import("torch.autograd.forward_ad").release().ptr();
    a->current_level = PyUnicode_InternFromString("_current_level");
    a->increment_version = py::object(C.attr("_increment_version")).release().ptr();
    a->deterministic = py::object(C.attr("_get_deterministic_algorithms")).release().ptr();
    a->deterministic_warn_only = py::object(C.attr("_get_deterministic_algorithms_warn_only")).release().ptr();
    a->tensor_type = reinterpret_cast<PyTypeObject*>(py::object(torch.attr("Tensor")).release().ptr());
    a->parameter_type =
        reinterpret_cast<PyTypeObject*>(py::object(torch.attr("nn").attr("Parameter")).release().ptr());
    for (int i = 0; i < kNumDTypes; ++i) {
      const char* name = dtype_table()[i].name;
      if (py::hasattr(torch, name)) a->dtype_objects[i] = py::object(torch.attr(name)).release().ptr();
    }
    auto* native = static_cast<const TorchNativeApi*>(torch_extension_capsule("native"));
    if (native && native->version == kTorchNativeVersion) a->native = native;
    ready_api.store(a, std::memory_order_release);
    return a;
  }).get_stored();
}

py::object checked(PyObject* result) {
  if (!result) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

void read_ints(PyObject* tuple, int64_t* out, int n) {
  for (int i = 0; i < n; ++i) {
    long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    out[i] = v;
  }
}

}  // namespace

int torch_device(PyObject* tensor) {
  if (const TorchNativeApi* n = api().native) return n->device(tensor);
  py::object d = checked(PyObject_CallMethodNoArgs(tensor, api().get_device));
  return int(PyLong_AsLong(d.ptr()));
}

namespace {
DType dtype_of(const TorchApi& a, PyObject* dtype, const char* arg) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (a.dtype_objects[i] == dtype) return dtype_table()[i].dtype;
  throw type_error(std::string(arg) + ": expected a dtype jitops supports (got " +
                   py::str(dtype).cast<std::string>() + ")");
}

[[noreturn]] void too_many_dims(const char* arg, int64_t n) {
  throw value_error(std::string(arg) + ": at most " + std::to_string(kMaxTensorDims) + " dimensions (got " +
                    std::to_string(n) + ")");
}
}  // namespace

void torch_describe(PyObject* tensor, const char* arg, TensorDesc& desc) {
  TorchApi& a = api();
  if (const TorchNativeApi* n = a.native) {
    PyObject* dtype = nullptr;
    int device = -1;
    const int ndim = n->describe(tensor, kMaxTensorDims, desc.shape, desc.strides, &desc.data, &dtype, &device);
    if (ndim < 0) throw py::error_already_set();
    if (ndim > kMaxTensorDims) too_many_dims(arg, ndim);
    desc.ndim = ndim;
    desc.dtype = dtype_of(a, dtype, arg);
    return;
  }
  py::object dtype = checked(PyObject_GetAttr(tensor, a.dtype));
  desc.dtype = dtype_of(a, dtype.ptr(), arg);
  py::object shape = checked(PyObject_GetAttr(tensor, a.shape));  // torch.Size, a tuple
  py::object strides = checked(PyObject_CallMethodNoArgs(tensor, a.stride));
  Py_ssize_t n = PyTuple_GET_SIZE(shape.ptr());
  if (n > kMaxTensorDims) too_many_dims(arg, n);
  desc.ndim = int(n);
  read_ints(shape.ptr(), desc.shape, desc.ndim);
  read_ints(strides.ptr(), desc.strides, desc.ndim);
  desc.data = torch_data_ptr(tensor);
}

void* torch_data_ptr(PyObject* tensor) {
  if (const TorchNativeApi* n = api().native) {
    void* p = n->data_ptr(tensor);
    if (!p && PyErr_Occurred()) throw py::error_already_set();
    return p;
  }
  py::object p = checked(PyObject_CallMethodNoArgs(tensor, api().data_ptr));
  return PyLong_AsVoidPtr(p.ptr());
}

TorchRoute& torch_route() {
  thread_local TorchRoute route = TorchRoute::None;
  return route;
}

namespace {
bool requires_grad(const TorchApi& a, PyObject* tensor) {
  if (a.native) return a.native->requires_grad(tensor);
  return checked(PyObject_GetAttr(tensor, a.requires_grad)).ptr() == Py_True;
}

bool grad_mode(const TorchApi& a) {
  if (a.native) return a.native->grad_enabled();
  return checked(PyObject_CallNoArgs(a.grad_enabled)).ptr() == Py_True;
}

// A dual tensor (forward-mode AD) needs PyTorch's dispatcher whatever the grad mode: its tangent must be
// carried or refused, never dropped. Without the extension, every tensor counts inside dual_level().
bool has_tangent(const TorchApi& a, PyObject* tensor) {
  if (a.native) return a.native->has_tangent(tensor);
  py::object level = checked(PyObject_GetAttr(a.forward_ad, a.current_level));
  return PyLong_Check(level.ptr()) && PyLong_AsLong(level.ptr()) >= 0;
}

// requires_grad first; grad mode only for a tensor that requires grad.
bool needs_autograd(const TorchApi& a, PyObject* tensor) {
  return (requires_grad(a, tensor) && grad_mode(a)) || has_tangent(a, tensor);
}
}  // namespace

void check_torch_route(PyObject* tensor) {
  const TorchRoute route = torch_route();
  if (route == TorchRoute::None) return;
  TorchApi& a = api();
  PyTypeObject* type = Py_TYPE(tensor);
  if (type != a.tensor_type && type != a.parameter_type) throw TorchDispatch();
  if (route == TorchRoute::Autograd && needs_autograd(a, tensor)) throw TorchDispatch();
}

bool torch_dispatch_needed(PyObject* const* params, int count) {
  TorchRoute& route = torch_route();
  if (route == TorchRoute::None) return false;
  TorchApi* a = ready_api.load(std::memory_order_acquire);
  if (!a) return false;  // no tensor met yet: the operands' own checks decide
  for (int i = 0; i < count; ++i) {
    PyObject* p = params[i];
    if (!p || p == Py_None || PyLong_CheckExact(p) || PyFloat_CheckExact(p) || PyBool_Check(p)) continue;
    PyTypeObject* type = Py_TYPE(p);
    if (type == a->tensor_type || type == a->parameter_type) {
      if (route == TorchRoute::Autograd && needs_autograd(*a, p)) return true;
    } else if (PyType_IsSubtype(type, a->tensor_type)) {
      return true;
    }
  }
  route = TorchRoute::None;  // every parameter was looked at: the operands need no second check
  return false;
}

bool torch_needs_grad(PyObject* tensor) { return needs_autograd(api(), tensor); }

void torch_bump_version(PyObject* tensor) {
  const TorchApi& a = api();
  if (a.native) {
    if (!a.native->bump_version(tensor)) throw py::error_already_set();
    return;
  }
  // PyTorch 2.11's _increment_version takes an iterable of tensors: a tensor
  // passed alone is iterated (bumped once per element of its first dimension,
  // never when empty, an error when 0-d), so it gets a 1-tuple. Releases whose
  // _increment_version takes one tensor refuse the tuple with TypeError and
  // get the tensor from then on.
  static std::atomic<bool> takes_one_tensor{false};
  PyObject* fn = a.increment_version;
  if (!takes_one_tensor.load(std::memory_order_relaxed)) {
    py::object one = checked(PyTuple_Pack(1, tensor));
    PyObject* args[] = {one.ptr()};
    if (PyObject* r = PyObject_Vectorcall(fn, args, 1, nullptr)) {
      Py_DECREF(r);
      return;
    }
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
    PyErr_Clear();
    takes_one_tensor.store(true, std::memory_order_relaxed);
  }
  PyObject* args[] = {tensor};
  checked(PyObject_Vectorcall(fn, args, 1, nullptr));
}

int torch_deterministic_mode() {
  const TorchApi& a = api();
  if (a.native) return a.native->deterministic_mode();
  py::object on = checked(PyObject_CallNoArgs(a.deterministic));
  if (on.ptr() != Py_True) return 0;
  py::object warn = checked(PyObject_CallNoArgs(a.deterministic_warn_only));
  return warn.ptr() == Py_True ? 2 : 1;
}

CUstream torch_current_stream(int device) {
  const TorchApi& a = api();
  if (a.native) return reinterpret_cast<CUstream>(a.native->current_stream(device));
  py::object arg = checked(PyLong_FromLong(device));
  PyObject* args[] = {arg.ptr()};
  py::object s = checked(PyObject_Vectorcall(a.current_stream, args, 1, nullptr));
  return reinterpret_cast<CUstream>(PyLong_AsVoidPtr(s.ptr()));
}

py::object torch_empty(const std::vector<int64_t>& shape, DType dtype, int device) {
  TorchApi& a = api();
  PyObject* dt = a.dtype_objects[int(dtype)];
  if (!dt) throw type_error(std::string("PyTorch has no dtype ") + dtype_info(dtype).name);
  if (device < 0 || device >= 64) throw value_error("device: CUDA ordinal out of range");
  if (a.native) return checked(a.native->empty(shape.data(), int(shape.size()), dt, device));
  // torch.empty_strided(size, stride, dtype=, device=): the cheapest Python-level
  // allocation measured (0.6 us under Tensor.new_empty on an H200 machine).
  const size_t n = shape.size();
  py::tuple size(n), stride(n);
  int64_t s = 1;
  for (size_t i = n; i-- > 0;) {
    PyTuple_SET_ITEM(size.ptr(), i, PyLong_FromLongLong(shape[i]));
    PyTuple_SET_ITEM(stride.ptr(), i, PyLong_FromLongLong(s));
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  if (!a.devices[device])
    a.devices[device] = py::module_::import("torch").attr("device")("cuda", device).release().ptr();
  PyObject* args[] = {size.ptr(), stride.ptr(), dt, a.devices[device]};
  return checked(PyObject_Vectorcall(a.empty_strided, args, 2, a.dtype_device));
}

namespace {
// jitops._torch_autograd, imported once, when the first PyTorch tensor is met.
// Absent (PyTorch was not importable when jitops was built) or switched off
// (JITOPS_TORCH_EXTENSION=0): None, quietly. Present but not loadable (built
// against another PyTorch): None, with a warning.
py::object torch_extension() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;  // see fastcall.cpp
  return storage
      .call_once_and_store_result([]() -> py::object {
        const char* env = std::getenv("JITOPS_TORCH_EXTENSION");
        if (env && (std::string(env) == "0" || std::string(env) == "off" || std::string(env) == "false"))
          return py::none();
        try {
          return py::module_::import("jitops._torch_autograd");
        } catch (py::error_already_set& e) {
          if (e.matches(PyExc_ModuleNotFoundError)) return py::none();
          if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                               "jitops: its PyTorch extension (jitops._torch_autograd) did not load, so calls on "
                               "PyTorch tensors and their gradients take the slower Python paths: %s",
                               e.what()) < 0)
            PyErr_Clear();
          return py::none();
        }
      })
      .get_stored();
}
}  // namespace

void* torch_extension_capsule(const char* name) {
  py::object m = torch_extension();
  if (m.is_none()) return nullptr;
  const std::string full = std::string("jitops._torch_autograd.") + name;
  void* p = PyCapsule_GetPointer(py::object(m.attr(name)).ptr(), full.c_str());
  if (!p) throw py::error_already_set();
  return p;
}

}  // namespace jitops
