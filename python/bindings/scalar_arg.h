// Python numbers as operands: fill values, alpha, and the scalar side of an
// elementwise op.
#pragma once
#include <pybind11/pybind11.h>

#include "runtime/scalar.h"

namespace jitops {

// A Python number (or 0-d array) as a Scalar; TypeError naming `name` otherwise.
Scalar scalar_arg(PyObject* v, const char* name);

// True for bool, int, float and numpy scalars: values, not arrays.
bool is_number(PyObject* v);

// True for any numpy scalar (numpy.generic), complex ones included.
bool is_numpy_scalar(PyObject* v);

}  // namespace jitops
