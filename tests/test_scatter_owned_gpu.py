"""The owned walk (templates/scatter_owned.cuh: a thread takes every term of its destinations, with plain
loads and stores) forced wherever it applies: the accumulate family's every-case tests (every dtype x index
dtype x dims x dim x layout x reduction, with duplicate indices) and the index checks' tests run again
through it, and a plan of each op shows that it was taken."""

import numpy as np
import pytest

import jitops

torch = pytest.importorskip("torch")
import test_index_checks_gpu as checks  # noqa: E402 - after the skip: both need torch
import test_scatter_gpu as scatter  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def owned_wherever_it_applies():
    before = jitops._core._owned_walk()
    jitops._core._set_owned_walk(1)
    yield
    jitops._core._set_owned_walk(before)


mode = checks.mode
test_index_add = scatter.test_index_add
test_scatter_add_and_reduce = scatter.test_scatter_add_and_reduce
test_sorted_and_repeated_indices = scatter.test_sorted_and_repeated_indices
test_first_bad_position_is_reported = checks.test_first_bad_position_is_reported
test_every_index_bad = checks.test_every_index_bad
test_in_place_ops_skip_bad_elements_only = checks.test_in_place_ops_skip_bad_elements_only
test_multi_dim_index_positions_are_c_order = checks.test_multi_dim_index_positions_are_c_order


def index_add_and_check(rng, dtype, shape, dim, n, src_t=None):
    self_t = scatter.device_tensor(rng, shape, dtype, "contiguous")
    idx = rng.integers(0, shape[dim], n)
    if src_t is None:
        src_shape = list(shape)
        src_shape[dim] = n
        src_t = scatter.device_tensor(rng, src_shape, dtype, "contiguous")
    index = torch.from_numpy(idx).to(scatter.DEVICE)
    plan = jitops.explain(jitops.index_add_, self_t, dim, index, src_t)[0]
    before, src_h = scatter.host(self_t), scatter.host(src_t)
    jitops.index_add_(self_t, dim, index, src_t)
    terms = np.moveaxis(src_h, dim, 0)
    if dtype in scatter.EPS:
        ref, bound = scatter.accumulate_reference(np.moveaxis(before, dim, 0), idx, terms, dtype)
        scatter.check_float(self_t, np.moveaxis(ref, 0, dim), np.moveaxis(bound, 0, dim), dtype)
    else:
        ref = before.copy()
        np.add.at(np.moveaxis(ref, dim, 0), idx, terms.astype(dtype))
        np.testing.assert_array_equal(scatter.host(self_t), ref)
    return plan


def scatter_reduce_and_check(rng, dtype, reduce, shape, dim, idx, src_t):
    self_t = scatter.device_tensor(rng, shape, dtype, "contiguous")
    index = torch.from_numpy(idx).to(scatter.DEVICE)
    plan = jitops.explain(jitops.scatter_reduce_, self_t, dim, index, src_t, reduce)[0]
    before = scatter.host(self_t)
    jitops.scatter_reduce_(self_t, dim, index, src_t, reduce)
    scatter.expect_reduced(self_t, before, scatter.scatter_positions(idx, dim), scatter.host(src_t), reduce, True,
                           dtype)
    return plan


@pytest.mark.parametrize("dtype", scatter.DTYPES)
def test_expanded_sources_and_many_terms_a_destination(dtype):
    """index_add_ along an inner dim of 3 from a source expanded along its middle dim, and scatter_reduce_
    along dim 0 of a full index with ~40 terms a destination."""
    rng = np.random.default_rng(scatter.seed("owned", dtype))
    src = scatter.device_tensor(rng, (3001, 1, 7), dtype, "contiguous").expand(3001, 24, 7)
    plan = index_add_and_check(rng, dtype, (3001, 24, 3), 2, 7, src)
    assert plan["regime"] == "owned" and plan["spec"]["owned"] == 1
    for reduce in ("sum", "amax", "amin"):
        src_t = scatter.device_tensor(rng, (2000, 33), dtype, "strided")
        plan = scatter_reduce_and_check(rng, dtype, reduce, (50, 33), 0, rng.integers(0, 50, (2000, 33)), src_t)
        assert plan["regime"] == "owned"


def test_the_planners_owned_plans(owned_wherever_it_applies):
    """The plans the planner itself gives the owned walk (the knob at its default): 16-bit adds whose lanes
    meet, from an expanded src (seed 723's kind), float64 and int8 packs wider than their atomics, 16-bit
    products and maxima through a full index; each against numpy."""
    jitops._core._set_owned_walk(-1)
    rng = np.random.default_rng(scatter.seed("owned plans"))
    # a self past half the L2 walks its index dim innermost, and its lanes meet
    src = scatter.device_tensor(rng, (200000, 1, 2), "float16", "contiguous").expand(200000, 128, 2)
    assert index_add_and_check(rng, "float16", (200000, 128, 1), 2, 2, src)["regime"] == "owned"
    assert index_add_and_check(rng, "float64", (1024, 4, 1024), 1, 3)["regime"] == "owned"
    plan = index_add_and_check(rng, "int8", (100000, 3, 64), 1, 5)
    assert plan["regime"] == "owned" and plan["spec"]["vec"] == 16
    for dtype, reduce, shape in (("bfloat16", "prod", (65536, 5, 8)), ("int16", "amax", (300000, 3, 2))):
        idx = rng.integers(0, shape[1], (shape[0], 6, shape[2]))
        src_t = scatter.device_tensor(rng, idx.shape, dtype, "contiguous")
        if reduce == "prod":  # products of 6 terms, finite and well conditioned
            src_t = src_t.abs().add_(0.5).clamp_(max=2) * src_t.sign().add_(0.5).sign()
        assert scatter_reduce_and_check(rng, dtype, reduce, shape, 1, idx, src_t)["regime"] == "owned"


@pytest.mark.parametrize("dtype", scatter.DTYPES)
def test_owners_a_short_dense_row_apart_take_the_owned_walk_by_the_rule(dtype):
    """The planner's own rule (not the forced walk): owners a self row of at most 8 bytes apart (2 elements; 1
    for 8-byte dtypes), src rows of at most 32, through index_add_'s one index (NOTES 109): 4-6 and 4 random
    indices along an inner dim, and from one src row expanded over every owner (rows of 2), owned;
    scatter_reduce_ of a full index along the same rows (sum, amax, amin) keeps its atomics. Each against
    numpy, whatever the plan."""
    jitops._core._set_owned_walk(-1)  # the fixture puts the knob back
    rng = np.random.default_rng(scatter.seed("owned rows", dtype))
    eb = {"float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "int16": 2}.get(dtype) or np.dtype(dtype).itemsize
    width = 2 if eb <= 4 else 1  # self rows of 2-8 bytes
    owners = 300000
    terms = min(32 // eb, 6)
    self_shape = (owners // 100, 100, width)
    plan = index_add_and_check(rng, dtype, self_shape, 2, terms)
    assert plan["regime"] == "owned", plan["regime"]
    plan = index_add_and_check(rng, dtype, (owners, width), 1, min(terms, 4))
    assert plan["regime"] == "owned", plan["regime"]
    one_row = scatter.device_tensor(rng, (1, terms), dtype, "contiguous").expand(owners, terms)
    plan = index_add_and_check(rng, dtype, (owners, width), 1, terms, one_row)
    # a row of one element with one src row for all lies side by side, under the older rule (atomics for these)
    assert (plan["regime"] == "owned") == (width > 1), plan["regime"]
    for reduce in ("sum", "amax", "amin"):
        src_t = scatter.device_tensor(rng, (owners, terms), dtype, "contiguous")
        idx = rng.integers(0, width, (owners, terms))
        plan = scatter_reduce_and_check(rng, dtype, reduce, (owners, width), 1, idx, src_t)
        assert plan["regime"] != "owned", reduce
