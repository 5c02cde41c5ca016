"""The elementwise family with no GPU: specialization (pack width, dense vs
strided, number operands), the generated source, and ElementwiseKernel's
parsing, type resolution and compile errors, all through NVRTC."""

import numpy as np
import pytest

import jitops
from jitops import _core

V = _core.VirtualArray


def explain(op, *args, **kwargs):
    return jitops.explain(op, *args, arch="sm_90", **kwargs)


@pytest.mark.parametrize("dtype,pack", [("float32", 4), ("float16", 8), ("bfloat16", 8), ("float64", 2),
                                        ("uint8", 16), ("int64", 2)])
def test_dense_operands_move_in_16_byte_packs(fresh_cache, dtype, pack):
    (k,) = explain("mul", V([1 << 20], dtype), V([1 << 20], dtype))
    assert k["spec"]["pack"] == pack and k["spec"]["dims"] == 0
    assert k["regime"] == "dense, packed"
    assert "The tail" in k["source"]
    # Grid: blocks of 256, capped at SM count x resident blocks x 32 waves.
    assert k["block"] == (256, 1, 1)
    assert k["grid"][0] == min((1 << 20) // pack // 256, 132 * 8 * 32)


def test_broadcast_and_transposed_operands_take_the_strided_layout(fresh_cache):
    (k,) = explain("add", V([64, 128], "float32"), V([128], "float32"))
    assert k["spec"]["dims"] == 2 and k["regime"] == "strided"
    t = V([128, 64], "float32").transposed() if hasattr(V, "transposed") else None
    if t is not None:
        (k,) = explain("add", t, t)
        assert k["spec"]["dims"] == 2


def test_number_operand_is_a_scalar_in_the_compute_type(fresh_cache):
    (k,) = explain("mul", V([1000], "float16"), 2.5)
    assert k["spec"]["scalars"] == 0b10
    assert "typedef float C;" in k["source"]  # 16-bit floats compute in float
    (k,) = explain("div", V([1000], "int32"), V([1000], "int32"))
    assert "typedef double Z;" in k["source"]  # integer division gives numpy's float64 outside PyTorch
    (k,) = explain("div", V([1000], "int32"), V([1000], "int32"), _promotion="torch")
    assert "typedef float Z;" in k["source"]  # and PyTorch's float32 for its tensors


def test_elementwise_kernel_specializes_per_resolved_type(fresh_cache):
    k = jitops.ElementwiseKernel("T x, T y", "T z", "z = x * y + 1", "fma1")
    a = k.explain(V([100], "float32"), V([100], "float32"))[0]
    b = k.explain(V([100], "float16"), V([100], "float16"))[0]
    assert a["spec"] != b["spec"]
    assert "typedef float T;" in a["source"] and "typedef __half T;" in b["source"]
    assert '#line 1 "fma1"' in a["source"]


def test_elementwise_kernel_compile_error_points_at_the_operation(fresh_cache):
    k = jitops.ElementwiseKernel("T x", "T y", "float t = x;\ny = t * undefined_name", "broken")
    with pytest.raises(jitops.CompileError, match=r"operation line 2: error: identifier \"undefined_name\" is undefined"):
        k.explain(V([10], "float32"))


@pytest.mark.parametrize("args,error,match", [
    (("T x", "T y", "y = x", "not an identifier"), ValueError, "name: expected a C identifier"),
    (("T", "T y", "y = x", "k"), ValueError, "in_params: expected 'type name' pairs"),
    (("T x, T x", "T y", "y = x", "k"), ValueError, "parameter names must be distinct"),
    (("raw T x", "T y", "y = x", "k"), ValueError, "in_params: expected 'type name' pairs"),
    (("T x", "T y", "", "k"), ValueError, "operation: expected C\\+\\+ statements"),
])
def test_elementwise_kernel_bad_definitions(args, error, match):
    with pytest.raises(error, match=match):
        jitops.ElementwiseKernel(*args)


def test_elementwise_kernel_type_resolution():
    k = jitops.ElementwiseKernel("T x, int32 n, S s", "U z", "z = x * n + s", "resolve")
    with pytest.raises(TypeError, match="z: type U is not set by any input; pass out= for it"):
        k.explain(V([10], "float32"), V([10], "int32"), 2.0)
    with pytest.raises(TypeError, match="n: expected dtype int32 \\(got int64\\)"):
        k.explain(V([10], "float32"), V([10], "int64"), 2.0, V([10], "float32"))
    (r,) = k.explain(V([10], "float32"), V([10], "int32"), 2, V([10], "float64"))
    assert "typedef long long S;" in r["source"] and "typedef double U;" in r["source"]
