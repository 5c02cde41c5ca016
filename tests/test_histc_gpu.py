"""histc on the GPU against a numpy reference with PyTorch's bin arithmetic
(and against torch.histc where it agrees by definition), for every dtype x
range mode (found on the device, explicit, min == max) x layout x bins
regime (shared-memory sub-histograms, global atomics), on random data with
NaN and out-of-range values mixed in; the output poisoned first."""

import zlib

import numpy as np
import pytest

import jitops
from gpu_data import poisoned_like

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]


def make_x(dtype, n, layout, seed):
    rng = np.random.default_rng(seed)
    size = n * 2 if layout == "strided" else n
    if dtype in FLOATS:
        v = torch.from_numpy(rng.standard_normal(size) * 2).to(getattr(torch, dtype))
        v[rng.integers(0, size, max(1, size // 50))] = float("nan")
    else:
        info = np.iinfo(dtype)
        v = torch.from_numpy(rng.integers(max(info.min, -120), min(info.max, 120), size, endpoint=True)).to(
            getattr(torch, dtype))
    v = v.to(DEVICE)
    return v[::2] if layout == "strided" else v


def acc_values(x):
    """x in PyTorch's accumulate type: float32 for 16/32-bit floats, float64, int64."""
    if x.dtype == torch.float64:
        return x.cpu().numpy()
    if x.dtype.is_floating_point:
        return x.float().cpu().numpy()
    return x.cpu().numpy().astype(np.int64)


def in_x_type(x, value):
    """value as x's dtype holds it: floats round, integers truncate toward zero and wrap (as PyTorch converts)."""
    if x.dtype.is_floating_point:
        return torch.tensor(value, dtype=torch.float64).to(x.dtype).item()
    return int(np.array(int(value), dtype=np.int64).astype(str(x.dtype).replace("torch.", "")))


def reference(x, bins, lo, hi):
    """Exact counts with PyTorch's arithmetic: (int)((v - lo) * bins / (hi - lo))."""
    v = acc_values(x)
    v = v[~np.isnan(v)] if v.dtype.kind == "f" else v
    if lo == hi:
        lo, hi = in_x_type(x, lo - 1), in_x_type(x, hi + 1)
    a = v.dtype.type
    lo_a, hi_a = a(lo), a(hi)
    keep = (v >= lo_a) & (v <= hi_a)
    v = v[keep]
    if v.dtype.kind == "f":
        b = ((v - lo_a) * a(bins) / (hi_a - lo_a)).astype(np.int64)
    else:
        b = (v - lo_a) * bins // (hi_a - lo_a)
    b = np.clip(b, 0, bins - 1)
    return np.bincount(b, minlength=bins)


def data_range(x):
    v = acc_values(x)
    v = v[~np.isnan(v)] if v.dtype.kind == "f" else v
    return in_x_type(x, v.min()), in_x_type(x, v.max())


# An explicit range over 12007 values: one block that writes out itself (floats; one cluster for integers);
# over 20011, one cluster or several blocks; over 100003: several blocks.
@pytest.mark.parametrize("mode,n", [("auto", 20011), ("explicit", 12007), ("explicit", 20011), ("explicit", 100003),
                                    ("explicit_int", 12007), ("explicit_int", 100003)])
@pytest.mark.parametrize("bins", [1, 100, 1000, 70000])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_histc(dtype, layout, mode, bins, n):
    x = make_x(dtype, n, layout, zlib.crc32(f"{dtype}{layout}{mode}{bins}{n}".encode()))
    if mode == "auto":
        lo, hi = data_range(x)
        kwargs = {}
    elif mode == "explicit":
        lo, hi = in_x_type(x, -1.5), in_x_type(x, 2.25)
        kwargs = dict(min=-1.5, max=2.25)
    else:
        lo, hi = in_x_type(x, -50), in_x_type(x, 60)
        kwargs = dict(min=-50, max=60)
    expected = reference(x, bins, lo, hi)
    out = poisoned_like(torch, (bins,), torch.int64, DEVICE)
    got = jitops.histc(x, bins, out=out, counts_dtype="int64", **kwargs)
    assert got is out
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    default = jitops.histc(x, bins, **kwargs)
    assert default.dtype == x.dtype and default.shape == (bins,)
    np.testing.assert_array_equal(default.double().cpu().numpy(),
                                  torch.from_numpy(expected).to(x.dtype).double().numpy())
    if dtype in ("float32", "float64") and mode != "auto":
        # torch.histc agrees where its float atomics are exact.
        np.testing.assert_array_equal(default.cpu().numpy(), torch.histc(x, bins, **kwargs).cpu().numpy())


@pytest.fixture(params=[0, 2], ids=["shared_counters", "global_counters"])
def counting_strategy(request):
    """0: counters in shared memory (for float16 / bfloat16 / float32, the
    binner with no branch per value); 2: 64-bit atomics in global memory
    (the general binner)."""
    jitops._core._set_histogram_strategy(request.param)
    yield request.param
    jitops._core._set_histogram_strategy(0)


@pytest.mark.parametrize("n,offset", [(1, 0), (7, 1), (4099, 0), (3_000_017, 0), (3_000_017, 3)])
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_auto_range_of_a_dense_x(counting_strategy, dtype, n, offset):
    """Many blocks, a tail past the last whole pack, views that start off
    alignment (narrower packs), the extremes in the first and the last
    element (x == max lands in the last bin)."""
    x = make_x(dtype, n + offset, "contiguous", zlib.crc32(f"{dtype}{n}{offset}".encode()))[offset:]
    if n == 1 and dtype in FLOATS:
        x = torch.nan_to_num(x, nan=1.5)  # make_x's NaN would be all of x
    if n > 2:
        x[0] = 0 if dtype == "uint8" else -100
        x[-1] = 100
    for bins in (100, 1000):
        lo, hi = data_range(x)
        out = poisoned_like(torch, (bins,), torch.int64, DEVICE)
        jitops.histc(x, bins, out=out, counts_dtype="int64")
        np.testing.assert_array_equal(out.cpu().numpy(), reference(x, bins, lo, hi), err_msg=f"bins {bins}")


def test_back_to_back_auto_ranges_each_start_from_their_own_scratch(counting_strategy):
    """Queued calls with no synchronization between them: each call's range
    words and counts are its own."""
    xs = [make_x("float32", 500_000 + 4 * k, "contiguous", k) * (k + 1) for k in range(12)]
    outs = [jitops.histc(x, 64, counts_dtype="int64") for x in xs]
    for x, out in zip(xs, outs):
        lo, hi = data_range(x)
        np.testing.assert_array_equal(out.cpu().numpy(), reference(x, 64, lo, hi))


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_min_equal_max_uses_the_data_and_widens_equal_data(dtype):
    x = torch.full((1000,), 5, device=DEVICE, dtype=getattr(torch, dtype))
    got = jitops.histc(x, 4, counts_dtype="int32")  # range [4, 6]: 5 lands in bin 2
    np.testing.assert_array_equal(got.cpu().numpy(), [0, 0, 1000, 0])
    got = jitops.histc(x, 4, min=3, max=3, counts_dtype="int32")  # min == max: the data's range, as PyTorch
    np.testing.assert_array_equal(got.cpu().numpy(), [0, 0, 1000, 0])


def test_non_finite_range_in_the_data_raises_at_the_next_call():
    x = torch.randn(1000, device=DEVICE)
    x[3] = float("inf")
    out = jitops.histc(x, 10)
    with pytest.raises(ValueError, match="histc: the range .* is not finite"):
        jitops.synchronize()
    assert torch.count_nonzero(out).item() == 0
    nan = torch.full((10,), float("nan"), device=DEVICE)
    jitops.histc(nan, 10)
    with pytest.raises(ValueError, match="every value is NaN"):
        jitops.synchronize()
    good = jitops.histc(torch.arange(10.0, device=DEVICE), 10)  # the context is fine
    assert torch.equal(good, torch.ones(10, device=DEVICE))


def test_bad_calls():
    x = torch.randn(100, device=DEVICE)
    with pytest.raises(ValueError, match="bins: expected a positive"):
        jitops.histc(x, 0)
    with pytest.raises(ValueError, match="max: expected max >= min"):
        jitops.histc(x, 10, min=2, max=1)
    with pytest.raises(ValueError, match="min: expected a finite range"):
        jitops.histc(x, 10, min=0, max=float("inf"))
    with pytest.raises(TypeError, match="x: histc supports"):
        jitops.histc(x > 0, 10)
    assert jitops.histc(x, 10, min=-100, max=100).sum().item() == 100


def test_empty_input_gives_zeros():
    got = jitops.histc(torch.empty(0, device=DEVICE), 7)
    jitops.synchronize()  # no error is pending: an empty input has a finite range
    assert torch.equal(got, torch.zeros(7, device=DEVICE))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("bins", [3, 7, 100, 1000])
@pytest.mark.parametrize("lo,hi", [(-1.7, 2.3), (0.1, 0.7), (-3.0, 3.0), (1e-31, 5e-31), (-1e30, 1e30)])
def test_values_at_bin_edges(dtype, bins, lo, hi):
    """Values on and up to two ulps around every bin edge: the bin must be the
    one PyTorch's correctly rounded float division gives (the kernel divides
    by a multiplication with a corrected reciprocal where the range allows it,
    and by a division where that could overflow or underflow: the last two
    ranges here)."""
    if dtype == "float16" and hi > 65504:
        pytest.skip("the range is not finite in float16")
    edges = np.array([lo + k * (hi - lo) / bins for k in range(bins + 1)], dtype=np.float32)
    values = [edges, np.float32([np.nan])]
    for direction in (np.inf, -np.inf):
        moved = edges
        for _ in range(2):
            moved = np.nextafter(moved, np.float32(direction), dtype=np.float32)
            values.append(moved)
    x = torch.from_numpy(np.concatenate(values)).to(getattr(torch, dtype)).to(DEVICE)
    for kwargs in (dict(min=lo, max=hi), {}):
        r_lo, r_hi = (in_x_type(x, lo), in_x_type(x, hi)) if kwargs else data_range(x)
        expected = reference(x, bins, r_lo, r_hi)
        out = poisoned_like(torch, (bins,), torch.int64, DEVICE)
        jitops.histc(x, bins, out=out, counts_dtype="int64", **kwargs)
        np.testing.assert_array_equal(out.cpu().numpy(), expected, err_msg=str(kwargs or "auto range"))
        if dtype == "float32" and kwargs:  # torch.histc refuses the NaN in an auto range
            np.testing.assert_array_equal(out.cpu().numpy(), torch.histc(x, bins, **kwargs).cpu().numpy())


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("layout,n", [("contiguous", "limit"), ("contiguous", "past"), ("strided", "limit"),
                                      ("strided", "past")])
def test_explicit_range_at_the_one_cluster_limits(dtype, layout, n):
    """On sm_90, an explicit range over up to 1 MiB of a dense x (or 131072
    strided values, 65536 of 8 bytes) is one cluster launch that writes the
    output itself; one value more takes the count kernel. Both sides of each
    limit, into a strided out."""
    itemsize = np.dtype(dtype).itemsize if dtype != "bfloat16" else 2
    past = 1 if n == "past" else 0
    n = (1 << 20) // itemsize + past if layout == "contiguous" else (65536 if itemsize == 8 else 131072) + past
    x = make_x(dtype, n, layout, zlib.crc32(f"cluster{dtype}{layout}{n}".encode()))
    for bins, lo, hi in ((1, -1.5, 2.25), (37, -50, 60), (2201, -1.5, 2.25)):
        expected = reference(x, bins, in_x_type(x, lo), in_x_type(x, hi))
        buffer = poisoned_like(torch, (bins, 2), torch.int64, DEVICE)
        out = buffer[:, 1]
        jitops.histc(x, bins, min=lo, max=hi, out=out, counts_dtype="int64")
        np.testing.assert_array_equal(out.cpu().numpy(), expected, err_msg=f"bins {bins}")
        assert torch.equal(buffer[:, 0], poisoned_like(torch, (bins, 2), torch.int64, DEVICE)[:, 0])


@pytest.mark.parametrize("counts", ["float32", "float64", "int32", "int64", "float16", "bfloat16", "int16"])
@pytest.mark.parametrize("mode", ["explicit", "auto"])
@pytest.mark.parametrize("out_layout", ["contiguous", "strided"])
def test_count_kernel_into_every_output(counts, mode, out_layout):
    """x past the one cluster's 1 MiB: the count kernel's blocks add their counts straight into a float32,
    float64, int32 or int64 output (zeroed first by a memset, or by the range kernel of an automatic range;
    a strided out with an explicit range keeps the last block's hand-off), the other outputs get the counts
    summed first. Called twice into the same poisoned out: each call starts from zeros."""
    x = make_x("float32", 1_500_007, "contiguous", zlib.crc32(f"into{counts}{mode}{out_layout}".encode()))
    bins = 257
    if mode == "auto":
        lo, hi = data_range(x)
        kwargs = {}
    else:
        lo, hi = in_x_type(x, -2.5), in_x_type(x, 3.0)
        kwargs = dict(min=-2.5, max=3.0)
    expected = torch.from_numpy(reference(x, bins, lo, hi)).to(getattr(torch, counts))
    dtype = getattr(torch, counts)
    buffer = poisoned_like(torch, (bins, 2), dtype, DEVICE)
    out = buffer[:, 1] if out_layout == "strided" else poisoned_like(torch, (bins,), dtype, DEVICE)
    for call in range(2):
        got = jitops.histc(x, bins, out=out, counts_dtype=counts, **kwargs)
        assert got is out
        np.testing.assert_array_equal(out.cpu().double().numpy(), expected.double().numpy(), err_msg=f"call {call}")
    if out_layout == "strided":
        assert torch.equal(buffer[:, 0], poisoned_like(torch, (bins, 2), dtype, DEVICE)[:, 0])


@pytest.mark.parametrize("dtype,layout,n,bins", [("float32", "contiguous", 65536, 255), ("float32", "contiguous", 65536, 257),
                                                 ("float64", "strided", 65536, 512), ("float64", "strided", 65536, 513),
                                                 ("int32", "strided", 100003, 390), ("int32", "strided", 100003, 391)])
def test_explicit_range_either_side_of_the_cluster_values_a_bin(dtype, layout, n, bins):
    """Where the count kernel would add into the output, one cluster counts only x of fewer than 256 values a
    bin (an 8-byte value counting as two): both sides, into a poisoned contiguous out of x's dtype."""
    x = make_x(dtype, n, layout, zlib.crc32(f"perbin{dtype}{layout}{n}{bins}".encode()))
    lo, hi = (-1.5, 2.25) if dtype != "int32" else (-50, 60)
    expected = torch.from_numpy(reference(x, bins, in_x_type(x, lo), in_x_type(x, hi))).to(x.dtype)
    out = poisoned_like(torch, (bins,), x.dtype, DEVICE)
    jitops.histc(x, bins, min=lo, max=hi, out=out)
    np.testing.assert_array_equal(out.cpu().numpy(), expected.numpy())
