// jitops._torch_autograd: jitops' bridge to PyTorch's C++ API, built only where
// PyTorch is importable at build time (CMakeLists.txt). Two capsules, which
// jitops._core loads when it first meets a PyTorch tensor
// (python/bindings/torch_tensors.cpp): `hook`, the C++ autograd nodes for calls
// that need autograd (nodes.h), and `native`, its per-call questions about
// tensors answered without Python (torch_native.h). Without this module both
// take the Python paths.
#include <Python.h>
#include <torch/csrc/Exceptions.h>

#include "python/torch_autograd/calls.h"
#include "python/torch_autograd/native_access.h"
#include "python/torch_autograd/nodes.h"

namespace {

PyObject* ops(PyObject*, PyObject*) { return jitops_autograd::node_ops(); }

PyMethodDef methods[] = {
    {"ops", ops, METH_NOARGS, "The names of the ops whose eager autograd calls the C++ nodes take."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_torch_autograd",
    "jitops' ops under autograd as C++ autograd nodes (see python/torch_autograd/nodes.h).", -1, methods,
};

}  // namespace

PyMODINIT_FUNC PyInit__torch_autograd() {
  // THPVariableClass and the dispatcher are set up by torch's own import.
  PyObject* torch = PyImport_ImportModule("torch");
  if (!torch) return nullptr;
  Py_DECREF(torch);
  try {
    jitops_autograd::core();
  } catch (python_error& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ImportError, "jitops._torch_autograd: jitops._core not usable");
    return nullptr;
  }
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  PyObject* hook = PyCapsule_New(reinterpret_cast<void*>(&jitops_autograd::run_with_autograd),
                                 "jitops._torch_autograd.hook", nullptr);
  if (!hook || PyModule_AddObject(m, "hook", hook) < 0) {
    Py_XDECREF(hook);
    Py_DECREF(m);
    return nullptr;
  }
  PyObject* native = PyCapsule_New(const_cast<jitops::TorchNativeApi*>(jitops_autograd::native_api()),
                                   "jitops._torch_autograd.native", nullptr);
  if (!native || PyModule_AddObject(m, "native", native) < 0) {
    Py_XDECREF(native);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
