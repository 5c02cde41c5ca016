"""index_fill_'s marked pass over self (runtime/ops/fill_marked_plan.cpp, templates/fill_marked.cuh): every
dtype index_fill_ takes, along an inner axis (whole units of marks and partly marked ones; over 16 MB of rows
of 3, 13 or 14, units across the rows' seams, a last few elements past them, from an aligned and a shifted
base), a middle axis under a sector, a transposed and a sliced self; random, sorted and strided indices with
repeats, a 0-d index; a bad value's first position; offsets past 2^31. Against numpy, bit for bit, on random
data."""

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, index_checks_synced, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
MARKED = "marked pass over self"
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64"]


def value_for(dtype):
    """A fill value every dtype holds exactly, and its numpy form (bfloat16 as int16 bits)."""
    if dtype == "bool":
        return True, True
    if dtype == "bfloat16":
        return -1.5, (np.array([-1.5], np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.int16)[0]
    return (3, 3) if np.dtype(dtype).kind in "iu" else (-1.5, -1.5)


def expected_fill(host, dim, values, fill):
    """numpy's index_fill_: every in-range value's slice along `dim` set to `fill`."""
    out = host.copy()
    sl = [slice(None)] * host.ndim
    for v in np.unique(values):
        sl[dim] = int(v)
        out[tuple(sl)] = fill
    return out


def views(dtype, rng):
    """(name, host base, torch view builder, dim) for self layouts the marked pass takes."""
    yield "inner", random_host(rng, (301, 16), dtype), lambda t: t, 1
    yield "inner-odd", random_host(rng, (517, 13), dtype), lambda t: t, 1
    yield "middle", random_host(rng, (203, 41, 2), dtype), lambda t: t, 1
    yield "transposed", random_host(rng, (24, 100), dtype), lambda t: t.t(), 0
    yield "sliced", random_host(rng, (400, 30), dtype), lambda t: t[:, ::2], 1


def host_view(name, host):
    return {"transposed": lambda h: h.T, "sliced": lambda h: h[:, ::2]}.get(name, lambda h: h)(host)


@pytest.mark.parametrize("order", ["random", "sorted", "strided"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_matches_numpy(dtype, index_dtype, order):
    rng = np.random.default_rng([31, len(dtype), len(index_dtype), len(order)])
    value, fill = value_for(dtype)
    for name, host, view, dim in views(dtype, rng):
        self_t = view(to_torch(torch, host, dtype, DEVICE))
        ref = host_view(name, host)
        size = ref.shape[dim]
        values = rng.integers(0, size, 2 * size + 5)  # repeats, and most positions named
        if order == "sorted":
            values.sort()
        index = torch.from_numpy(values.astype(index_dtype)).to(DEVICE)
        if order == "strided":
            index = torch.from_numpy(np.repeat(values, 2).astype(index_dtype)).to(DEVICE)[::2]
        assert jitops.explain(jitops.index_fill_, self_t, dim, index, value)[-1]["regime"] == MARKED, name
        assert jitops.index_fill_(self_t, dim, index, value) is self_t
        assert_same_bits(to_numpy(torch, self_t), expected_fill(ref, dim, values, fill))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "float16", "bfloat16"])
def test_units_across_the_rows(dtype):
    """Over 16 MB of rows of 13 (or 14: units of 2 a row; or 3: a unit over several rows) elements of 1 or 2
    bytes, back to back: units of 16 bytes (8 for bytes from a base 8 past alignment) across the rows' seams,
    partly marked ones read and written whole, the last elements past the whole units one by one; random,
    sorted and repeated values."""
    rng = np.random.default_rng([37, len(dtype)])
    value, fill = value_for(dtype)
    unit = 1 if dtype in ("bool", "int8", "uint8") else 2
    for row, shift in ((13, 0), (14, 0), (3, 0)) + (((13, 8),) if unit == 1 else ()):
        rows = (1 << 24) // (row * unit) + 7
        host = random_host(rng, (rows * row + shift,), dtype)
        self_t = to_torch(torch, host, dtype, DEVICE)[shift:].view(rows, row)
        ref = host[shift:].reshape(rows, row)
        for order in ("random", "sorted", "repeated"):
            values = rng.integers(0, row, 6)
            if order == "sorted":
                values.sort()
            if order == "repeated":
                values = np.repeat(values[:2], 3)
            index = torch.from_numpy(values.astype(np.int32)).to(DEVICE)
            plan = jitops.explain(jitops.index_fill_, self_t, 1, index, value)[-1]
            assert plan["regime"] == MARKED + ", units across its rows", (row, shift, plan["kernel"])
            expected = expected_fill(ref, 1, values, fill)
            jitops.index_fill_(self_t, 1, index, value)
            assert_same_bits(to_numpy(torch, self_t), expected)
            ref = expected


@pytest.mark.parametrize("dtype", ["int8", "float32", "float64"])
def test_a_0d_index_and_the_walk_agree(dtype):
    rng = np.random.default_rng(32)
    value, fill = value_for(dtype)
    host = random_host(rng, (1000, 3), dtype)
    for mode in (1, 0):  # the marked pass (which one value never pays for), then the index walk
        jitops._core._set_fill_marked_mode(mode)
        try:
            self_t = to_torch(torch, host, dtype, DEVICE)
            index = torch.tensor(2, device=DEVICE)
            regime = jitops.explain(jitops.index_fill_, self_t, 1, index, value)[-1]["regime"]
            assert (regime == MARKED) == (mode == 1)
            jitops.index_fill_(self_t, 1, index, value)
        finally:
            jitops._core._set_fill_marked_mode(-1)
        assert_same_bits(to_numpy(torch, self_t), expected_fill(host, 1, np.array([2]), fill))


def test_bad_values_report_the_first_position_and_the_rest_is_filled():
    rng = np.random.default_rng(33)
    host = rng.standard_normal((700, 16)).astype(np.float32)
    self_t = torch.from_numpy(host).to(DEVICE)
    values = rng.integers(0, 16, 40)
    values[[9, 30]] = [16, -3]
    index = torch.from_numpy(values).to(DEVICE)
    assert jitops.explain(jitops.index_fill_, self_t, 1, index, 2.0)[-1]["regime"] == MARKED
    with index_checks_synced(), pytest.raises(IndexError, match=r"^index_fill_: index holds 16 at position 9 "):
        jitops.index_fill_(self_t, 1, index, 2.0)
    good = values[(values >= 0) & (values < 16)]
    np.testing.assert_array_equal(self_t.cpu().numpy(), expected_fill(host, 1, good, 2.0))


def fill_past_2_31(row, regime):
    """index_fill_ of int8 rows of `row` elements, past 2^31 bytes in all, by 7 values with repeats, planned as
    `regime` with 64-bit offsets: the head and the tail checked against numpy, every named column filled."""
    rows = (1 << 31) // row + 5
    self_t = torch.randint(-100, 100, (rows, row), dtype=torch.int8, device=DEVICE)
    values = np.array([0, 5, 5, 9, row - 1, row - 1, 2], np.int64)
    index = torch.from_numpy(values).to(DEVICE)
    plan = jitops.explain(jitops.index_fill_, self_t, 1, index, 7)[-1]
    assert plan["regime"] == regime and "offset=64" in plan["kernel"]
    head, tail = self_t[:1000].cpu().numpy(), self_t[-1000:].cpu().numpy()
    jitops.index_fill_(self_t, 1, index, 7)
    assert_same_bits(self_t[:1000].cpu().numpy(), expected_fill(head, 1, values, 7))
    assert_same_bits(self_t[-1000:].cpu().numpy(), expected_fill(tail, 1, values, 7))
    named = torch.zeros(row, dtype=torch.bool, device=DEVICE)
    named[index] = True
    assert bool((self_t[:, named] == 7).all())
    del self_t
    torch.cuda.empty_cache()


def test_offsets_past_2_31():
    fill_past_2_31(16, MARKED)  # rows of 16: 2^31 + 80 bytes


def test_units_across_the_rows_past_2_31():
    """The flat walk with 64-bit offsets: rows of 13, 2^31 + 54 bytes, units of 16 across the rows' seams,
    the last 6 elements past the whole units."""
    assert ((1 << 31) // 13 + 5) * 13 % 16 == 6
    fill_past_2_31(13, MARKED + ", units across its rows")
