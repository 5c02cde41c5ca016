"""Bad arguments raise the right exception type with a message that names the
argument, what was expected and what was given. Checked by planning for an
architecture (no GPU needed): the same validation runs before every launch."""

import pickle

import numpy as np
import pytest

import jitops
from jitops import VirtualArray as V

from conftest import GPU_SKIP_REASON

X = V([10, 20], "float32")
I64 = V([5], "int64")

BAD_CALLS = [
    ("index_select", (X, 2, I64), {}, IndexError, "dim: expected a dimension in [-2, 1] (got 2)"),
    ("index_select", (X, -3, I64), {}, IndexError, "dim: expected a dimension in [-2, 1] (got -3)"),
    ("index_select", (X, 0, V([5], "float32")), {}, TypeError, "index: expected an int32 or int64 array (got float32)"),
    ("index_select", (X, 0, V([5, 2], "int64")), {}, ValueError, "index: expected a 0-d or 1-d array (got 2 dimensions"),
    ("index_select", (X, 0, I64), dict(out=V([5, 21], "float32")), ValueError, "out: expected shape (5, 20) (got (5, 21))"),
    ("index_select", (X, 0, I64), dict(out=V([5, 20], "float64")), TypeError, "out: expected dtype float32 (got float64)"),
    ("index_select", (X, 0, I64), dict(out=V([5, 20], "float32", strides=[0, 1])), ValueError, "out: expected an array whose elements do not overlap"),
    ("index_select", (X, 0, I64), dict(stream="s"), TypeError, "stream: expected an int handle"),
    ("index_select", (X, 0, [1.5, 2.5]), {}, TypeError, "index: expected an int32 or int64 array (got float64)"),
    ("index_select", (np.array(["a", "b"]), 0, I64), {}, TypeError, "x: expected a numeric or bool array (got dtype <U1)"),
    ("take", (X, I64), dict(axis=2), IndexError, "axis: expected a dimension in [-2, 1] (got 2)"),
    ("take", (X, I64), dict(axis=1.0), TypeError, "axis: expected an int or None (got float)"),
    ("take", (X, V([3], "int16")), {}, TypeError, "indices: expected an int32 or int64 array (got int16)"),
    ("gather", (X, 1, V([10], "int64")), {}, ValueError, "index: expected as many dimensions as x (2) (got 1"),
    ("gather", (X, 1, V([11, 3], "int64")), {}, ValueError, "index: size 11 of dimension 0 exceeds x's size 10"),
    ("gather", (X, 5, V([10, 3], "int64")), {}, IndexError, "dim: expected a dimension in [-2, 1] (got 5)"),
    ("index_add_", (X, 0, I64, V([5, 20], "float64")), {}, TypeError, "source: expected dtype float32 like self (got float64)"),
    ("index_add_", (X, 0, I64, V([4, 20], "float32")), {}, ValueError, "source: expected self's shape (10,20) with dimension 0 of size len(index) = 5"),
    ("index_add_", (V([10, 20], "complex64"), 0, I64, V([5, 20], "complex64")), {}, TypeError, "self: index_add_ supports int8"),
    ("index_add_", (V([10, 20], "float32", strides=[0, 1]), 0, I64, V([5, 20], "float32")), {}, ValueError, "self: expected an array whose elements do not overlap"),
    ("index_add_", (X, 0, I64, V([5, 20], "float32")), dict(deterministic="yes"), TypeError, "deterministic: expected a bool (got str)"),
    ("index_fill_", (X, 0, I64, "v"), {}, TypeError, "value: expected a number (got str)"),
    ("scatter_add_", (X, 0, I64, X), {}, ValueError, "index: expected index, src and self to have the same number of dimensions"),
    ("scatter_reduce_", (X, 0, V([2, 20], "int64"), X, "max"), {}, ValueError, "reduce: expected 'sum', 'prod', 'mean', 'amax' or 'amin' (got 'max')"),
    ("scatter_reduce_", (X, 0, V([2, 20], "int64"), X, "sum"), dict(include_self=1), TypeError, "include_self: expected a bool (got int)"),
    ("histc", (X,), dict(bins=0), ValueError, "bins: expected a positive number of bins"),
    ("histc", (X,), dict(min=3, max=1), ValueError, "max: expected max >= min"),
    ("histc", (X,), dict(min=float("nan")), ValueError, "min: expected a finite range"),
    ("histc", (X,), dict(out=V([7], "float32")), ValueError, "out: expected shape (100,) (got (7,))"),
    ("histc", (V([10], "complex64"),), {}, TypeError, "x: histc supports floating and integer dtypes (got complex64)"),
    ("upsample_nearest2d", (V([2, 3, 4], "float32"),), dict(scale_factor=2), ValueError, "x: expected a 4-d array (N, C, H, W)"),
    ("upsample_nearest2d", (V([1, 2, 3, 4], "float32"),), {}, ValueError, "size: expected exactly one of size and scale_factor (got neither)"),
    ("upsample_nearest2d", (V([1, 2, 3, 4], "int32"),), dict(scale_factor=2), TypeError, "x: upsample_nearest2d supports float16"),
    ("upsample_nearest2d_backward", (V([1, 2, 6, 8], "float32"), (1, 3, 3, 4)), {}, ValueError, "grad_output: expected shape (1, 3, 6, 8)"),
    ("add", (X, V([3, 3], "float32")), {}, ValueError, "y: shape (3,3) does not broadcast with (10,20)"),
    ("mul", (X, V([10, 20], "complex64")), {}, TypeError, "y: expected an integer, floating or bool dtype (got complex64)"),
    ("index_select", (None, 0, I64), {}, TypeError, "x: expected an array (got None)"),
    ("index_select", (X, "0", I64), {}, TypeError, "dim: expected an int (got str)"),
]

# A correct call of each op, made after each bad one.
GOOD_CALLS = {
    "index_select": (X, 0, I64), "take": (X, I64), "gather": (X, 1, V([10, 3], "int64")),
    "index_add_": (X, 0, I64, V([5, 20], "float32")), "index_fill_": (X, 0, I64, 1.0),
    "scatter_add_": (X, 0, V([2, 20], "int64"), X), "scatter_reduce_": (X, 0, V([2, 20], "int64"), X, "amax"),
    "histc": (X,), "upsample_nearest2d": (V([1, 2, 3, 4], "float32"), None, 2),
    "upsample_nearest2d_backward": (V([1, 2, 6, 8], "float32"), (1, 2, 3, 4)), "add": (X, X), "mul": (X, 2.0),
}


@pytest.mark.parametrize("op,args,kwargs,exc,message", BAD_CALLS, ids=[c[4][:40] for c in BAD_CALLS])
def test_bad_call(op, args, kwargs, exc, message):
    with pytest.raises(exc) as info:
        jitops.explain(op, *args, arch="sm_90", **kwargs)
    assert message in str(info.value)
    # A correct call still works afterwards.
    assert jitops.explain(op, *GOOD_CALLS[op], arch="sm_90")


def test_unknown_op_and_arch():
    with pytest.raises(ValueError, match="op: expected one of"):
        jitops.explain("scatter", X, 0, I64, arch="sm_90")
    with pytest.raises(ValueError, match=r"arch: expected a name like 'sm_90' \(got 'hopper'\)"):
        jitops.explain("index_select", X, 0, I64, arch="hopper")


def test_compile_error_carries_context_and_pickles():
    with pytest.raises(jitops.CompileError) as info:
        jitops._core.compile_source('extern "C" __global__ void jitops_kernel() { undefined_name(); }', 90)
    err = pickle.loads(pickle.dumps(info.value))
    assert type(err) is jitops.CompileError
    assert "undefined_name" in err.log and "identifier" in err.log
    assert any(o.startswith("-arch=sm_90") for o in err.options)
    assert err.kernel_name == "jitops_kernel"
    assert "   1 | extern" in err.numbered_source()
    assert "specialized source:" in str(err)


def test_cuda_error_pickles():
    err = jitops.CudaError("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument",
                           "cuLaunchKernel", 1, "CUDA_ERROR_INVALID_VALUE")
    again = pickle.loads(pickle.dumps(err))
    assert (again.call, again.code, again.name) == ("cuLaunchKernel", 1, "CUDA_ERROR_INVALID_VALUE")


@pytest.mark.skipif(GPU_SKIP_REASON is None, reason="a GPU is present")
def test_no_driver_says_where_it_looked():
    with pytest.raises(jitops.CudaUnavailableError, match="libcuda.so.1"):
        jitops.index_select(np.arange(10.0), 0, np.array([1, 2]))
    with pytest.raises(ValueError, match="arch: no GPU is present"):
        jitops.explain("index_select", np.arange(10.0), 0, np.array([1, 2]))
    assert not jitops.is_available()
