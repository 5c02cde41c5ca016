"""Ragged packs in the gathers (runtime/ops/gather_ragged.cpp, gather.cuh's RaggedVec) against numpy, bit
for bit: index_select and take along an axis whose rows (the dims inside it) are dense but of odd lengths,
from an x sliced at every offset into an aligned pack (its rows then lie at the phases the index picks,
read through two aligned packs shifted into place), into an out that is itself a view at an offset of a
poisoned base: an element written a row past its end or short of its start shows up in the columns beside
the view. Every element size from 1 to 8 bytes, both index dtypes, the 2-D walk, the linear one (three dims),
the one-dim walk and the generic one (eight dims that do not collapse), negative indices wrapped by take, and
gather through an index expanded along the rows. Each plan is checked to take ragged packs; the knob takes them
wherever the layout allows (the rule leaves out calls this small: test_gather_ragged_spec.py)."""

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, index_checks_synced, poison_free_blocks, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
DTYPES = ["int8", "uint8", "int16", "float16", "bfloat16", "int32", "float32", "int64", "float64", "complex64"]
WIDTH = {"int8": 1, "uint8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "float32": 4, "int64": 8,
         "float64": 8, "complex64": 8}
LENGTHS = (67, 1003)  # odd: no pack divides them, so each row starts at another offset; 67 >= 4 packs of 16 bytes


@pytest.fixture(autouse=True)
def wherever_they_apply():
    previous = jitops._core._set_gather_ragged(1)
    yield
    jitops._core._set_gather_ragged(previous)


def expect_ragged(op, *args, **kwargs):
    spec = jitops.explain(op, *args, **kwargs)[-1]["spec"]
    assert spec["ragged"] == 16 // WIDTH[str(args[0].dtype).split(".")[-1]], spec
    return spec


def x_view(rng, shape, dtype, offset):
    """A random x of `shape`, its last dim a slice `offset` elements into a base one element wider: each row
    of x starts at another offset into a pack."""
    base_shape = shape[:-1] + (shape[-1] + 1 + offset,)
    host = random_host(rng, base_shape, dtype)
    x = to_torch(torch, host, dtype, DEVICE)[..., offset:offset + shape[-1]]
    return host[..., offset:offset + shape[-1]], x


def out_view(rng, shape, dtype, offset):
    """A poisoned base 9 elements wider than `shape` plus `offset`, and the view of `shape` in it: the
    columns beside the view (more than a pack of them between two rows) must keep the poison."""
    base_shape = shape[:-1] + (shape[-1] + 9 + offset,)
    base_host = random_host(rng, base_shape, dtype)
    base = to_torch(torch, base_host, dtype, DEVICE)
    return base_host, base, base[..., offset:offset + shape[-1]]


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("offset", [0, 1, 3])
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_along_odd_rows(dtype, length, offset, index_dtype):
    rng = np.random.default_rng([length, offset, WIDTH[dtype], len(dtype), len(index_dtype)])
    rows, n = 41, 37
    host, x = x_view(rng, (rows, length), dtype, offset)
    index_host = rng.integers(0, rows, n).astype(index_dtype)  # repeats among them
    idx = torch.from_numpy(index_host).to(DEVICE)
    expected = np.take(host, index_host, axis=0)
    expect_ragged("index_select", x, 0, idx)
    poison_free_blocks(torch, DEVICE, 4, n * length * WIDTH[dtype])  # the output most likely starts poisoned
    assert_same_bits(to_numpy(torch, jitops.index_select(x, 0, idx)), expected)
    # into a view at another offset: out's rows lie at their own phases too
    base_host, base, out = out_view(rng, (n, length), dtype, (offset + 2) % 5)
    expect_ragged("index_select", x, 0, idx, out=out)
    assert jitops.index_select(x, 0, idx, out=out) is out
    o = (offset + 2) % 5
    base_host[:, o:o + length] = expected
    assert_same_bits(to_numpy(torch, base), base_host)


@pytest.mark.parametrize("offset", [0, 1, 5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_along_an_axis_of_three_dims(dtype, offset):
    """The linear walk: x (5, 23, 1003) sliced along its last dim, the index along the middle one, some of
    it counted from the end."""
    rng = np.random.default_rng([offset, WIDTH[dtype], len(dtype), 7])
    host, x = x_view(rng, (5, 23, 1003), dtype, offset)
    index_host = rng.integers(-23, 23, 29).astype(np.int64)
    idx = torch.from_numpy(index_host).to(DEVICE)
    spec = expect_ragged("take", x, idx, axis=1)
    assert spec["dims"] == 3, spec
    assert_same_bits(to_numpy(torch, jitops.take(x, idx, axis=1)), np.take(host, index_host, axis=1))
    selected = torch.from_numpy(index_host % 23).to(DEVICE)
    assert_same_bits(to_numpy(torch, jitops.index_select(x, 1, selected)), np.take(host, index_host % 23, axis=1))


@pytest.mark.parametrize("offset", [0, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_through_an_index_expanded_along_the_rows(dtype, offset):
    """gather(x, 0, index) with the index one value a row, expanded along it: x's rows at the phases the
    index picks, as index_select's."""
    rng = np.random.default_rng([offset, WIDTH[dtype], len(dtype), 13])
    host, x = x_view(rng, (41, 1003), dtype, offset)
    rows_host = rng.integers(0, 41, (37, 1))
    index_host = np.broadcast_to(rows_host, (37, 1003))
    idx = torch.from_numpy(rows_host).to(DEVICE).expand(37, 1003)
    expect_ragged("gather", x, 0, idx)
    base_host, base, out = out_view(rng, (37, 1003), dtype, 1 + offset)
    assert jitops.gather(x, 0, idx, out=out) is out
    base_host[:, 1 + offset:1 + offset + 1003] = np.take_along_axis(host, index_host, axis=0)
    assert_same_bits(to_numpy(torch, base), base_host)


@pytest.mark.parametrize("dtype", ["uint8", "bfloat16", "float32", "float64"])
def test_the_one_dim_and_the_generic_walks(dtype):
    """One row (an index of one value over x of one row: one dim), and eight dims that do not collapse (x
    strided by 2 along its seven outer dims: the generic walk)."""
    rng = np.random.default_rng([WIDTH[dtype], len(dtype), 17])
    host, x = x_view(rng, (1, 1003), dtype, 1)
    idx = torch.zeros(1, dtype=torch.int64, device=DEVICE)
    assert expect_ragged("index_select", x, 0, idx)["dims"] == 1
    assert_same_bits(to_numpy(torch, jitops.index_select(x, 0, idx)), host)
    base = random_host(rng, (4,) * 7 + (68,), dtype)
    strided = (slice(None, None, 2),) * 7 + (slice(1, None),)
    x = to_torch(torch, base, dtype, DEVICE)[strided]
    index_host = np.array([1, 0, 1], dtype=np.int64)
    idx = torch.from_numpy(index_host).to(DEVICE)
    assert expect_ragged("index_select", x, 1, idx)["dims"] == 0
    assert_same_bits(to_numpy(torch, jitops.index_select(x, 1, idx)), np.take(base[strided], index_host, axis=1))


@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_rows_at_one_phase_and_the_knob_off_agree(dtype):
    """Rows a whole number of packs long, x shifted by one element (no uniform pack: x's start), and the same
    call with the knob off (an element a unit): the same bits."""
    rng = np.random.default_rng([WIDTH[dtype], 11])
    base = random_host(rng, (64, 1032), dtype)  # rows 1032 apart: every row one element past a pack's start
    host, x = base[:, 1:1025], to_torch(torch, base, dtype, DEVICE)[:, 1:1025]
    idx = torch.from_numpy(rng.integers(0, 64, 50)).to(DEVICE)
    expect_ragged("index_select", x, 0, idx)
    ragged = to_numpy(torch, jitops.index_select(x, 0, idx))
    previous = jitops._core._set_gather_ragged(0)
    try:
        assert jitops.explain("index_select", x, 0, idx)[-1]["spec"]["ragged"] == 0
        plain = to_numpy(torch, jitops.index_select(x, 0, idx))
    finally:
        jitops._core._set_gather_ragged(previous)
    assert_same_bits(ragged, plain)
    assert_same_bits(ragged, np.take(host, idx.cpu().numpy(), axis=0))


def test_a_bad_index_names_its_position():
    _, x = x_view(np.random.default_rng(3), (41, 1003), "float16", 1)
    idx = torch.tensor([0, 40, 3, 41, 2], device=DEVICE)  # 41 is past the end, at position 3
    expect_ragged("index_select", x, 0, idx)
    with index_checks_synced(), pytest.raises(IndexError, match=r"index holds 41 at position 3 "):
        jitops.index_select(x, 0, idx)
    with index_checks_synced(), pytest.raises(IndexError, match=r"indices holds -42 at position 1 "):
        jitops.take(x, torch.tensor([1, -42, 5], device=DEVICE), axis=0)
    # an index expanded along the rows: the first bad place in C order is its row's first
    rows = torch.tensor([[0], [40], [2], [41], [41]], device=DEVICE)
    expect_ragged("gather", x, 0, rows.expand(5, 1003))
    with index_checks_synced(), pytest.raises(IndexError, match=rf"holds 41 at position {3 * 1003} "):
        jitops.gather(x, 0, rows.expand(5, 1003))
