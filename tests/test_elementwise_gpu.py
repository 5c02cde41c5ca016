"""The elementwise family on the GPU: the built-in binary ops against numpy
and bit for bit against PyTorch, for every dtype x layout (dense, transposed,
broadcast, a number operand), into fresh and poisoned out= buffers; and
jitops.ElementwiseKernel with placeholders, numbers, several outputs, out=
and host arrays."""

import zlib

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, poisoned_like, to_numpy

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64"]

def as_tensor(v):
    return v if torch.is_tensor(v) else torch.tensor(v, device=DEVICE)


OPS = {"add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract),
       "mul": (lambda a, b: a * b, np.multiply), # PyTorch divides by a number as a * (1 / b) and a number by x as reciprocal(x) * a;
    # 0-d device tensors take its true division, which jitops does.
    "div": (lambda a, b: torch.div(as_tensor(a), as_tensor(b)), np.true_divide),
       "maximum": (lambda a, b: torch.maximum(as_tensor(a), as_tensor(b)), np.maximum),
       "minimum": (lambda a, b: torch.minimum(as_tensor(a), as_tensor(b)), np.minimum)}


def assert_same_values(got, expected):
    """Bit for bit, except that any NaN matches any NaN (payloads differ between converters)."""
    is_float = got.dtype.is_floating_point
    got_nan, expected_nan = (torch.isnan(got).cpu().numpy(), torch.isnan(expected).cpu().numpy()) if is_float else (0, 0)
    got, expected = to_numpy(torch, got), to_numpy(torch, expected)
    if is_float:
        np.testing.assert_array_equal(got_nan, expected_nan)
        got, expected = np.where(got_nan, 0, got), np.where(expected_nan, 0, expected)
    assert_same_bits(got, expected)


def rng_for(*parts):
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def random_tensor(rng, shape, dtype, nonzero=False):
    t_dtype = getattr(torch, dtype)
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        v = torch.from_numpy(rng.standard_normal(shape) * 4).to(t_dtype)
        if nonzero:
            v[v == 0] = 1
    else:
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -100), min(info.max, 100)
        v = torch.from_numpy(rng.integers(lo if dtype != "uint8" else 1, hi, shape, endpoint=True)).to(t_dtype)
        if nonzero:
            v[v == 0] = 1
    if dtype in ("float16", "float32", "float64") and v.numel() > 3:
        v.view(-1)[1] = float("nan")  # NaN must propagate through maximum/minimum
    return v.to(DEVICE)


def numpy_reference(op, x, y, result_dtype):
    """Computed in float64 (or the integer type, wrapping), rounded once to the result dtype."""
    xs = x if np.isscalar(x) else to_float64(x)
    ys = y if np.isscalar(y) else to_float64(y)
    r = OPS[op][1](xs, ys)
    return r


def to_float64(t):
    if t.dtype.is_floating_point:
        return t.detach().cpu().double().numpy()
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("layout", ["dense", "transposed", "broadcast", "number", "number_first"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(OPS))
def test_binary_op(op, dtype, layout):
    rng = rng_for(op, dtype, layout)
    shape = (37, 129)
    x = random_tensor(rng, shape, dtype)
    nonzero = op == "div"
    if layout == "dense":
        y = random_tensor(rng, shape, dtype, nonzero)
    elif layout == "transposed":
        x = random_tensor(rng, shape[::-1], dtype).t()
        y = random_tensor(rng, shape[::-1], dtype, nonzero).t()
    elif layout == "broadcast":
        y = random_tensor(rng, (shape[1],), dtype, nonzero)
    else:
        y = 2.5 if dtype.startswith(("float", "bfloat")) else 3
    a, b = (y, x) if layout == "number_first" else (x, y)
    expected = OPS[op][0](a, b)
    got = getattr(jitops, op)(a, b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert_same_values(got, expected)
    # Into a poisoned out=, and against numpy.
    out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
    assert getattr(jitops, op)(a, b, out=out) is out
    assert_same_values(out, expected)
    ref = numpy_reference(op, a if not torch.is_tensor(a) else a, b, expected.dtype)
    got64 = to_float64(got)
    if expected.dtype == torch.bfloat16:
        nan = np.isnan(got64)
        np.testing.assert_array_equal(nan, np.isnan(ref))
    if expected.dtype.is_floating_point:
        eps = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 2.0**-23, torch.float64: 2.0**-52}
        np.testing.assert_allclose(got64, ref, rtol=eps[expected.dtype], atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(got64, np.asarray(ref).astype(got64.dtype))


@pytest.mark.parametrize("n", [1, 3, 4097, 1 << 20])
@pytest.mark.parametrize("offset", [0, 1])
def test_mul_tail_and_misaligned_packs(n, offset):
    rng = rng_for("tail", n, offset)
    base_x = random_tensor(rng, (n + 1,), "float16")
    base_y = random_tensor(rng, (n + 1,), "float16")
    x, y = base_x[offset:offset + n], base_y[offset:offset + n]
    out = poisoned_like(torch, (n,), torch.float16, DEVICE)
    jitops.mul(x, y, out=out)
    assert_same_bits(to_numpy(torch, out), to_numpy(torch, x * y))


def test_in_place_out_is_an_input():
    x = torch.randn(1000, device=DEVICE)
    y = torch.randn(1000, device=DEVICE)
    expected = x + y
    assert jitops.add(x, y, out=x) is x
    assert torch.equal(x, expected)


def test_bad_calls_leave_the_next_call_working():
    x = torch.randn(10, device=DEVICE)
    with pytest.raises(TypeError, match="y: expected an integer, floating or bool dtype"):
        jitops.mul(x, torch.ones(10, device=DEVICE, dtype=torch.complex64))
    with pytest.raises(ValueError, match="y: shape"):
        jitops.mul(x, torch.ones(3, device=DEVICE))
    with pytest.raises(TypeError, match="two numbers"):
        jitops.mul(2, 3)
    with pytest.raises(ValueError, match="out: must not overlap"):
        jitops.add(x[:5], x[5:], out=x[2:7])
    assert torch.equal(jitops.mul(x, 2.0), x * 2)


def test_host_arrays_round_trip():
    a = np.arange(10, dtype=np.float32)
    got = jitops.mul(a, 3.0)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, a * 3)


FMA = jitops.ElementwiseKernel("T x, T y", "T z", "z = x * y + 1", "fma1")


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_kernel_fma(dtype):
    rng = rng_for("fma", dtype)
    x = random_tensor(rng, (513, 7), dtype)
    y = random_tensor(rng, (513, 7), dtype)
    got = FMA(x, y)
    assert got.dtype == x.dtype
    if dtype in ("float32", "float64"):
        # NVRTC contracts x * y + 1 into one fma (as nvcc and CuPy do): one rounding, not two.
        exact = x.double() * y.double() + 1
        eps = 2.0**-23 if dtype == "float32" else 2.0**-52
        bound = eps * (x.double().abs() * y.double().abs() + 1)
        assert torch.all(((got.double() - exact).abs() <= bound) | torch.isnan(exact))
        return
    if dtype in ("float16", "bfloat16"):
        # x * y rounds to the 16-bit type (cuda_fp16's operator), + 1 adds in float, then rounds.
        expected = ((x * y).float() + 1).to(x.dtype)
    else:
        expected = x * y + 1
    assert_same_values(got, expected)


def test_elementwise_kernel_numbers_outputs_and_out():
    k = jitops.ElementwiseKernel("T x, S s", "T y, float32 z", "y = x * s; z = float(x) + 0.5f", "two_outputs")
    x = torch.arange(1000, device=DEVICE, dtype=torch.int32)
    y, z = k(x, 3)
    assert y.dtype == torch.int32 and z.dtype == torch.float32
    assert torch.equal(y, x * 3) and torch.equal(z, x.float() + 0.5)
    acc = jitops.ElementwiseKernel("T x", "T acc", "acc += x", "accumulate")
    out = torch.full((1000,), 7, device=DEVICE, dtype=torch.int32)
    assert acc(x, out) is out  # outputs by position start as their values
    assert torch.equal(out, x + 7)
    fresh = acc(x)  # a new output starts at zero
    assert torch.equal(fresh, x)


def test_elementwise_kernel_broadcast_and_host():
    k = jitops.ElementwiseKernel("T x, T y", "T z", "z = x - y", "sub_k")
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = np.arange(4, dtype=np.float64)
    got = k(a, b)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, a - b)
    with pytest.raises(TypeError, match="y: expected dtype float64 for type T"):
        k(torch.zeros(3, device=DEVICE, dtype=torch.float64), torch.zeros(3, device=DEVICE))
