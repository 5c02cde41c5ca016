"""The elementwise family on the GPU: the built-in binary ops against numpy
and bit for bit against PyTorch, for every dtype x layout (dense, transposed,
broadcast, a number operand), into fresh and poisoned out= buffers; and
jitops.ElementwiseKernel with placeholders, numbers, several outputs, out=
and host arrays."""

import zlib

import numpy as np
import pytest

import jitops
from gpu_data import DTYPES as ALL_DTYPES
from gpu_data import assert_same_bits, poisoned_like, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64"]

def as_tensor(v):
    return v if torch.is_tensor(v) else torch.tensor(v, device=DEVICE)


OPS = {"add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract),
       "mul": (lambda a, b: a * b, np.multiply),
       # PyTorch divides a tensor by a number as a * (1 / b), which jitops does for PyTorch tensors; a number
       # divided by a tensor is reciprocal(b) * a in PyTorch, while jitops divides: 0-d device tensors take
       # PyTorch's true division there.
       "div": (lambda a, b: torch.div(a, b) if torch.is_tensor(a) and not torch.is_tensor(b)
               else torch.div(as_tensor(a), as_tensor(b)), np.true_divide),
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
    assert_matches_numpy(op, a, b, got)


def assert_matches_numpy(op, a, b, got):
    """`got` within one rounding of its dtype of numpy's float64 (or wrapping integer) result."""
    ref = numpy_reference(op, a, b, got.dtype)
    got64 = to_float64(got)
    if got.dtype == torch.bfloat16:
        nan = np.isnan(got64)
        np.testing.assert_array_equal(nan, np.isnan(ref))
    if got.dtype.is_floating_point:
        eps = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 2.0**-23, torch.float64: 2.0**-52}
        # A PyTorch tensor divided by a number is x * (1 / b), PyTorch's way: two roundings.
        roundings = 2 if op == "div" and torch.is_tensor(a) and not torch.is_tensor(b) else 1
        np.testing.assert_allclose(got64, ref, rtol=roundings * eps[got.dtype], atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(got64, np.asarray(ref).astype(got64.dtype))


def broadcast_shapes(dims):
    """x of `dims` dims against a y that is 1 along every other one: no two dims collapse, so the strided
    kernel sees all of them (its own kernel up to 6 dims, the generic loop past)."""
    x_shape = (3, 5, 2, 7, 3, 4, 2)[:dims - 1] + (33,)
    return x_shape, tuple(1 if d % 2 == 0 else n for d, n in enumerate(x_shape))


@pytest.mark.parametrize("dims", [4, 5, 6, 7])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sub", "maximum"])
def test_broadcast_over_many_dims(op, dtype, dims):
    rng = rng_for("many dims", op, dtype, dims)
    x_shape, y_shape = broadcast_shapes(dims)
    x = random_tensor(rng, x_shape, dtype)
    y = random_tensor(rng, y_shape, dtype)
    kernel = jitops.explain(getattr(jitops, op), x, y)[0]["kernel"]
    assert f"dims={dims if dims <= 6 else 16} " in kernel, kernel
    expected = OPS[op][0](x, y)
    out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
    assert getattr(jitops, op)(x, y, out=out) is out
    assert_same_values(out, expected)
    assert_matches_numpy(op, x, y, out)


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


@pytest.mark.parametrize("dtype", DTYPES)
def test_dense_tails_every_dtype(dtype):
    # The tail (fewer than one pack) is loaded before the packs' loop and stored after it: every size from
    # tail alone to packs and tail, with a tensor, a number and in place (out= an input).
    rng = rng_for("tails", dtype)
    number = 2.5 if dtype.startswith(("float", "bfloat")) else 3
    for n in (1, 7, 15, 17, 4099, 65536 + 13):
        x, y = random_tensor(rng, (n,), dtype), random_tensor(rng, (n,), dtype)
        for op, b in (("add", y), ("mul", number), ("maximum", y)):
            expected = OPS[op][0](x, b)
            out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
            assert getattr(jitops, op)(x, b, out=out) is out
            assert_same_values(out, expected)
        inplace = x.clone()
        jitops.sub(inplace, y, out=inplace)
        assert_same_values(inplace, x - y)


def test_elementwise_kernel_tail_of_outputs_that_start_as_their_values():
    acc = jitops.ElementwiseKernel("T x", "T acc", "acc += x", "accumulate_tail")
    for n in (5, 1003, 4096 + 3):
        x = torch.arange(n, device=DEVICE, dtype=torch.int16)
        out = torch.full((n,), 7, device=DEVICE, dtype=torch.int16)
        assert acc(x, out) is out
        assert torch.equal(out, x + 7)


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


# ---------------------------------------------------------------- the tile regime (operands dense along other dims)

TILED = "tiled: operands dense along another dim staged through shared memory"


def permuted(rng, shape, dtype, order, nonzero=False):
    """A random tensor of logical `shape` whose dims are stored outermost-first in `order` (a permuted view)."""
    stored = random_tensor(rng, [shape[d] for d in order], dtype, nonzero)
    return stored.permute(*[order.index(d) for d in range(len(shape))])


def regime(fn, *args, **kwargs):
    return jitops.explain(fn, *args, **kwargs)[0]["regime"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "div", "minimum"])
def test_tiled_binary_op_every_dtype(op, dtype):
    rng = rng_for("tiled", op, dtype)
    shape = (37, 3, 129)  # odd sizes: tiles partly outside the array along both a and b
    x = random_tensor(rng, shape, dtype)
    y = permuted(rng, shape, dtype, [2, 1, 0], nonzero=op == "div")
    assert regime(getattr(jitops, op), x, y) == TILED
    expected = OPS[op][0](x, y)
    out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
    assert getattr(jitops, op)(x, y, out=out) is out
    assert_same_values(out, expected)
    got = getattr(jitops, op)(x, y)
    assert got.is_contiguous()  # a new output follows x, as PyTorch's does
    assert_same_values(got, expected)
    assert_matches_numpy(op, x, y, got)


PERMUTATIONS = [
    ((300, 301), [1, 0]),
    ((33, 1000), [1, 0]),
    ((1000, 17), [1, 0]),  # 17 along a: each tile's second half along a outside the array
    ((16, 5000), [1, 0]),  # 16 along b: tiles of 64 x 16
    ((5, 40, 33), [0, 2, 1]),
    ((20, 3, 31), [2, 0, 1]),
    ((3, 17, 65), [2, 0, 1]),
    ((3, 18, 5, 20), [0, 3, 2, 1]),
    ((2, 33, 3, 40), [2, 0, 3, 1]),
    ((4, 19, 6, 23), [0, 2, 3, 1]),
]


@pytest.mark.parametrize("shape,order", PERMUTATIONS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int8"])
def test_tiled_permutations_against_numpy(shape, order, dtype):
    rng = rng_for("perm", shape, order, dtype)
    x = random_tensor(rng, shape, dtype)
    y = permuted(rng, shape, dtype, order)
    assert regime(jitops.sub, x, y) == TILED
    for a, b in ((x, y), (y, x)):  # the output follows the first operand: either one is staged
        expected = OPS["sub"][0](a, b)
        out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
        jitops.sub(a, b, out=out)
        assert_same_values(out, expected)
        assert_matches_numpy("sub", a, b, out)


# Tiles fitted to short dims (NOTES 102), each order of operands so that a and b each take the fitted edge:
# 19 in one tile of 19 (160 threads for 608 elements, the last pass partly past the tile's end), 35 in two of
# 18 and 21 in one of 21 (96 threads for 378), 40 in two of 20 beside a batch dim.
FITTED = [((4000, 19), [1, 0]), ((5, 21, 35), [0, 2, 1]), ((3, 40, 700), [0, 2, 1])]


@pytest.mark.parametrize("shape,order", FITTED)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tiles_fitted_to_short_dims(shape, order, dtype):
    rng = rng_for("fitted", shape, order, dtype)
    x = random_tensor(rng, shape, dtype)
    y = permuted(rng, shape, dtype, order)
    for a, b in ((x, y), (y, x)):
        (k,) = jitops.explain(jitops.sub, a, b)
        assert k["regime"] == TILED
        assert k["spec"]["tile_a"] & (k["spec"]["tile_a"] - 1) or k["spec"]["tile_b"] & (k["spec"]["tile_b"] - 1)
        for op in ("sub", "maximum"):  # exact where the values are close: no subnormal roundings to weigh
            expected = OPS[op][0](a, b)
            out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
            getattr(jitops, op)(a, b, out=out)
            assert_same_values(out, expected)
            assert_matches_numpy(op, a, b, out)


def test_the_notes_case_at_a_smaller_size():
    # NOTES item 39: float64 minimum of x (128, 16, n) against its permutation, strides (16, 1, 2048)
    rng = rng_for("notes-39")
    x = random_tensor(rng, (128, 16, 4096), "float64")
    y = random_tensor(rng, (4096, 128, 16), "float64").permute(1, 2, 0)
    assert y.stride() == (16, 1, 2048)
    assert regime(jitops.minimum, x, y) == TILED
    assert_same_values(jitops.minimum(x, y), torch.minimum(x, y))
    out = poisoned_like(torch, (4096, 128, 16), torch.float64, DEVICE).permute(1, 2, 0)  # in y's layout
    assert regime(jitops.minimum, x, y, out=out) == TILED
    jitops.minimum(x, y, out=out)
    assert_same_values(out, torch.minimum(x, y))


MIN_ADD = jitops.ElementwiseKernel("T x, T y, T r", "T z", "z = (x < y ? x : y) + r", "min_add")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_tiled_with_broadcast_and_number_operands(dtype):
    rng = rng_for("tiled-broadcast", dtype)
    z = random_tensor(rng, (6, 40, 50), dtype)
    y = permuted(rng, (1, 40, 50), dtype, [0, 2, 1]).expand(6, 40, 50)  # broadcast over dim 0, transposed
    assert regime(jitops.add, z, y) == TILED
    assert_same_values(jitops.add(z, y), z + y)
    # two batch dims, y broadcast along the outer one, 85-170 MB moved between two reads of a stretch of y
    # b first (past the L2): the tiles run over the batch first; ragged tiles (43 along a)
    x4 = random_tensor(rng, (65536, 4, 5, 43), dtype).permute(1, 2, 3, 0)  # (4, 5, 43, 65536), dense along dim 2
    y3 = random_tensor(rng, (43, 5, 65536), dtype).permute(1, 0, 2)  # (5, 43, 65536), dense along dim 2
    (k,) = jitops.explain(jitops.maximum, x4, y3)
    assert k["regime"] == TILED and k["spec"]["batch_first"] == 1 and k["spec"]["staged"] == 0b010
    assert_same_values(jitops.maximum(x4, y3), torch.maximum(x4, y3))
    # a third operand broadcast along the inner dim (stride 0 along a) is read along a, not staged
    x = permuted(rng, (6, 40, 50), dtype, [0, 2, 1])
    r = random_tensor(rng, (6, 40, 1), dtype)
    (k,) = MIN_ADD.explain(z, x, r)
    assert k["regime"] == TILED and k["spec"]["staged"] == 0b010
    got = MIN_ADD(z, x, r)
    assert_same_values(got, torch.where(z < x, z, x) + r)
    # a number, with x staged (the output is contiguous) and first or second
    number = 2.5 if dtype != "int32" else 3
    out = poisoned_like(torch, (6, 40, 50), getattr(torch, dtype), DEVICE)
    assert regime(jitops.mul, x, number, out=out) == TILED
    jitops.mul(x, number, out=out)
    assert_same_values(out, x * number)
    out2 = poisoned_like(torch, (6, 40, 50), getattr(torch, dtype), DEVICE)
    jitops.sub(number, x, out=out2)
    assert_same_values(out2, number - x)


def test_tiled_empty_arrays():
    x = torch.empty(0, 64, device=DEVICE)
    y = torch.empty(64, 0, device=DEVICE).t()
    got = jitops.add(x, y)
    assert got.shape == (0, 64)


PICK = jitops.ElementwiseKernel("T x, T y", "T z", "z = x < y ? x : y", "pick")
TWO = jitops.ElementwiseKernel("T x, T y", "T z, float64 w", "z = x - y; w = double(x) * 2 + double(y)", "two_out")
ACC = jitops.ElementwiseKernel("T x, T y", "T s, T d", "s += x; d = d * y + x", "acc2")


def host_values(host, dtype):
    """numpy values to compute a reference with (bfloat16 from its int16 bits)."""
    if dtype == "bfloat16":
        return (host.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return host


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if not d.startswith("complex")])  # the family takes no complex
def test_tiled_elementwise_kernel_every_dtype(dtype):
    rng = rng_for("pick", dtype)
    shape = (45, 70)
    hx = random_host(rng, shape, dtype)
    hy = random_host(rng, shape[::-1], dtype)
    x, y = to_torch(torch, hx, dtype, DEVICE), to_torch(torch, hy, dtype, DEVICE).t()
    assert PICK.explain(x, y)[0]["regime"] == TILED
    out = poisoned_like(torch, shape, x.dtype, DEVICE)
    PICK(x, y, out)
    vx, vy = host_values(hx, dtype), host_values(hy.T, dtype)
    expected = np.where(vx < vy, hx, hy.T)
    assert_same_bits(to_numpy(torch, out), expected)


@pytest.mark.parametrize("layouts", [("c", "c"), ("t", "c"), ("c", "t"), ("t", "t")])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8"])
def test_tiled_elementwise_kernel_two_outputs(dtype, layouts):
    rng = rng_for("two", dtype, layouts)
    shape = (45, 70)
    x = random_tensor(rng, shape, dtype)
    y = permuted(rng, shape, dtype, [1, 0])

    def laid_out(t, layout):  # t's values in layout "c" (contiguous) or "t" (transposed)
        return t.clone() if layout == "c" else t.t().contiguous().t()

    def poisoned(dt, layout):
        t = poisoned_like(torch, shape if layout == "c" else shape[::-1], dt, DEVICE)
        return t if layout == "c" else t.t()

    z, w = poisoned(x.dtype, layouts[0]), poisoned(torch.float64, layouts[1])
    assert TWO.explain(x, y, z, w)[0]["regime"] == TILED
    TWO(x, y, z, w)
    assert_same_values(z, x - y)
    assert_same_values(w, x.double() * 2 + y.double())
    # outputs that start as the caller's values (load_outputs), staged or not
    s0, d0 = random_tensor(rng, shape, dtype), random_tensor(rng, shape, dtype)
    s, d = laid_out(s0, layouts[0]), laid_out(d0, layouts[1])
    result = ACC(x, y, s, d)
    assert result[0] is s and result[1] is d
    assert_same_values(s, s0 + x)
    if dtype.startswith("float"):  # d * y + x may be one fma
        eps = 2.0**-23 if dtype == "float32" else 2.0**-51
        exact = d0.double() * y.double() + x.double()
        bound = (d0.double() * y.double()).abs() + x.double().abs()
        got = d.double()
        assert torch.equal(torch.isnan(got), torch.isnan(exact))
        ok = ((got - exact).abs() <= eps * bound) | torch.isnan(exact)
        assert torch.all(ok)
    else:
        assert_same_values(d, d0 * y + x)
    # new outputs follow x's layout
    z2, w2 = TWO(x, y)
    assert z2.is_contiguous() and w2.is_contiguous()
    assert_same_values(z2, z)
    assert_same_values(w2, w)
