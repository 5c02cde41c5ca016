"""Out-of-range indices on the GPU, in every op that takes indices and every
check mode: IndexError names the op, the first bad position (C order of the
index), its value and the valid range; nothing out of range is read or written;
the CUDA context stays usable; "off" records nothing and still never faults."""

import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"


@pytest.fixture
def mode():
    """Sets the index-check mode for one test and restores the default."""
    before = jitops._core.index_checks()
    yield jitops.set_index_checks
    jitops.set_index_checks(before)


def bad_1d(n_index, size, bad_positions, index_dtype, rng):
    """A 1-D index of good values in [0, size) with out-of-range values at `bad_positions`."""
    idx = rng.integers(0, size, n_index)
    for k, pos in enumerate(bad_positions):
        idx[pos] = size + 3 + k if k % 2 == 0 else -(size + 1 + k)
    return torch.from_numpy(idx.astype(index_dtype)).to(DEVICE), idx


# Each op on an x of `size` rows along the indexed dim, called with a 1-D index.
def _index_select(x, idx):
    return jitops.index_select(x, 0, idx)


def _take(x, idx):
    return jitops.take(x, idx, axis=0)


def _index_add(x, idx):
    return jitops.index_add_(x, 0, idx, torch.ones(idx.numel(), *x.shape[1:], device=DEVICE, dtype=x.dtype))


def _index_add_det(x, idx):
    return jitops.index_add_(x, 0, idx, torch.ones(idx.numel(), *x.shape[1:], device=DEVICE, dtype=x.dtype),
                             deterministic=True)


def _index_copy(x, idx):
    return jitops.index_copy_(x, 0, idx, torch.ones(idx.numel(), *x.shape[1:], device=DEVICE, dtype=x.dtype))


def _index_fill(x, idx):
    return jitops.index_fill_(x, 0, idx, 2.0)


ROW_OPS = {"index_select": _index_select, "take": _take, "index_add_": _index_add, "index_add_det": _index_add_det,
           "index_copy_": _index_copy, "index_fill_": _index_fill}


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("n_index,cols", [(7, 1), (9, 64), (5000, 3), (300000, 1), (1000, 1000)])
@pytest.mark.parametrize("op", list(ROW_OPS))
def test_first_bad_position_is_reported(op, n_index, cols, index_dtype, mode):
    rng = np.random.default_rng(n_index * 31 + cols)
    size = 50
    bad = sorted(rng.choice(np.arange(1, n_index), size=min(n_index - 1, 40), replace=False).tolist())
    idx, host = bad_1d(n_index, size, bad, index_dtype, rng)
    x = torch.randn(size, cols, device=DEVICE).squeeze(1) if cols == 1 else torch.randn(size, cols, device=DEVICE)
    before = x.clone()
    mode("sync")
    name = "index_add_" if op == "index_add_det" else op
    arg = "indices" if op == "take" else "index"
    lo = "-50" if op == "take" else "0"
    first = bad[0]
    value = int(host[first])
    with pytest.raises(IndexError, match=rf"^{name}: {arg} holds {value} at position {first} .*size 50 "
                                         rf"\(valid: \[{lo}, 50\)\)"):
        ROW_OPS[op](x, idx)
    if op in ("index_select", "take"):
        assert torch.equal(x, before)
    # the context is fine: the same op with the bad entries fixed works
    fixed = host.copy()
    fixed[bad] = 0
    good = torch.from_numpy(fixed.astype(index_dtype)).to(DEVICE)
    if op in ("index_select", "take"):
        assert torch.equal(ROW_OPS[op](x, good), x[torch.from_numpy(fixed).to(DEVICE)])
    else:
        ROW_OPS[op](x, good)
        torch.cuda.synchronize()


@pytest.mark.parametrize("op", ["index_select", "index_add_", "scatter_add_"])
def test_every_index_bad(op, mode):
    """Millions of threads meet a bad index at once: the report still holds position 0."""
    mode("sync")
    n = 1 << 22
    x = torch.zeros(1000, device=DEVICE)
    idx = torch.arange(n, device=DEVICE) + 1000
    with pytest.raises(IndexError, match=rf"^{op}: index holds 1000 at position 0 "):
        if op == "index_select":
            jitops.index_select(x, 0, idx)
        elif op == "index_add_":
            jitops.index_add_(x, 0, idx, torch.ones(n, device=DEVICE))
        else:
            jitops.scatter_add_(x, 0, idx, torch.ones(n, device=DEVICE))
    assert torch.count_nonzero(x).item() == 0


def test_in_place_ops_skip_bad_elements_only(mode):
    rng = np.random.default_rng(1)
    x = torch.zeros(6, 4, device=DEVICE)
    idx = torch.tensor([1, 9, 3, -2], device=DEVICE)
    src = torch.from_numpy(rng.standard_normal((4, 4)).astype(np.float32)).to(DEVICE)
    mode("sync")
    with pytest.raises(IndexError, match="index_add_: index holds 9 at position 1 "):
        jitops.index_add_(x, 0, idx, src)
    expected = torch.zeros(6, 4, device=DEVICE)
    expected[1] = src[0]
    expected[3] = src[2]
    assert torch.equal(x, expected)


def test_multi_dim_index_positions_are_c_order(mode):
    """gather and scatter_add_ with a 2-D index, contiguous and transposed: the
    position is the flat C-order position in the index's logical shape."""
    mode("sync")
    x = torch.randn(8, 6, device=DEVICE)
    for transposed in (False, True):
        idx = torch.randint(0, 6, (6, 8) if transposed else (8, 6), device=DEVICE)
        if transposed:
            idx = idx.t()  # logical (8, 6), strides (1, 8)
        idx[5, 4] = 17
        idx[6, 1] = -3
        with pytest.raises(IndexError, match=rf"^gather: index holds 17 at position {5 * 6 + 4} "):
            jitops.gather(x, 1, idx)
        self_ = torch.zeros(8, 6, device=DEVICE)
        with pytest.raises(IndexError, match=rf"^scatter_add_: index holds 17 at position {5 * 6 + 4} "):
            jitops.scatter_add_(self_, 1, idx, torch.ones(8, 6, device=DEVICE))
        for reduce in ("prod", "mean", "amax"):
            with pytest.raises(IndexError, match=rf"^scatter_reduce_: index holds 17 at position {5 * 6 + 4} "):
                jitops.scatter_reduce_(self_, 1, idx, torch.ones(8, 6, device=DEVICE), reduce)
        with pytest.raises(IndexError, match=rf"^scatter_add_: index holds 17 at position {5 * 6 + 4} "):
            jitops.scatter_add_(self_, 1, idx, torch.ones(8, 6, device=DEVICE), deterministic=True)
    # take with axis=None and a 3-D indices array
    flat = torch.randint(0, 48, (2, 3, 4), device=DEVICE)
    flat[1, 2, 0] = 48
    with pytest.raises(IndexError, match=rf"^take: indices holds 48 at position {1 * 12 + 2 * 4} .*\[-48, 48\)"):
        jitops.take(x, flat)


def test_positions_from_blocks_that_take_their_rows_in_groups(mode):
    """A transposed self of 3 rows through a full index: the block takes its rows in groups side by side
    along the columns (scatter_plan.cpp, fold_block_rows), and a bad value's position is still its C-order
    position in the index."""
    mode("sync")
    rows, cols, dests = 3, 70001, 4099
    for reduce in ("sum", "amax"):
        self_ = torch.zeros(dests, rows, device=DEVICE).t()
        idx = torch.randint(0, dests, (rows, cols), device=DEVICE)
        report = jitops.explain("scatter_reduce_", self_, 1, idx, torch.ones(rows, cols, device=DEVICE), reduce)[-1]
        assert report["grid"][0] * report["block"][0] < cols, report  # each block takes several column ranges
        idx[2, 65537] = dests + 5
        idx[1, 40000] = -dests - 2
        first = rf"^scatter_reduce_: index holds {-dests - 2} at position {cols + 40000} "
        with pytest.raises(IndexError, match=first):
            jitops.scatter_reduce_(self_, 1, idx, torch.ones(rows, cols, device=DEVICE), reduce)


def test_async_raises_at_next_call_and_context_survives(mode):
    mode("async")
    x = torch.randn(100, 32, device=DEVICE)
    idx = torch.arange(100, device=DEVICE)
    idx[[40, 70]] = 1000
    jitops.index_select(x, 0, idx)  # returns at once; the kernel records
    torch.cuda.synchronize()
    with pytest.raises(IndexError, match="^index_select: index holds 1000 at position 40 "):
        jitops.gather(x, 1, torch.zeros(100, 1, dtype=torch.int64, device=DEVICE))
    # reported once; the next calls work
    good = torch.arange(0, 100, 3, device=DEVICE)
    assert torch.equal(jitops.index_select(x, 0, good), x[good])
    jitops.synchronize()
    assert torch.equal(torch.index_select(x, 0, good), x[good])  # PyTorch on the same context too


def test_off_records_nothing_and_never_faults(mode):
    mode("off")
    assert jitops._core.index_checks() == "off"
    x = torch.randn(10, 16, device=DEVICE)
    idx = torch.tensor([2, 1 << 40, -(1 << 40), 7], device=DEVICE)
    out = jitops.index_select(x, 0, idx)
    self_ = torch.zeros(10, 16, device=DEVICE)
    jitops.index_add_(self_, 0, idx, torch.ones(4, 16, device=DEVICE))
    jitops.scatter_add_(self_, 0, idx.view(4, 1).expand(4, 16).contiguous(), torch.ones(4, 16, device=DEVICE))
    jitops.synchronize()  # nothing pending
    assert torch.equal(out[[0, 3]], x[[2, 7]])  # the good rows are right
    mode("async")
    assert torch.equal(jitops.index_select(x, 0, torch.tensor([9], device=DEVICE)), x[[9]])
    jitops.synchronize()


def test_mode_names():
    with pytest.raises(ValueError, match="mode: expected 'async', 'sync' or 'off' \\(got 'fast'\\)"):
        jitops.set_index_checks("fast")
