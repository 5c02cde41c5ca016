"""Ragged packs (runtime/ops/scatter_ragged.cpp, scatter.cuh's Peeled) against numpy: index_copy_,
index_fill_ and index_add_ (float32 and 16-bit floats, the adds whose packs are vector reductions) along
rows of odd lengths, starting at every offset into an aligned pack, from a src that lies as self does, is
sliced at another offset, or is broadcast along the row. Each plan is checked to take ragged packs, so the
values test the packs' two ends: an element a row past its end, or short of its start, written or left out
by mistake shows up in self's other rows or in the columns beside the view, which keep their random values.
Copies and fills compare bit for bit; adds within the rounding bound of their terms. The knob takes ragged
packs wherever the layout allows (the rule leaves out calls this small, test_scatter_ragged_spec.py checks
it)."""

import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
from test_scatter_gpu import DTYPES, EPS, accumulate_reference, check_float, host, random_values, seed  # noqa: E402
from test_scatter_spec import walk  # noqa: E402

DEVICE = "cuda"
ADD_DTYPES = ["float32", "float16", "bfloat16"]
ROWS = (67, 1003)  # odd row lengths: no pack divides them, each row starts at another offset; 67 >= 4 packs of 16 bytes


@pytest.fixture(autouse=True)
def wherever_they_apply():
    previous = jitops._core._set_ragged_packs(1)
    yield
    jitops._core._set_ragged_packs(previous)


def tensor(rng, shape, dtype):
    return torch.from_numpy(np.asarray(random_values(rng, shape, dtype))).to(DEVICE).to(getattr(torch, dtype))


def self_view(rng, rows, length, dtype, offset, pad=9):
    """(rows, length) of a wider random base (`pad` columns more), `offset` columns in: the columns beside it
    must keep their values. A pitch of a whole number of packs puts every row at one offset into a pack
    (peel_fixed_phase), another pitch each row at its own."""
    base = tensor(rng, (rows, length + pad), dtype)
    return base, base[:, offset:offset + length]


def sources(rng, n, length, dtype):
    """src as self lies, sliced one column in (another offset), and one value a row broadcast along it."""
    yield "dense", tensor(rng, (n, length), dtype)
    yield "sliced", tensor(rng, (n, length + 1), dtype)[:, 1:]
    yield "broadcast", tensor(rng, (n, 1), dtype).expand(n, length)


def expect_ragged(op, *args, **kwargs):
    spec = jitops.explain(op, *args, **kwargs)[-1]["spec"]
    assert spec["peel"] == 1 and spec["vec"] > 1, spec


@pytest.mark.parametrize("offset", [0, 1, 3])
@pytest.mark.parametrize("length", ROWS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_copies_and_fills_along_odd_rows(dtype, length, offset):
    rng = np.random.default_rng(seed("ragged copy", dtype, length, offset))
    rows, n = 41, 17
    base, self_t = self_view(rng, rows, length, dtype, offset, pad=9 + offset % 2)
    idx = torch.from_numpy(rng.permutation(rows)[:n].astype(np.int64)).to(DEVICE)
    for name, src_t in sources(rng, n, length, dtype):
        expect_ragged("index_copy_", self_t, 0, idx, src_t)
        ref = host(base).copy()
        ref[:, offset:offset + length][host(idx)] = host(src_t)
        jitops.index_copy_(self_t, 0, idx, src_t)
        np.testing.assert_array_equal(host(base), ref, err_msg=name)
    value = 2.75 if dtype in EPS else -3
    fill_idx = torch.from_numpy(rng.integers(0, rows, 9)).to(DEVICE)
    expect_ragged("index_fill_", self_t, 0, fill_idx, value)
    ref = host(base).copy()
    ref[:, offset:offset + length][host(fill_idx)] = host(torch.tensor(value).to(getattr(torch, dtype)))
    jitops.index_fill_(self_t, 0, fill_idx, value)
    np.testing.assert_array_equal(host(base), ref)


@pytest.mark.parametrize("kind", ["random", "sorted", "repeated"])
@pytest.mark.parametrize("offset", [0, 1, 3])
@pytest.mark.parametrize("length", ROWS)
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_adds_along_odd_rows(dtype, length, offset, kind):
    """Repeated rows too: a thread's units that name one destination merge, and only with the same span."""
    rng = np.random.default_rng(seed("ragged add", dtype, length, offset, kind))
    rows, n = 29, 300
    positions = {"random": rng.integers(0, rows, n), "sorted": np.sort(rng.integers(0, rows, n)),
                 "repeated": rng.choice(rng.integers(0, rows, 3), n)}[kind]
    idx = torch.from_numpy(positions.astype(np.int32)).to(DEVICE)
    for name, src_t in sources(rng, n, length, dtype):
        base, self_t = self_view(rng, rows, length, dtype, offset, pad=9 + offset % 2)
        expect_ragged("index_add_", self_t, 0, idx, src_t, alpha=0.5)
        before, terms = host(base), 0.5 * host(src_t)
        ref, bound = accumulate_reference(before[:, offset:offset + length], positions, terms, dtype)
        jitops.index_add_(self_t, 0, idx, src_t, alpha=0.5)
        check_float(self_t, ref, bound, dtype)
        beside = np.ones(before.shape, bool)
        beside[:, offset:offset + length] = False
        np.testing.assert_array_equal(host(base)[beside], before[beside], err_msg=name)


@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_a_rows_last_pack_and_the_next_rows_first_share_an_address(dtype):
    """Rows of 17 float32 (33 16-bit floats) back to back, 5 packs a row: a row's last pack and the next
    row's first lie in one aligned 16 bytes wherever the seam falls inside it. The linear walk over
    (2000, 104, 5) units, 4 a thread 256 apart, puts unit (s, r, 4) and unit (s, r + 52, 0) in one thread
    (52 * 5 - 4 = 256), and the index sends row r < 52 to 2r and row r + 52 to 2r + 1: row 2r's last pack
    meets row 2r + 1's first at one address, with no element in common, and they must not merge."""
    rng = np.random.default_rng(seed("ragged seam", dtype))
    length = 17 if dtype == "float32" else 33
    slices, n = 2000, 104
    self_t = tensor(rng, (slices, n, length), dtype)
    positions = np.array([2 * r for r in range(n // 2)] + [2 * r + 1 for r in range(n // 2)])
    idx = torch.from_numpy(positions).to(DEVICE)
    src_t = tensor(rng, (slices, n, length), dtype)
    report = jitops.explain("index_add_", self_t, 1, idx, src_t)[-1]
    assert report["spec"]["peel"] == 1 and report["spec"]["unroll"] > 1 and report["block"] == (256, 1, 1)
    assert walk(report)[0] == [slices, n, 5], walk(report)
    before, terms = host(self_t), host(src_t)
    ref = before.copy()
    ref[:, positions] += terms
    jitops.index_add_(self_t, 1, idx, src_t)
    check_float(self_t, ref, 2 * EPS[dtype] * (np.abs(before) + np.abs(ref)), dtype)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int64"])
def test_the_rule_and_the_element_walk_agree(dtype):
    """The same copy with the knob at 0 (an element a unit) gives the same bits."""
    rng = np.random.default_rng(seed("ragged knob", dtype))
    base, self_t = self_view(rng, 23, 2049, dtype, 1)
    idx = torch.from_numpy(rng.permutation(23)[:11]).to(DEVICE)
    src_t = tensor(rng, (11, 2050), dtype)[:, 1:]
    copies = []
    for mode in (1, 0):
        previous = jitops._core._set_ragged_packs(mode)
        try:
            target = base.clone()
            view = target[:, 1:2050]
            assert jitops.explain("index_copy_", view, 0, idx, src_t)[-1]["spec"]["peel"] == (mode != 0)
            jitops.index_copy_(view, 0, idx, src_t)
            copies.append(host(target))
        finally:
            jitops._core._set_ragged_packs(previous)
    np.testing.assert_array_equal(copies[0], copies[1])


@pytest.mark.parametrize("pad", [9, 10], ids=["one_phase", "a_phase_a_row"])
def test_a_bad_index_is_reported_and_nothing_past_a_row_moves(pad):
    """The check in sync mode (raised by the call itself); the good rows are written, and nothing beside.
    Rows at one offset into a pack load a bad unit's src and skip it; rows at their own offsets give it an
    empty span."""
    rng = np.random.default_rng(seed("ragged bad", pad))
    base, self_t = self_view(rng, 9, 1003, "float32", 3, pad=pad)
    src_t = tensor(rng, (4, 1003), "float32")
    idx = torch.tensor([2, 9, 0, 5], device=DEVICE)
    expect_ragged("index_copy_", self_t, 0, idx, src_t)
    ref = host(base).copy()
    ref[:, 3:3 + 1003][[2, 0, 5]] = host(src_t)[[0, 2, 3]]
    before = jitops._core.index_checks()
    jitops.set_index_checks("sync")
    try:
        with pytest.raises(IndexError, match="index_copy_: index holds 9 at position 1 "):
            jitops.index_copy_(self_t, 0, idx, src_t)
    finally:
        jitops.set_index_checks(before)
    np.testing.assert_array_equal(host(base), ref)
