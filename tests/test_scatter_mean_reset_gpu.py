"""scatter_reduce_(reduce="mean")'s passes (runtime/ops/scatter_mean.cpp), against numpy:
- include_self=False through the reset by counts: a pass that only counts, one over self that zeroes the
  counted elements, the adds, the division. Forced on for every dtype x index dtype x dims x dim x layout of
  the every-case suite (self of random values, duplicate indices), and taken by the rule from 2^19 units on
  contiguous and transposed selves.
- include_self=True with its counts kept in the adds' own pass (op 19, count_units in templates/scatter.cuh)
  and, with the knob off, in a pass of their own: both ways over the every-case suite, and on the rule's own
  plans (the linear walk of one column, the 2-D walk of rows, random and 8 hot destinations).
- The passes over self (finish, reset) at 4 elements a thread, on selves of 1.8M and 24M elements."""

import numpy as np
import pytest

import jitops

pytest.importorskip("torch")
import test_scatter_gpu as scatter  # noqa: E402 - after the skip: it needs torch

pytestmark = pytest.mark.gpu
torch = scatter.torch


@pytest.fixture
def reset_mode():
    def set_mode(mode):
        jitops._core._set_mean_reset(mode)
    yield set_mode
    jitops._core._set_mean_reset(-1)


@pytest.fixture
def counts_with_adds():
    def set_mode(mode):
        jitops._core._set_mean_counts_with_adds(mode)
    yield set_mode
    jitops._core._set_mean_counts_with_adds(1)


def reduce_and_check(self_t, dim, idx, src_t, index_dtype, dtype, include_self=False):
    before = scatter.host(self_t)
    terms = scatter.host(src_t)[tuple(slice(0, n) for n in idx.shape)]
    index = torch.from_numpy(idx.astype(index_dtype)).to(scatter.DEVICE)
    jitops.scatter_reduce_(self_t, dim, index, src_t, "mean", include_self=include_self)
    scatter.expect_reduced(self_t, before, scatter.scatter_positions(idx, dim), terms, "mean", include_self, dtype)


def random_rows(rng, dtype, rows, cols, units, transposed):
    """self (rows x cols, transposed: a view of cols x rows) and src (units x cols) of random values, and a
    random index into self's rows (numpy, and on the device)."""
    tdt = getattr(torch, dtype)
    values = torch.from_numpy(np.asarray(scatter.random_values(rng, (cols, rows) if transposed else (rows, cols),
                                                               dtype))).to(scatter.DEVICE).to(tdt)
    src_t = torch.from_numpy(np.asarray(scatter.random_values(rng, (units, cols), dtype))).to(scatter.DEVICE).to(tdt)
    idx = rng.integers(0, rows, (units, cols))
    return values.t() if transposed else values, src_t, idx, torch.from_numpy(idx).to(scatter.DEVICE)


def every_dim_against_numpy(rng, dtype, index_dtype, ndim, layout, include_self):
    shape = tuple(int(s) for s in rng.integers(1, 6, ndim))
    for dim in range(-ndim, ndim):
        self_t = scatter.device_tensor(rng, shape, dtype, layout)
        idx_shape = [int(rng.integers(1, s + 1)) for s in shape]
        idx_shape[dim] = int(rng.integers(1, 8))
        src_t = scatter.device_tensor(rng, [s + int(rng.integers(0, 2)) for s in idx_shape], dtype, layout)
        idx = rng.integers(0, shape[dim], idx_shape)
        try:
            reduce_and_check(self_t, dim, idx, src_t, index_dtype, dtype, include_self)
        except AssertionError as e:
            raise AssertionError(f"dim={dim}: {e}") from None


@scatter.every_case
def test_forced_reset_matches_numpy(dtype, index_dtype, ndim, layout, reset_mode):
    reset_mode(1)
    rng = np.random.default_rng(scatter.seed("mean reset", dtype, index_dtype, ndim, layout))
    every_dim_against_numpy(rng, dtype, index_dtype, ndim, layout, include_self=False)


@pytest.mark.parametrize("mode", [1, 0])
@scatter.every_case
def test_counts_with_or_before_the_adds_match_numpy(dtype, index_dtype, ndim, layout, mode, counts_with_adds):
    counts_with_adds(mode)
    rng = np.random.default_rng(scatter.seed("mean counted", dtype, index_dtype, ndim, layout, mode))
    every_dim_against_numpy(rng, dtype, index_dtype, ndim, layout, include_self=True)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32", "int64"])
def test_the_rule_resets_by_counts_from_half_a_million_units(dtype, transposed):
    rng = np.random.default_rng(scatter.seed("mean reset rule", dtype, transposed))
    # 560000 units: some elements get none, most several
    self_t, src_t, idx, index = random_rows(rng, dtype, 70000, 4, 140000, transposed)
    ops = [r["spec"]["op"] for r in jitops.explain("scatter_reduce_", self_t, 0, index, src_t, "mean",
                                                   include_self=False)]
    assert ops == [6, 18, 0, 7]
    reduce_and_check(self_t, 0, idx, src_t, "int64", dtype)


@pytest.mark.parametrize("kind", ["random", "hot"])
@pytest.mark.parametrize("cols", [1, 3, 64])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32", "int64"])
def test_the_rules_counted_adds_match_numpy(dtype, cols, kind):
    rng = np.random.default_rng(scatter.seed("mean counted rule", dtype, cols, kind))
    rows, units = 5003, 300_007 // cols
    tdt = getattr(torch, dtype)
    self_t = torch.from_numpy(np.asarray(scatter.random_values(rng, (rows, cols), dtype))).to(scatter.DEVICE).to(tdt)
    src_t = torch.from_numpy(np.asarray(scatter.random_values(rng, (units, cols), dtype))).to(scatter.DEVICE).to(tdt)
    pool = rng.integers(0, rows, 8)
    idx = pool[rng.integers(0, 8, (units, cols))] if kind == "hot" else rng.integers(0, rows, (units, cols))
    index = torch.from_numpy(idx).to(scatter.DEVICE)
    ops = [r["spec"]["op"] for r in jitops.explain("scatter_reduce_", self_t, 0, index, src_t, "mean")]
    assert ops == [19, 7], ops
    reduce_and_check(self_t, 0, idx, src_t, "int64", dtype, include_self=True)


def check_passes_over_self(rng, dtype, rows, units, transposed, include_self):
    """A mean into (rows x 4) from (units x 4): the division, and include_self=False's reset, at 4 elements a
    thread, their counts loaded together (NOTES 107), against numpy; elements with no terms stay as they were."""
    self_t, src_t, idx, index = random_rows(rng, dtype, rows, 4, units, transposed)
    passes = jitops.explain("scatter_reduce_", self_t, 0, index, src_t, "mean", include_self=include_self)
    over_self = [r["spec"]["unroll"] for r in passes if r["spec"]["op"] in (7, 18)]
    assert over_self == [4] * (1 if include_self else 2), [r["spec"] for r in passes]
    reduce_and_check(self_t, 0, idx, src_t, "int64", dtype, include_self=include_self)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32", "int64"])
def test_passes_over_self_take_four_elements_a_thread(dtype, transposed, include_self):
    """A self of 1.8M elements, its last block part full: 4 a thread on a GPU of up to 219 SMs (the grid
    still fills 2048 threads an SM once)."""
    rng = np.random.default_rng(scatter.seed("mean finish unroll", dtype, transposed, include_self))
    check_passes_over_self(rng, dtype, 450_007, 450_000, transposed, include_self)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_passes_over_self_stride_past_a_capped_grid(dtype, include_self):
    """A self of 24M elements: past the grid's cap (16 waves of 8 blocks of 256 threads an SM, at 4 elements
    a thread: 17.3M on 132 SMs, 23.1M on 176), threads take further groups of 4."""
    rng = np.random.default_rng(scatter.seed("mean finish stride", dtype, include_self))
    check_passes_over_self(rng, dtype, 6_000_007, 262_144, False, include_self)
