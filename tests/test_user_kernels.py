"""Users' own kernels with no GPU: explain for sm_80 and sm_90 of every kind
(RawKernel, RawModule, Template, ReductionKernel), the deduction table of
Template (dtype x layout x size -> template arguments), the jitops::Tensor
layout as NVRTC compiles it, compile errors, name expressions, the
signature parser's refusals, and the ptx --source command."""

import os
import subprocess
import sys

import numpy as np
import pytest

import jitops
from jitops import _core

AXPY = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}"""

SCALE = r"""
template <typename T, int Dims, typename Index>
__global__ void scale(jitops::Tensor<T, Dims, Index> out, jitops::Tensor<const T, Dims, Index> x, float a) {
  for (Index i : jitops::grid_stride(out.numel())) out[i] = T(a * float(x[i]));
}"""

MODULE = r"""
template <typename T, int N>
__global__ void fill(T* y, T v) { for (int i = 0; i < N; ++i) y[threadIdx.x * N + i] = v; }
__global__ void zero(float* y) { y[threadIdx.x] = 0.0f; }
"""


def virtual(shape, dtype, strides=None):
    return jitops.VirtualArray(list(shape), dtype, list(strides) if strides else None, 256) if strides else \
        jitops.VirtualArray(list(shape), dtype)


def c_strides(shape):
    out, s = [], 1
    for n in reversed(shape):
        out.insert(0, s)
        s *= n
    return out


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_explain_every_kind_of_user_kernel(arch):
    reports = {
        "raw": jitops.RawKernel(AXPY, "axpy").explain(arch=arch),
        "module": jitops.RawModule(code=MODULE, name_expressions=["fill<float, 4>"]).get_function(
            "fill<float, 4>").explain(arch=arch),
        "template": jitops.explain(jitops.Template(SCALE, "scale"), np.zeros((4, 5), np.float32),
                                   np.ones((4, 5), np.float32), 2.0, arch=arch),
        "reduction": jitops.explain(jitops.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "s"),
                                    np.ones((30, 40), np.float32), axis=0, arch=arch),
    }
    for kind, rs in reports.items():
        assert rs, kind
        for r in rs:
            assert r["arch"] == arch, kind
            assert r["registers"] > 0 and r["local_bytes"] == 0, (kind, r["registers"], r["local_bytes"])
            assert ".entry" in r["ptx"] and r["cubin_bytes"] > 0, kind
            assert f"-arch={arch}" in r["options"], kind
            assert str(r)  # the readable form


# dtype x layout x size -> (T, Dims, Index) of `scale(out, x, a)`, out laid out like x
DEDUCTION = [
    ("float32", (6, 7, 10), "contiguous", ("float", 1, "int32_t")),
    ("float16", (6, 7, 10), "contiguous", ("__half", 1, "int32_t")),
    ("bfloat16", (3, 5), "contiguous", ("__nv_bfloat16", 1, "int32_t")),
    ("int8", (6, 7, 10), "contiguous", ("int8_t", 1, "int32_t")),
    ("uint64", (6, 7, 10), "contiguous", ("uint64_t", 1, "int32_t")),
    ("bool", (9,), "contiguous", ("bool", 1, "int32_t")),
    ("float64", (6, 7, 10), "transposed", ("double", 3, "int32_t")),  # x transposed against a C-ordered out
    ("float32", (6, 7, 10), "sliced_inner", ("float", 1, "int32_t")),  # a step on the inner dim still chains
    ("float32", (6, 7, 10), "sliced_outer", ("float", 2, "int32_t")),
    ("float32", (6, 1, 10), "size_one", ("float", 1, "int32_t")),
    ("int8", ((1 << 31) + 5,), "contiguous", ("int8_t", 1, "int64_t")),
    ("int16", (2, (1 << 30) + 1), "sliced_outer", ("int16_t", 2, "int64_t")),
]


def _x_strides(shape, layout):
    if layout == "transposed":
        return list(reversed(c_strides(list(reversed(shape)))))
    if layout == "sliced_inner":
        base = list(shape)
        base[-1] *= 2
        s = c_strides(base)
        s[-1] *= 2
        return s
    if layout == "sliced_outer":
        base = list(shape)
        base[0] *= 2
        s = c_strides(base)
        s[0] *= 2
        return s
    return c_strides(shape)


@pytest.mark.parametrize("dtype,shape,layout,expected", DEDUCTION)
def test_template_deduction_table(dtype, shape, layout, expected):
    t = jitops.Template(SCALE, "scale")
    out = virtual(shape, dtype)
    x = virtual(shape, dtype, _x_strides(shape, layout))
    r = t.explain(out, x, 1.0, arch="sm_90")[0]
    assert tuple(r["template_args"][k] for k in ("T", "Dims", "Index")) == expected
    assert r["kernel"] == f"scale<{expected[0]}, {expected[1]}, {expected[2]}>"


def test_fixed_rank_and_forced_template_arguments():
    src = r"""
template <typename T, typename Index, int Block = 128>
__global__ void rows(jitops::Tensor<T, 2, Index> out, const T* x, Index n) { }"""
    t = jitops.Template(src, "rows")
    r = t.explain(virtual((5, 7), "float32"), np.zeros(3, np.float32), 4, arch="sm_90")[0]
    assert r["template_args"] == {"T": "float", "Index": "int32_t", "Block": 128}  # Block from its default
    r = t.explain(virtual((5, 7), "float32"), np.zeros(3, np.float32), 4, arch="sm_90",
                  template_args={"Block": 64, "Index": "int64_t"})[0]
    assert r["template_args"] == {"T": "float", "Index": "int64_t", "Block": 64}
    with pytest.raises(ValueError, match=r"out: expected an array of 2 dims \(got 3"):
        t.explain(virtual((5, 7, 2), "float32"), np.zeros(3, np.float32), 4, arch="sm_90")
    with pytest.raises(TypeError, match=r"x: expected dtype float32 for T like out \(got float64\)"):
        t.explain(virtual((5, 7), "float32"), np.zeros(3, np.float64), 4, arch="sm_90")
    with pytest.raises(ValueError, match="template_args: 'Nope' is not a template parameter"):
        t.explain(virtual((5, 7), "float32"), np.zeros(3, np.float32), 4, arch="sm_90", template_args={"Nope": 1})


def test_shared_dims_need_one_shape_and_arguments_their_kind():
    t = jitops.Template(SCALE, "scale")
    with pytest.raises(ValueError, match=r"x: expected the shape \(4,5\) of out, which shares Dims with it"):
        t.explain(virtual((4, 5), "float32"), virtual((5, 4), "float32"), 1.0, arch="sm_90")
    with pytest.raises(TypeError, match=r"scale\(\) takes 3 arguments \(got 2\)"):
        t.explain(virtual((4, 5), "float32"), virtual((4, 5), "float32"), arch="sm_90")
    with pytest.raises(TypeError, match="a: expected a number"):
        t.explain(virtual((4, 5), "float32"), virtual((4, 5), "float32"), virtual((4, 5), "float32"), arch="sm_90")


@pytest.mark.parametrize("bits", [32, 64])
def test_tensor_parameter_layout_matches_what_nvrtc_compiles(bits):
    """The host writes pointer, numel, sizes, strides, dividers in that order (runtime/template_call.cpp): the
    compiled struct has that size, alignment and member sizes (members are laid out in declaration order)."""
    index, word, divider = ("int", 4, 12) if bits == 32 else ("long long", 8, 8)
    checks = "\n".join(
        f"typedef jitops::Tensor<float, {d}, {index}> T{d};\n"
        f"static_assert(sizeof(T{d}) == {_core.tensor_param_bytes(d, bits)}, \"Tensor<{d}> size\");\n"
        f"static_assert(alignof(T{d}) == 8, \"alignment\");\n"
        f"static_assert(sizeof(((T{d}*)0)->numel_) == {word} && sizeof(((T{d}*)0)->sizes_) == {word * d} && "
        f"sizeof(((T{d}*)0)->strides_) == {word * d} && sizeof(((T{d}*)0)->dividers_) == {divider * d}, \"members\");"
        for d in (1, 2, 3, 7, 16))
    code = '#include "jitops/tensor.cuh"\n' + checks + '\nextern "C" __global__ void layout_probe() {}\n'
    report = jitops.RawKernel(code, "layout_probe").explain(arch="sm_90")[0]
    assert report["cubin_bytes"] > 0


def test_compile_errors_carry_the_log_the_numbered_source_and_the_arguments_tried():
    with pytest.raises(jitops.CompileError) as e:
        jitops.RawKernel("__global__ void bad(float* y) {\n  y[0] = nothing_here;\n}", "bad").explain(arch="sm_90")
    text = str(e.value)
    assert "bad.cu(2): error" in text and "nothing_here" in e.value.log
    assert "   2 |   y[0] = nothing_here;" in text
    src = SCALE.replace("T(a * float(x[i]))", "x[i].missing")
    with pytest.raises(jitops.CompileError) as e:
        jitops.Template(src, "scale").explain(np.zeros(3, np.float32), np.zeros(3, np.float32), 1.0, arch="sm_90")
    assert "does not compile for scale<float, 1, int32_t>" in str(e.value)
    assert "missing" in e.value.log and "your source:" in str(e.value)


def test_a_template_call_is_c_and_its_keywords_are_checked():
    """Template calls go through _core.TemplateCall's C call (no Python frame), which hands keywords it does
    not take to the Python method: a misspelt one is a TypeError naming it; arguments are counted."""
    assert "__call__" not in jitops.Template.__dict__ and jitops.Template.__call__ is _core.TemplateCall.__call__
    t = jitops.Template(SCALE, "scale")
    with pytest.raises(TypeError, match="unexpected keyword argument 'gird'"):
        t(np.zeros(3, np.float32), np.zeros(3, np.float32), 1.0, gird=(1,))
    with pytest.raises(TypeError, match=r"takes 3 arguments \(got 2\)"):
        t(np.zeros(3, np.float32), 1.0, stream=None)
    with pytest.raises(ValueError, match="template_args: 'Q' is not a template parameter"):
        t(np.zeros(3, np.float32), np.zeros(3, np.float32), 1.0, template_args={"Q": 1})


def test_name_expressions_each_lower_to_their_own_function():
    module = jitops.RawModule(code=MODULE, name_expressions=["fill<float, 4>", "fill<double, 2>"])
    symbols = {}
    for name in ("fill<float, 4>", "fill<double, 2>", "zero"):
        r = module.get_function(name).explain(arch="sm_90")[0]
        assert r["kernel"] == name
        symbols[name] = r["symbol"]
        assert f".entry {r['symbol']}(" in r["ptx"]
    assert symbols == {"fill<float, 4>": "_Z4fillIfLi4EEvPT_S0_", "fill<double, 2>": "_Z4fillIdLi2EEvPT_S0_",
                       "zero": "_Z4zeroPf"}
    with pytest.raises(jitops.CompileError):
        module.get_function("fill<int, 3, 9>").explain(arch="sm_90")
    with pytest.raises(ValueError, match="path:"):
        jitops.RawModule(path="kernels.cubin")


@pytest.mark.parametrize("src,message", [
    ("__global__ void k(float* y) {}", "not a template"),
    ("template <typename T> __global__ void k(jitops::Tensor<Foo, 1, int32_t> y) {}", "element type 'Foo'"),
    ("template <typename T> __global__ void k(jitops::Tensor<T, T, int32_t> y) {}", "Dims"),
    ("template <typename T> __global__ void k(T& y) {}", "a jitops::Tensor, a pointer or a number"),
    ("template <typename T> __global__ void other(T* y) {}", "no '__global__ void k"),
    ("template <" + ", ".join(f"int N{i}" for i in range(17)) + "> __global__ void k(float* y) {}",
     "at most 16 template parameters"),
])
def test_signature_parser_refuses_what_it_cannot_fill(src, message):
    with pytest.raises(ValueError, match=message):
        jitops.Template(src, "k")


def test_raw_kernels_are_not_tuned_and_tunables_are_checked():
    with pytest.raises(TypeError, match="nothing to tune"):
        jitops.tune(jitops.RawKernel(AXPY, "axpy"), (1,), (32,), ())
    with pytest.raises(ValueError, match="tunable: 'Dimz' is not an integer template parameter"):
        jitops.Template(SCALE, "scale", tunable={"Dimz": [1, 2]})
    t = jitops.Template(SCALE.replace("int Dims, typename Index>", "int Dims, typename Index, int Items = 1>"),
                        "scale", grid_stride=True, tunable={"Items": [2, 4]})
    candidates = t._tuning_candidates()
    assert "threads=256 unroll=1 waves=16 vector=16 template=4" in candidates
    r = t.explain(virtual((64,), "float32"), virtual((64,), "float32"), 1.0, arch="sm_90")[0]
    assert r["template_args"]["Items"] == 2  # the first value listed is the default


def test_reduction_plans_by_layout():
    k = jitops.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "s")
    rows = k.explain(virtual((8192, 8192), "float32"), axis=1, arch="sm_90")
    assert [r["regime"] for r in rows] == ["inner"] and rows[0]["spec"]["vector"] == 4
    cols = k.explain(virtual((8192, 8192), "float32"), axis=0, arch="sm_90")
    assert [r["regime"] for r in cols] == ["outer, split", "finish"] and cols[0]["spec"]["vector"] == 4
    everything = k.explain(virtual((1 << 24,), "float32"), arch="sm_90")
    assert [r["regime"] for r in everything] == ["inner, split", "finish"] and everything[0]["spec"]["vector"] == 4
    transposed = k.explain(virtual((300, 200), "float32", [1, 300]), axis=0, arch="sm_90")
    assert transposed[0]["regime"].startswith("inner")  # axis 0 of a transposed array is dense in memory
    with pytest.raises(IndexError, match="axis: -3 is out of range for 2 dims"):
        k.explain(virtual((3, 4), "float32"), axis=-3, arch="sm_90")


def test_ptx_command_compiles_a_template_from_a_file(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(SCALE)
    out = subprocess.run([sys.executable, "-m", "jitops", "ptx", "--source", str(src), "--name", "scale",
                          "--template", "T=float,Dims=2,Index=int32_t", "--arch", "sm_90"],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert ".entry _Z5scaleIfLi2EiEv" in out.stdout and ".target sm_90" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "jitops", "ptx", "--source", str(src), "--name", "scale",
                          "--template", "T=float"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "missing ['Dims', 'Index']" in bad.stderr
