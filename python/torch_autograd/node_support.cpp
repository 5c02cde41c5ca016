#include "python/torch_autograd/node_support.h"

#include <ATen/ExpandUtils.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/pybind.h>

namespace jitops_autograd {

bool all_absent(PyObject* const* p, int from, int to) {
  for (int i = from; i < to; ++i)
    if (!absent(p[i])) return false;
  return true;
}

bool exact_int(PyObject* p, int64_t& out) {
  if (p == nullptr || !PyLong_CheckExact(p)) return false;
  out = PyLong_AsLongLong(p);
  if (out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

bool number_value(PyObject* p, at::IValue& out) {
  if (p == nullptr) return false;
  if (PyBool_Check(p)) {
    out = at::IValue(p == Py_True);
  } else if (PyLong_CheckExact(p)) {
    int64_t v = 0;
    if (!exact_int(p, v)) return false;
    out = at::IValue(v);
  } else if (PyFloat_CheckExact(p)) {
    out = at::IValue(PyFloat_AS_DOUBLE(p));
  } else {
    return false;
  }
  return true;
}

PyRef py_number(const at::IValue& v) {
  PyObject* p = v.isBool() ? PyBool_FromLong(v.toBool()) : v.isInt() ? PyLong_FromLongLong(v.toInt())
                                                                      : PyFloat_FromDouble(v.toDouble());
  if (!p) throw_python_error();
  return PyRef(p);
}

bool scale_value(PyObject* p, std::vector<double>& out) {
  auto one = [](PyObject* v, double& d) {
    if (PyBool_Check(v) || !(PyLong_CheckExact(v) || PyFloat_CheckExact(v))) return false;
    d = PyFloat_AsDouble(v);
    return !(d == -1.0 && PyErr_Occurred());
  };
  out.clear();
  if (absent(p)) return true;
  double a = 0, b = 0;
  if (PyTuple_Check(p) || PyList_Check(p)) {
    if (PySequence_Fast_GET_SIZE(p) != 2) return false;
    PyObject** items = PySequence_Fast_ITEMS(p);
    if (!one(items[0], a) || !one(items[1], b)) return false;
  } else {
    if (!one(p, a)) return false;
    b = a;
  }
  out = {a, b};
  return true;
}

PyRef py_scale(const std::vector<double>& scale) {
  if (scale.empty()) return PyRef(new_ref(Py_None));
  PyRef t(Py_BuildValue("(dd)", scale[0], scale[1]));
  if (!t.get()) throw_python_error();
  return t;
}

void attach(const std::shared_ptr<torch::autograd::Node>& node, const at::Tensor& out) {
  if (torch::autograd::isDifferentiableType(out.scalar_type())) torch::autograd::set_history(out, node);
}

void rebase(const std::shared_ptr<torch::autograd::Node>& node, const at::Tensor& self) {
  const uint32_t output_nr = node->add_input_metadata(self);
  torch::autograd::impl::rebase_history(self, {node, output_nr});
}

bool deterministic() { return at::globalContext().deterministicAlgorithms(); }

at::Tensor to_input(at::Tensor g, at::IntArrayRef shape, at::ScalarType dtype) {
  if (g.sizes() != shape) g = at::sum_to(g, shape);
  return g.scalar_type() == dtype ? g : g.to(dtype);
}

at::Tensor added_into_zeros(bool scatter, at::IntArrayRef shape, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src) {
  at::Tensor zeros = at::zeros(shape, src.options());
  pybind11::gil_scoped_acquire gil;
  PyRef z = wrap(zeros), d = py_int(dim), i = wrap(index), s = wrap(src);
  PyObject* det = deterministic() ? Py_True : Py_False;
  if (scatter) return call_op(core().scatter_add_, {z.get(), d.get(), i.get(), s.get(), det}, core().kw_deterministic);
  PyRef one = py_int(1);
  return call_op(core().index_add_, {z.get(), d.get(), i.get(), s.get(), one.get(), det}, core().kw_deterministic);
}

at::Tensor padded_to(const at::Tensor& t, at::IntArrayRef shape) {
  if (t.sizes() == shape) return t;
  at::Tensor out = at::zeros(shape, t.options());
  at::Tensor window = out;
  for (int64_t d = 0; d < t.dim(); ++d) window = window.narrow(d, 0, t.size(d));
  window.copy_(t);
  return out;
}

at::Tensor jit_mul(const at::Tensor& a, PyObject* b) {
  PyRef pa = wrap(a);
  return call_op(core().mul, {pa.get(), b});
}
at::Tensor jit_mul(const at::Tensor& a, const at::Tensor& b) { return jit_mul(a, wrap(b).get()); }
at::Tensor jit_div(const at::Tensor& a, PyObject* b) {
  PyRef pa = wrap(a);
  return call_op(core().div, {pa.get(), b});
}
at::Tensor jit_div(const at::Tensor& a, const at::Tensor& b) { return jit_div(a, wrap(b).get()); }
at::Tensor jit_neg(const at::Tensor& a) { return jit_mul(a, py_int(-1).get()); }

}  // namespace jitops_autograd
