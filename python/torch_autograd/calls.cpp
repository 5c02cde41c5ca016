#include "python/torch_autograd/calls.h"

#include <torch/csrc/Exceptions.h>


namespace jitops_autograd {

const CoreOps& core() {
  // Built by the module's init (jitops._core is imported by then), under the GIL.
  static CoreOps ops = [] {
    CoreOps o{};
    PyObject* m = PyImport_ImportModule("jitops._core");
    if (!m) throw_python_error();
    auto get = [m](const char* name) {
      PyObject* f = PyObject_GetAttrString(m, name);
      if (!f) throw_python_error();
      return f;  // kept for the life of the process
    };
    o.index_select = get("index_select");
    o.gather = get("gather");
    o.index_add_ = get("index_add_");
    o.scatter_add_ = get("scatter_add_");
    o.upsample_nearest2d = get("upsample_nearest2d");
    o.upsample_nearest2d_backward = get("upsample_nearest2d_backward");
    o.add = get("add");
    o.sub = get("sub");
    o.mul = get("mul");
    o.div = get("div");
    o.kw_deterministic = Py_BuildValue("(s)", "deterministic");
    Py_DECREF(m);
    return o;
  }();
  return ops;
}

void throw_python_error() {
  python_error err;
  err.persist();
  throw err;
}

at::Tensor call_op(PyObject* fn, std::initializer_list<PyObject*> args, PyObject* kwnames) {
  // An initializer_list's elements are contiguous: no copy for the vectorcall.
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  PyRef result(PyObject_Vectorcall(fn, const_cast<PyObject**>(args.begin()), args.size() - size_t(keywords), kwnames));
  if (!result.get()) throw_python_error();
  if (!THPVariable_Check(result.get())) {
    PyErr_Format(PyExc_TypeError, "jitops: an op in a backward pass returned %s, not a tensor",
                 Py_TYPE(result.get())->tp_name);
    throw_python_error();
  }
  return THPVariable_Unpack(result.get());
}

PyRef wrap(const at::Tensor& t) {
  PyRef r(THPVariable_Wrap(t));
  if (!r.get()) throw_python_error();
  return r;
}

PyRef py_int(int64_t v) {
  PyRef r(PyLong_FromLongLong(v));
  if (!r.get()) throw_python_error();
  return r;
}

PyRef py_ints(at::IntArrayRef v) {
  PyRef t(PyTuple_New(Py_ssize_t(v.size())));
  if (!t.get()) throw_python_error();
  for (size_t i = 0; i < v.size(); ++i) {
    PyObject* item = PyLong_FromLongLong(v[i]);
    if (!item) throw_python_error();
    PyTuple_SET_ITEM(t.get(), Py_ssize_t(i), item);
  }
  return t;
}

}  // namespace jitops_autograd
