// What the autograd nodes (nodes.cpp) share: reading the op's Python
// parameters, wiring a node into the graph as PyTorch's generated code does,
// and the pieces their backward passes are made of.
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/torch_autograd/calls.h"

namespace jitops_autograd {

// ---------------------------------------------------------------- the op's parameters (borrowed Python objects)

inline bool absent(PyObject* p) { return p == nullptr || p == Py_None; }
// A torch.Tensor itself, not a subclass (FakeTensor, Parameter's subclasses, ...): those keep the Python path.
inline bool plain(PyObject* p) { return p != nullptr && THPVariable_CheckExact(p); }
inline const at::Tensor& tensor(PyObject* p) { return THPVariable_Unpack(p); }
inline PyObject* or_none(PyObject* p) { return p ? p : Py_None; }
inline PyObject* new_ref(PyObject* p) {
  Py_INCREF(p);
  return p;
}
bool all_absent(PyObject* const* p, int from, int to);
bool exact_int(PyObject* p, int64_t& out);
// A Python number kept for the backward pass (int, float or bool as given).
bool number_value(PyObject* p, at::IValue& out);
PyRef py_number(const at::IValue& v);
// scale_factor= as upsample's backward takes it: empty for None, else (h, w).
bool scale_value(PyObject* p, std::vector<double>& out);
PyRef py_scale(const std::vector<double>& scale);
inline int64_t wrapped_dim(int64_t dim, int64_t ndim) { return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim; }

// ---------------------------------------------------------------- the graph, as PyTorch's generated code builds it

// A node whose next edges are `inputs`' gradient edges (collect_next_edges).
template <class NodeType, class... Inputs>
std::shared_ptr<NodeType> new_node(const Inputs&... inputs) {
  std::shared_ptr<NodeType> node(new NodeType(), torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs...));
  return node;
}

// `out` made by `node` (set_history); an output of a dtype autograd does not
// differentiate stays without a gradient, as PyTorch leaves it.
void attach(const std::shared_ptr<torch::autograd::Node>& node, const at::Tensor& out);
// `self`, written in place, now made by `node` (rebase_history; not a view).
void rebase(const std::shared_ptr<torch::autograd::Node>& node, const at::Tensor& self);
// Whether a tensor carries a forward-mode (dual) tangent: those calls keep the Python path.
inline bool has_tangent(const at::Tensor& t) { return t._fw_grad(/*level=*/0).defined(); }

// ---------------------------------------------------------------- backward pieces

bool deterministic();
// A gradient summed over the dims its input was broadcast along, in the input's dtype (PyTorch's sum_to).
at::Tensor to_input(at::Tensor g, at::IntArrayRef shape, at::ScalarType dtype);
// These call _core's native entries (python/bindings/core_native.h: no Python object made, no GIL) when no
// graph is being recorded and the entry takes the call; otherwise the Python ops, under the GIL (taken here).
// zeros(shape) with `src` added at `index` along `dim`: index_add_ (alpha 1) or scatter_add_.
at::Tensor added_into_zeros(bool scatter, at::IntArrayRef shape, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src);
// numpy.take's gradient: zeros of x's `shape` with the output's gradient `g` added at `index` (negative
// entries counted from the end) along `axis`, or into the flattened zeros where axis is empty.
at::Tensor take_gradient(at::IntArrayRef shape, std::optional<int64_t> axis, const at::Tensor& index,
                         const at::Tensor& g);
// `g` with the entries at `index` along `dim` zeroed, in a copy (index_copy_'s and index_fill_'s gradient).
at::Tensor zeroed_at(const at::Tensor& g, int64_t dim, const at::Tensor& index);
// The same into `base` (a new tensor of the caller's, written in place): base with `src` added at `index`.
at::Tensor added_into(at::Tensor base, bool scatter, int64_t dim, const at::Tensor& index, const at::Tensor& src);
// index_select (gather: gather) of `x` along `dim` at `index`.
at::Tensor selected(bool gather, const at::Tensor& x, int64_t dim, const at::Tensor& index);
// upsample_nearest2d of `in` to `size` (h, w) or by `scale` (h, w); backward: upsample_nearest2d_backward of
// the output's gradient `in` to the input's `size` (N, C, H, W), with the forward's `scale` if it had one.
at::Tensor upsampled(bool backward, const at::Tensor& in, at::IntArrayRef size, const std::vector<double>& scale);
// `t` as far as it reaches, padded with zeros to `shape` (scatter_add_'s src may be larger than its index).
at::Tensor padded_to(const at::Tensor& t, at::IntArrayRef shape);
// jitops' elementwise ops on a tensor and a tensor or number.
at::Tensor jit_mul(const at::Tensor& a, const at::Tensor& b);
at::Tensor jit_mul(const at::Tensor& a, const at::IValue& number);
at::Tensor jit_div(const at::Tensor& a, const at::Tensor& b);
at::Tensor jit_div(const at::Tensor& a, const at::IValue& number);
at::Tensor jit_neg(const at::Tensor& a);
// mul's gradients g * y and g * x (divide: div's, g / y and -g * ((x / y) / y)) from one launch (g, x and y
// of one floating dtype, no graph recorded); false where the caller must make them apart.
bool jit_binary_gradients(bool divide, const at::Tensor& g, const at::Tensor& x, const at::Tensor& y,
                          at::Tensor& gx, at::Tensor& gy);

// ---------------------------------------------------------------- forward pieces

// a op b (`op` a jitops::CoreNativeBinary: *, /, +, -; b a tensor, or the number `number` when b is undefined)
// as the plain jitops call makes it,
// through _core's native entry with grad mode off: the forward under a node, with no re-entry into Python.
// Undefined where the plain Python call must make it: autotuning on (that call tunes), an operand not
// contiguous, a dtype, device or shape the entry does not take, an error it reports (the Python call raises
// its own message).
at::Tensor forward_binary(int op, const at::Tensor& a, const at::Tensor& b, const at::IValue& number);
// index_select (gather: gather) of x along dim at index, likewise: contiguous operands only.
at::Tensor forward_selected(bool gather, const at::Tensor& x, int64_t dim, const at::Tensor& index);
// take(x, indices, axis) (numpy's: negative indices wrap; axis empty: of the flattened x), likewise.
at::Tensor forward_taken(const at::Tensor& x, const at::Tensor& indices, std::optional<int64_t> axis);
// upsample_nearest2d of x by `scale` (h, w), likewise: x contiguous or channels-last (the result laid out as x).
at::Tensor forward_upsampled(const at::Tensor& x, const std::vector<double>& scale);
// self.index_add_(dim, index, source) (alpha 1) or self.scatter_add_(dim, index, source) in place, likewise,
// self's version bumped as the Python call bumps it; false where the Python call must run it (also under
// torch.use_deterministic_algorithms: the entry's adds are atomic).
bool forward_added(bool scatter, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                   const at::Tensor& source);
// self.index_copy_(dim, index, source) (source defined) or self.index_fill_(dim, index, value), likewise.
bool forward_index_written(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           const at::IValue& value);

}  // namespace jitops_autograd
