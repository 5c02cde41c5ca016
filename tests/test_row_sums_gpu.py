"""Row sums (runtime/ops/row_sum_plan.h): index_add_ along the rows and
scatter_add_ / scatter_reduce_('sum') with an index expanded along the rows,
computed by sorting the rows by destination and summing each destination's
rows before one write. Forced on small shapes (the development knob's mode 2)
for every floating dtype x index dtype x row width (vector units of 16 bytes
down to single elements, rows wider than a warp) x duplicates (none, some,
every index equal) x alpha, against np.add.at; plus the default choice on the
bench's scatter_add shape, bad indices and empty indices. Few destinations
take private copies instead (rows added into copies of self's rows in shared
memory, a copy per few warps; forced by mode 3): every floating dtype x index dtype x
row width x hot rows / every index equal x alpha, and the default choice on
the bench's hot-row shapes."""

import numpy as np
import pytest

import jitops
from jitops import _core
from test_scatter_gpu import EPS, accumulate_reference, check_float, device_tensor, host, round_to, seed

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
FLOATS = ["float16", "bfloat16", "float32", "float64"]


@pytest.fixture
def forced():
    _core._set_row_sum_mode(2)
    yield
    _core._set_row_sum_mode(1)


@pytest.fixture
def private_copies():
    _core._set_row_sum_mode(3)
    yield
    _core._set_row_sum_mode(1)


@pytest.fixture(params=[2, 3], ids=["sorted", "private copies"])
def either_way(request):
    _core._set_row_sum_mode(request.param)
    yield request.param
    _core._set_row_sum_mode(1)


PRIVATE = "row sums: rows added into private copies of self's rows in shared memory"


def regimes(fn, *args, **kwargs):
    return [r["regime"] for r in jitops.explain(fn, *args, **kwargs)]


SORTED_ROWS = ["row sums: count rows per tile of destinations", "row sums: bucket positions per tile",
               "row sums: place rows into tile buckets", "row sums: sort each bucket by destination",
               "row sums: sum sorted rows per destination"]


def uses_row_sums(fn, *args, **kwargs):
    return regimes(fn, *args, **kwargs) == SORTED_ROWS


@pytest.mark.parametrize("duplicates", ["distinct", "some", "all_equal"])
@pytest.mark.parametrize("width", [40, 37, 300])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_index_add_rows(forced, dtype, index_dtype, width, duplicates):
    rng = np.random.default_rng(seed("rows", dtype, index_dtype, width, duplicates))
    rows, destinations = 1000, {"distinct": 1000, "some": 300, "all_equal": 50}[duplicates]
    idx_h = {"distinct": rng.permutation(destinations)[:rows], "some": rng.integers(0, destinations, rows),
             "all_equal": np.full(rows, 7)}[duplicates]
    idx = torch.from_numpy(idx_h.astype(index_dtype)).to(DEVICE)
    for alpha in (1, 0.75):
        self_t = device_tensor(rng, (destinations, width), dtype, "contiguous")
        # src rows sliced out of a wider array: the row stride is not the width
        src_t = device_tensor(rng, (rows, width + 8), dtype, "contiguous")[:, 8:]
        assert uses_row_sums(jitops.index_add_, self_t, 0, idx, src_t, alpha=alpha)
        before = host(self_t)
        assert jitops.index_add_(self_t, 0, idx, src_t, alpha=alpha) is self_t
        scale = float(torch.tensor(alpha, dtype=getattr(torch, dtype)).double()) if alpha != 1 else 1
        ref, bound = accumulate_reference(before, idx_h, host(src_t) * scale, dtype)
        check_float(self_t, ref, bound, dtype)


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_scatter_add_with_an_index_expanded_along_rows(forced, dtype, index_dtype):
    rng = np.random.default_rng(seed("scatter rows", dtype, index_dtype))
    rows, destinations, width = 3000, 500, 64
    idx_h = rng.integers(0, destinations, rows)
    idx = torch.from_numpy(idx_h.astype(index_dtype)).to(DEVICE).view(rows, 1).expand(rows, width)
    for op in ("scatter_add_", "scatter_reduce_"):
        self_t = device_tensor(rng, (destinations, width), dtype, "contiguous")
        src_t = device_tensor(rng, (rows, width), dtype, "contiguous")
        args = (self_t, 0, idx, src_t) + (("sum",) if op == "scatter_reduce_" else ())
        assert uses_row_sums(getattr(jitops, op), *args)
        before = host(self_t)
        getattr(jitops, op)(*args)
        ref, bound = accumulate_reference(before, idx_h, host(src_t), dtype)
        check_float(self_t, ref, bound, dtype)


def index_add_rows_and_check(rng, idx, idx_h, destinations, rows, width, dtype):
    """index_add_ of `rows` random rows into `destinations` through `idx` (idx_h on the host), on the row
    sums, against the float64 reference within its rounding bound."""
    self_t = device_tensor(rng, (destinations, width), dtype, "contiguous")
    src_t = device_tensor(rng, (rows, width), dtype, "contiguous")
    assert uses_row_sums(jitops.index_add_, self_t, 0, idx, src_t)
    before = host(self_t)
    jitops.index_add_(self_t, 0, idx, src_t)
    ref, bound = accumulate_reference(before, idx_h, host(src_t), dtype)
    check_float(self_t, ref, bound, dtype)


@pytest.fixture(params=[(4, 8), (2, 4), (8, 1), (16, 16), (32, 4)], ids=lambda s: "in_flight {} warps {}".format(*s))
def sum_shape(request):
    _core._set_row_sum_shape(*request.param)
    yield request.param
    _core._set_row_sum_shape(4, 8)


@pytest.mark.parametrize("width", [128, 40, 8, 2])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_sum_spans_batches_and_lane_groups(forced, sum_shape, dtype, width):
    """Rows in flight from 2 to 32 (a warp's run of 32 rows in 16 batches down to one), and rows narrow
    enough that a warp's lanes split into groups taking their own rows (up to 16 groups)."""
    rng = np.random.default_rng(seed("sum shapes", dtype, width, *sum_shape))
    rows, destinations = 60000, 5000
    idx_h = rng.integers(0, destinations, rows)
    idx_h[rows // 2: rows // 2 + 3000] = 17  # one long run across warps' spans
    idx = torch.from_numpy(idx_h).to(DEVICE)
    index_add_rows_and_check(rng, idx, idx_h, destinations, rows, width, dtype)


def test_chosen_by_default_on_the_bench_scatter_add_only():
    self_t = torch.randn(100000, 128, device=DEVICE)
    idx_h = np.random.default_rng(3).integers(0, 100000, 1 << 20)
    idx = torch.from_numpy(idx_h).to(DEVICE).view(-1, 1).expand(-1, 128)
    src_t = torch.randn(1 << 20, 128, device=DEVICE)
    assert uses_row_sums(jitops.scatter_add_, self_t, 0, idx, src_t)
    before = host(self_t)
    jitops.scatter_add_(self_t, 0, idx, src_t)
    ref, bound = accumulate_reference(before, idx_h, host(src_t), "float32")
    check_float(self_t, ref, bound, "float32")
    # 16-bit floats (faster with sm_90's vector atomics) and small adds keep
    # the atomic kernels; hot rows (2^20 rows into 64) add into private copies
    assert not uses_row_sums(jitops.scatter_add_, self_t.half(), 0, idx, src_t.half())
    hot = torch.randn(64, 128, device=DEVICE)
    hot_idx = torch.randint(0, 64, (1 << 20,), device=DEVICE)
    assert regimes(jitops.index_add_, hot, 0, hot_idx, src_t) == [PRIVATE]
    small = torch.randn(32768, 1024, device=DEVICE)
    assert not uses_row_sums(jitops.index_add_, small, 0, torch.randint(0, 32768, (1024,), device=DEVICE),
                             torch.randn(1024, 1024, device=DEVICE))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows", [4096 * 3 + 77, 300_001])
def test_hot_buckets_sorted_in_batches(forced, dtype, rows):
    """Buckets past the 4096 rows sorted in shared memory: 8 hot destinations, three of them in one bucket of
    128 destinations and the others each alone in theirs, and a few random rows between them; the big-bucket
    sort loads 16 rows a thread at a time (the last batch partial) and a warp's rows to one destination take
    one shared atomic."""
    rng = np.random.default_rng(seed("hot buckets", dtype, rows))
    destinations, width = 70000, 8
    hot = np.array([5, 40, 127, 1000, 20000, 45678, 69999, 300])
    idx_h = hot[rng.integers(0, hot.size, rows)]
    spread = rng.random(rows) < 0.05
    idx_h[spread] = rng.integers(0, destinations, int(spread.sum()))
    idx = torch.from_numpy(idx_h.astype("int64")).to(DEVICE)
    index_add_rows_and_check(rng, idx, idx_h, destinations, rows, width, dtype)


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("rows, destinations, width", [(20000, 3000, 8), (5_000_000, 70000, 2)])
def test_many_chunks_and_buckets(forced, rows, destinations, width, index_dtype):
    """Rows over several count / place blocks (4096 rows each; more each past 1024 blocks) and many buckets of
    128 destinations, one destination hot (every 7th row) among random ones."""
    rng = np.random.default_rng(seed("chunks", rows, index_dtype))
    idx_h = rng.integers(0, destinations, rows)
    idx_h[::7] = destinations - 1
    idx = torch.from_numpy(idx_h.astype(index_dtype)).to(DEVICE)
    index_add_rows_and_check(rng, idx, idx_h, destinations, rows, width, "float32")


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("order", ["sorted", "descent at a chunk's edge", "descent inside a chunk", "sorted, one bad"])
def test_a_sorted_index_skips_the_sort(forced, order, index_dtype):
    """A sorted index (the count pass sees every chunk in order) is summed as it lies, the sort's launches
    returning at once; one descent, at the edge between two count blocks (4096 rows each) or inside one, or a
    bad index, sends it through the sort."""
    rng = np.random.default_rng(seed("sorted rows", order, index_dtype))
    rows, destinations, width = 20000, 3000, 8
    idx_h = np.sort(rng.integers(1, destinations, rows))
    if order == "descent at a chunk's edge":
        idx_h[4096] = 0
    elif order == "descent inside a chunk":
        idx_h[10001] = 0
    elif order == "sorted, one bad":
        idx_h[12345] = destinations
    idx = torch.from_numpy(idx_h.astype(index_dtype)).to(DEVICE)
    self_t = device_tensor(rng, (destinations, width), "float32", "contiguous")
    src_t = device_tensor(rng, (rows, width), "float32", "contiguous")
    assert uses_row_sums(jitops.index_add_, self_t, 0, idx, src_t)
    before = host(self_t)
    jitops.index_add_(self_t, 0, idx, src_t, alpha=0.5)
    good = idx_h < destinations
    if order == "sorted, one bad":
        with pytest.raises(IndexError, match=r"index holds 3000 at position 12345 "):
            jitops.synchronize()
    ref, bound = accumulate_reference(before, idx_h[good], host(src_t)[good] * 0.5, "float32")
    check_float(self_t, ref, bound, "float32")


def test_bad_index_is_reported_and_the_other_rows_added(either_way):
    self_t = torch.randn(100, 32, device=DEVICE)
    idx_h = np.arange(200) % 100
    idx_h[150] = 100
    idx_h[170] = -1
    src_t = torch.randn(200, 32, device=DEVICE)
    before = host(self_t)
    idx = torch.from_numpy(idx_h).to(DEVICE)
    assert (regimes(jitops.index_add_, self_t, 0, idx, src_t) == [PRIVATE]) == (either_way == 3)
    jitops.index_add_(self_t, 0, idx, src_t)
    with pytest.raises(IndexError, match=r"index holds 100 at position 150 .* dimension of size 100"):
        jitops.synchronize()
    good = np.ones(200, bool)
    good[[150, 170]] = False
    ref, bound = accumulate_reference(before, idx_h[good], host(src_t)[good], "float32")
    check_float(self_t, ref, bound, "float32")
    # expanded scatter index: the position counts every element of the index
    idx2 = torch.from_numpy(idx_h).to(DEVICE).view(200, 1).expand(200, 32)
    jitops.scatter_add_(self_t, 0, idx2, src_t)
    with pytest.raises(IndexError, match=r"at position 4800 "):
        jitops.synchronize()


def test_empty_index(either_way):
    self_t = torch.randn(10, 32, device=DEVICE)
    snapshot = self_t.clone()
    jitops.index_add_(self_t, 0, torch.empty(0, dtype=torch.int64, device=DEVICE), torch.empty(0, 32, device=DEVICE))
    assert torch.equal(self_t, snapshot)


@pytest.mark.parametrize("duplicates", ["hot", "all_equal"])
@pytest.mark.parametrize("width", [128, 64, 40, 300, 7])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_private_copies(private_copies, dtype, index_dtype, width, duplicates):
    """Each warp's copy of self's rows in shared memory (forced): rows a warp cannot divide evenly, rows of
    one unit chunk (128, 64 in pairs), of several (40, 300) and of fewer lanes than a warp (7); self's rows strided, src rows
    sliced; rows of self no index names keep their exact bits (-0.0 included); alpha."""
    rng = np.random.default_rng(seed("private", dtype, index_dtype, width, duplicates))
    rows, destinations = 5003, 12
    idx_h = rng.integers(0, 8, rows) if duplicates == "hot" else np.full(rows, 5)
    idx = torch.from_numpy(idx_h.astype(index_dtype)).to(DEVICE)
    for alpha in (1, -1.5):
        wide = device_tensor(rng, (destinations, width + 4), dtype, "contiguous")
        wide[10:, :] = -0.0  # untouched rows (indices stay below 8)
        self_t = wide[:, :width]
        src_t = device_tensor(rng, (rows, width + 8), dtype, "contiguous")[:, 8:]
        assert regimes(jitops.index_add_, self_t, 0, idx, src_t, alpha=alpha) == [PRIVATE]
        before = self_t.clone()
        assert jitops.index_add_(self_t, 0, idx, src_t, alpha=alpha) is self_t
        scale = float(torch.tensor(alpha, dtype=getattr(torch, dtype)).double()) if alpha != 1 else 1
        ref, bound = accumulate_reference(host(before), idx_h, host(src_t) * scale, dtype)
        check_float(self_t, ref, bound, dtype)
        untouched = [d for d in range(destinations) if d not in set(idx_h.tolist())]
        assert torch.equal(self_t[untouched].view(torch.uint8), before[untouched].view(torch.uint8))
        assert torch.signbit(self_t[10:]).all()


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_private_copies_by_default_on_hot_rows_and_every_index_equal(dtype, index_dtype):
    """The bench's shapes (2^20 rows of 128 into 64 rows) take the private copies without forcing, and
    scatter_add_ with the index expanded along the rows too."""
    rng = np.random.default_rng(seed("private default", dtype, index_dtype))
    rows, destinations, width = 1 << 20, 64, 128
    src_t = device_tensor(rng, (rows, width), dtype, "contiguous")
    for idx_h in (rng.integers(0, destinations, rows), np.full(rows, 32)):
        idx = torch.from_numpy(idx_h.astype(index_dtype)).to(DEVICE)
        self_t = device_tensor(rng, (destinations, width), dtype, "contiguous")
        assert regimes(jitops.index_add_, self_t, 0, idx, src_t) == [PRIVATE]
        before = host(self_t)
        jitops.index_add_(self_t, 0, idx, src_t)
        ref, bound = accumulate_reference(before, idx_h, host(src_t), dtype)
        check_float(self_t, ref, bound, dtype)
        expanded = idx.view(rows, 1).expand(rows, width)
        assert regimes(jitops.scatter_add_, self_t, 0, expanded, src_t) == [PRIVATE]
        jitops.scatter_add_(self_t, 0, expanded, src_t)
        ref, bound = accumulate_reference(ref, idx_h, host(src_t), dtype)
        check_float(self_t, ref, 2 * bound, dtype)



@pytest.mark.parametrize("order", ["random", "sorted"])
@pytest.mark.parametrize("dtype, width", [("float32", 1000), ("float64", 512), ("float32", 333), ("float16", 600)])
def test_few_runs_of_wide_rows_split_their_units_over_warps(forced, order, dtype, width):
    """3000 rows are 94 runs of 32 for the sums, short of the device's warps: each run's units go to several
    warps (up to a row's groups of 32 units: 8, 8, 11 and 3 here), every warp adding its own units of each
    destination. Random and sorted indices, with a run of one destination across several runs."""
    rng = np.random.default_rng(seed("unit splits", order, dtype, width))
    rows, destinations = 3000, 700
    idx_h = rng.integers(0, destinations, rows)
    if order == "sorted":
        idx_h = np.sort(idx_h)
    idx_h[1000:1100] = idx_h[1000]
    idx = torch.from_numpy(idx_h).to(DEVICE)
    self_t = device_tensor(rng, (destinations, width), dtype, "contiguous")
    src_t = device_tensor(rng, (rows, width), dtype, "contiguous")
    sums = jitops.explain("index_add_", self_t, 0, idx, src_t)[-1]
    assert sums["regime"] == "row sums: sum sorted rows per destination"
    assert sums["grid"][0] * sums["block"][0] // 32 > (rows + 31) // 32  # more warps than runs
    before = host(self_t)
    jitops.index_add_(self_t, 0, idx, src_t, alpha=0.75)
    ref, bound = accumulate_reference(before, idx_h, host(src_t) * round_to(0.75, dtype), dtype)
    check_float(self_t, ref, bound, dtype)
