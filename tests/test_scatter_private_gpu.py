"""Adds into private copies of a small self (runtime/ops/scatter_private_plan.cpp, templates/scatter_private.cuh):
index_add_ (alpha too; random and sorted values), scatter_add_ of one column, scatter_reduce_'s sum without
self, into a contiguous and a strided self, every dtype of 4 bytes or fewer that the adds take. Against numpy:
integers exactly (wrapping as the element's own adds), floats within the bound of the order-dependent rounding;
untouched -0.0 stays -0.0; a bad value's first position is reported and the other terms still land."""

import numpy as np
import pytest

import jitops
from gpu_data import index_checks_synced

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
from test_scatter_gpu import DTYPES, EPS, accumulate_reference, check_float, device_tensor, host  # noqa: E402

DEVICE = "cuda"
PRIVATE = "private copies of self"
SMALL = [d for d in DTYPES if d not in ("float64", "int64")]  # elements of 4 bytes or fewer
TERMS = 50000  # over 32768, and 32 a destination or more


def regime(*args, **kwargs):
    return jitops.explain(*args, **kwargs)[-1]["regime"]


def check(got, self_h, positions, terms, dtype):
    if dtype in EPS:
        ref, bound = accumulate_reference(self_h, positions, terms, dtype)
        check_float(got, ref, bound, dtype)
    else:
        ref = self_h.copy()
        np.add.at(ref, positions, terms.astype(self_h.dtype))
        np.testing.assert_array_equal(host(got), ref)


def terms_of(rng, shape, dtype):
    if dtype in EPS:
        return rng.standard_normal(shape)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", SMALL)
def test_index_add_and_scatter_add(dtype, index_dtype, layout):
    rng = np.random.default_rng([41, len(dtype), len(index_dtype), len(layout)])
    tdt = getattr(torch, dtype)
    for size, order in ((1157, "random"), (501, "sorted")):
        self_t = device_tensor(rng, (size,), dtype, layout)
        self_h = host(self_t)
        idx = rng.integers(0, size, TERMS)
        if order == "sorted":  # runs of lanes on one element add up before their atomic
            idx.sort()
        index = torch.from_numpy(idx.astype(index_dtype)).to(DEVICE)
        src = torch.from_numpy(terms_of(rng, TERMS, dtype)).to(DEVICE).to(tdt)
        terms = host(src)  # as rounded to the dtype
        alpha = 2 if size == 501 else 1
        assert regime(jitops.index_add_, self_t, 0, index, src, alpha=alpha) == PRIVATE
        jitops.index_add_(self_t, 0, index, src, alpha=alpha)
        scaled = terms * alpha if dtype in EPS else (terms.astype(np.int64) * alpha)
        check(self_t, self_h, idx, scaled, dtype)
    # one column: self (D, 1), index and src (n, 1)
    self_t = device_tensor(rng, (1000, 1), dtype, layout)
    self_h = host(self_t)
    idx = rng.integers(0, 1000, (TERMS, 1))
    src = torch.from_numpy(terms_of(rng, (TERMS, 1), dtype)).to(DEVICE).to(tdt)
    index = torch.from_numpy(idx.astype(index_dtype)).to(DEVICE)
    assert regime(jitops.scatter_add_, self_t, 0, index, src) == PRIVATE
    jitops.scatter_add_(self_t, 0, index, src)
    check(self_t, self_h, (idx[:, 0], np.zeros(TERMS, np.int64)), host(src)[:, 0], dtype)


@pytest.mark.parametrize("dtype", SMALL)
def test_sum_without_self(dtype):
    """scatter_reduce_ sum, include_self=False: touched elements hold their terms' sum alone."""
    rng = np.random.default_rng([42, len(dtype)])
    tdt = getattr(torch, dtype)
    self_t = device_tensor(rng, (1000,), dtype, "contiguous")
    self_h = host(self_t)
    idx = rng.integers(0, 800, TERMS)  # 200 elements never touched
    src = torch.from_numpy(terms_of(rng, TERMS, dtype)).to(DEVICE).to(tdt)
    index = torch.from_numpy(idx).to(DEVICE)
    assert regime(jitops.scatter_reduce_, self_t, 0, index, src, "sum", include_self=False) == PRIVATE
    jitops.scatter_reduce_(self_t, 0, index, src, "sum", include_self=False)
    start = self_h.copy()
    start[np.unique(idx)] = 0
    check(self_t, start, idx, host(src), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_untouched_negative_zeros_keep_their_sign(dtype):
    self_t = torch.full((1024,), -0.0, dtype=getattr(torch, dtype), device=DEVICE)
    idx = torch.arange(0, 1024, 2, device=DEVICE).repeat(70)  # every other element, 70 terms each
    src = torch.ones(idx.numel(), dtype=self_t.dtype, device=DEVICE)
    assert regime(jitops.index_add_, self_t, 0, idx, src) == PRIVATE
    jitops.index_add_(self_t, 0, idx, src)
    got = self_t.float().cpu().numpy()
    assert np.all(got[0::2] == 70)
    assert np.all(np.signbit(got[1::2])) and np.all(got[1::2] == 0)


def test_bad_values_report_the_first_position_and_the_rest_land():
    rng = np.random.default_rng(43)
    self_t = torch.zeros(1000, dtype=torch.float32, device=DEVICE)
    idx = rng.integers(0, 1000, TERMS)
    idx[[777, 30000]] = [1000, -4]
    src = torch.from_numpy(rng.standard_normal(TERMS).astype(np.float32)).to(DEVICE)
    index = torch.from_numpy(idx).to(DEVICE)
    assert regime(jitops.index_add_, self_t, 0, index, src) == PRIVATE
    with index_checks_synced(), pytest.raises(IndexError, match=r"^index_add_: index holds 1000 at position 777 "):
        jitops.index_add_(self_t, 0, index, src)
    good = (idx >= 0) & (idx < 1000)
    check(self_t, np.zeros(1000), idx[good], host(src)[good], "float32")
