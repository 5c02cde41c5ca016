// _core.TemplateCall: the base of jitops.Template whose call is C (tp_call),
// so that a Template call costs what a built-in op's does: the Python method
// around the launch (keywords bound, a try block) added 0.3-0.7 us a call.
#pragma once
#include <pybind11/pybind11.h>

namespace jitops {

// One Template launch (template_bindings.cpp): template_launch(kernel, args,
// grid, block, shared_mem, stream, template_args, _explain), vectorcall.
PyObject* template_launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
// The C++ kernel of a _core.TemplateKernel object (nullptr and a Python error
// set for anything else), and one launch of it with template_launch's first
// six parameters, positional (kernel object first).
void* template_kernel_pointer(PyObject* kernel);
PyObject* template_launch_positional(void* kernel, PyObject* const* params);

void bind_template_call_type(pybind11::module_& m);

}  // namespace jitops
