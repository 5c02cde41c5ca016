"""The sample's decision between sorted row sums and the atomic kernel (templates/row_decide.cuh), on shapes the
rule sends to the sorted rows: destinations sized from the device's L2 (past half of it), 64 MB of source or
more. Mode 4 leaves the gated atomic kernel out, so that self shows the decision: summed where the rows were
sorted, untouched where the atomics would have added them. Under the rule (mode 1) every kind of index gives
np.add.at's sums, exactly once (a gate that failed would add twice), and a bad index is reported by whichever
path ran. float32 with int64 indices, float64 with int32."""

import numpy as np
import pytest

import jitops
from jitops import _core
from test_row_sums_gpu import DECISION, SORTED_ROWS
from test_scatter_gpu import accumulate_reference, check_float, device_tensor, host, seed

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"


@pytest.fixture
def decision_only():
    _core._set_row_sum_mode(4)
    yield
    _core._set_row_sum_mode(1)


def l2_bytes():
    return torch.cuda.get_device_properties(0).L2_cache_size


def index_of(kind, rows, destinations, rng):
    if kind == "hot":  # 8 hot destinations in random order, a few rows spread between them
        idx = rng.choice(rng.choice(destinations, 8, replace=False), rows)
        spread = rng.random(rows) < 0.02
        idx[spread] = rng.integers(0, destinations, int(spread.sum()))
        return idx
    idx = rng.integers(0, destinations, rows)
    return np.sort(idx) if kind == "sorted" else idx


def shape_of(kind, dtype):
    """(rows, destinations, width): rows of 1 KB, 2 a destination (the sample's bar: 8 a destination), or for
    "even wide" rows of 2 KB, 4 a destination (any unsorted index sorts). Destinations past 0.6 of the L2."""
    row_bytes = 2048 if kind == "even wide" else 1024
    destinations = int(0.6 * l2_bytes()) // row_bytes + 1
    rows = max(destinations * (4 if kind == "even wide" else 2), (64 << 20) // row_bytes + 1)
    return rows, destinations, row_bytes // np.dtype(dtype).itemsize


SORTS = {"hot": True, "even wide": True, "sorted": False, "random": False}


def call(rng, kind, dtype, index_dtype, op):
    rows, destinations, width = shape_of(kind, dtype)
    idx_h = index_of("random" if kind == "even wide" else kind, rows, destinations, rng)
    self_t = device_tensor(rng, (destinations, width), dtype, "contiguous")
    src_t = device_tensor(rng, (rows, width), dtype, "contiguous")
    idx = torch.from_numpy(idx_h.astype(index_dtype)).to(DEVICE)
    if op == "scatter_add_":
        idx = idx.view(rows, 1).expand(rows, width)
    return self_t, idx, src_t, idx_h


TYPES = [("float32", "int64"), ("float64", "int32")]


@pytest.mark.parametrize("dtype, index_dtype", TYPES)
@pytest.mark.parametrize("kind", list(SORTS))
def test_the_sample_decides(decision_only, kind, dtype, index_dtype):
    rng = np.random.default_rng(seed("decides", kind, dtype, index_dtype))
    self_t, idx, src_t, idx_h = call(rng, kind, dtype, index_dtype, "index_add_")
    passes = jitops.explain(jitops.index_add_, self_t, 0, idx, src_t)
    assert [p["regime"] for p in passes] == [DECISION] + SORTED_ROWS, passes
    before = host(self_t)
    jitops.index_add_(self_t, 0, idx, src_t)
    if SORTS[kind]:
        ref, bound = accumulate_reference(before, idx_h, host(src_t), dtype)
        check_float(self_t, ref, bound, dtype)
    else:
        assert np.array_equal(host(self_t), before), "the sorted rows ran where the atomics should have"


@pytest.mark.parametrize("op", ["index_add_", "scatter_add_"])
@pytest.mark.parametrize("dtype, index_dtype", TYPES)
@pytest.mark.parametrize("kind", list(SORTS))
def test_either_path_adds_once(kind, dtype, index_dtype, op):
    rng = np.random.default_rng(seed("adds once", kind, dtype, index_dtype, op))
    self_t, idx, src_t, idx_h = call(rng, kind, dtype, index_dtype, op)
    passes = jitops.explain(getattr(jitops, op), self_t, 0, idx, src_t)
    assert [p["regime"] for p in passes[:1] + passes[2:]] == [DECISION] + SORTED_ROWS
    assert passes[1]["spec"]["gated"] == 1 and "if (*p.skip_if) return;" in passes[1]["source"]
    before = host(self_t)
    getattr(jitops, op)(self_t, 0, idx, src_t)
    ref, bound = accumulate_reference(before, idx_h, host(src_t), dtype)
    check_float(self_t, ref, bound, dtype)


@pytest.mark.parametrize("kind", list(SORTS))
def test_a_bad_index_is_reported_on_either_path(kind):
    rng = np.random.default_rng(seed("bad", kind))
    rows, destinations, width = shape_of(kind, "float32")
    idx_h = index_of("random" if kind == "even wide" else kind, rows, destinations, rng)
    bad_at = rows - 5 if kind == "sorted" else rows // 3  # the sorted index stays in order
    idx_h[bad_at] = destinations
    self_t = device_tensor(rng, (destinations, width), "float32", "contiguous")
    src_t = device_tensor(rng, (rows, width), "float32", "contiguous")
    before = host(self_t)
    jitops.index_add_(self_t, 0, torch.from_numpy(idx_h).to(DEVICE), src_t)
    with pytest.raises(IndexError, match=rf"index holds {destinations} at position {bad_at} "):
        jitops.synchronize()
    good = idx_h < destinations
    ref, bound = accumulate_reference(before, idx_h[good], host(src_t)[good], "float32")
    check_float(self_t, ref, bound, "float32")


def test_no_decision_below_zero_rows():
    """The knob below 0: the rule's rows always sorted, no sample and no atomic kernel after them."""
    rng = np.random.default_rng(seed("no decision"))
    self_t, idx, src_t, idx_h = call(rng, "random", "float32", "int64", "index_add_")
    previous = _core._set_row_sum_hot_rows(-1)
    try:
        assert [p["regime"] for p in jitops.explain(jitops.index_add_, self_t, 0, idx, src_t)] == SORTED_ROWS
        before = host(self_t)
        jitops.index_add_(self_t, 0, idx, src_t)
    finally:
        _core._set_row_sum_hot_rows(previous)
    ref, bound = accumulate_reference(before, idx_h, host(src_t), "float32")
    check_float(self_t, ref, bound, "float32")
