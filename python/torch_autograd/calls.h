// Calls from the C++ autograd nodes into jitops' ops (jitops._core builtins):
// the same entry points users call, so a backward that runs with grad mode on
// (create_graph=True) is routed through autograd again, and every kernel,
// check and error is the ops' own. Needs the GIL; errors raised in Python come
// back as torch::PythonError-compatible python_error exceptions.
#pragma once
#include <torch/csrc/autograd/python_variable.h>

#include <initializer_list>

#include "python/bindings/core_native.h"

namespace jitops_autograd {

// An owned reference (nullptr allowed).
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(PyObject* owned) : p_(owned) {}
  PyRef(PyRef&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  PyRef& operator=(PyRef&& o) noexcept {
    if (this != &o) {
      Py_XDECREF(p_);
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() { Py_XDECREF(p_); }
  PyObject* get() const { return p_; }
  PyObject* release() {
    PyObject* p = p_;
    p_ = nullptr;
    return p;
  }

 private:
  PyObject* p_ = nullptr;
};

// The jitops._core functions the nodes call, looked up once.
struct CoreOps {
  PyObject* index_select;
  PyObject* gather;
  PyObject* index_add_;
  PyObject* scatter_add_;
  PyObject* index_copy_;
  PyObject* index_fill_;
  PyObject* take;
  PyObject* scatter_reduce_;
  PyObject* upsample_nearest2d;
  PyObject* upsample_nearest2d_backward;
  PyObject* add;
  PyObject* sub;
  PyObject* mul;
  PyObject* div;
  PyObject* kw_deterministic;  // ("deterministic",)
  const jitops::CoreNativeApi* native;  // _core._native_ops, or nullptr when its version differs
};
const CoreOps& core();

// Throws the pending Python error as a python_error (persisted, so that it
// survives the autograd engine's thread hand-off).
[[noreturn]] void throw_python_error();

// fn(*args), the last `keywords` of them named by `kwnames`: the tensor it
// returns. With grad mode off (a backward pass, unless create_graph) that is an
// alias with no Python object tied to it (see wrap); with it on, the op's own
// tensor, its graph attached.
at::Tensor call_op(PyObject* fn, std::initializer_list<PyObject*> args, PyObject* kwnames = nullptr);

// fn(*args) for a node's forward: the Python object it returned (a tensor),
// handed back to the caller as it is: the graph is attached to its tensor, and
// no second Python object is made for it.
// `count` arguments, the last of them named by `kwnames`.
PyRef call_op_object(PyObject* fn, PyObject* const* args, size_t count, PyObject* kwnames = nullptr);
inline PyRef call_op_object(PyObject* fn, std::initializer_list<PyObject*> args) {
  // An initializer_list's elements are contiguous: no copy for the vectorcall.
  return call_op_object(fn, args.begin(), args.size());
}

// A new reference to a Python object for `t`, to pass to an op. A tensor that
// C++ still holds when Python lets go of its object keeps that object alive
// from C++ (PyTorch's PyObject preservation); it is then released, under the
// GIL, wherever the tensor dies: often on the autograd engine's device thread
// after the caller's thread has the GIL back, one GIL hand-off per tensor.
// With grad mode off the object is made for an alias over the same storage,
// so it dies with the call; with it on, for `t` itself (its graph matters).
PyRef wrap(const at::Tensor& t);
PyRef py_int(int64_t v);
PyRef py_ints(at::IntArrayRef v);  // a tuple of ints

}  // namespace jitops_autograd
