#include "python/torch_autograd/nodes.h"

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <mutex>
#include <string_view>
#include <vector>

#include "python/torch_autograd/calls.h"
#include "python/torch_autograd/node_support.h"

namespace jitops_autograd {
namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;
using torch::autograd::compute_requires_grad;

enum BinaryOp : int64_t { kAdd, kSub, kMul, kDiv };
const char* const kOps[] = {"index_select", "gather", "upsample_nearest2d", "upsample_nearest2d_backward",
                            "add", "sub", "mul", "div", "index_add_", "scatter_add_", "index_copy_",
                            "index_fill_", "take", "scatter_reduce_"};

PyObject* not_taken() { return new_ref(Py_NotImplemented); }

// Runs the op with grad mode off (so that jitops._core, re-entered, takes its plain path) and returns the
// Python object it made, its tensor now the output of `node`.
PyObject* run_forward(const std::shared_ptr<Node>& node, PyObject* fn, std::initializer_list<PyObject*> args) {
  PyRef result;
  {
    at::AutoGradMode no_grad(false);
    result = call_op_object(fn, args);
  }
  attach(node, tensor(result.get()));
  return result.release();
}

// The same, with the output `out` that _core's native entry made where it took the call (forward_selected,
// ...): then no Python call.
PyObject* run_forward_native(const std::shared_ptr<Node>& node, const at::Tensor& out, PyObject* fn,
                             std::initializer_list<PyObject*> args) {
  if (!out.defined()) return run_forward(node, fn, args);
  attach(node, out);
  return wrap(out).release();
}

// The nodes are built as PyTorch's generated ones are (a Node subclass, its saved tensors as SavedVariables,
// the graph wired by set_history), not as torch::autograd::Function's CppNode, whose generic bookkeeping
// cost a few microseconds a forward-plus-backward call (NOTES 57). Each backward runs with the grad mode the
// engine set: under create_graph the ops it calls are recorded again, so double backward works.

// A node that keeps an index for its backward (freed with the graph, as PyTorch's saved tensors are).
struct IndexNode : Node {
  SavedVariable index_;
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    index_.reset_data();
  }
};

// Whether a node takes an in-place write into `self` (of `source`'s values, where defined): 1 yes; 0 no (the
// Python path: views, which it rebases as PyTorch does, no gradient needed, forward-mode tangents); -1 for
// PyTorch's refusal of a write into a leaf that requires grad, raised before anything is written.
int in_place_taken(const at::Tensor& self, const at::Tensor& source) {
  if (self.is_view() || has_tangent(self) || (source.defined() && has_tangent(source))) return 0;
  if (!(source.defined() ? compute_requires_grad(self, source) : compute_requires_grad(self))) return 0;
  if (!(self.requires_grad() && self.is_leaf())) return 1;
  PyErr_SetString(PyExc_RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation.");
  return -1;
}

// ---------------------------------------------------------------------------- index_select, gather

struct IndexSelectBackward : IndexNode {
  bool gather = false;
  int64_t dim = 0;
  std::vector<int64_t> shape;

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list out(1);
    if (grads[0].defined() && task_should_compute_output(0))
      out[0] = added_into_zeros(gather, shape, dim, index_.unpack(), grads[0]);
    return out;
  }
  std::string name() const override { return gather ? "jitops::GatherBackward" : "jitops::IndexSelectBackward"; }
};

PyObject* index_select(PyObject* const* p, bool gather) {
  // x dim index out stream _explain
  int64_t dim = 0;
  if (!plain(p[0]) || !plain(p[2]) || !exact_int(p[1], dim) || !all_absent(p, 3, 6)) return not_taken();
  const at::Tensor& x = tensor(p[0]);
  if (!compute_requires_grad(x) || has_tangent(x)) return not_taken();
  auto node = new_node<IndexSelectBackward>(x);
  node->gather = gather;
  node->dim = wrapped_dim(dim, x.dim());
  node->shape = x.sizes().vec();
  node->index_ = SavedVariable(tensor(p[2]), false);
  return run_forward_native(node, forward_selected(gather, x, dim, tensor(p[2])),
                            gather ? core().gather : core().index_select, {p[0], p[1], p[2]});
}

// ---------------------------------------------------------------------------- take

// numpy.take's gradient: zeros of x's shape with the output's gradient added at the indices (negative ones
// counted from the end), along `axis` or into the flattened x.
struct TakeBackward : IndexNode {
  bool flat = true;  // axis=None
  int64_t axis = 0;
  std::vector<int64_t> shape;

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list out(1);
    if (!grads[0].defined() || !task_should_compute_output(0)) return out;
    out[0] = take_gradient(shape, flat ? std::nullopt : std::optional<int64_t>(axis), index_.unpack(), grads[0]);
    return out;
  }
  std::string name() const override { return "jitops::TakeBackward"; }
};

PyObject* take(PyObject* const* p) {
  // x indices axis out stream _explain
  int64_t axis = 0;
  const bool flat = absent(p[2]);
  if (!plain(p[0]) || !plain(p[1]) || (!flat && !exact_int(p[2], axis)) || !all_absent(p, 3, 6)) return not_taken();
  const at::Tensor& x = tensor(p[0]);
  if (!compute_requires_grad(x) || has_tangent(x)) return not_taken();
  if (!flat && (x.dim() == 0 || axis < -x.dim() || axis >= x.dim())) return not_taken();  // the op's error
  auto node = new_node<TakeBackward>(x);
  node->flat = flat;
  node->axis = flat ? 0 : wrapped_dim(axis, x.dim());
  node->shape = x.sizes().vec();
  node->index_ = SavedVariable(tensor(p[1]), false);
  const at::Tensor out = forward_taken(x, tensor(p[1]), flat ? std::nullopt : std::optional<int64_t>(axis));
  return run_forward_native(node, out, core().take, {p[0], p[1], or_none(p[2])});
}

// ---------------------------------------------------------------------------- upsample_nearest2d and its backward

// Upsample's gradient is its backward (to the input's size), and the backward's gradient is the forward (to
// the output's rows and columns, or by the same scale): one mapping of rows and columns either way.
struct UpsampleNode : Node {
  bool of_backward = false;   // the node of upsample_nearest2d_backward
  std::vector<int64_t> size;  // the input's shape; of the backward, the output's (h, w)
  std::vector<double> scale;

  variable_list apply(variable_list&& grads) override {
    variable_list out(1);
    if (!grads[0].defined() || !task_should_compute_output(0)) return out;
    out[0] = upsampled(!of_backward, grads[0], size, scale);
    return out;
  }
  std::string name() const override {
    return of_backward ? "jitops::UpsampleNearest2DBackwardBackward" : "jitops::UpsampleNearest2DBackward";
  }
};

PyObject* upsample(PyObject* const* p, bool backward) {
  // upsample_nearest2d: x output_size scale_factor out stream _explain;
  // upsample_nearest2d_backward: grad_output input_size scale_factor out stream _explain.
  std::vector<double> scale;
  if (!plain(p[0]) || !scale_value(p[2], scale) || !all_absent(p, 3, 6)) return not_taken();
  const at::Tensor& x = tensor(p[0]);
  if (!compute_requires_grad(x) || has_tangent(x)) return not_taken();
  auto node = new_node<UpsampleNode>(x);
  node->of_backward = backward;
  node->size = backward ? x.sizes().slice(2).vec() : x.sizes().vec();
  node->scale = std::move(scale);
  if (!backward) {
    at::Tensor out = absent(p[1]) ? forward_upsampled(x, node->scale) : at::Tensor();
    return run_forward_native(node, out, core().upsample_nearest2d, {p[0], or_none(p[1]), or_none(p[2])});
  }
  return run_forward(node, core().upsample_nearest2d_backward, {p[0], p[1], or_none(p[2])});
}

// ---------------------------------------------------------------------------- elementwise

PyObject* binary_fn(int64_t op) {
  const CoreOps& c = core();
  return op == kAdd ? c.add : op == kSub ? c.sub : op == kMul ? c.mul : c.div;
}

const char* binary_node_name(int64_t op) {
  return op == kAdd ? "jitops::AddBackward" : op == kSub ? "jitops::SubBackward" : op == kMul ? "jitops::MulBackward"
                                                                                              : "jitops::DivBackward";
}

struct BinaryBackward : Node {
  int64_t op = kAdd;
  std::vector<int64_t> x_shape, y_shape;
  at::ScalarType x_dtype = at::kFloat, y_dtype = at::kFloat;
  SavedVariable x_, y_;  // mul and div

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list out(2);
    const at::Tensor& g = grads[0];
    const bool want_x = task_should_compute_output(0), want_y = task_should_compute_output(1);
    if (!g.defined() || !(want_x || want_y)) return out;
    at::Tensor gx, gy;
    if (op == kAdd || op == kSub) {
      gx = g;
      if (want_y) gy = op == kAdd ? g : jit_neg(g);
    } else {
      const at::Tensor x = x_.unpack(), y = y_.unpack();
      // Both gradients from one launch where it applies: the upstream gradient read once (NOTES 93).
      if (!(want_x && want_y && jit_binary_gradients(op == kDiv, g, x, y, gx, gy))) {
        if (op == kMul) {
          if (want_x) gx = jit_mul(g, y);
          if (want_y) gy = jit_mul(g, x);
        } else {
          if (want_x) gx = jit_div(g, y);
          if (want_y) gy = jit_neg(jit_div(jit_mul(g, x), jit_mul(y, y)));
        }
      }
    }
    if (want_x && gx.defined()) out[0] = to_input(gx, x_shape, x_dtype);
    if (want_y && gy.defined()) out[1] = to_input(gy, y_shape, y_dtype);
    return out;
  }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    x_.reset_data();
    y_.reset_data();
  }
  std::string name() const override { return binary_node_name(op); }
};

// A tensor and a Python number (`number_first`: the number is the left operand).
struct BinaryNumberBackward : Node {
  int64_t op = kAdd;
  bool number_first = false;
  at::IValue number;
  std::vector<int64_t> x_shape;
  at::ScalarType x_dtype = at::kFloat;
  SavedVariable x_;  // number / x

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list out(1);
    const at::Tensor& g = grads[0];
    if (!g.defined() || !task_should_compute_output(0)) return out;
    at::Tensor gx;
    if (op == kAdd || (op == kSub && !number_first)) {
      gx = g;
    } else {
      const at::Tensor x = op == kDiv && number_first ? x_.unpack() : at::Tensor();
      if (op == kSub) {
        gx = jit_neg(g);
      } else if (op == kMul) {
        gx = jit_mul(g, number);
      } else if (!number_first) {
        gx = jit_div(g, number);
      } else {  // number / x
        gx = jit_neg(jit_div(jit_mul(g, number), jit_mul(x, x)));
      }
    }
    out[0] = to_input(gx, x_shape, x_dtype);
    return out;
  }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    x_.reset_data();
  }
  std::string name() const override { return binary_node_name(op); }
};

// The forward of `node` through _core's native entry where it takes the call (forward_binary), else the
// Python op on the call's own arguments. (A sum's forward through Python cost it 5-10 us a forward-plus-
// backward call against PyTorch's, NOTES 93.)
PyObject* run_forward_binary(const std::shared_ptr<Node>& node, int64_t op, PyObject* const* p, const at::Tensor& a,
                             const at::Tensor& b, const at::IValue& number) {
  const int native_op = op == kMul ? jitops::kCoreNativeMul : op == kDiv ? jitops::kCoreNativeDiv
                      : op == kAdd ? jitops::kCoreNativeAdd : jitops::kCoreNativeSub;
  const at::Tensor out = forward_binary(native_op, a, b, number);
  return run_forward_native(node, out, binary_fn(op), {p[0], p[1]});
}

PyObject* binary(int64_t op, PyObject* const* p) {
  // x y out stream _explain _promotion
  if (!all_absent(p, 2, 6)) return not_taken();
  if (plain(p[0]) && plain(p[1])) {
    const at::Tensor &x = tensor(p[0]), &y = tensor(p[1]);
    if (!compute_requires_grad(x, y) || has_tangent(x) || has_tangent(y)) return not_taken();
    auto node = new_node<BinaryBackward>(x, y);
    node->op = op;
    node->x_shape = x.sizes().vec();
    node->y_shape = y.sizes().vec();
    node->x_dtype = x.scalar_type();
    node->y_dtype = y.scalar_type();
    if (op == kMul || op == kDiv) {
      node->x_ = SavedVariable(x, false);
      node->y_ = SavedVariable(y, false);
    }
    return run_forward_binary(node, op, p, x, y, {});
  }
  at::IValue number;
  const bool number_first = plain(p[1]) && number_value(p[0], number);
  if (!number_first && !(plain(p[0]) && number_value(p[1], number))) return not_taken();
  const at::Tensor& x = tensor(number_first ? p[1] : p[0]);
  if (!compute_requires_grad(x) || has_tangent(x)) return not_taken();
  auto node = new_node<BinaryNumberBackward>(x);
  node->op = op;
  node->number_first = number_first;
  node->number = number;
  node->x_shape = x.sizes().vec();
  node->x_dtype = x.scalar_type();
  if (op == kDiv && number_first) {  // number / x: no native entry
    node->x_ = SavedVariable(x, false);
    return run_forward(node, binary_fn(op), {p[0], p[1]});
  }
  if (op == kSub && number_first) return run_forward(node, binary_fn(op), {p[0], p[1]});  // number - x: likewise
  return run_forward_binary(node, op, p, x, at::Tensor(), number);  // number * x as x * number, number + x ...
}

// ---------------------------------------------------------------------------- index_add_, scatter_add_ (in place)

bool is_one(const at::IValue& alpha) {
  return alpha.isInt() ? alpha.toInt() == 1 : alpha.isBool() ? alpha.toBool() : alpha.toDouble() == 1.0;
}

struct AddInPlaceBackward : IndexNode {
  bool scatter = false;
  int64_t dim = 0;
  std::vector<int64_t> source_shape;
  at::IValue alpha;

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list out(2);
    const at::Tensor& g = grads[0];
    if (!g.defined()) return out;
    if (task_should_compute_output(0)) out[0] = g;
    if (!task_should_compute_output(1)) return out;
    at::Tensor g_source = selected(scatter, g, dim, index_.unpack());
    if (!scatter && !is_one(alpha)) g_source = jit_mul(g_source, alpha);
    out[1] = scatter ? padded_to(g_source, source_shape) : g_source.reshape(source_shape);
    return out;
  }
  std::string name() const override { return scatter ? "jitops::ScatterAddBackward" : "jitops::IndexAddBackward"; }
};

PyObject* add_in_place(bool scatter, PyObject* const* p) {
  // index_add_: self dim index source alpha deterministic stream _explain; scatter_add_: self dim index src
  // deterministic stream _explain.
  int64_t dim = 0;
  if (!plain(p[0]) || !plain(p[2]) || !plain(p[3]) || !exact_int(p[1], dim)) return not_taken();
  if (!all_absent(p, scatter ? 5 : 6, scatter ? 7 : 8)) return not_taken();
  at::IValue alpha(int64_t(1));
  if (!scatter && p[4] && !number_value(p[4], alpha)) return not_taken();
  const at::Tensor &self = tensor(p[0]), &source = tensor(p[3]);
  if (const int taken = in_place_taken(self, source); taken <= 0) return taken < 0 ? nullptr : not_taken();
  auto node = new_node<AddInPlaceBackward>(self, source);
  node->scatter = scatter;
  node->dim = wrapped_dim(dim, self.dim());
  node->source_shape = source.sizes().vec();
  node->alpha = alpha;
  node->index_ = SavedVariable(tensor(p[2]), false);
  // The op's own parameters as given: self, dim, index, source, [alpha], [deterministic=]. It bumps self's version.
  PyObject* args[6] = {p[0], p[1], p[2], p[3]};
  size_t n = 4;
  PyObject* det = scatter ? p[4] : p[5];
  if (!scatter && p[4]) args[n++] = p[4];
  if (det) args[n++] = det;
  if (!(is_one(alpha) && absent(det) && forward_added(scatter, self, node->dim, tensor(p[2]), source))) {
    at::AutoGradMode no_grad(false);
    call_op_object(scatter ? core().scatter_add_ : core().index_add_, args, n, det ? core().kw_deterministic : nullptr);
  }
  rebase(node, self);
  return new_ref(p[0]);
}

// ---------------------------------------------------------------------------- index_copy_, index_fill_ (in place)

// PyTorch's formulas: self's gradient is the output's with the written entries zeroed; index_copy_'s source
// gets the output's gradient at the index (index_select).
struct IndexWriteBackward : IndexNode {
  bool copy = false;  // index_copy_ (edges self, source); index_fill_ (edge self)
  int64_t dim = 0;
  std::vector<int64_t> source_shape;

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list out(copy ? 2 : 1);
    const at::Tensor& g = grads[0];
    if (!g.defined()) return out;
    const at::Tensor index = index_.unpack();
    if (task_should_compute_output(0)) out[0] = zeroed_at(g, dim, index);
    if (copy && task_should_compute_output(1)) out[1] = selected(false, g, dim, index).reshape(source_shape);
    return out;
  }
  std::string name() const override { return copy ? "jitops::IndexCopyBackward" : "jitops::IndexFillBackward"; }
};

PyObject* index_written(bool copy, PyObject* const* p) {
  // index_copy_: self dim index source stream _explain; index_fill_: self dim index value stream _explain.
  int64_t dim = 0;
  at::IValue value;
  if (!plain(p[0]) || !plain(p[2]) || !exact_int(p[1], dim) || !all_absent(p, 4, 6)) return not_taken();
  if (copy ? !plain(p[3]) : !number_value(p[3], value)) return not_taken();  // a tensor value: the Python path
  const at::Tensor& self = tensor(p[0]);
  const at::Tensor source = copy ? tensor(p[3]) : at::Tensor();
  if (const int taken = in_place_taken(self, source); taken <= 0) return taken < 0 ? nullptr : not_taken();
  auto node = copy ? new_node<IndexWriteBackward>(self, source) : new_node<IndexWriteBackward>(self);
  node->copy = copy;
  node->dim = wrapped_dim(dim, self.dim());
  if (copy) node->source_shape = source.sizes().vec();
  node->index_ = SavedVariable(tensor(p[2]), false);
  if (!forward_index_written(self, node->dim, tensor(p[2]), source, value)) {
    at::AutoGradMode no_grad(false);
    call_op_object(copy ? core().index_copy_ : core().index_fill_, {p[0], p[1], p[2], p[3]});
  }
  rebase(node, self);
  return new_ref(p[0]);
}

// ---------------------------------------------------------------------------- scatter_reduce_ (in place)

enum Reduction : int { kSum, kMean, kAmax, kAmin };

// PyTorch's scatter_reduce_backward (FunctionsManual.cpp) for sum, mean, amax and amin (prod keeps the Python
// path): the gathers and adds at the index through jitops, the masks and quotients as PyTorch makes them.
struct ScatterReduceBackward : Node {
  int reduction = kSum;
  bool include_self = true;
  int64_t dim = 0;
  std::vector<int64_t> src_shape;
  SavedVariable index_, src_, old_self_, result_;  // src, self before the op and after: amax and amin

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    variable_list out(2);
    const at::Tensor& g = grads[0];
    if (!g.defined()) return out;
    const at::Tensor index = index_.unpack();
    const bool want_self = task_should_compute_output(0), want_src = task_should_compute_output(1);
    at::Tensor grad_self, grad_src;  // only those asked for (a GNN's zeros self needs none)
    if (reduction == kSum) {
      grad_self = g;
      if (want_src) grad_src = selected(true, g, dim, index);
    } else if (reduction == kMean) {
      at::Tensor n = include_self ? at::ones_like(g) : at::zeros_like(g);
      n = added_into(n, true, dim, index, at::ones(index.sizes(), g.options()));
      n.masked_fill_(n == 0, 1);
      grad_self = jit_div(g, n);
      if (want_src) grad_src = selected(true, grad_self, dim, index);
    } else {  // amax, amin: shared equally between the values that reached the result
      const at::Tensor result = result_.unpack(shared_from_this()), old_self = old_self_.unpack();
      at::Tensor src_window = src_.unpack();
      for (int64_t d = 0; d < index.dim(); ++d) src_window = src_window.narrow(d, 0, index.size(d));
      const at::Tensor value = selected(true, result, dim, index);
      const at::Tensor self_is_result = (old_self == result).to(g.scalar_type());
      const at::Tensor src_is_result = (src_window == value).to(g.scalar_type());
      const at::Tensor n = added_into(self_is_result.clone(), true, dim, index, src_is_result);
      const at::Tensor distributed = jit_div(g, n);
      if (want_self) grad_self = jit_mul(self_is_result, distributed);
      if (want_src) grad_src = jit_mul(src_is_result, selected(true, distributed, dim, index));
    }
    if (want_self) out[0] = include_self ? grad_self : grad_self.scatter(dim, index, 0);
    if (want_src) out[1] = padded_to(grad_src, src_shape);
    return out;
  }
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    index_.reset_data();
    src_.reset_data();
    old_self_.reset_data();
    result_.reset_data();
  }
  std::string name() const override { return "jitops::ScatterReduceBackward"; }
};

bool reduction_named(PyObject* p, int& out) {
  if (!p || !PyUnicode_Check(p)) return false;
  const char* s = PyUnicode_AsUTF8(p);
  if (!s) {
    PyErr_Clear();
    return false;
  }
  const std::string_view name(s);
  out = name == "sum" ? kSum : name == "mean" ? kMean : name == "amax" ? kAmax : name == "amin" ? kAmin : -1;
  return out >= 0;
}

PyObject* scatter_reduce(PyObject* const* p) {
  // self dim index src reduce include_self deterministic stream _explain
  int64_t dim = 0;
  int reduction = kSum;
  if (!plain(p[0]) || !plain(p[2]) || !plain(p[3]) || !exact_int(p[1], dim) || !reduction_named(p[4], reduction))
    return not_taken();  // prod, and a name the op rejects: the Python path
  if (!(absent(p[5]) || PyBool_Check(p[5])) || !all_absent(p, 7, 9)) return not_taken();
  const at::Tensor &self = tensor(p[0]), &src = tensor(p[3]);
  if (const int taken = in_place_taken(self, src); taken <= 0) return taken < 0 ? nullptr : not_taken();
  auto node = new_node<ScatterReduceBackward>(self, src);
  node->reduction = reduction;
  node->include_self = absent(p[5]) || p[5] == Py_True;
  node->dim = wrapped_dim(dim, self.dim());
  node->src_shape = src.sizes().vec();
  node->index_ = SavedVariable(tensor(p[2]), false);
  const bool extremum = reduction == kAmax || reduction == kAmin;
  if (extremum) {
    node->src_ = SavedVariable(src, false);
    node->old_self_ = SavedVariable(self.clone(), false);  // as PyTorch's in-place formulas keep self's values
  }
  // The op's own parameters as given: self, dim, index, src, reduce, [include_self], [deterministic=].
  PyObject* args[7] = {p[0], p[1], p[2], p[3], p[4], absent(p[5]) ? Py_True : p[5]};
  size_t count = 6;
  if (p[6]) args[count++] = p[6];
  {
    at::AutoGradMode no_grad(false);
    call_op_object(core().scatter_reduce_, args, count, p[6] ? core().kw_deterministic : nullptr);
  }
  rebase(node, self);
  if (extremum) node->result_ = SavedVariable(self, true);
  return new_ref(p[0]);
}

// ---------------------------------------------------------------------------- which calls the nodes take

PyObject* python_module(const char* name) {
  PyObject* m = PyImport_ImportModule(name);
  if (!m) throw_python_error();
  return m;  // kept for the life of the process
}

// Tracing (torch.compile, torch.export) and functorch transforms keep the Python path, as
// gradients.functional does. Both are asked as torch.compiler.is_compiling() and
// torch._C._are_functorch_transforms_active() answer (the functorch thread-local state outlives its
// transforms, so its existence is not the question), without a Python call.
bool eager_autograd() {
  static PyObject* compiler = python_module("torch.compiler");
  static PyObject* flag = PyUnicode_InternFromString("_is_compiling_flag");
  PyRef compiling(PyObject_GetAttr(compiler, flag));
  if (!compiling.get()) throw_python_error();
  if (compiling.get() == Py_True) return false;
  const c10::DispatchKeySet included = c10::impl::tls_local_dispatch_key_set().included_;
  return !included.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) &&
         !included.has(c10::DispatchKey::FuncTorchDynamicLayerBackMode);
}

}  // namespace

PyObject* run_with_autograd(const char* op, PyObject* const* p, int count) {
  (void)count;  // every op's signature has the parameters read here
  HANDLE_TH_ERRORS
  if (!eager_autograd()) return not_taken();
  const std::string_view name(op);
  if (name == "index_select" || name == "gather") return index_select(p, name == "gather");
  if (name == "upsample_nearest2d" || name == "upsample_nearest2d_backward")
    return upsample(p, name == "upsample_nearest2d_backward");
  if (name == "add") return binary(kAdd, p);
  if (name == "sub") return binary(kSub, p);
  if (name == "mul") return binary(kMul, p);
  if (name == "div") return binary(kDiv, p);
  if (name == "index_add_") return add_in_place(false, p);
  if (name == "scatter_add_") return add_in_place(true, p);
  if (name == "index_copy_" || name == "index_fill_") return index_written(name == "index_copy_", p);
  if (name == "take") return take(p);
  if (name == "scatter_reduce_") return scatter_reduce(p);
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
