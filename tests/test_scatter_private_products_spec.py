"""Products into private copies of a small self (runtime/ops/scatter_private_plan.cpp), planned for sm_90 with no
GPU: taken where the copy fits 48 KB of shared memory, with 32 terms a destination or more and at least 32768
terms, for every element but 16-bit floats in rows of 32 or more; the walk elsewhere, and for max and min.
Every element compiles; products flush an element at a time."""

import pytest

import jitops
from jitops import VirtualArray as V

PRIVATE = "private copies of self"
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64"]


def passes(*args, **kwargs):
    return jitops.explain(jitops.scatter_reduce_, *args, arch="sm_90", **kwargs)


def rows(dtype, dests, width, n):
    """self (dests, width), an index the same along each row (expanded), src (n, width)."""
    return V([dests, width], dtype), 0, V([n, width], "int32", strides=[1, 0]), V([n, width], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_element_compiles_with_and_without_self(dtype):
    args = (V([1000], dtype), 0, V([100000], "int64"), V([100000], dtype), "prod")
    (alone,) = passes(*args)
    assert alone["regime"] == PRIVATE and "op=20" in alone["kernel"] and "vec=1" in alone["kernel"]
    slot = 8 if dtype in ("float64", "int64") else 4  # float for 16-bit floats, int for narrow integers
    assert alone["registers"] > 0 and alone["shared_bytes_dynamic"] == 1000 * slot
    # without self: the identity stores first, then the private products
    identity, products = passes(*args, include_self=False)
    assert identity["regime"] != PRIVATE and "op=6" in identity["kernel"] and products["regime"] == PRIVATE


def test_seed_1894s_float64_rows_of_two():
    (p,) = passes(*rows("float64", 884, 2, 181262), "prod")
    assert p["regime"] == PRIVATE and p["shared_bytes_dynamic"] == 884 * 2 * 8


def test_sixteen_bit_floats_keep_the_walk_in_rows_of_32():
    for dtype in ("float16", "bfloat16"):
        assert passes(*rows(dtype, 300, 32, 20000), "prod")[-1]["regime"] != PRIVATE, dtype
        assert passes(*rows(dtype, 300, 16, 20000), "prod")[-1]["regime"] == PRIVATE, dtype
    assert passes(*rows("float32", 300, 32, 20000), "prod")[-1]["regime"] == PRIVATE


@pytest.mark.parametrize("args,why", [
    ((V([4096], "float32"), 0, V([100000], "int64"), V([100000], "float32")), "24 terms a destination"),
    ((V([512], "float32"), 0, V([30000], "int64"), V([30000], "float32")), "under 32768 terms"),
    ((V([7000], "float64"), 0, V([1000000], "int64"), V([1000000], "float64")), "a copy of 56 KB"),
])
def test_the_walk_stays_elsewhere(args, why):
    assert passes(*args, "prod")[-1]["regime"] != PRIVATE, why


def test_max_min_and_the_knob_keep_the_walk():
    args = (V([1000], "float32"), 0, V([100000], "int64"), V([100000], "float32"))
    assert passes(*args, "amax")[-1]["regime"] != PRIVATE
    assert passes(*args, "amin")[-1]["regime"] != PRIVATE
    previous = jitops._core._set_private_products_mode(0)
    try:
        assert passes(*args, "prod")[-1]["regime"] != PRIVATE
    finally:
        jitops._core._set_private_products_mode(previous)
    assert passes(*args, "prod")[-1]["regime"] == PRIVATE
