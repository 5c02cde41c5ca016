"""Users' own kernels on the GPU: RawKernel and RawModule against numpy and
CuPy; Template for every dtype over contiguous, transposed, sliced and
broadcast layouts (deduced Dims and Index), fixed-rank tensors with
jitops::check_index (IndexError with the context alive), tuning of a
tunable template argument; ReductionKernel over axes, keepdims and dtypes
against numpy and CuPy. Outputs are poisoned before every run; data random."""

import zlib

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, poisoned_like, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
ALL = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
       "float32", "float64"]


def rng_for(*parts):
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


AXPY = r"""
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}"""


def test_raw_kernel_on_torch_cupy_and_numpy_arrays():
    rng = rng_for("axpy")
    n = 100_003
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    # The device contracts a * x + y into one fused multiply-add: numpy's two roundings differ in the last bit.
    expected = (np.float64(2.5) * x + y).astype(np.float32)
    k = jitops.RawKernel(AXPY, "axpy")
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    k(((n + 255) // 256,), (256,), (np.float32(2.5), tx, ty, n))  # an int narrows to the int parameter
    np.testing.assert_allclose(ty.cpu().numpy(), expected, rtol=1e-6, atol=1e-7)
    hy = y.copy()  # numpy arrays: copied to the GPU and back
    k(((n + 255) // 256,), (256,), (np.float32(2.5), x, hy, np.int32(n)))
    np.testing.assert_array_equal(hy, ty.cpu().numpy())
    cp = pytest.importorskip("cupy")
    cx, cy = cp.asarray(x), cp.asarray(y)
    k((n + 255) // 256, 256, (np.float32(2.5), cx, cy, n))
    reference = cp.asarray(y)
    cp.RawKernel(AXPY, "axpy")(((n + 255) // 256,), (256,), (np.float32(2.5), cx.copy(), reference, np.int32(n)))
    np.testing.assert_array_equal(cp.asnumpy(cy), cp.asnumpy(reference))


def test_raw_kernel_refuses_arguments_its_parameters_cannot_take():
    k = jitops.RawKernel(AXPY, "axpy")
    x = torch.ones(16, device=DEVICE)
    y = torch.ones(16, device=DEVICE)
    with pytest.raises(TypeError, match=r"args\[0\]: parameter 0 of axpy takes 4 bytes.*numpy.float32"):
        k((1,), (32,), (2.0, x, y, 16))  # a Python float passes as float64, as in CuPy
    with pytest.raises(TypeError, match=r"args: axpy takes 4 parameters \(got 3\)"):
        k((1,), (32,), (np.float32(2), x, y))
    with pytest.raises(ValueError, match=r"args\[3\].*32-bit integer, and 8589934592 does not fit"):
        k((1,), (32,), (np.float32(2), x, y, 1 << 33))
    with pytest.raises(ValueError, match="block: expected at most 1024 threads"):
        k((1,), (2048,), (np.float32(2), x, y, 16))
    with pytest.raises(RuntimeError, match="no backward"):
        k((1,), (32,), (np.float32(2), x.clone().requires_grad_(), y, 16))
    k((1,), (32,), (np.float32(2), x, y, 16))  # the context is fine after all of these
    assert torch.equal(y, torch.full_like(y, 3.0))


MODULE = r"""
template <typename T, int N>
__global__ void scale(T* y, const T* x, T a, long long n) {
  long long i = (long long)(blockIdx.x * blockDim.x + threadIdx.x) * N;
  for (int k = 0; k < N; ++k) if (i + k < n) y[i + k] = x[i + k] * a;
}
__global__ void negate(float* y, long long n) {
  long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = -y[i];
}"""


@pytest.mark.parametrize("dtype,ctype,n_items", [("float32", "float", 4), ("float64", "double", 2),
                                                 ("int32", "int", 1), ("int64", "long long", 3)])
def test_raw_module_template_instances(dtype, ctype, n_items):
    rng = rng_for("module", dtype)
    n = 5000
    module = jitops.RawModule(code=MODULE, name_expressions=[f"scale<{ctype}, {n_items}>"])
    fn = module.get_function(f"scale<{ctype}, {n_items}>")
    x = random_host(rng, (n,), dtype)
    if dtype.startswith("int"):
        x = (x % 1000).astype(dtype)
    a = np.dtype(dtype).type(3)
    tx = torch.from_numpy(x).cuda()
    ty = poisoned_like(torch, (n,), tx.dtype, DEVICE)
    threads = (n + n_items - 1) // n_items
    fn(((threads + 127) // 128,), (128,), (ty, tx, a, n))
    assert_same_bits(ty.cpu().numpy(), x * a)
    neg = module.get_function("negate")  # a plain function of the same source
    f = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    expected = -f.cpu().numpy()
    neg(((n + 255) // 256,), (256,), (f, n))
    np.testing.assert_array_equal(f.cpu().numpy(), expected)


SCALE = r"""
template <typename T, int Dims, typename Index>
__global__ void scale(jitops::Tensor<T, Dims, Index> out, jitops::Tensor<const T, Dims, Index> x, double a) {
  for (Index i : jitops::grid_stride(out.numel())) out[i] = T(double(x[i]) * a);
}"""


def _layout(t, layout):
    if layout == "transposed":
        return t.permute(*reversed(range(t.dim())))
    if layout == "sliced":
        return t[..., ::2]
    if layout == "broadcast":
        return t[..., :1].expand(t.shape[:-1] + (5,))
    return t


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "broadcast"])
@pytest.mark.parametrize("dtype", ALL)
def test_template_scale_every_dtype_and_layout(dtype, layout):
    rng = rng_for("scale", dtype, layout)
    host = random_host(rng, (6, 7, 10), dtype)
    if np.dtype(host.dtype).kind in "iu":
        host = (host % 50).astype(host.dtype)
    base = to_torch(torch, host, dtype, DEVICE)
    x = _layout(base, layout)
    out = poisoned_like(torch, x.shape, x.dtype, DEVICE)
    t = jitops.Template(SCALE, "scale", grid_stride=True)
    report = t.explain(out, x, 2.0)[0]
    dims = report["template_args"]["Dims"]
    assert report["template_args"]["Index"] == "int32_t"
    if layout == "contiguous":
        assert dims == 1
    t(out, x, 2.0)
    values = to_numpy(torch, x)  # doubling is exact in every dtype for these values
    if dtype == "bool":
        expected = values
    elif dtype == "bfloat16":
        expected = to_numpy(torch, (x.float() * 2).to(torch.bfloat16))
    else:
        expected = (values * 2).astype(values.dtype)
    assert_same_bits(to_numpy(torch, out), expected)


GATHER_ROWS = r"""
template <typename T, typename Index>
__global__ void gather_rows(jitops::Tensor<T, 2, Index> out, jitops::Tensor<const T, 2, Index> x,
                            jitops::Tensor<const int64_t, 2, Index> idx, float alpha) {
  for (Index i : jitops::grid_stride(out.numel())) {
    const Index r = i / out.size(1), c = i % out.size(1);
    const int64_t j = idx(r, c);
    if (jitops::check_index(j, x.size(1), i)) out(r, c) = T(alpha * float(x(r, Index(j))));
    else out(r, c) = T(0);
  }
}"""


def test_template_fixed_rank_gather_and_check_index():
    rng = rng_for("gather_rows")
    x = torch.from_numpy(rng.standard_normal((300, 50)).astype(np.float32)).cuda().t()  # (50, 300), strided
    idx = torch.from_numpy(rng.integers(0, 300, (50, 17))).cuda()
    out = poisoned_like(torch, (50, 17), torch.float32, DEVICE)
    t = jitops.Template(GATHER_ROWS, "gather_rows", grid_stride=True)
    t(out, x, idx, 0.5)
    torch.testing.assert_close(out, 0.5 * torch.gather(x, 1, idx), rtol=0, atol=0)
    bad = idx.clone()
    bad[3, 4] = 300
    bad[7, 1] = -2
    jitops.set_index_checks("sync")
    try:
        with pytest.raises(IndexError, match=r"gather_rows: jitops::check_index found 300 at position 55 "
                                             r"\(the lowest position reported\).*bound of 300"):
            t(out, x, bad, 0.5)
    finally:
        jitops.set_index_checks("async")
    assert jitops.is_available()
    t(out, x, idx, 0.5)  # the context is alive: the next call works
    torch.testing.assert_close(out, 0.5 * torch.gather(x, 1, idx), rtol=0, atol=0)
    assert torch.equal(torch.gather(x, 1, idx), torch.gather(x, 1, idx))  # and PyTorch too


UNROLLED = r"""
template <typename T, int Dims, typename Index, int Items>
__global__ void add_one(jitops::Tensor<T, Dims, Index> out, jitops::Tensor<const T, Dims, Index> x) {
  const Index n = out.numel();
  for (Index base = (Index(blockIdx.x) * blockDim.x + threadIdx.x) * Items; base < n;
       base += Index(gridDim.x) * blockDim.x * Items) {
#pragma unroll
    for (int k = 0; k < Items; ++k)
      if (base + k < n) out[base + k] = x[base + k] + T(1);
  }
}"""


def test_template_tuning_picks_a_tunable_argument_and_keeps_results(fresh_cache):
    rng = rng_for("tune")
    x = torch.from_numpy(rng.standard_normal((1000, 333)).astype(np.float32)).cuda()
    out = poisoned_like(torch, x.shape, x.dtype, DEVICE)
    t = jitops.Template(UNROLLED, "add_one", grid_stride=True, tunable={"Items": [1, 2, 4]})
    assert t.explain(out, x)[0]["template_args"]["Items"] == 1  # the first value is the default
    result = jitops.tune(t, out, x, reps=5)
    assert result.chosen is not None and len(result) > 3
    assert all(r["error"] is None for r in result), [r for r in result if r["error"]]
    report = t.explain(out, x)[0]
    assert report["config_origin"] == "tuned"
    chosen_items = int(result.chosen.split("template=")[1]) if "template=" in result.chosen else 1
    assert report["template_args"]["Items"] == chosen_items
    out.fill_(float("nan"))
    t(out, x)
    torch.testing.assert_close(out, x + 1, rtol=0, atol=0)


SUM = ("T x", "T y", "x", "a + b", "y = a", "0", "jsum")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("shape,axis", [((8192, 33), 0), ((33, 8192), 1), ((64, 3, 100), (0, 2)),
                                        ((5, 6, 7), None), ((5, 6, 7), -1), ((100000,), 0), ((4, 0, 3), 1),
                                        ((7, 9), ())])
def test_reduction_sum_against_numpy(dtype, shape, axis):
    rng = rng_for("sum", dtype, shape, axis)
    host = random_host(rng, shape, dtype)
    if dtype.startswith("int"):
        host = (host % 100).astype(dtype)
    x = torch.from_numpy(host).cuda()
    k = jitops.ReductionKernel(*SUM)
    got = k(x, axis=axis)
    np_axis = tuple(range(len(shape))) if axis is None else axis
    expected = host.sum(axis=np_axis, dtype=host.dtype)
    if dtype.startswith("float"):
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-5 if dtype == "float32" else 1e-12,
                                   atol=1e-3 if dtype == "float32" else 1e-9)
    else:
        np.testing.assert_array_equal(got.cpu().numpy(), expected)
    kept = k(x, axis=axis, keepdims=True)
    assert tuple(kept.shape) == np.sum(host, axis=np_axis, keepdims=True).shape


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduction_strided_layouts(layout, axis):
    rng = rng_for("strided", layout, axis)
    base = torch.from_numpy(rng.standard_normal((300, 257)).astype(np.float32)).cuda()
    x = {"transposed": base.t(), "sliced": base[:, ::3], "broadcast": base[:1].expand(300, 257)}[layout]
    k = jitops.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2")
    expected = torch.sqrt((x.double() ** 2).sum(dim=axis) if axis is not None else (x.double() ** 2).sum())
    torch.testing.assert_close(k(x, axis=axis).double(), expected, rtol=1e-5, atol=1e-4)


def test_reduction_two_inputs_max_half_and_out():
    rng = rng_for("two")
    x = torch.from_numpy(rng.standard_normal((129, 77)).astype(np.float16)).cuda()
    w = torch.from_numpy(rng.standard_normal((77,)).astype(np.float16)).cuda()
    k = jitops.ReductionKernel("T x, T w", "float y", "float(x) * float(w)", "max(a, b)", "y = a",
                               "-3.0e38f", "wmax", reduce_type="float")
    out = poisoned_like(torch, (129,), torch.float32, DEVICE)
    k(x, w, axis=1, out=out)
    torch.testing.assert_close(out, (x.float() * w.float()).amax(dim=1), rtol=0, atol=0)
    mean = jitops.ReductionKernel("T x", "T y", "x", "a + b", "y = a / _type_reduce(_in_ind.size() / _out_ind.size())",
                                  "0", "jmean")
    y = torch.from_numpy(rng.standard_normal((40, 50)).astype(np.float64)).cuda()
    torch.testing.assert_close(mean(y, axis=0), y.mean(dim=0), rtol=1e-12, atol=1e-12)


def test_reduction_against_cupy():
    cp = pytest.importorskip("cupy")
    rng = rng_for("cupy")
    host = rng.standard_normal((513, 1031)).astype(np.float32)
    args = ("T x", "T y", "abs(x)", "a + b", "y = a", "0", "l1")
    ours, theirs = jitops.ReductionKernel(*args), cp.ReductionKernel(*args)
    cx = cp.asarray(host)
    for axis in (0, 1, None):
        np.testing.assert_allclose(cp.asnumpy(ours(cx, axis=axis)), cp.asnumpy(theirs(cx, axis=axis)), rtol=1e-5)


def test_reduction_errors_name_the_argument():
    k = jitops.ReductionKernel(*SUM)
    x = torch.ones(3, 4, device=DEVICE)
    with pytest.raises(IndexError, match=r"axis: 2 is out of range for 2 dims"):
        k(x, axis=2)
    with pytest.raises(ValueError, match="axis: dim 1 is listed twice"):
        k(x, axis=(1, -1))
    with pytest.raises(ValueError, match=r"y: expected shape \(3,\) \(got \(4,\)\)"):  # out= is the output y
        k(x, axis=1, out=torch.empty(4, device=DEVICE))
    with pytest.raises(jitops.CompileError, match="map_expr"):
        jitops.ReductionKernel("T x", "T y", "x +* 1", "a + b", "y = a", "0", "broken")(x, axis=0)
    assert torch.equal(k(x, axis=1), torch.full((3,), 4.0, device=DEVICE))
