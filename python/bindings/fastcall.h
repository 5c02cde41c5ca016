// Public ops as METH_FASTCALL builtins: the call goes straight from the
// interpreter to C++, with no Python wrapper and no pybind11 dispatcher
// (about half a microsecond a call, measured). Arguments are parsed here
// with Python's own rules and messages; C++ exceptions are translated by the
// translators registered with pybind11; an operand in host memory sends the
// call to jitops._host.run_op.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>

#include "python/bindings/array_args.h"
#include "python/bindings/torch_tensors.h"

namespace jitops {

struct FastSignature {
  const char* function;
  const char* const* names;  // every parameter, in order
  int count;
  int positional;  // parameters that may be passed by position
  int required;    // the first `required` must be given
  bool differentiable = true;  // PyTorch tensors that require grad go through jitops._torch
};

// Fills `out[i]` with parameter i (borrowed), or nullptr when not given.
// Raises TypeError as Python would for missing, unexpected or repeated ones.
void parse_fast_args(const FastSignature& sig, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                     PyObject** out);

// An integer argument (anything with __index__); TypeError naming it otherwise.
int64_t int_arg(PyObject* value, const char* name);

// A launch's grid= or block=: an int or a tuple of up to three ints, each at
// least 1, into out[3] (unset dims 1); ValueError naming `name` otherwise.
void launch_dims_arg(PyObject* value, const char* name, unsigned out[3]);

// Runs `name` through the host path: jitops._host.run_op(name, *args, **kwargs).
PyObject* run_on_host(const char* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);

// Runs `name` through PyTorch's dispatcher (autograd, tracing): first the
// C++ autograd nodes of jitops._torch_autograd, where they were built and take
// the call (`params` as parse_fast_args filled them), else
// jitops._torch.dispatch.call(name, *args, **kwargs).
PyObject* run_through_torch(const FastSignature& sig, PyObject* const* params, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames);

// Whether calls may use jitops._torch_autograd (JITOPS_CPP_AUTOGRAD=0 turns it
// off at import; jitops._core._set_cpp_autograd switches it). Returns the
// previous setting.
bool set_cpp_autograd(bool enabled);
// Whether jitops._torch_autograd is in use: loaded, and not switched off.
bool cpp_autograd_active();

// Whether this thread's calls check PyTorch tensors for autograd and tracing
// (off while jitops' custom ops run their own kernels).
bool& torch_routing_enabled();

// Sets the current thread's routing for one call, and restores it after.
class RouteScope {
 public:
  explicit RouteScope(bool differentiable);
  ~RouteScope();
  RouteScope(const RouteScope&) = delete;
  RouteScope& operator=(const RouteScope&) = delete;

 private:
  TorchRoute saved_;
};

// Autotuning (runtime/tuning.h): true when the call just made resolved a
// point with no tuning result while autotuning is on.
bool autotune_requested();
// Tunes the call just made through jitops.tuning._autotune and returns
// `result` (a new reference), or nullptr with the hook's error set.
PyObject* autotune_after(const char* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                         PyObject* result);

// Turns the exception being handled into a Python error; returns nullptr.
PyObject* translate_current_exception();

// Adds a builtin function to `m` from a PyMethodDef with static storage.
void add_fastcall(pybind11::module_& m, PyMethodDef* def);

// The METH_FASTCALL entry of an op: parses `Sig`, runs `Body` on the
// parameters (nullptr for those not given), and sends host operands to the
// host path.
template <const FastSignature& Sig, pybind11::object (*Body)(PyObject* const* params)>
PyObject* fast_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    PyObject* params[16];
    parse_fast_args(Sig, args, nargs, kwnames, params);
    autotune_requested();  // drops a request left by a call that failed after planning
    try {
      PyObject* result = nullptr;
      {
        RouteScope route(Sig.differentiable);
        if (!torch_dispatch_needed(params, Sig.count)) result = Body(params).release().ptr();
      }
      if (!result) return run_through_torch(Sig, params, args, nargs, kwnames);
      if (autotune_requested()) return autotune_after(Sig.function, args, nargs, kwnames, result);
      return result;
    } catch (const HostOperands&) {
      return run_on_host(Sig.function, args, nargs, kwnames);
    } catch (const TorchDispatch&) {
      return run_through_torch(Sig, params, args, nargs, kwnames);
    }
  } catch (...) {
    return translate_current_exception();
  }
}

// The keyword-only _explain=arch of every op: the architecture to describe
// the launch for (0: the call's GPU), or -1 when absent (launch).
inline int explain_arg(PyObject* p) { return p ? int(int_arg(p, "_explain")) : -1; }

// The PyCFunction of fast_entry<Sig, Body>, for a PyMethodDef.
#define JITOPS_FAST(sig, body) \
  reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&::jitops::fast_entry<sig, &body>))

// A parameter that may be absent, as a handle (None when absent).
inline pybind11::handle or_none(PyObject* p) { return p ? pybind11::handle(p) : pybind11::none(); }

}  // namespace jitops
