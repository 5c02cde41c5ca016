"""The tiles of index_copy_ and index_add_ (templates/scatter_tile.cuh) against numpy: a contiguous self
and a src dense along another dim (transposed, channels_last), with the indexed dim among the batch (one
index value a tile) or the dim src is dense along (a value per row of the tile). Odd sizes, so that tiles
are ragged at both edges; self's elements the index does not name keep their random values. Copies: every
1- to 8-byte element, bit for bit. Adds (the native atomics: float32, float64, int32, int64, float16,
bfloat16), with repeated indices and alpha: integers exact, floats within the rounding bound of their
terms. Each plan is checked to take the tiles; bad values raise IndexError at the first position, and
write nothing through them."""

import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
from test_scatter_gpu import DTYPES, EPS, accumulate_reference, check_float, host, random_values, seed  # noqa: E402

DEVICE = "cuda"
UNITS = DTYPES + ["bool", "complex64"]


def random_tensor(rng, shape, dtype):
    if dtype == "bool":
        values = rng.integers(0, 2, shape).astype(bool)
    elif dtype == "complex64":
        values = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    else:
        values = np.asarray(random_values(rng, shape, dtype))
    return torch.from_numpy(values).to(DEVICE).to(getattr(torch, dtype))


def stored_in(t, perm):
    """`t`'s values with its dims laid out in memory in the order `perm` (outermost first)."""
    return t.permute(*perm).contiguous().permute(*np.argsort(perm).tolist())


def l2_bytes():
    return torch.cuda.get_device_properties(0).L2_cache_size


def cases(dtype):
    """(self's shape, dim, src's length along dim, src's memory order, index_each): the indexed dim among the
    batch (src dense along dim 0, self along dim 2; a channels_last src), or src dense along the indexed dim
    itself, with src past half the L2 (runtime/ops/scatter_tile_plan.cpp: within it the walk stays)."""
    item = torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    inner = -(-int(0.55 * l2_bytes()) // (41 * 19 * item)) | 1  # odd: a ragged tile edge
    return [((45, 13, 67), 1, 11, (2, 1, 0), False),
            ((3, 37, 21, 53), 0, 2, (0, 2, 3, 1), False),
            ((45, 19, inner), 0, 41, (1, 2, 0), True)]


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", UNITS)
def test_copies_from_a_src_dense_along_another_dim(dtype, index_dtype):
    rng = np.random.default_rng(seed("copy tiles", dtype, index_dtype))
    for shape, dim, n, order, index_each in cases(dtype):
        self_t = random_tensor(rng, shape, dtype)
        src_shape = list(shape)
        src_shape[dim] = n
        src_t = stored_in(random_tensor(rng, src_shape, dtype), order)
        idx = rng.permutation(shape[dim])[:n]  # distinct: which duplicate wins is unspecified
        index = torch.from_numpy(idx.astype(index_dtype)).to(DEVICE)
        plan = jitops.explain("index_copy_", self_t, dim, index, src_t)[0]
        assert plan["spec"]["tile_a"] > 0 and plan["spec"]["index_each"] == index_each, (shape, plan["kernel"])
        ref = host(self_t).copy()
        np.moveaxis(ref, dim, 0)[idx] = np.moveaxis(host(src_t), dim, 0)
        jitops.index_copy_(self_t, dim, index, src_t)
        np.testing.assert_array_equal(host(self_t), ref)


@pytest.mark.parametrize("alpha", [1, 3])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16", "bfloat16"])
def test_adds_from_a_src_dense_along_another_dim(dtype, index_dtype, alpha):
    rng = np.random.default_rng(seed("add tiles", dtype, index_dtype, alpha))
    for shape, dim, n, order, index_each in cases(dtype):
        self_t = random_tensor(rng, shape, dtype)
        src_shape = list(shape)
        src_shape[dim] = n
        src_t = stored_in(random_tensor(rng, src_shape, dtype), order)
        idx = rng.integers(0, shape[dim], n)  # repeated values: their rows add up through the atomics
        index = torch.from_numpy(idx.astype(index_dtype)).to(DEVICE)
        plan = jitops.explain("index_add_", self_t, dim, index, src_t, alpha=alpha)[0]
        assert plan["spec"]["tile_a"] > 0 and plan["spec"]["index_each"] == index_each, (shape, plan["kernel"])
        terms = np.moveaxis(host(src_t), dim, 0).astype(np.float64 if dtype in EPS else np.int64)
        before = np.moveaxis(host(self_t), dim, 0)
        jitops.index_add_(self_t, dim, index, src_t, alpha=alpha)
        if dtype in EPS:
            ref, bound = accumulate_reference(before, idx, alpha * terms, dtype)
            check_float(self_t.movedim(dim, 0), ref, bound, dtype)
        else:
            ref = before.astype(np.int64)
            np.add.at(ref, idx, alpha * terms)
            np.testing.assert_array_equal(np.moveaxis(host(self_t), dim, 0), ref.astype(dtype))


@pytest.fixture
def sync_checks():
    before = jitops._core.index_checks()
    jitops.set_index_checks("sync")
    yield
    jitops.set_index_checks(before)


@pytest.mark.parametrize("case", range(3))
def test_bad_values_are_reported_and_skipped(case, sync_checks):
    shape, dim, n, order, index_each = cases("float32")[case]
    rng = np.random.default_rng(seed("copy tiles bad", case))
    self_t = random_tensor(rng, shape, "float32")
    src_shape = list(shape)
    src_shape[dim] = n
    src_t = stored_in(random_tensor(rng, src_shape, "float32"), order)
    idx = rng.permutation(shape[dim])[:n]
    first = n // 2
    idx[first] = shape[dim] + 5
    if n - 1 > first:
        idx[n - 1] = -1
    index = torch.from_numpy(idx).to(DEVICE)
    assert jitops.explain("index_copy_", self_t, dim, index, src_t)[0]["spec"]["tile_a"] > 0
    ref = host(self_t).copy()
    good = (idx >= 0) & (idx < shape[dim])
    np.moveaxis(ref, dim, 0)[idx[good]] = np.moveaxis(host(src_t), dim, 0)[good]
    with pytest.raises(IndexError, match=rf"^index_copy_: index holds {shape[dim] + 5} at position {first} "):
        jitops.index_copy_(self_t, dim, index, src_t)
    np.testing.assert_array_equal(host(self_t), ref)
    # the context is fine: the same call with the bad values replaced
    idx[~good] = np.setdiff1d(np.arange(shape[dim]), idx[good])[: int((~good).sum())]
    jitops.index_copy_(self_t, dim, torch.from_numpy(idx).to(DEVICE), src_t)
    np.moveaxis(ref, dim, 0)[idx] = np.moveaxis(host(src_t), dim, 0)
    np.testing.assert_array_equal(host(self_t), ref)
