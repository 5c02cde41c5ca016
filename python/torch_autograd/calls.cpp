#include "python/torch_autograd/calls.h"

#include <ATen/core/grad_mode.h>
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
    o.index_copy_ = get("index_copy_");
    o.index_fill_ = get("index_fill_");
    o.take = get("take");
    o.scatter_reduce_ = get("scatter_reduce_");
    o.upsample_nearest2d = get("upsample_nearest2d");
    o.upsample_nearest2d_backward = get("upsample_nearest2d_backward");
    o.add = get("add");
    o.sub = get("sub");
    o.mul = get("mul");
    o.div = get("div");
    o.kw_deterministic = Py_BuildValue("(s)", "deterministic");
    auto* native = static_cast<const jitops::CoreNativeApi*>(PyCapsule_Import("jitops._core._native_ops", 0));
    if (!native) throw_python_error();
    o.native = native->version == jitops::kCoreNativeVersion ? native : nullptr;
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

namespace {

PyObject* vectorcall(PyObject* fn, PyObject* const* args, size_t count, PyObject* kwnames) {
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  PyObject* result = PyObject_Vectorcall(fn, const_cast<PyObject**>(args), count - size_t(keywords), kwnames);
  if (!result) throw_python_error();
  if (!THPVariable_Check(result)) {
    PyErr_Format(PyExc_TypeError, "jitops: an op called by an autograd node returned %s, not a tensor",
                 Py_TYPE(result)->tp_name);
    Py_DECREF(result);
    throw_python_error();
  }
  return result;
}

// `t` with no Python object tied to it when no graph is being recorded: a new TensorImpl over the same
// storage, sharing the version counter (as detach() makes it).
at::Tensor unowned(const at::Tensor& t) {
  if (at::GradMode::is_enabled() || !t.defined()) return t;
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  return at::Tensor(impl->shallow_copy_and_detach(impl->version_counter(), /*allow_tensor_metadata_change=*/true));
}

}  // namespace

at::Tensor call_op(PyObject* fn, std::initializer_list<PyObject*> args, PyObject* kwnames) {
  PyRef result(vectorcall(fn, args.begin(), args.size(), kwnames));
  return unowned(THPVariable_Unpack(result.get()));
}

PyRef call_op_object(PyObject* fn, PyObject* const* args, size_t count, PyObject* kwnames) {
  return PyRef(vectorcall(fn, args, count, kwnames));
}

PyRef wrap(const at::Tensor& t) {
  PyRef r(THPVariable_Wrap(unowned(t)));
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
