"""Adds into private copies of a small self (runtime/ops/scatter_private_plan.cpp), planned for sm_90 with no
GPU: taken for one column (or a 1-D self) of elements of 4 bytes or fewer with 32 terms a destination or more
and at least 32768 terms, the copy within 48 KB of shared memory; the walk elsewhere. Every element compiles."""

import pytest

import jitops
from jitops import VirtualArray as V

PRIVATE = "private copies of self"


def plan(*args, **kwargs):
    return jitops.explain(*args, arch="sm_90", **kwargs)[-1]


def test_seed_1817s_float16_column():
    p = plan(jitops.scatter_add_, V([1157, 1], "float16"), 0, V([264029, 1], "int64", strides=[1, 0]),
             V([264029, 1], "float16"))
    # 1157 slots of float accumulators (4640 bytes, rounded to 16); an odd count flushes a slot at a time
    assert p["regime"] == PRIVATE and "op=17" in p["kernel"] and "vec=1" in p["kernel"]
    assert p["shared_bytes_dynamic"] == 4640 and p["grid"][0] <= 264
    # scatter_reduce_'s sum without self: the identity pass, then the private adds
    passes = jitops.explain(jitops.scatter_reduce_, V([1912, 1], "float16"), 0, V([402643, 1], "int64"),
                            V([402643, 1], "float16"), "sum", include_self=False, arch="sm_90")
    assert [r["regime"] for r in passes] == [None, PRIVATE]


@pytest.mark.parametrize("dtype,vec", [("int8", 4), ("uint8", 4), ("int16", 2), ("int32", 1), ("float16", 8),
                                       ("bfloat16", 8), ("float32", 4)])
def test_every_small_element_compiles_and_packs_its_flush(dtype, vec):
    p = plan(jitops.index_add_, V([2048], dtype), 0, V([100000], "int32"), V([100000], dtype), alpha=2)
    assert p["regime"] == PRIVATE and f"vec={vec}" in p["kernel"] and "alpha=1" in p["kernel"]
    assert p["registers"] > 0
    strided = plan(jitops.index_add_, V([2048], dtype, strides=[3]), 0, V([200000], "int32"), V([200000], dtype))
    assert strided["regime"] == PRIVATE and "vec=1" in strided["kernel"]  # gaps in the span are never written


@pytest.mark.parametrize("args,why", [
    ((V([2048], "float64"), 0, V([100000], "int64"), V([100000], "float64")), "float64's native atomics"),
    ((V([2048], "int64"), 0, V([100000], "int64"), V([100000], "int64")), "int64's native atomics"),
    ((V([4096], "float32"), 0, V([100000], "int64"), V([100000], "float32")), "24 terms a destination"),
    ((V([512], "float32"), 0, V([30000], "int64"), V([30000], "float32")), "under 32768 terms"),
    ((V([20000], "float32"), 0, V([1000000], "int64"), V([1000000], "float32")), "a copy of 80 KB"),
    ((V([70, 8], "float32"), 0, V([40000], "int64"), V([40000, 8], "float32")), "rows of 8: vector atomics"),
])
def test_the_walk_stays_elsewhere(args, why):
    assert plan(jitops.index_add_, *args)["regime"] != PRIVATE, why


def test_other_reductions_and_deterministic_sums_keep_their_paths():
    """Max keeps the walk, deterministic sums their sort; products take copies of their own
    (test_scatter_private_products_spec.py)."""
    args = (V([1000], "float32"), 0, V([100000], "int64"), V([100000], "float32"))
    assert "op=20" in plan(jitops.scatter_reduce_, *args, "prod")["kernel"]
    assert plan(jitops.scatter_reduce_, *args, "amax")["regime"] != PRIVATE
    assert all(r["regime"] != PRIVATE for r in jitops.explain(jitops.index_add_, *args, deterministic=True,
                                                              arch="sm_90"))
