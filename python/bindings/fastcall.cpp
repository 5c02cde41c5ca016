#include "python/bindings/fastcall.h"

#include <pybind11/detail/exception_translation.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "runtime/arg_error.h"
#include "runtime/tuning.h"

namespace py = pybind11;

namespace jitops {

void parse_fast_args(const FastSignature& sig, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                     PyObject** out) {
  for (int i = 0; i < sig.count; ++i) out[i] = nullptr;
  if (nargs > sig.positional)
    throw type_error(std::string(sig.function) + "() takes at most " + std::to_string(sig.positional) +
                     " positional arguments (got " + std::to_string(nargs) + ")");
  for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int found = -1;
    for (int i = 0; i < sig.count && found < 0; ++i)
      if (PyUnicode_CompareWithASCIIString(key, sig.names[i]) == 0) found = i;
    if (found < 0)
      throw type_error(std::string(sig.function) + "() got an unexpected keyword argument '" +
                       py::str(key).cast<std::string>() + "'");
    if (out[found])
      throw type_error(std::string(sig.function) + "() got multiple values for argument '" + sig.names[found] + "'");
    out[found] = args[nargs + k];
  }
  for (int i = 0; i < sig.required; ++i)
    if (!out[i])
      throw type_error(std::string(sig.function) + "() missing required argument '" + sig.names[i] + "'");
}

int64_t int_arg(PyObject* value, const char* name) {
  if (PyBool_Check(value) || !PyIndex_Check(value))
    throw type_error(std::string(name) + ": expected an int (got " + Py_TYPE(value)->tp_name + ")");
  long long v = PyLong_AsLongLong(value);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

void launch_dims_arg(PyObject* value, const char* name, unsigned out[3]) {
  out[0] = out[1] = out[2] = 1;
  auto one = [&](PyObject* v, unsigned& slot) {
    const int64_t n = int_arg(v, name);
    if (n < 1 || n > 0x7fffffff)
      throw value_error(std::string(name) + ": expected sizes of at least 1 (got " + std::to_string(n) + ")");
    slot = unsigned(n);
  };
  if (!PyTuple_Check(value) && !PyList_Check(value)) return one(value, out[0]);
  py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
  if (seq.size() < 1 || seq.size() > 3)
    throw value_error(std::string(name) + ": expected 1 to 3 sizes (got " + std::to_string(seq.size()) + ")");
  for (size_t i = 0; i < seq.size(); ++i) one(py::object(seq[i]).ptr(), out[i]);
}

namespace {
// fn(name, *args, **kwargs) for a fastcall's own arguments.
PyObject* call_with_name(PyObject* fn, const char* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  py::str op(name);
  std::vector<PyObject*> all(size_t(1 + nargs + nkw));
  all[0] = op.ptr();
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) all[size_t(1 + i)] = args[i];
  return PyObject_Vectorcall(fn, all.data(), size_t(1 + nargs), kwnames);
}
}  // namespace

PyObject* run_on_host(const char* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  // Not a plain function-local static: its initializer runs Python code, which may
  // release the GIL; a second thread waiting on the static's guard while holding the
  // GIL would deadlock (seen with parallel warmup). gil_safe_call_once_and_store
  // waits without the GIL.
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;
  PyObject* run_op =
      storage.call_once_and_store_result([] { return py::object(py::module_::import("jitops._host").attr("run_op")); })
          .get_stored()
          .ptr();
  return call_with_name(run_op, name, args, nargs, kwnames);
}

namespace {
// The hook jitops._torch_autograd exports (python/torch_autograd/hook.h): a new
// reference to the result, nullptr with an error set, or Py_NotImplemented
// (a new reference) when the call is not one its nodes take.
using AutogradHook = PyObject* (*)(const char* op, PyObject* const* params, int count);

std::atomic<bool>& cpp_autograd_enabled() {
  static std::atomic<bool> enabled{[] {
    const char* env = std::getenv("JITOPS_CPP_AUTOGRAD");
    return !(env && (std::string(env) == "0" || std::string(env) == "off" || std::string(env) == "false"));
  }()};
  return enabled;
}

// From jitops._torch_autograd, where it loaded (torch_extension_capsule).
AutogradHook autograd_hook() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<AutogradHook> storage;  // see run_on_host
  return storage
      .call_once_and_store_result(
          [] { return reinterpret_cast<AutogradHook>(torch_extension_capsule("hook")); })
      .get_stored();
}
}  // namespace

bool set_cpp_autograd(bool enabled) { return cpp_autograd_enabled().exchange(enabled); }

bool cpp_autograd_active() { return cpp_autograd_enabled().load() && autograd_hook() != nullptr; }

PyObject* run_through_torch(const FastSignature& sig, PyObject* const* params, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) {
  if (cpp_autograd_enabled().load(std::memory_order_relaxed)) {
    if (AutogradHook hook = autograd_hook()) {
      PyObject* result = hook(sig.function, params, sig.count);
      if (result != Py_NotImplemented) return result;
      Py_DECREF(result);
    }
  }
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;  // see run_on_host
  PyObject* call = storage.call_once_and_store_result([] {
                         return py::object(py::module_::import("jitops._torch.dispatch").attr("call"));
                       }).get_stored().ptr();
  return call_with_name(call, sig.function, args, nargs, kwnames);
}

bool& torch_routing_enabled() {
  thread_local bool enabled = true;
  return enabled;
}

RouteScope::RouteScope(bool differentiable) : saved_(torch_route()) {
  torch_route() = !torch_routing_enabled() ? TorchRoute::None
                  : differentiable          ? TorchRoute::Autograd
                                            : TorchRoute::Subclass;
}

RouteScope::~RouteScope() { torch_route() = saved_; }

PyObject* translate_current_exception() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}

bool autotune_requested() { return take_autotune_request(); }

PyObject* autotune_after(const char* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                         PyObject* result) {
  py::object owned = py::reinterpret_steal<py::object>(result);
  py::tuple positional(nargs);
  for (Py_ssize_t i = 0; i < nargs; ++i) positional[i] = py::reinterpret_borrow<py::object>(args[i]);
  py::dict keywords;
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i)
    keywords[py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(kwnames, i))] =
        py::reinterpret_borrow<py::object>(args[nargs + i]);
  py::module_::import("jitops.tuning").attr("_autotune")(name, positional, keywords);
  return owned.release().ptr();
}

void add_fastcall(py::module_& m, PyMethodDef* def) {
  py::object name = m.attr("__name__");
  PyObject* fn = PyCFunction_NewEx(def, nullptr, name.ptr());
  if (!fn) throw py::error_already_set();
  m.add_object(def->ml_name, py::reinterpret_steal<py::object>(fn));
}

}  // namespace jitops
