"""Mixed-dtype elementwise ops promote as PyTorch does for PyTorch tensors and as
NumPy does for everything else, for every dtype pair, Python numbers (weak in
both) and PyTorch's 0-d tensors; checked against numpy.result_type here and
against torch.result_type where PyTorch is installed."""

import numpy as np
import pytest

import jitops
from jitops import VirtualArray as V

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
          "float32", "float64"]
NUMBERS = {"number:int": 3, "number:float": 2.5, "number:bool": True}


def ours(x, y, rules, division=False, zero_dim_y=False):
    return jitops._core.result_dtype(x, y, rules, division, zero_dim_y)


def numpy_operand(side):
    return NUMBERS[side] if side in NUMBERS else np.ones(2, dtype=side)


@pytest.mark.parametrize("x", [d for d in DTYPES if d != "bfloat16"])
def test_numpy_rules_for_every_pair_and_number(x):
    for y in [d for d in DTYPES if d != "bfloat16"] + list(NUMBERS):
        expected = np.result_type(numpy_operand(x), numpy_operand(y)).name
        assert ours(x, y, "numpy") == expected, (x, y)
        with np.errstate(all="ignore"):
            quotient = (numpy_operand(x) / numpy_operand(y)).dtype.name
        assert ours(x, y, "numpy", division=True) == quotient, (x, y, "div")


def test_bfloat16_outside_pytorch_promotes_like_a_16_bit_float():
    assert ours("bfloat16", "float16", "numpy") == "float32"
    assert ours("bfloat16", "int8", "numpy") == "bfloat16" and ours("bfloat16", "int32", "numpy") == "float64"
    assert ours("bfloat16", "number:float", "numpy") == "bfloat16"
    assert ours("int16", "number:float", "numpy") == "float64"


@pytest.mark.parametrize("x", DTYPES)
def test_pytorch_rules_for_every_pair_number_and_0d_tensor(x):
    torch = pytest.importorskip("torch")

    def operand(side, zero_dim=False):
        if side in NUMBERS:
            return NUMBERS[side]
        return torch.ones((), dtype=getattr(torch, side)) if zero_dim else torch.ones(2, dtype=getattr(torch, side))

    for y in DTYPES + list(NUMBERS):
        for zero_dim in ((False, True) if y not in NUMBERS else (False,)):
            try:
                expected = str(torch.result_type(operand(x), operand(y, zero_dim))).replace("torch.", "")
            except RuntimeError:  # PyTorch refuses (uint16/32/64 with other types): so do we
                with pytest.raises(TypeError, match="PyTorch does not promote"):
                    ours(x, y, "torch", zero_dim_y=zero_dim)
                continue
            assert ours(x, y, "torch", zero_dim_y=zero_dim) == expected, (x, y, zero_dim)
            if x != "bool" or y != "bool":
                div = torch.div(operand(x), operand(y, zero_dim)).dtype if expected not in ("uint16", "uint32",
                                                                                           "uint64") else None
                if div is not None:
                    assert ours(x, y, "torch", division=True, zero_dim_y=zero_dim) == str(div)[6:], (x, y, "div")


def test_the_op_specializes_for_mixed_operands():
    (k,) = jitops.explain("mul", V([64, 32], "bfloat16"), V([32], "float32"), arch="sm_90")
    assert "typedef float Z;" in k["source"] and k["spec"]["dtypes"] != 0
    (k,) = jitops.explain("add", V([64], "int8"), V([64], "uint8"), arch="sm_90")
    assert "typedef short Z;" in k["source"]  # int16, as both libraries promote
    (k,) = jitops.explain("mul", V([64], "int32"), 2.5, arch="sm_90")
    assert "typedef double Z;" in k["source"]  # NumPy's float64 for an int array times a float
    (k,) = jitops.explain("mul", V([64], "int32"), 2.5, arch="sm_90", _promotion="torch")
    assert "typedef float Z;" in k["source"]  # PyTorch's float32
