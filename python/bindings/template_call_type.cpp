// _core.TemplateCall (template_call_type.h). A call with only grid=, block=,
// shared_mem= and stream= keywords goes straight to template_launch; any other
// (template_args=, a misspelt keyword) and a compile error go through the
// subclass's Python `_call_python`, which binds the keywords as the signature
// says and words the error with the user's numbered source.
#include "python/bindings/template_call_type.h"

#include <structmember.h>

#include <cstddef>
#include <cstring>

namespace jitops {
namespace {

struct TemplateCallObject {
  PyObject_HEAD
  PyObject* kernel;      // _core.TemplateKernel, set by jitops.Template.__init__ as self._kernel
  PyObject* cached_for;  // the kernel object `cached` was taken from (held: no other object takes its address)
  void* cached;          // its C++ kernel: the pybind11 cast done once, not every call
};

PyObject* python_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* method = PyObject_GetAttrString(self, "_call_python");
  if (!method) return nullptr;
  PyObject* result = PyObject_Call(method, args, kwargs);
  Py_DECREF(method);
  return result;
}

// jitops.errors.CompileError, imported at the first call (before any error is pending: the C API must not
// be called with one set).
PyObject* compile_error_type() {
  static PyObject* type = [] {
    PyObject* errors = PyImport_ImportModule("jitops.errors");
    PyObject* t = errors ? PyObject_GetAttrString(errors, "CompileError") : nullptr;
    Py_XDECREF(errors);
    return t;  // kept for the life of the process
  }();
  return type;
}

PyObject* call(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* const kKeywords[] = {"grid", "block", "shared_mem", "stream"};
  auto* t = reinterpret_cast<TemplateCallObject*>(self);
  if (!t->kernel) {
    PyErr_SetString(PyExc_TypeError, "Template: not initialised (its __init__ did not run)");
    return nullptr;
  }
  static PyObject* zero = PyLong_FromLong(0);
  PyObject* compile_error = compile_error_type();
  if (!compile_error) return nullptr;
  PyObject* params[6] = {t->kernel, args, Py_None, Py_None, zero, Py_None};
  if (kwargs) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
      int slot = -1;
      for (int k = 0; name && k < 4; ++k)
        if (std::strcmp(name, kKeywords[k]) == 0) slot = 2 + k;
      if (slot < 0) return python_call(self, args, kwargs);
      params[slot] = value;
    }
  }
  if (t->cached_for != t->kernel) {
    void* kernel = template_kernel_pointer(t->kernel);
    if (!kernel) return nullptr;
    Py_INCREF(t->kernel);
    Py_XSETREF(t->cached_for, t->kernel);
    t->cached = kernel;
  }
  PyObject* held = t->cached_for;  // alive through the launch, whatever another thread does to _kernel
  Py_INCREF(held);
  PyObject* result = template_launch_positional(t->cached, params);
  Py_DECREF(held);
  if (!result && PyErr_ExceptionMatches(compile_error)) {
    PyErr_Clear();  // compiling failed before anything ran: the Python path repeats it and words the error
    return python_call(self, args, kwargs);
  }
  return result;
}

void dealloc(PyObject* self) {
  Py_CLEAR(reinterpret_cast<TemplateCallObject*>(self)->kernel);
  Py_CLEAR(reinterpret_cast<TemplateCallObject*>(self)->cached_for);
  Py_TYPE(self)->tp_free(self);
}

PyMemberDef kMembers[] = {
    {const_cast<char*>("_kernel"), T_OBJECT_EX, offsetof(TemplateCallObject, kernel), 0,
     const_cast<char*>("The compiled template's core object (_core.TemplateKernel).")},
    {nullptr, 0, 0, 0, nullptr},
};

PyTypeObject make_type() {
  PyTypeObject type{PyVarObject_HEAD_INIT(nullptr, 0)};
  type.tp_name = "jitops._core.TemplateCall";
  type.tp_basicsize = sizeof(TemplateCallObject);
  type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
  type.tp_doc = "Base of jitops.Template: its call, in C.";
  type.tp_new = PyType_GenericNew;
  type.tp_dealloc = dealloc;
  type.tp_call = call;
  type.tp_members = kMembers;
  return type;
}

PyTypeObject g_type = make_type();

}  // namespace

void bind_template_call_type(pybind11::module_& m) {
  if (PyType_Ready(&g_type) < 0) throw pybind11::error_already_set();
  Py_INCREF(&g_type);
  m.attr("TemplateCall") = pybind11::handle(reinterpret_cast<PyObject*>(&g_type));
}

}  // namespace jitops
