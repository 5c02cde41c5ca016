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


def fields(k):
    return {name: k["spec"][name] for name in ("pack", "dims", "offset", "uniform")}


def test_layouts_pick_dense_packed_or_strided_plans(fresh_cache):
    # a bias over rows: strided, packs along the dense inner dim, 32-bit offsets
    (k,) = explain("add", V([64, 128], "float32"), V([128], "float32"))
    assert k["regime"] == "strided, packed along the inner dim"
    assert fields(k) == {"pack": 4, "dims": 2, "offset": 32, "uniform": 0}
    # one value per row: y is read once per pack (uniform along the inner dim)
    (k,) = explain("mul", V([4096, 4096], "float32"), V([4096, 1], "float32"))
    assert fields(k) == {"pack": 4, "dims": 2, "offset": 32, "uniform": 0b10}
    # one element for everything: dense, y read once per thread
    (k,) = explain("div", V([1 << 20], "bfloat16"), V([1], "bfloat16"))
    assert k["regime"] == "dense, packed" and fields(k)["uniform"] == 0b10 and fields(k)["pack"] == 8
    assert "const __nv_bfloat16 u1 = " in k["source"]
    # operands transposed alike, or channels-last alike, are walked in memory order: dense
    t = V([4096, 2048], "float32", [1, 4096])
    (k,) = explain("add", t, t)
    assert k["regime"] == "dense, packed" and fields(k)["dims"] == 0
    cl = V([8, 32, 16, 16], "float16", [8192, 1, 512, 32])
    (k,) = explain("add", cl, cl)
    assert k["regime"] == "dense, packed"
    (k,) = explain("add", cl, V([32, 1, 1], "float16"))  # channels-last plus a per-channel bias
    assert fields(k) == {"pack": 8, "dims": 2, "offset": 32, "uniform": 0}
    # layouts that disagree: element by element, offsets by FastDivmod
    (k,) = explain("sub", V([300, 301], "float32"), V([300, 301], "float32", [1, 300]))
    assert fields(k) == {"pack": 1, "dims": 2, "offset": 32, "uniform": 0}
    assert "jitops::operand_offsets(p, q0 + L(u) * stride, o[u]);" in k["source"] and k["spec"]["unroll"] >= 1
    # offsets past 2^31 elements: 64-bit
    (k,) = explain("add", V([1 << 16, 1 << 16], "int8"), V([1 << 16, 1 << 16], "int8", [1, 1 << 16]))
    assert fields(k)["offset"] == 64


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
