"""Products into private copies of a small self (runtime/ops/scatter_private_plan.cpp, templates/scatter_private.cuh):
scatter_reduce_ prod with and without self, into a column, into narrow rows through an expanded index, and into
every other row of a larger tensor, through random, sorted and 5 repeated values, every dtype. The terms make
every product exact in any order (odd integers, wrapping as the element's own products; floats of a random
sign, a few of them 2 or 0.5), so every element is compared bit for bit with numpy's: a term lost or taken
twice flips a sign or an exponent. Near-one float terms, rounded, against numpy within the rounding bound.
Rows no term names, and the rows between a strided self's, keep their values."""

import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
from test_scatter_gpu import DTYPES, EPS, cas_pack_terms, expect_reduced, host, seed  # noqa: E402

DEVICE = "cuda"
PRIVATE = "private copies of self"
TERMS = 140000  # rows of terms: over 32768 terms, and 32 a destination or more for every layout below
DESTS = 1000


def odd_values(rng, dtype, shape):
    """Floats of magnitude 0.5 to 2; integers odd, in [-3, 3], so that no product of many terms wraps to 0."""
    if dtype in EPS:
        values = rng.uniform(0.5, 2, shape) * rng.choice([-1, 1], shape)
        return torch.from_numpy(values).to(DEVICE).to(getattr(torch, dtype))
    return torch.from_numpy((rng.choice([1, 3], shape) * rng.choice([-1, 1], shape)).astype(dtype)).to(DEVICE)


def exact_terms(rng, dtype, shape, per_element):
    """Odd integers; floats of a random sign, 2 or 0.5 where about one term an element is, 1 elsewhere: every
    partial product is exact and within range, whatever the order."""
    if dtype not in EPS:
        return odd_values(rng, dtype, shape)
    scale = np.where(rng.random(shape) < 1.0 / per_element, rng.choice([0.5, 2.0], shape), 1.0)
    values = scale * rng.choice([-1.0, 1.0], shape)
    return torch.from_numpy(values).to(DEVICE).to(getattr(torch, dtype))


def exact_reference(before, idx, terms, include_self):
    ref = before.copy()  # floats as float64, integers in their own dtype (host's), wrapping as the element's
    if not include_self:
        ref[np.unique(idx)] = 1
    np.multiply.at(ref, idx, terms.astype(ref.dtype))
    return ref


def index_values(rng, kind):
    if kind == "random":
        return rng.integers(0, DESTS, TERMS)
    if kind == "sorted":
        return np.sort(rng.integers(0, DESTS - DESTS // 5, TERMS))  # the last fifth never named
    return rng.choice(rng.integers(0, DESTS, 5), TERMS)


@pytest.mark.parametrize("include_self", [True, False], ids=["with_self", "without_self"])
@pytest.mark.parametrize("kind", ["random", "sorted", "repeated"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_products_into_a_column_narrow_rows_and_a_strided_self(dtype, kind, include_self):
    rng = np.random.default_rng(seed("private products", dtype, kind, str(include_self)))
    for layout, width in (("column", 1), ("rows", 3), ("every other row", 2)):
        idx = index_values(rng, kind)
        whole = odd_values(rng, dtype, (2 * DESTS if layout == "every other row" else DESTS, width))
        self_t = whole[::2] if layout == "every other row" else whole
        before, whole_before = host(self_t), host(whole)
        terms_an_element = TERMS / 5 if kind == "repeated" else TERMS / DESTS
        src = exact_terms(rng, dtype, (TERMS, width), terms_an_element)
        index = torch.from_numpy(idx).to(DEVICE)[:, None].expand(TERMS, width)
        if layout == "column":  # a 1-D self through a 1-D index
            self_t, src, index, before = self_t[:, 0], src[:, 0], index[:, 0], before[:, 0]
        reports = jitops.explain(jitops.scatter_reduce_, self_t, 0, index, src, "prod", include_self=include_self)
        assert reports[-1]["regime"] == PRIVATE, (layout, reports[-1])
        jitops.scatter_reduce_(self_t, 0, index, src, "prod", include_self=include_self)
        got = host(self_t)  # numpy's ufunc.at takes the row index whole along dim 0
        expected = exact_reference(before, idx, host(src), include_self)
        np.testing.assert_array_equal(got.astype(expected.dtype), expected, err_msg=layout)
        if layout == "every other row":
            np.testing.assert_array_equal(host(whole)[1::2], whole_before[1::2])


def test_seed_1894s_float64_rows_of_two_match_pytorch():
    """The sweep case that sent the rule here: 181262 random rows of 2 into (884, 2), with self."""
    rng = np.random.default_rng(seed("private products 1894"))
    self_t = odd_values(rng, "float64", (884, 2))
    idx = rng.integers(0, 884, 181262)
    index = torch.from_numpy(idx).to(DEVICE)[:, None].expand(181262, 2)
    src = cas_pack_terms(rng, "prod", "float64", (181262, 2))
    expected = self_t.clone().scatter_reduce_(0, index, src, "prod")
    assert jitops.explain(jitops.scatter_reduce_, self_t, 0, index, src, "prod")[-1]["regime"] == PRIVATE
    jitops.scatter_reduce_(self_t, 0, index, src, "prod")
    torch.testing.assert_close(self_t, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_rounded_products_of_near_one_terms(dtype):
    """Terms 1 +- 0.01, random values into a column: the rounding of every order stays within numpy's bound."""
    rng = np.random.default_rng(seed("private products rounded", dtype))
    self_t = odd_values(rng, dtype, (DESTS,))
    idx = rng.integers(0, DESTS, TERMS)
    src = cas_pack_terms(rng, "prod", dtype, (TERMS,))
    before = host(self_t)
    index = torch.from_numpy(idx).to(DEVICE)
    assert jitops.explain(jitops.scatter_reduce_, self_t, 0, index, src, "prod")[-1]["regime"] == PRIVATE
    jitops.scatter_reduce_(self_t, 0, index, src, "prod")
    expect_reduced(self_t, before, idx, host(src), "prod", True, dtype)
