// Calls from the C++ autograd nodes into jitops' ops (jitops._core builtins):
// the same entry points users call, so a backward that runs with grad mode on
// (create_graph=True) is routed through autograd again, and every kernel,
// check and error is the ops' own. Needs the GIL; errors raised in Python come
// back as torch::PythonError-compatible python_error exceptions.
#pragma once
#include <torch/csrc/autograd/python_variable.h>

#include <initializer_list>

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
  PyObject* upsample_nearest2d;
  PyObject* upsample_nearest2d_backward;
  PyObject* add;
  PyObject* sub;
  PyObject* mul;
  PyObject* div;
  PyObject* kw_deterministic;  // ("deterministic",)
};
const CoreOps& core();

// Throws the pending Python error as a python_error (persisted, so that it
// survives the autograd engine's thread hand-off).
[[noreturn]] void throw_python_error();

// fn(*args), the last `keywords` of them named by `kwnames`: the tensor it returns.
at::Tensor call_op(PyObject* fn, std::initializer_list<PyObject*> args, PyObject* kwnames = nullptr);

// A new reference to the Python object of `t` (THPVariable_Wrap).
PyRef wrap(const at::Tensor& t);
PyRef py_int(int64_t v);
PyRef py_ints(at::IntArrayRef v);  // a tuple of ints

}  // namespace jitops_autograd
