// jitops' ops under autograd as C++ autograd nodes (torch::autograd::Node
// subclasses, built as PyTorch's generated nodes are), for the eager calls
// jitops._core hands over because a tensor requires grad: the graph is built
// and walked without a Python frame, as for PyTorch's own ops. The formulas are PyTorch's (derivatives.yaml), the same as
// jitops/_torch/gradients.py, whose Python path still takes every call these
// nodes decline (tensor subclasses, tracing, functorch, out=, stream=, and the
// ops not listed in nodes.cpp).
#pragma once
#include <Python.h>

namespace jitops_autograd {

// A new reference: the op's result, with its gradient attached; nullptr with a
// Python error set; or Py_NotImplemented when the call is not one the nodes take.
// `params` are the op's parameters in signature order (nullptr: not given).
PyObject* run_with_autograd(const char* op, PyObject* const* params, int count);

// The names of the ops the nodes take (a tuple of str).
PyObject* node_ops();

}  // namespace jitops_autograd
