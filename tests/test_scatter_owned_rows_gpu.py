"""index_add_ through self's rows in shared memory (templates/scatter_owned_rows.cuh) against numpy: self
stored with the indexed dim innermost, src dense along it, along the rows, or expanded along it; rows shorter
and longer than a block; 1, 2, 4 and 8 warps a row's destinations (few and many terms); odd row counts, so that
the last block is short; a layout of four dims that do not collapse. Every element type, repeated index values, alpha.
The knob forces the regime where the planner's rule would not take these small shapes; one shape takes it
by the rule. Integers exact, floats within the rounding bound of their terms, and the same bits on a
second run (each destination's terms go in the index's order). Bad values raise IndexError at the first
position and write nothing through them."""

import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
from test_scatter_gpu import DTYPES, EPS, accumulate_reference, check_float, host, seed  # noqa: E402
from test_scatter_tiles_gpu import random_tensor, stored_in, sync_checks  # noqa: E402, F401 - sync_checks: a fixture

DEVICE = "cuda"


# (self's shape, dim, self's memory order, terms, src: "dense" along dim, "rows" (owners innermost) or
# "expanded" along dim)
CASES = [((300, 37), 1, (0, 1), 50, "dense"),
         ((45, 129, 13), 1, (0, 2, 1), 40, "rows"),
         ((7, 301, 11), 1, (0, 2, 1), 200, "expanded"),
         ((1000, 5), 1, (0, 1), 9, "dense"),
         ((3, 5, 7, 29), 3, (1, 0, 2, 3), 20, "rows")]


def src_for(rng, shape, dim, terms, kind, dtype):
    src_shape = list(shape)
    src_shape[dim] = terms
    if kind == "expanded":
        one = list(src_shape)
        one[dim] = 1
        return random_tensor(rng, one, dtype).expand(*src_shape)
    t = random_tensor(rng, src_shape, dtype)
    if kind == "dense":
        return t
    return stored_in(t, [dim] + [d for d in range(len(shape)) if d != dim])  # the indexed dim outermost


@pytest.fixture
def forced():
    before = jitops._core._set_owned_rows(1)
    yield
    jitops._core._set_owned_rows(before)


def run_case(rng, shape, dim, order, terms, kind, dtype, index_dtype, alpha):
    self_t = stored_in(random_tensor(rng, shape, dtype), order)
    src_t = src_for(rng, shape, dim, terms, kind, dtype)
    idx = rng.integers(0, shape[dim], terms)  # repeated values: their terms meet on one destination
    index = torch.from_numpy(idx.astype(index_dtype)).to(DEVICE)
    plan = jitops.explain("index_add_", self_t, dim, index, src_t, alpha=alpha)[0]
    assert plan["spec"]["owned"] in (2, 3), (shape, plan["kernel"])
    before = host(self_t)
    start = self_t.clone()
    jitops.index_add_(self_t, dim, index, src_t, alpha=alpha)
    terms_h = np.moveaxis(host(src_t), dim, 0)
    if dtype in EPS:
        ref, bound = accumulate_reference(np.moveaxis(before, dim, 0), idx, alpha * terms_h, dtype)
        check_float(self_t.movedim(dim, 0), ref, bound, dtype)
    else:
        ref = np.moveaxis(before, dim, 0).astype(np.int64)
        np.add.at(ref, idx, alpha * terms_h.astype(np.int64))
        np.testing.assert_array_equal(np.moveaxis(host(self_t), dim, 0), ref.astype(dtype))
    jitops.index_add_(start, dim, index, src_t, alpha=alpha)
    np.testing.assert_array_equal(host(start), host(self_t))  # the same bits: floats exactly in float64
    return plan


@pytest.mark.parametrize("alpha", [1, 3])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_adds_along_self_dense_dim(dtype, index_dtype, alpha, forced):
    rng = np.random.default_rng(seed("owned rows", dtype, index_dtype, alpha))
    warps, staging = set(), set()
    for case in CASES:
        plan = run_case(rng, *case, dtype, index_dtype, alpha)
        warps.add(plan["spec"]["row_warps"])
        staging.add(plan["spec"]["owned"])
    assert warps == {1, 2, 4, 8} and staging == {2, 3}, (warps, staging)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_the_rule_takes_many_terms_into_short_rows(dtype):
    rng = np.random.default_rng(seed("owned rows rule", dtype))
    # seed 9111's layout, smaller: rows of 128 stored along the indexed dim (dim 0), 130 terms, 8192 owners
    run_case(rng, (128, 8192), 0, (1, 0), 130, "rows", dtype, "int64", 1)


def test_bad_values_are_reported_and_skipped(forced, sync_checks):
    rng = np.random.default_rng(seed("owned rows bad"))
    shape, dim, order, terms, kind = CASES[1]
    self_t = stored_in(random_tensor(rng, shape, "float32"), order)
    src_t = src_for(rng, shape, dim, terms, kind, "float32")
    idx = rng.integers(0, shape[dim], terms)
    first = terms // 2
    idx[first] = shape[dim] + 5
    idx[terms - 1] = -1
    index = torch.from_numpy(idx).to(DEVICE)
    assert jitops.explain("index_add_", self_t, dim, index, src_t)[0]["spec"]["owned"] in (2, 3)
    good = (idx >= 0) & (idx < shape[dim])
    ref, bound = accumulate_reference(np.moveaxis(host(self_t), dim, 0), idx[good],
                                      np.moveaxis(host(src_t), dim, 0)[good], "float32")
    with pytest.raises(IndexError, match=rf"^index_add_: index holds {shape[dim] + 5} at position {first} "):
        jitops.index_add_(self_t, dim, index, src_t)
    check_float(self_t.movedim(dim, 0), ref, bound, "float32")
    # the context is fine: the same call with the bad values replaced
    idx[~good] = 0
    ref, bound = accumulate_reference(np.moveaxis(host(self_t), dim, 0), idx, np.moveaxis(host(src_t), dim, 0),
                                      "float32")
    jitops.index_add_(self_t, dim, torch.from_numpy(idx).to(DEVICE), src_t)
    check_float(self_t.movedim(dim, 0), ref, bound, "float32")
