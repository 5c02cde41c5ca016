#include "python/bindings/scalar_arg.h"

#include <string>

#include "runtime/arg_error.h"

namespace py = pybind11;

namespace jitops {

Scalar scalar_arg(PyObject* v, const char* name) {
  Scalar s;
  if (PyBool_Check(v)) {
    s.integral = s.boolean = true;
    s.i = v == Py_True;
    return s;
  }
  if (PyLong_Check(v) || (PyIndex_Check(v) && !PyFloat_Check(v))) {
    PyObject* as_int = PyNumber_Index(v);
    if (as_int) {
      s.integral = true;
      s.i = PyLong_AsLongLong(as_int);
      Py_DECREF(as_int);
      if (!(s.i == -1 && PyErr_Occurred())) return s;
    }
    PyErr_Clear();  // a float 0-d tensor has __index__ that refuses: read it as a float
  }
  s.integral = false;
  s.f = PyFloat_AsDouble(v);
  if (s.f == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw type_error(std::string(name) + ": expected a number (got " + Py_TYPE(v)->tp_name + ")");
  }
  return s;
}

bool is_numpy_scalar(PyObject* v) {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;  // see fastcall.cpp
  PyObject* numpy_generic =
      storage.call_once_and_store_result([] { return py::object(py::module_::import("numpy").attr("generic")); })
          .get_stored()
          .ptr();
  const int r = PyObject_IsInstance(v, numpy_generic);
  if (r < 0) PyErr_Clear();
  return r > 0;
}

bool is_number(PyObject* v) {
  if (PyBool_Check(v) || PyLong_Check(v) || PyFloat_Check(v)) return true;
  return is_numpy_scalar(v) && !PyComplex_Check(v);
}

}  // namespace jitops
