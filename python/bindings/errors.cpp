// C++ failures to Python exceptions. CompileError and CudaError are defined in
// jitops/errors.py (so they pickle); this translator builds them with their
// context fields.
#include "python/bindings/errors.h"

#include <pybind11/stl.h>

#include "jit/compiler.h"
#include "runtime/arg_error.h"
#include "runtime/cuda_error.h"

namespace py = pybind11;

namespace jitops {
namespace {

void raise_python(const char* class_name, py::object instance) {
  (void)class_name;
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.ptr())), instance.ptr());
}

py::object errors_module() { return py::module_::import("jitops.errors"); }

}  // namespace

void register_error_translators() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ArgError& e) {
      PyObject* type = e.kind() == ArgError::Type    ? PyExc_TypeError
                       : e.kind() == ArgError::Index ? PyExc_IndexError
                                                     : PyExc_ValueError;
      PyErr_SetString(type, e.what());
    } catch (const CompileFailure& e) {
      py::gil_scoped_acquire gil;
      raise_python("CompileError", errors_module().attr("CompileError")(e.what(), e.log, e.options, e.kernel_name, e.source));
    } catch (const CudaFailure& e) {
      py::gil_scoped_acquire gil;
      raise_python("CudaError", errors_module().attr("CudaError")(e.what(), e.call(), e.code(), e.name()));
    } catch (const OutOfDeviceMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const LibraryUnavailable& e) {
      py::gil_scoped_acquire gil;
      raise_python("CudaUnavailableError", errors_module().attr("CudaUnavailableError")(e.what()));
    }
  });
}

}  // namespace jitops
