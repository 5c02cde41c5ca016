"""Mixed dtypes on the GPU: PyTorch tensors give torch's result dtype and bits,
numpy arrays numpy's; new outputs follow the inputs' layout (transposed,
channels-last) as PyTorch's do."""

import zlib

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, to_numpy

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
TORCH_OPS = {"add": torch.add, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum}


def values(dtype, shape, seed, host=False):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        a = rng.integers(0, 2, shape).astype(bool)
    elif dtype.startswith(("int", "uint")):
        a = rng.integers(1, 60, shape).astype(dtype)
    else:
        a = (rng.standard_normal(shape) * 3).astype(np.float32)
    if host:
        return a.astype(dtype) if dtype != "bfloat16" else a
    t = torch.from_numpy(a)
    return t.to(getattr(torch, dtype)).to(DEVICE)


@pytest.mark.parametrize("x_dtype", DTYPES)
@pytest.mark.parametrize("op", list(TORCH_OPS))
def test_pytorch_pairs_give_torchs_dtype_and_bits(op, x_dtype):
    for y_dtype in DTYPES:
        x = values(x_dtype, (33, 65), zlib.crc32(f"{op}{x_dtype}{y_dtype}".encode()))
        y = values(y_dtype, (65,), zlib.crc32(f"y{op}{x_dtype}{y_dtype}".encode()))
        try:
            expected = TORCH_OPS[op](x, y)
        except RuntimeError:
            continue  # PyTorch refuses (e.g. bool - bool)
        if expected.dtype == torch.bool:
            continue
        got = getattr(jitops, op)(x, y)
        assert got.dtype == expected.dtype, (x_dtype, y_dtype)
        assert_same_bits(to_numpy(torch, got), to_numpy(torch, expected))
    # numbers and 0-d tensors are weak as in PyTorch
    x = values(x_dtype, (100,), 7)
    for number in (3, 2.5):
        if x_dtype == "bool" and op in ("div",):
            continue
        # torch.maximum takes no number: it takes the 0-d tensor, weak like the number. torch.div by a number
        # multiplies by its reciprocal, as jitops does for PyTorch tensors.
        weak = torch.tensor(number, device=DEVICE) if op == "maximum" else number
        expected = TORCH_OPS[op](x, weak)
        got = getattr(jitops, op)(x, number) if op != "maximum" else jitops.maximum(x, weak)
        if expected.dtype != torch.bool:
            assert got.dtype == expected.dtype and torch.equal(got.double(), expected.double()), (x_dtype, number)


@pytest.mark.parametrize("x_dtype", [d for d in DTYPES if d != "bfloat16"])
def test_numpy_arrays_give_numpys_dtype_and_values(x_dtype):
    for y_dtype in [d for d in DTYPES if d not in ("bfloat16",)]:
        x = values(x_dtype, (17, 9), 1, host=True)
        y = values(y_dtype, (9,), 2, host=True)
        for op, ref in (("add", np.add), ("div", np.true_divide)):
            if x_dtype == y_dtype == "bool":
                continue
            expected = ref(x, y)
            got = getattr(jitops, op)(x, y)
            assert isinstance(got, np.ndarray) and got.dtype == expected.dtype, (op, x_dtype, y_dtype)
            np.testing.assert_array_equal(got, expected)
    x = values(x_dtype, (50,), 3, host=True)
    if x_dtype != "bool":
        assert jitops.mul(x, 2.5).dtype == (x * 2.5).dtype  # an int array times a float: float64, as numpy


def test_outputs_follow_the_inputs_layout():
    x = torch.randn(64, 96, device=DEVICE).t()
    got = jitops.add(x, x)
    assert got.stride() == (x + x).stride() == (1, 96) and torch.equal(got, x + x)
    cl = torch.randn(4, 32, 9, 11, device=DEVICE).to(memory_format=torch.channels_last)
    bias = torch.randn(32, 1, 1, device=DEVICE)
    got = jitops.add(cl, bias)
    assert got.is_contiguous(memory_format=torch.channels_last) and torch.equal(got, cl + bias)
    half = cl.half()
    got = jitops.mul(half, cl)  # mixed dtypes, channels-last: float32, channels-last
    assert got.dtype == torch.float32 and got.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(got, half * cl)


@pytest.mark.parametrize("shape,y_shape", [((4097, 129), (129,)), ((1 << 20,), (1,)), ((64, 1000), (64, 1)),
                                           ((3, 5, 7, 11), (5, 1, 11))])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int32"])
def test_broadcast_plans_against_torch(shape, y_shape, dtype):
    x = values(dtype, shape, 11)
    y = values(dtype, y_shape, 12)
    for op in ("add", "mul", "maximum"):
        expected = TORCH_OPS[op](x, y)
        assert torch.equal(getattr(jitops, op)(x, y), expected), (op, shape, y_shape)
    transposed = values(dtype, shape[::-1], 13).permute(*reversed(range(len(shape))))
    assert torch.equal(jitops.sub(x, transposed), x - transposed)
