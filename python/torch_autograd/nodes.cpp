#include "python/torch_autograd/nodes.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/custom_function.h>

#include <string_view>
#include <vector>

#include "python/torch_autograd/calls.h"

namespace jitops_autograd {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Function;
using torch::autograd::variable_list;

enum BinaryOp : int64_t { kAdd, kSub, kMul, kDiv };
const char* const kOps[] = {"index_select", "gather", "upsample_nearest2d", "upsample_nearest2d_backward",
                            "add", "sub", "mul", "div", "index_add_", "scatter_add_"};

bool absent(PyObject* p) { return p == nullptr || p == Py_None; }
bool plain(PyObject* p) { return p != nullptr && THPVariable_CheckExact(p); }
const at::Tensor& tensor(PyObject* p) { return THPVariable_Unpack(p); }
PyObject* or_none(PyObject* p) { return p ? p : Py_None; }
PyObject* new_ref(PyObject* p) {
  Py_INCREF(p);
  return p;
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

// A Python number kept for the backward pass (int, float or bool as given).
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

// scale_factor= as upsample's backward takes it: empty for None, else (h, w).
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

int64_t wrapped_dim(int64_t dim, int64_t ndim) { return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim; }

bool deterministic() { return at::globalContext().deterministicAlgorithms(); }

// A gradient summed over the dims its input was broadcast along, in the input's dtype (PyTorch's sum_to).
at::Tensor to_input(at::Tensor g, at::IntArrayRef shape, at::ScalarType dtype) {
  if (g.sizes() != shape) g = at::sum_to(g, shape);
  return g.scalar_type() == dtype ? g : g.to(dtype);
}

// zeros(shape) with `src` added at `index` along `dim`: index_add_ (alpha 1) or scatter_add_.
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

// ---------------------------------------------------------------------------- index_select, gather

struct IndexSelect : Function<IndexSelect> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& index,
                            PyObject* const* p, bool is_gather) {
    at::Tensor out = call_op(is_gather ? core().gather : core().index_select, {p[0], p[1], p[2]});
    int64_t dim = 0;
    exact_int(p[1], dim);
    ctx->saved_data["dim"] = wrapped_dim(dim, x.dim());
    ctx->saved_data["shape"] = x.sizes().vec();
    ctx->saved_data["gather"] = is_gather;
    ctx->save_for_backward({index});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor index = ctx->get_saved_variables()[0];
    const std::vector<int64_t> shape = ctx->saved_data["shape"].toIntVector();
    at::Tensor gx = added_into_zeros(ctx->saved_data["gather"].toBool(), shape, ctx->saved_data["dim"].toInt(),
                                     index, grads[0]);
    return {gx, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// ---------------------------------------------------------------------------- upsample_nearest2d and its backward

struct Upsample : Function<Upsample> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, PyObject* const* p, std::vector<double> scale) {
    at::Tensor out = call_op(core().upsample_nearest2d, {p[0], or_none(p[1]), or_none(p[2])});
    ctx->saved_data["input_size"] = x.sizes().vec();
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    pybind11::gil_scoped_acquire gil;
    PyRef g = wrap(grads[0]), size = py_ints(ctx->saved_data["input_size"].toIntVector());
    PyRef scale = py_scale(ctx->saved_data["scale"].toDoubleVector());
    return {call_op(core().upsample_nearest2d_backward, {g.get(), size.get(), scale.get()}), at::Tensor(),
            at::Tensor()};
  }
};

// The gradient of upsample's backward is the forward, with the same mapping of rows and columns.
struct UpsampleBackward : Function<UpsampleBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& grad_output, PyObject* const* p,
                            std::vector<double> scale) {
    at::Tensor out = call_op(core().upsample_nearest2d_backward, {p[0], p[1], or_none(p[2])});
    ctx->saved_data["output_hw"] = grad_output.sizes().slice(2).vec();
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    pybind11::gil_scoped_acquire gil;
    const std::vector<double> scale = ctx->saved_data["scale"].toDoubleVector();
    PyRef g = wrap(grads[0]), s = py_scale(scale);
    PyRef size = scale.empty() ? py_ints(ctx->saved_data["output_hw"].toIntVector()) : PyRef(new_ref(Py_None));
    return {call_op(core().upsample_nearest2d, {g.get(), size.get(), s.get()}), at::Tensor(), at::Tensor()};
  }
};

// ---------------------------------------------------------------------------- elementwise

PyObject* binary_fn(int64_t op) {
  const CoreOps& c = core();
  return op == kAdd ? c.add : op == kSub ? c.sub : op == kMul ? c.mul : c.div;
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

struct Binary : Function<Binary> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, PyObject* const* p,
                            int64_t op) {
    at::Tensor out = call_op(binary_fn(op), {p[0], p[1]});
    ctx->saved_data["op"] = op;
    ctx->saved_data["x_shape"] = x.sizes().vec();
    ctx->saved_data["y_shape"] = y.sizes().vec();
    ctx->saved_data["x_dtype"] = int64_t(x.scalar_type());
    ctx->saved_data["y_dtype"] = int64_t(y.scalar_type());
    if (op == kMul || op == kDiv) ctx->save_for_backward({x, y});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const int64_t op = ctx->saved_data["op"].toInt();
    const at::Tensor& g = grads[0];
    at::Tensor gx, gy;
    {
      pybind11::gil_scoped_acquire gil;
      if (op == kAdd || op == kSub) {
        gx = g;
        gy = op == kAdd ? g : jit_neg(g);
      } else {
        const variable_list saved = ctx->get_saved_variables();
        const at::Tensor &x = saved[0], &y = saved[1];
        if (op == kMul) {
          if (ctx->needs_input_grad(0)) gx = jit_mul(g, y);
          if (ctx->needs_input_grad(1)) gy = jit_mul(g, x);
        } else {
          if (ctx->needs_input_grad(0)) gx = jit_div(g, y);
          if (ctx->needs_input_grad(1)) gy = jit_neg(jit_div(jit_mul(g, x), jit_mul(y, y)));
        }
      }
    }
    auto back = [&](const at::Tensor& t, const char* shape, const char* dtype, size_t i) {
      if (!t.defined() || !ctx->needs_input_grad(i)) return at::Tensor();
      return to_input(t, ctx->saved_data[shape].toIntVector(), at::ScalarType(ctx->saved_data[dtype].toInt()));
    };
    return {back(gx, "x_shape", "x_dtype", 0), back(gy, "y_shape", "y_dtype", 1), at::Tensor(), at::Tensor()};
  }
};

// A tensor and a Python number (`number_first`: the number is the left operand).
struct BinaryNumber : Function<BinaryNumber> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, PyObject* const* p, int64_t op,
                            bool number_first, at::IValue number) {
    at::Tensor out = call_op(binary_fn(op), {p[0], p[1]});
    ctx->saved_data["op"] = op;
    ctx->saved_data["number_first"] = number_first;
    ctx->saved_data["number"] = number;
    ctx->saved_data["x_shape"] = x.sizes().vec();
    ctx->saved_data["x_dtype"] = int64_t(x.scalar_type());
    if (op == kDiv && number_first) ctx->save_for_backward({x});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const int64_t op = ctx->saved_data["op"].toInt();
    const bool number_first = ctx->saved_data["number_first"].toBool();
    const at::Tensor& g = grads[0];
    at::Tensor gx;
    {
      pybind11::gil_scoped_acquire gil;
      PyRef number = py_number(ctx->saved_data["number"]);
      if (op == kAdd) {
        gx = g;
      } else if (op == kSub) {
        gx = number_first ? jit_neg(g) : g;
      } else if (op == kMul) {
        gx = jit_mul(g, number.get());
      } else if (!number_first) {
        gx = jit_div(g, number.get());
      } else {  // number / x
        const at::Tensor x = ctx->get_saved_variables()[0];
        gx = jit_neg(jit_div(jit_mul(g, number.get()), jit_mul(x, x)));
      }
    }
    return {to_input(gx, ctx->saved_data["x_shape"].toIntVector(), at::ScalarType(ctx->saved_data["x_dtype"].toInt())),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// ---------------------------------------------------------------------------- index_add_, scatter_add_ (in place)

// `source` as far as `index` reaches, padded with zeros to `shape` (scatter_add_'s src may be larger than its index).
at::Tensor padded_to(const at::Tensor& t, at::IntArrayRef shape) {
  if (t.sizes() == shape) return t;
  at::Tensor out = at::zeros(shape, t.options());
  at::Tensor window = out;
  for (int64_t d = 0; d < t.dim(); ++d) window = window.narrow(d, 0, t.size(d));
  window.copy_(t);
  return out;
}

struct AddInPlace : Function<AddInPlace> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor self, const at::Tensor& source, const at::Tensor& index,
                            PyObject* const* p, bool scatter, at::IValue alpha) {
    // The op's own parameters as given: self, dim, index, source, [alpha], [deterministic=].
    PyObject* args[6] = {p[0], p[1], p[2], p[3]};
    size_t n = 4;
    PyObject* det = scatter ? p[4] : p[5];
    if (!scatter && p[4]) args[n++] = p[4];
    if (det) args[n] = det;
    PyRef result(PyObject_Vectorcall(scatter ? core().scatter_add_ : core().index_add_, args, n,
                                     det ? core().kw_deterministic : nullptr));
    if (!result.get()) throw_python_error();
    int64_t dim = 0;
    exact_int(p[1], dim);
    ctx->saved_data["dim"] = wrapped_dim(dim, self.dim());
    ctx->saved_data["source_shape"] = source.sizes().vec();
    ctx->saved_data["scatter"] = scatter;
    ctx->saved_data["alpha"] = alpha;
    ctx->save_for_backward({index});
    ctx->mark_dirty({self});
    return self;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor& g = grads[0];
    at::Tensor g_source;
    if (ctx->needs_input_grad(1)) {
      const at::Tensor index = ctx->get_saved_variables()[0];
      const bool scatter = ctx->saved_data["scatter"].toBool();
      const std::vector<int64_t> shape = ctx->saved_data["source_shape"].toIntVector();
      pybind11::gil_scoped_acquire gil;
      PyRef pg = wrap(g), d = py_int(ctx->saved_data["dim"].toInt()), i = wrap(index);
      g_source = call_op(scatter ? core().gather : core().index_select, {pg.get(), d.get(), i.get()});
      if (scatter) {
        g_source = padded_to(g_source, shape);
      } else {
        const at::IValue& alpha = ctx->saved_data["alpha"];
        const bool unit = alpha.isInt() ? alpha.toInt() == 1 : alpha.isBool() ? alpha.toBool() : alpha.toDouble() == 1.0;
        if (!unit) g_source = jit_mul(g_source, py_number(alpha).get());
        g_source = g_source.reshape(shape);
      }
    }
    return {ctx->needs_input_grad(0) ? g : at::Tensor(), g_source, at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

// ---------------------------------------------------------------------------- which calls the nodes take

PyObject* not_taken() { return new_ref(Py_NotImplemented); }

PyObject* python_function(const char* module, const char* name) {
  PyObject* m = PyImport_ImportModule(module);
  if (!m) throw_python_error();
  PyObject* f = PyObject_GetAttrString(m, name);
  Py_DECREF(m);
  if (!f) throw_python_error();
  return f;  // kept for the life of the process
}

bool python_true(PyObject* fn) {
  PyRef r(PyObject_CallNoArgs(fn));
  if (!r.get()) throw_python_error();
  return r.get() == Py_True;
}

// Tracing (torch.compile) and functorch transforms keep the Python path, as gradients.functional does. (The
// functorch thread-local state outlives its transforms, so whether one is active is asked of PyTorch.)
bool eager_autograd() {
  static PyObject* is_compiling = python_function("torch.compiler", "is_compiling");
  static PyObject* transforms_active = python_function("torch._C", "_are_functorch_transforms_active");
  return !python_true(is_compiling) && !python_true(transforms_active);
}

bool all_absent(PyObject* const* p, int from, int to) {
  for (int i = from; i < to; ++i)
    if (!absent(p[i])) return false;
  return true;
}

PyObject* returned(const at::Tensor& t) { return wrap(t).release(); }

PyObject* binary(int64_t op, PyObject* const* p) {
  if (!all_absent(p, 2, 6)) return not_taken();  // out=, stream=, _explain=, _promotion=
  if (plain(p[0]) && plain(p[1])) return returned(Binary::apply(tensor(p[0]), tensor(p[1]), p, op));
  at::IValue number;
  if (plain(p[0]) && number_value(p[1], number))
    return returned(BinaryNumber::apply(tensor(p[0]), p, op, false, number));
  if (plain(p[1]) && number_value(p[0], number))
    return returned(BinaryNumber::apply(tensor(p[1]), p, op, true, number));
  return not_taken();
}

PyObject* add_in_place(bool scatter, PyObject* const* p) {
  // index_add_: self dim index source alpha deterministic stream _explain; scatter_add_: self dim index src
  // deterministic stream _explain.
  int64_t dim = 0;
  if (!plain(p[0]) || !plain(p[2]) || !plain(p[3]) || !exact_int(p[1], dim)) return not_taken();
  if (!all_absent(p, scatter ? 5 : 6, scatter ? 7 : 8)) return not_taken();
  at::IValue alpha(int64_t(1));
  if (!scatter && p[4] && !number_value(p[4], alpha)) return not_taken();
  const at::Tensor& self = tensor(p[0]);
  if (self.is_view()) return not_taken();  // views are rebased by the Python path, as PyTorch does
  if (self.requires_grad() && self.is_leaf()) {
    PyErr_SetString(PyExc_RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation.");
    return nullptr;
  }
  return returned(AddInPlace::apply(self, tensor(p[3]), tensor(p[2]), p, scatter, alpha));
}

}  // namespace

PyObject* run_with_autograd(const char* op, PyObject* const* p, int count) {
  (void)count;  // every op's signature has the parameters read here
  HANDLE_TH_ERRORS
  if (!eager_autograd()) return not_taken();
  const std::string_view name(op);
  if (name == "index_select" || name == "gather") {
    int64_t dim = 0;
    if (!plain(p[0]) || !plain(p[2]) || !exact_int(p[1], dim) || !all_absent(p, 3, 6)) return not_taken();
    return returned(IndexSelect::apply(tensor(p[0]), tensor(p[2]), p, name == "gather"));
  }
  if (name == "upsample_nearest2d" || name == "upsample_nearest2d_backward") {
    std::vector<double> scale;
    if (!plain(p[0]) || !scale_value(p[2], scale) || !all_absent(p, 3, 6)) return not_taken();
    if (name == "upsample_nearest2d") return returned(Upsample::apply(tensor(p[0]), p, scale));
    return returned(UpsampleBackward::apply(tensor(p[0]), p, scale));
  }
  if (name == "add") return binary(kAdd, p);
  if (name == "sub") return binary(kSub, p);
  if (name == "mul") return binary(kMul, p);
  if (name == "div") return binary(kDiv, p);
  if (name == "index_add_") return add_in_place(false, p);
  if (name == "scatter_add_") return add_in_place(true, p);
  return not_taken();
  END_HANDLE_TH_ERRORS
}

PyObject* node_ops() {
  const Py_ssize_t n = Py_ssize_t(sizeof(kOps) / sizeof(kOps[0]));
  PyObject* t = PyTuple_New(n);
  if (!t) return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(t, i, PyUnicode_FromString(kOps[i]));
  return t;
}

}  // namespace jitops_autograd
