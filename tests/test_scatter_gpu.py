"""The accumulate family on the GPU against numpy (np.add.at and friends):
every op x dtype x index dtype x 1-4 dims x every dim x contiguous and
strided self, with duplicate indices. Integer results, copies, fills, amax
and amin must match exactly; floating sums and products, whose rounding
depends on the order the atomics land in, must lie within a bound that grows
with the number of terms reduced into each element."""

import zlib

import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64"]
EPS = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}


def seed(*parts):
    return zlib.crc32(repr(parts).encode())


def every_case(test):
    """Every dtype x index dtype x dims x layout: strided views of 4-6 dims take kernels of their own, of 7 the
    generic walk (kSpecializedDims, runtime/launch_shape.h)."""
    for name, values in (("layout", ["contiguous", "strided"]), ("ndim", [1, 2, 3, 4, 5, 7]),
                         ("index_dtype", ["int64", "int32"]), ("dtype", DTYPES)):
        test = pytest.mark.parametrize(name, values)(test)
    return test


def random_values(rng, shape, dtype):
    if dtype in EPS:
        return rng.standard_normal(shape)
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if info.bits <= 16 else (-1000, 1000)
    return rng.integers(lo, hi, shape, endpoint=True)


def device_tensor(rng, shape, dtype, layout):
    """A random device tensor (float64 values rounded to `dtype`), contiguous or a strided view."""
    tdt = getattr(torch, dtype)
    if layout == "contiguous":
        return torch.from_numpy(np.asarray(random_values(rng, shape, dtype))).to(DEVICE).to(tdt)
    ndim = len(shape)
    perm = list(rng.permutation(ndim)) if ndim >= 2 else [0]
    inverse = list(np.argsort(perm))
    base_shape = [shape[p] for p in perm]
    base_shape[-1] = base_shape[-1] * 2 + 1
    base = torch.from_numpy(np.asarray(random_values(rng, base_shape, dtype))).to(DEVICE).to(tdt)
    view = base[..., 1::2]
    return view.permute(*inverse)


def host(t):
    """Values as numpy: floats as float64, integers in their own dtype."""
    t = t.detach().cpu()
    return t.double().numpy() if t.is_floating_point() else t.numpy()


def check_float(got, ref, bound, dtype):
    got = host(got)
    assert got.shape == ref.shape
    assert np.all(np.isfinite(got) == np.isfinite(ref))
    err = np.abs(got - ref)
    ok = err <= bound
    assert ok.all(), f"{dtype}: max error {err[~ok].max()} over bound at {np.argwhere(~ok)[:3].tolist()}"


def round_to(values, dtype):
    return torch.from_numpy(np.asarray(values, dtype=np.float64)).to(getattr(torch, dtype)).double().numpy()


def _add_at(target, positions, terms):
    """np.add.at(target, positions, terms), in float64. Positions that are one row index take the rows'
    sums per destination from PyTorch's index_add_ in float64 on the GPU (another implementation, and
    exact enough to judge 16- and 32-bit sums): np.add.at took 70-80 s for 2^20 rows of 128."""
    if not (isinstance(positions, np.ndarray) and positions.ndim == 1 and np.ndim(terms) >= 1
            and np.shape(terms)[0] == positions.shape[0] and positions.size > 1024):
        np.add.at(target, positions, terms)
        return
    acc = torch.from_numpy(np.ascontiguousarray(target, dtype=np.float64)).to(DEVICE)
    rows = torch.from_numpy(np.ascontiguousarray(terms, dtype=np.float64)).to(DEVICE)
    acc.index_add_(0, torch.from_numpy(positions.astype(np.int64)).to(DEVICE), rows)
    target[...] = acc.cpu().numpy()


def accumulate_reference(self_h, positions, terms, dtype):
    """(reference, bound): self plus every term at its position, in float64, and the rounding bound."""
    ref = self_h.astype(np.float64).copy()
    mag = np.abs(ref).copy()
    count = np.zeros(ref.shape)
    _add_at(ref, positions, terms)
    _add_at(mag, positions, np.abs(terms))
    _add_at(count, positions, np.ones(np.shape(terms)) if np.ndim(terms) else 1)
    bound = 2 * (count + 1) * EPS[dtype] * mag + 1e-300
    return ref, bound


@every_case
def test_index_add(dtype, index_dtype, ndim, layout):
    rng = np.random.default_rng(seed("index_add", dtype, index_dtype, ndim, layout))
    shape = tuple(int(s) for s in rng.integers(1, 6, ndim))
    for dim in range(-ndim, ndim):
        for alpha in (1, 3) if dtype not in EPS else (1, 0.75):
            self_t = device_tensor(rng, shape, dtype, layout)
            n = int(rng.integers(1, 12))
            idx = rng.integers(0, shape[dim], n)  # duplicates on purpose
            src_shape = list(shape)
            src_shape[dim] = n
            src_t = device_tensor(rng, src_shape, dtype, layout)
            before, src_h = host(self_t), host(src_t)
            out = jitops.index_add_(self_t, dim, torch.from_numpy(idx.astype(index_dtype)).to(DEVICE), src_t,
                                    alpha=alpha)
            assert out is self_t
            moved_src = np.moveaxis(src_h, dim, 0)
            if dtype in EPS:
                terms = moved_src * (round_to(alpha, dtype) if alpha != 1 else 1)
                ref, bound = accumulate_reference(np.moveaxis(before, dim, 0), idx, terms, dtype)
                check_float(self_t, np.moveaxis(ref, 0, dim), np.moveaxis(bound, 0, dim), dtype)
            else:
                ref = before.copy()
                np.add.at(np.moveaxis(ref, dim, 0), idx, (moved_src * alpha).astype(dtype))
                np.testing.assert_array_equal(host(self_t), ref)


@every_case
def test_index_copy_and_fill(dtype, index_dtype, ndim, layout):
    rng = np.random.default_rng(seed("index_copy", dtype, index_dtype, ndim, layout))
    shape = tuple(int(s) for s in rng.integers(1, 6, ndim))
    for dim in range(-ndim, ndim):
        self_t = device_tensor(rng, shape, dtype, layout)
        n = int(rng.integers(1, shape[dim] + 1))
        idx = rng.permutation(shape[dim])[:n]  # distinct: which duplicate wins is unspecified
        src_shape = list(shape)
        src_shape[dim] = n
        src_t = device_tensor(rng, src_shape, dtype, layout)
        ref = host(self_t).copy()
        np.moveaxis(ref, dim, 0)[idx] = np.moveaxis(host(src_t), dim, 0)
        jitops.index_copy_(self_t, dim, torch.from_numpy(idx.astype(index_dtype)).to(DEVICE), src_t)
        np.testing.assert_array_equal(host(self_t), ref)
        value = 2.75 if dtype in EPS else -3
        fill_idx = rng.integers(0, shape[dim], int(rng.integers(1, 6)))
        ref = host(self_t).copy()
        np.moveaxis(ref, dim, 0)[fill_idx] = round_to(value, dtype) if dtype in EPS else np.array(value).astype(dtype)
        jitops.index_fill_(self_t, dim, torch.from_numpy(fill_idx.astype(index_dtype)).to(DEVICE), value)
        np.testing.assert_array_equal(host(self_t), ref)


def scatter_positions(idx, dim):
    coords = list(np.indices(idx.shape))
    coords[dim % idx.ndim] = idx
    return tuple(coords)


REDUCES = [("sum", True), ("sum", False), ("prod", True), ("prod", False), ("mean", True), ("mean", False),
           ("amax", True), ("amax", False), ("amin", True), ("amin", False)]


@every_case
def test_scatter_add_and_reduce(dtype, index_dtype, ndim, layout):
    rng = np.random.default_rng(seed("scatter", dtype, index_dtype, ndim, layout))
    shape = tuple(int(s) for s in rng.integers(1, 6, ndim))
    for dim in range(-ndim, ndim):
        for reduce, include_self in [("add", True)] + REDUCES:
            self_t = device_tensor(rng, shape, dtype, layout)
            idx_shape = [int(rng.integers(1, s + 1)) for s in shape]
            idx_shape[dim] = int(rng.integers(1, 8))
            src_shape = [s + int(rng.integers(0, 2)) for s in idx_shape]
            src_t = device_tensor(rng, src_shape, dtype, layout)
            if reduce == "prod" and dtype in EPS:  # keep products of many terms finite and well conditioned
                src_t = src_t.abs().add_(0.5).clamp_(max=2) * src_t.sign().add_(0.5).sign()
            idx = rng.integers(0, shape[dim], idx_shape)
            before = host(self_t)
            window = tuple(slice(0, n) for n in idx_shape)
            terms = host(src_t)[window]
            index = torch.from_numpy(idx.astype(index_dtype)).to(DEVICE)
            if reduce == "add":
                jitops.scatter_add_(self_t, dim, index, src_t)
            else:
                jitops.scatter_reduce_(self_t, dim, index, src_t, reduce, include_self=include_self)
            pos = scatter_positions(idx, dim)
            try:
                expect_reduced(self_t, before, pos, terms, reduce, include_self, dtype)
            except AssertionError as e:
                raise AssertionError(f"reduce={reduce} include_self={include_self} dim={dim}: {e}") from None


def expect_reduced(got, before, pos, terms, reduce, include_self, dtype):
    touched = np.zeros(before.shape, bool)
    touched[pos] = True
    count = np.zeros(before.shape)
    np.add.at(count, pos, 1)
    if reduce in ("add", "sum", "mean"):
        start = before if include_self else np.where(touched, 0, before)
        if dtype in EPS:
            ref, bound = accumulate_reference(start, pos, terms, dtype)
            if reduce == "mean":
                div = np.where(touched, count + (1 if include_self else 0), 1)
                ref = np.where(touched, ref / div, ref)
                bound = np.where(touched, bound / div + 2 * EPS[dtype] * np.abs(ref), bound)
            check_float(got, ref, bound, dtype)
        else:
            if reduce == "mean":  # PyTorch sums in the dtype (wrapping), then floor-divides
                summed = start.copy()
                np.add.at(summed, pos, terms)
                div = np.where(touched, count + (1 if include_self else 0), 1).astype(np.int64)
                ref = np.where(touched, np.floor_divide(summed.astype(np.int64), div), summed).astype(dtype)
            else:
                ref = start.copy()
                np.add.at(ref, pos, terms)
            np.testing.assert_array_equal(host(got), ref)
        return
    ufunc = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    if include_self:
        ref = before.astype(np.float64 if dtype in EPS else before.dtype).copy()
    else:
        if reduce == "prod":
            identity = 1
        elif dtype in EPS:
            identity = -np.inf if reduce == "amax" else np.inf
        else:
            info = np.iinfo(dtype)
            identity = info.min if reduce == "amax" else info.max
        ref = np.where(touched, identity, before).astype(np.float64 if dtype in EPS else before.dtype)
    ufunc.at(ref, pos, terms)
    if reduce == "prod" and dtype in EPS:
        count_terms = count + 1
        bound = 2 * count_terms * EPS[dtype] * np.abs(ref) + 1e-300
        check_float(got, ref, bound, dtype)
    elif dtype in EPS:
        np.testing.assert_array_equal(host(got), ref)
    else:
        np.testing.assert_array_equal(host(got), ref)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_both_regimes(dtype):
    rng = np.random.default_rng(seed("regimes", dtype))
    # Few indices into wide rows: the small-index regime; many: the large-index one.
    # (Small-index needs the slice alone to give every SM two blocks: 2^20 wide.)
    for rows, n, width, regime in [(64, 8, 1 << 20, "small-index"), (4096, 3000, 256, "large-index")]:
        self_t = device_tensor(rng, (rows, width), dtype, "contiguous")
        idx = torch.from_numpy(rng.integers(0, rows, n)).to(DEVICE)
        src_t = device_tensor(rng, (n, width), dtype, "contiguous")
        assert jitops.explain(jitops.index_add_, self_t, 0, idx, src_t)[0]["regime"] == regime
        before = host(self_t)
        jitops.index_add_(self_t, 0, idx, src_t)
        ref, bound = accumulate_reference(before, idx.cpu().numpy(), host(src_t), dtype)
        check_float(self_t, ref, bound, dtype)


def test_hot_rows_and_empty_index():
    rng = np.random.default_rng(11)
    self_t = torch.zeros(64, 32, device=DEVICE, dtype=torch.float32).normal_()
    idx = torch.from_numpy(rng.integers(0, 64, 1 << 16)).to(DEVICE)
    src_t = torch.randn(1 << 16, 32, device=DEVICE)
    before = host(self_t)
    jitops.index_add_(self_t, 0, idx, src_t)
    ref, bound = accumulate_reference(before, idx.cpu().numpy(), host(src_t), "float32")
    check_float(self_t, ref, bound, "float32")
    empty = torch.empty(0, dtype=torch.int64, device=DEVICE)
    snapshot = self_t.clone()
    jitops.index_add_(self_t, 0, empty, torch.empty(0, 32, device=DEVICE))
    jitops.scatter_add_(self_t, 0, empty.view(0, 1).expand(0, 32), torch.empty(0, 32, device=DEVICE))
    assert torch.equal(self_t, snapshot)


def test_past_2_31_elements():
    n = (1 << 31) + 5000
    self_t = torch.zeros(n, dtype=torch.int8, device=DEVICE)
    idx_h = np.array([0, n - 1, (1 << 31) + 7, (1 << 31) + 7, 5], dtype=np.int64)
    src = torch.tensor([1, 2, 3, 4, 5], dtype=torch.int8, device=DEVICE)
    idx = torch.from_numpy(idx_h).to(DEVICE)
    assert jitops.explain(jitops.index_add_, self_t, 0, idx, src)[0]["spec"]["offset"] == 64
    jitops.index_add_(self_t, 0, idx, src)
    assert [self_t[int(i)].item() for i in (0, n - 1, (1 << 31) + 7, 5)] == [1, 2, 7, 5]
    assert int(self_t.sum().item()) == 15
    jitops.index_fill_(self_t, 0, idx, 9)
    assert self_t[n - 1].item() == 9 and self_t[(1 << 31) + 7].item() == 9
    del self_t
    torch.cuda.empty_cache()


def test_numpy_in_place_and_errors():
    rng = np.random.default_rng(12)
    self_h = rng.standard_normal((10, 4)).astype(np.float32)
    ref = self_h.copy()
    idx = np.array([1, 1, 9])
    src = rng.standard_normal((3, 4)).astype(np.float32)
    np.add.at(ref, idx, src)
    assert jitops.index_add_(self_h, 0, idx, src) is self_h
    np.testing.assert_allclose(self_h, ref, rtol=1e-6)
    frozen = self_h.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="self: expected a writable array"):
        jitops.index_add_(frozen, 0, idx, src)
    x = torch.zeros(5, 3, device=DEVICE)
    with pytest.raises(ValueError, match="self: expected an array whose elements do not overlap"):
        jitops.index_add_(torch.zeros(1, 3, device=DEVICE).expand(5, 3), 0, torch.tensor([0], device=DEVICE),
                          torch.ones(1, 3, device=DEVICE))
    with pytest.raises(TypeError, match="source: expected dtype float32 like self"):
        jitops.index_add_(x, 0, torch.tensor([0], device=DEVICE), torch.ones(1, 3, device=DEVICE, dtype=torch.float64))
    with pytest.raises(ValueError, match="reduce: expected 'sum', 'prod', 'mean', 'amax' or 'amin'"):
        jitops.scatter_reduce_(x, 0, torch.zeros(1, 3, dtype=torch.int64, device=DEVICE), x, "max")
    with pytest.raises(TypeError, match="alpha: expected an integer for an integer self"):
        jitops.index_add_(torch.zeros(5, dtype=torch.int32, device=DEVICE), 0, torch.tensor([0], device=DEVICE),
                          torch.ones(1, dtype=torch.int32, device=DEVICE), alpha=0.5)
    jitops.set_index_checks("sync")
    try:
        with pytest.raises(IndexError, match=r"index_add_: index holds 5 at position 0 .*dimension of size 5"):
            jitops.index_add_(x, 0, torch.tensor([5], device=DEVICE), torch.ones(1, 3, device=DEVICE))
    finally:
        jitops.set_index_checks("async")
    assert torch.equal(x, torch.zeros(5, 3, device=DEVICE))  # the bad row was not written
    jitops.index_add_(x, 0, torch.tensor([4], device=DEVICE), torch.ones(1, 3, device=DEVICE))
    assert x[4].sum().item() == 3


def test_cupy_self():
    cupy = pytest.importorskip("cupy")
    self_c = cupy.zeros((6, 2), dtype=cupy.float64)
    jitops.scatter_add_(self_c, 0, cupy.asarray([[0, 1], [0, 5]]), cupy.ones((2, 2)))
    np.testing.assert_array_equal(cupy.asnumpy(self_c)[[0, 1, 5]], [[2, 0], [0, 1], [0, 1]])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_deterministic_is_bitwise_reproducible(dtype):
    rng = np.random.default_rng(seed("deterministic", dtype))
    tdt = getattr(torch, dtype)
    self0 = torch.from_numpy(rng.standard_normal((50, 33))).to(DEVICE).to(tdt)
    idx = torch.from_numpy(rng.integers(0, 50, 4000)).to(DEVICE)  # ~80 terms per row: order matters
    src = torch.from_numpy(rng.standard_normal((4000, 33))).to(DEVICE).to(tdt)
    sidx = torch.from_numpy(rng.integers(0, 50, (3000, 33))).to(DEVICE)
    ssrc = torch.from_numpy(rng.standard_normal((3000, 33))).to(DEVICE).to(tdt)
    calls = [
        ("index_add_", lambda s: jitops.index_add_(s, 0, idx, src, alpha=0.5, deterministic=True)),
        ("scatter_add_", lambda s: jitops.scatter_add_(s, 0, sidx, ssrc, deterministic=True)),
        ("sum", lambda s: jitops.scatter_reduce_(s, 0, sidx, ssrc, "sum", include_self=False, deterministic=True)),
        ("mean", lambda s: jitops.scatter_reduce_(s, 0, sidx, ssrc, "mean", deterministic=True)),
    ]
    for name, call in calls:
        results = []
        for _ in range(10):
            s = self0.clone()
            call(s)
            results.append(s)
        for r in results[1:]:
            assert torch.equal(r.flatten().view(torch.uint8), results[0].flatten().view(torch.uint8)), name
        before = host(self0)
        if name == "index_add_":
            terms = host(src) * round_to(0.5, dtype)
            ref, bound = accumulate_reference(before, idx.cpu().numpy(), terms, dtype)
            check_float(results[0], ref, bound, dtype)
        else:
            pos = scatter_positions(sidx.cpu().numpy(), 0)
            expect_reduced(results[0], before, pos, host(ssrc), "add" if name == "scatter_add_" else name,
                           name != "sum", dtype)


@pytest.mark.parametrize("kind", ["sorted", "repeated"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "int64", "int8", "int16"])
def test_sorted_and_repeated_indices(dtype, kind):
    """Single elements and narrow rows landing on few destinations, many terms each, every reduction. Repeated
    indices put a warp's lanes on five destinations in random order: the compare-and-swap ops and 16-bit adds
    combine each group of peers before one lane applies it."""
    rng = np.random.default_rng(seed("merge", dtype, kind))
    n, dests = 100003, 3001
    idx = np.sort(rng.integers(0, dests, n)) if kind == "sorted" else rng.choice(rng.integers(0, dests, 5), n)
    for reduce, include_self in [("add", True)] + REDUCES:
        for width in (1, 3):  # one column, and narrow rows (index expanded along them)
            self_t = device_tensor(rng, (dests, width), dtype, "contiguous")
            src_t = device_tensor(rng, (n, width), dtype, "contiguous")
            if reduce == "prod" and dtype in EPS:
                src_t = 1 + (src_t - src_t.mean()).clamp(-1, 1) * 0.001
            elif reduce == "prod":
                src_t = src_t.clamp(-1, 1).to(src_t.dtype)
            index = torch.from_numpy(np.repeat(idx[:, None], width, 1)).to(DEVICE)
            reduce_rows_and_check(self_t, idx, index, src_t, reduce, include_self, dtype)


def reduce_rows_and_check(self_t, idx, index, src_t, reduce, include_self, dtype):
    """scatter_add_ (reduce "add") or scatter_reduce_ of rows along dim 0 through `index`, whose row r is
    idx[r] across the width, against numpy."""
    width = self_t.shape[1]
    before, terms = host(self_t), host(src_t)
    if reduce == "add":
        jitops.scatter_add_(self_t, 0, index, src_t)
    else:
        jitops.scatter_reduce_(self_t, 0, index, src_t, reduce, include_self=include_self)
    pos = scatter_positions(np.repeat(idx[:, None], width, 1), 0)
    try:
        expect_reduced(self_t, before, pos, terms, reduce, include_self, dtype)
    except AssertionError as e:
        raise AssertionError(f"reduce={reduce} include_self={include_self} width={width}: {e}") from None


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_native_atomics_into_eight_hot_destinations_combine_a_warps_peers(dtype):
    """A million single elements (enough for 4 units a thread) into 8 hot destinations of 100003, in random
    order: threads whose units meet on one destination make their warp combine its peers before the atomics.
    scatter_add_, index_add_ with alpha, and (integers) amax / amin, against numpy; integers exactly."""
    rng = np.random.default_rng(seed("hot natives", dtype))
    n, dests = 1_000_003, 100_003
    hot = rng.integers(0, dests, 8)
    idx = hot[rng.integers(0, 8, n)]
    index = torch.from_numpy(idx).to(DEVICE)
    src_t = device_tensor(rng, (n,), dtype, "contiguous")
    terms = host(src_t)
    calls = [("add", lambda s: jitops.scatter_add_(s, 0, index, src_t), terms),
             ("add", lambda s: jitops.index_add_(s, 0, index.int(), src_t, alpha=3), 3 * terms)]
    if dtype in ("int32", "int64"):
        calls += [(r, lambda s, r=r: jitops.scatter_reduce_(s, 0, index, src_t, r), terms) for r in ("amax", "amin")]
    for reduce, call, added in calls:
        self_t = device_tensor(rng, (dests,), dtype, "contiguous")
        assert jitops.explain("scatter_add_", self_t, 0, index, src_t)[0]["spec"]["unroll"] > 1
        before = host(self_t)
        call(self_t)
        expect_reduced(self_t, before, (idx,), added.astype(terms.dtype), reduce, True, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_hot_16_bit_sums_round_once_a_warp_group(dtype):
    """Ones added into two elements: 16-bit atomics alone stop at 2048 in float16 (2049 rounds back to it)
    and at 256 in bfloat16, as PyTorch's do. The lanes of a warp that share a destination are summed in
    float first, so each element receives multiples of 16 and the sums are exact. The index goes in pairs
    (3, 3, 5, 5, ...): one element's group in a warp spans eight runs, not one."""
    each = {"float16": 8192, "bfloat16": 4096}[dtype]  # multiples of 16 are exact up to here
    tdtype = getattr(torch, dtype)
    ones = torch.ones(2 * each, dtype=tdtype, device=DEVICE)
    index = torch.tensor([3, 3, 5, 5], device=DEVICE).repeat(each // 2)
    for name, call in [
        ("scatter_add_", lambda s: jitops.scatter_add_(s, 0, index, ones)),
        ("index_add_", lambda s: jitops.index_add_(s, 0, index.int(), ones)),
        ("scatter_reduce_ sum", lambda s: jitops.scatter_reduce_(s, 0, index, ones, "sum", include_self=False)),
    ]:
        self_t = torch.full((8,), 7, dtype=tdtype, device=DEVICE)
        self_t[3] = self_t[5] = float("nan") if name == "scatter_reduce_ sum" else 0
        call(self_t)
        got = host(self_t).astype(np.float64)
        assert got[3] == got[5] == each, f"{name}: {got[3]}, {got[5]} for {each} ones each"
        assert np.all(np.delete(got, [3, 5]) == 7), name


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_a_few_bytes_apart_from_a_transposed_source(dtype):
    """index_add_ and index_copy_ along dim 0 of a self sliced with a step (its rows 2 elements apart) from a
    transposed source: the plan narrows a warp's lanes along the index to one sector of the source and
    spreads the rest over rows (tests/test_scatter_spec.py). Odd sizes, so that the tiles have ragged edges."""
    rng = np.random.default_rng(seed("rows apart", dtype))
    rows, cols, n = 37, 301, 23
    for op in ("index_add_", "index_copy_"):
        base = device_tensor(rng, (rows, 2 * cols + 1), dtype, "contiguous")
        self_t = base[:, 1::2]
        src_t = device_tensor(rng, (cols, n), dtype, "contiguous").t()
        idx = rng.integers(0, rows, n) if op == "index_add_" else rng.permutation(rows)[:n]
        before, src_h, base_before = host(self_t), host(src_t), host(base)
        index = torch.from_numpy(idx.astype(np.int32)).to(DEVICE)
        if op == "index_copy_":
            jitops.index_copy_(self_t, 0, index, src_t)
            ref = before.copy()
            ref[idx] = src_h
            np.testing.assert_array_equal(host(self_t), ref)
        elif dtype in EPS:
            jitops.index_add_(self_t, 0, index, src_t, alpha=0.75)
            ref, bound = accumulate_reference(before, idx, src_h * round_to(0.75, dtype), dtype)
            check_float(self_t, ref, bound, dtype)
        else:
            jitops.index_add_(self_t, 0, index, src_t, alpha=3)
            ref = before.copy()
            np.add.at(ref, idx, (src_h * 3).astype(dtype))
            np.testing.assert_array_equal(host(self_t), ref)
        np.testing.assert_array_equal(host(base)[:, 0::2], base_before[:, 0::2])  # the gaps stay untouched


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "float16", "bfloat16"])
def test_short_rows_along_their_own_dim_take_a_warp_a_row(dtype):
    """index_fill_, index_copy_ and index_add_ along the inner dim of rows under a sector (25 or 13
    elements): a row's destinations span one or two sectors, so a warp's lanes take one row's whole index
    (the plan checked), with idle lanes where it is shorter than a power of two; sorted indices with repeats
    for the fill and the add, distinct ones for the copy, against numpy."""
    rng = np.random.default_rng(seed("short rows", dtype))
    width = 25 if getattr(torch, dtype).itemsize == 1 else 13
    rows, n = 4099, 37
    fill_idx = np.sort(rng.integers(0, width, n))
    copy_idx = rng.permutation(width)[:9]
    value = 2.75 if dtype in EPS else -3
    for op in ("index_fill_", "index_copy_", "index_add_"):
        self_t = device_tensor(rng, (rows, width), dtype, "contiguous")
        idx = copy_idx if op == "index_copy_" else fill_idx
        index = torch.from_numpy(idx).to(DEVICE)
        src_t = device_tensor(rng, (rows, len(idx)), dtype, "contiguous")
        args = (value,) if op == "index_fill_" else (src_t,)
        lanes = jitops.explain(op, self_t, 1, index, *args)[-1]["block"][0]
        assert lanes >= min(32, len(idx)), (op, lanes)
        before, src_h = host(self_t), host(src_t)
        getattr(jitops, op)(self_t, 1, index, *args)
        ref = before.copy()
        if op == "index_fill_":
            ref[:, idx] = round_to(value, dtype) if dtype in EPS else np.array(value).astype(dtype)
        elif op == "index_copy_":
            ref[:, idx] = src_h
        elif dtype in EPS:
            ref, bound = accumulate_reference(before.T, idx, src_h.T, dtype)
            check_float(self_t.t(), ref, bound, dtype)
            continue
        else:
            np.add.at(ref.T, idx, src_h.T)
        np.testing.assert_array_equal(host(self_t), ref)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int32", "int64"])
def test_walks_along_the_index_inner_dim(dtype):
    """Full indices read from transposed sources, large enough (2^16 units or more) for the planner to put
    the index's own inner dim inside (tests/test_scatter_spec.py): scatter_add_, scatter_reduce_ amax and
    index_add_, index_copy_ along the middle dim of a sliced self, each against numpy."""
    rng = np.random.default_rng(seed("index inner dim", dtype))
    shape, idx_shape = (64, 601, 2), (64, 601, 5)
    for reduce in ("add", "amax"):
        self_t = device_tensor(rng, shape, dtype, "contiguous")
        src_t = device_tensor(rng, idx_shape[::-1], dtype, "contiguous").permute(2, 1, 0)
        idx = rng.integers(0, shape[2], idx_shape)
        before, terms = host(self_t), host(src_t)
        index = torch.from_numpy(idx.astype(np.int64)).to(DEVICE)
        if reduce == "add":
            jitops.scatter_add_(self_t, 2, index, src_t)
        else:
            jitops.scatter_reduce_(self_t, 2, index, src_t, reduce)
        expect_reduced(self_t, before, scatter_positions(idx, 2), terms, reduce, True, dtype)
    rows, n = 37, 9
    for op in ("index_add_", "index_copy_"):
        base = device_tensor(rng, (64, 2 * rows, 1031), dtype, "contiguous")
        self_t = base[:, 1::2]
        src_t = device_tensor(rng, (1031, 64, n), dtype, "contiguous").permute(1, 2, 0)  # strides (n, 1, 64 n)
        idx = rng.integers(0, rows, n) if op == "index_add_" else rng.permutation(rows)[:n]
        before, src_h, base_before = host(self_t), host(src_t), host(base)
        index = torch.from_numpy(idx.astype(np.int32)).to(DEVICE)
        getattr(jitops, op)(self_t, 1, index, src_t)
        if op == "index_copy_":
            ref = before.copy()
            ref[:, idx] = src_h
            np.testing.assert_array_equal(host(self_t), ref)
        elif dtype in EPS:
            pos = (np.arange(64)[:, None, None], idx[None, :, None], np.arange(1031)[None, None, :])
            ref, bound = accumulate_reference(before, pos, src_h, dtype)
            check_float(self_t, ref, bound, dtype)
        else:
            ref = before.copy()
            np.add.at(ref, (slice(None), idx), src_h)
            np.testing.assert_array_equal(host(self_t), ref)
        np.testing.assert_array_equal(host(base)[:, 0::2], base_before[:, 0::2])


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32"])
def test_a_self_past_half_the_l2_in_its_own_order(dtype):
    """Selfs over 25 MB (half an H100's L2) with long runs along an indexed middle dim, which the planner
    walks in self's order (tests/test_scatter_spec.py): index_fill_ with more indices than rows (repeats),
    index_add_ from an expanded source and index_copy_, each against numpy."""
    rng = np.random.default_rng(seed("past half the l2", dtype))
    rows = 8192 if dtype == "float64" else 16384
    shape = (16, 4, rows, 23)  # 96 MB of float64, 96 MB of float16 or 192 MB of int32 at 16384 rows
    self_t = device_tensor(rng, shape, dtype, "contiguous")
    before = host(self_t)
    idx = rng.integers(0, rows, 2 * rows + 1401)
    jitops.index_fill_(self_t, 2, torch.from_numpy(idx.astype(np.int32)).to(DEVICE), 7)
    ref = before.copy()
    ref[:, :, idx] = 7
    np.testing.assert_array_equal(host(self_t), ref)

    n = 3001
    idx = rng.integers(0, rows, n)
    src_t = device_tensor(rng, (16, 4, 1, 23), dtype, "contiguous").expand(16, 4, n, 23)
    before, src_h = host(self_t), host(src_t)
    jitops.index_add_(self_t, 2, torch.from_numpy(idx.astype(np.int64)).to(DEVICE), src_t)
    if dtype in EPS:
        pos = (np.arange(16)[:, None, None, None], np.arange(4)[None, :, None, None], idx[None, None, :, None],
               np.arange(23)[None, None, None, :])
        ref, bound = accumulate_reference(before, pos, src_h, dtype)
        check_float(self_t, ref, bound, dtype)
    else:
        ref = before.copy()
        np.add.at(ref, (slice(None), slice(None), idx), src_h)
        np.testing.assert_array_equal(host(self_t), ref)

    idx = rng.permutation(rows)[:n]
    src_t = device_tensor(rng, (16, 4, n, 23), dtype, "contiguous")
    before, src_h = host(self_t), host(src_t)
    jitops.index_copy_(self_t, 2, torch.from_numpy(idx.astype(np.int64)).to(DEVICE), src_t)
    ref = before.copy()
    ref[:, :, idx] = src_h
    np.testing.assert_array_equal(host(self_t), ref)


ADD_DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64"]


def full_index_of(rng, kind, rows, cols, dests):
    """A (rows, cols) index into `dests`: sorted over the whole, 5 hot values, or random."""
    flat = rng.integers(0, dests, rows * cols)
    return {"sorted": np.sort(flat), "repeated": rng.choice(rng.integers(0, dests, 5), rows * cols),
            "random": flat}[kind].reshape(rows, cols)


def reduce_along_dim_1(rng, dtype, idx, new_self, new_src, expect_walk,
                       reduces=(("add", True), ("sum", True), ("mean", False))):
    """scatter_add_, and scatter_reduce_ sum and mean (or `reduces`), through `idx` along dim 1 into fresh
    self and src tensors (`new_src(reduce)`), each against the reference; `expect_walk(report)` checks
    scatter_add_'s plan first."""
    index = torch.from_numpy(idx).to(DEVICE)
    for reduce, include_self in reduces:
        self_t, src_t = new_self(), new_src(reduce)
        expect_walk(jitops.explain("scatter_add_", self_t, 1, index, src_t)[-1])
        before, terms = host(self_t), host(src_t)
        if reduce == "add":
            jitops.scatter_add_(self_t, 1, index, src_t)
        else:
            jitops.scatter_reduce_(self_t, 1, index, src_t, reduce, include_self=include_self)
        try:
            expect_reduced(self_t, before, scatter_positions(idx, 1), terms, reduce, include_self, dtype)
        except AssertionError as e:
            raise AssertionError(f"reduce={reduce}: {e}") from None


@pytest.mark.parametrize("kind", ["sorted", "repeated", "random"])
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_two_d_adds_along_a_sorted_row_combine_their_runs(dtype, kind):
    """Adds through a full index along dim 1 of wide rows (the 2-D walk with a warp in one row, lane_runs 2):
    a sorted index names one destination for most of a row, and each run of lanes adds once. scatter_add_
    from a source sliced with a step, index_add_ with alpha along dim 1, and scatter_reduce_ sum and mean."""
    rng = np.random.default_rng(seed("2-D runs", dtype, kind))
    rows, cols, dests = 37, 1639, 211
    idx = full_index_of(rng, kind, rows, cols, dests)

    def expect_walk(report):
        assert (report["spec"]["dims"], report["spec"]["lane_runs"]) == (2, 2), report["spec"]
    reduce_along_dim_1(rng, dtype, idx, lambda: device_tensor(rng, (rows, dests), dtype, "contiguous"),
                       lambda _: device_tensor(rng, (rows, 3 * cols), dtype, "contiguous")[:, ::3], expect_walk)
    # index_add_ along dim 1: one index of cols positions, the same for every row
    self_t = device_tensor(rng, (rows, dests), dtype, "contiguous")
    src_t = device_tensor(rng, (rows, 3 * cols), dtype, "contiguous")[:, ::3]
    row_index = torch.from_numpy(idx[0].copy()).to(DEVICE)
    assert jitops.explain("index_add_", self_t, 1, row_index, src_t)[-1]["spec"]["lane_runs"] == 2
    before, terms = host(self_t), host(src_t)
    jitops.index_add_(self_t, 1, row_index, src_t, alpha=3)
    pos = scatter_positions(np.broadcast_to(idx[0], (rows, cols)), 1)
    expect_reduced(self_t, before, pos, 3 * terms, "add", True, dtype)


@pytest.mark.parametrize("kind", ["sorted", "repeated", "random"])
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_two_d_adds_along_rows_that_fill_the_gpu_match_repeated_destinations(dtype, kind):
    """Rows so long that one row's blocks fill the GPU twice, into rows too wide for their destinations to
    stay in L2 (the blocks go columns first): lane_runs 4, where a warp whose lanes repeat a destination out
    of order matches its peers after its runs (5 hot values here; sorted and random indices leave the match
    out). scatter_add_, scatter_reduce_ sum and mean, and index_add_ with alpha."""
    rng = np.random.default_rng(seed("2-D rows that fill the GPU", dtype, kind))
    sms = torch.cuda.get_device_properties(DEVICE).multi_processor_count
    rows, cols = 3, 2 * sms * 256 + 1001
    dests = (16 << 20) // (rows * np.dtype(dtype if dtype != "bfloat16" else "float16").itemsize) + 7
    idx = full_index_of(rng, kind, rows, cols, dests)

    def expect_walk(report):
        assert (report["spec"]["dims"], report["spec"]["lane_runs"]) == (2, 4), report["spec"]
        assert "match.any.sync" in report["ptx"]
    reduce_along_dim_1(rng, dtype, idx, lambda: device_tensor(rng, (rows, dests), dtype, "contiguous"),
                       lambda _: device_tensor(rng, (rows, cols), dtype, "contiguous"), expect_walk)
    self_t = device_tensor(rng, (rows, dests), dtype, "contiguous")
    src_t = device_tensor(rng, (rows, 2 * cols), dtype, "contiguous")[:, ::2]
    row_index = torch.from_numpy(idx[0].copy()).to(DEVICE)
    expect_walk(jitops.explain("index_add_", self_t, 1, row_index, src_t)[-1])
    before, terms = host(self_t), host(src_t)
    jitops.index_add_(self_t, 1, row_index, src_t, alpha=3)
    pos = scatter_positions(np.broadcast_to(idx[0], (rows, cols)), 1)
    expect_reduced(self_t, before, pos, 3 * terms, "add", True, dtype)


@pytest.mark.parametrize("kind", ["sorted", "repeated", "random"])
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_two_d_adds_with_a_warp_across_wide_rows_combine_their_runs(dtype, kind):
    """A transposed self (its rows 1 element apart) gives each row of the 2-D walk 4 or 8 lanes, a warp a
    few rows; the rows are wide, so adds combine their runs there too (lane_runs 2, or 4 where a row's blocks
    fill the GPU and lanes that repeat a destination out of order combine too; 16-bit floats keep
    single atomics, 1). scatter_add_, and scatter_reduce_ sum and mean, through a full index along dim 1."""
    rng = np.random.default_rng(seed("2-D runs across rows", dtype, kind))
    rows, cols, dests = 97, 1639, 211  # more rows than a block of narrow warps takes: fewer go a warp a row
    lane_runs = (1,) if dtype in ("float16", "bfloat16") else (2, 4)  # 4: a row's blocks fill the GPU

    def expect_walk(report):
        assert report["block"][0] < 32 and report["spec"]["dims"] == 2, report
        assert report["spec"]["lane_runs"] in lane_runs, report["spec"]
        assert ("match.any.sync" in report["ptx"]) == (report["spec"]["lane_runs"] == 4)
    reduce_along_dim_1(rng, dtype, full_index_of(rng, kind, rows, cols, dests),
                       lambda: device_tensor(rng, (dests, rows), dtype, "contiguous").t(),
                       lambda _: device_tensor(rng, (rows, cols), dtype, "contiguous"), expect_walk)


def launched_over_units(report, units):
    """Threads a plan launches for each unit of work: about 1 where no block holds rows the tensor lacks."""
    block, grid = report["block"], report["grid"]
    return block[0] * block[1] * grid[0] * grid[1] / units


FEW_ROWS_REDUCES = [("add", True), ("sum", False), ("mean", True), ("prod", False), ("amax", True), ("amin", False)]


@pytest.mark.parametrize("kind", ["sorted", "repeated", "random"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_few_rows_fold_their_blocks_and_keep_every_warp_at_work(dtype, kind):
    """A transposed self of 3 or 5 rows (1 element apart) through a full index along dim 1: the planner's
    blocks of 32 or 64 rows would leave most warps without a row, so a block takes its rows in groups side
    by side along the columns (block_rows); where the grid gives every SM two blocks, a warp also goes along
    one row. Every reduction against numpy; the plans launch at most 2 threads a unit (without the groups,
    6-21)."""
    rng = np.random.default_rng(seed("few rows fold", dtype, kind))
    sms = torch.cuda.get_device_properties(DEVICE).multi_processor_count
    for rows, cols, dests, lanes in [(3, 2 * sms * 256 // 3 + 777, 5003, 32), (5, 1637, 211, None)]:
        def expect_walk(report):
            assert report["spec"]["dims"] == 2 and launched_over_units(report, rows * cols) <= 2, report
            assert lanes is None or report["block"][0] == lanes, report["block"]
        reduce_along_dim_1(rng, dtype, full_index_of(rng, kind, rows, cols, dests),
                           lambda: device_tensor(rng, (dests, rows), dtype, "contiguous").t(),
                           lambda reduce: cas_pack_terms(rng, reduce, dtype, (rows, cols)), expect_walk,
                           FEW_ROWS_REDUCES)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_few_rows_through_a_one_dim_index_fold_their_blocks(dtype):
    """index_add_, index_copy_ and index_fill_ along dim 0 of a self of 3 columns sliced with a step (its
    rows, the walk's, 2 elements apart) from a transposed source: each index position reaches 3 rows of
    the walk, a warp 4-16 lanes along the index, and the block's other row groups take further positions.
    Against numpy, the gaps of the slice untouched; the plans launch at most 3 threads a unit."""
    rng = np.random.default_rng(seed("few rows fold, 1-D index", dtype))
    width, n, m = 3, 20011, 50000
    value = 2.75 if dtype in EPS else 5
    for op in ("index_add_", "index_copy_", "index_fill_"):
        base = device_tensor(rng, (m, 2 * width + 1), dtype, "contiguous")
        self_t = base[:, 1::2]
        src_t = device_tensor(rng, (width, n), dtype, "contiguous").t()
        idx = rng.permutation(m)[:n] if op == "index_copy_" else rng.integers(0, m, n)
        index = torch.from_numpy(idx.astype(np.int32)).to(DEVICE)
        args = (value,) if op == "index_fill_" else (src_t,)
        report = jitops.explain(op, self_t, 0, index, *args)[-1]
        assert report["spec"]["dims"] == 2 and launched_over_units(report, width * n) <= 3, report
        before, src_h, base_before = host(self_t), host(src_t), host(base)
        getattr(jitops, op)(self_t, 0, index, *args)
        if op == "index_add_" and dtype in EPS:
            ref, bound = accumulate_reference(before, idx, src_h, dtype)
            check_float(self_t, ref, bound, dtype)
        else:
            ref = before.copy()
            if op == "index_add_":
                np.add.at(ref, idx, src_h)
            elif op == "index_copy_":
                ref[idx] = src_h
            else:
                ref[idx] = value
            np.testing.assert_array_equal(host(self_t), ref)
        np.testing.assert_array_equal(host(base)[:, 0::2], base_before[:, 0::2])


@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_linear_walk_whose_lanes_cannot_meet_adds_each_unit(dtype):
    """Along dim 1 of (64x4x256) through a random full index into 4: the linear walk's lanes take the inner
    256, where self moves, so no two share a destination and the lanes' tests are left out (lane_runs 0);
    every add still lands, and the compare-and-swap reductions too."""
    rng = np.random.default_rng(seed("linear lanes apart", dtype))
    shape = (64, 4, 256)
    idx = rng.integers(0, 4, shape)
    index = torch.from_numpy(idx).to(DEVICE)
    reduces = [("add", True), ("amax", False)] + ([("prod", True)] if dtype not in EPS else [])
    for reduce, include_self in reduces:
        self_t = device_tensor(rng, shape, dtype, "contiguous")
        src_t = device_tensor(rng, shape, dtype, "contiguous")
        if reduce == "prod":
            src_t = src_t.clamp(-1, 1).to(src_t.dtype)
        passes = jitops.explain("scatter_reduce_", self_t, 1, index, src_t, "sum" if reduce == "add" else reduce,
                                include_self=include_self)
        assert passes[-1]["spec"]["dims"] != 2 and passes[-1]["spec"]["lane_runs"] == 0, passes[-1]["spec"]
        before, terms = host(self_t), host(src_t)
        if reduce == "add":
            jitops.scatter_add_(self_t, 1, index, src_t)
        else:
            jitops.scatter_reduce_(self_t, 1, index, src_t, reduce, include_self=include_self)
        expect_reduced(self_t, before, scatter_positions(idx, 1), terms, reduce, include_self, dtype)


@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_linear_walks_whose_warps_span_rows_where_self_moves_update_each_unit(dtype):
    """Linear walks whose inner dim is shorter than a warp, its lanes wrapping into rows where self moves:
    index_add_ from a source dense along a dim of 7 (seed 721's layout, smaller; 16-bit floats keep self's
    order, the others take the 7 inside) and scatter_reduce_ along dim 1 of (64x4x20) from a transposed
    source. No two lanes can share a destination (lane_runs 0, the plans checked); against numpy."""
    rng = np.random.default_rng(seed("warps across moving rows", dtype))
    self_t = device_tensor(rng, (6, 7, 5, 1000), dtype, "contiguous")
    src_t = device_tensor(rng, (1000, 9, 5, 7), dtype, "contiguous").permute(1, 3, 2, 0)
    idx = rng.integers(0, 6, 9)
    index = torch.from_numpy(idx).to(DEVICE)
    alpha = 0.5 if dtype in EPS else 3
    report = jitops.explain("index_add_", self_t, 0, index, src_t, alpha=alpha)[-1]
    assert report["spec"]["dims"] == 4 and report["spec"]["lane_runs"] == 0, report["spec"]
    before, terms = host(self_t), host(src_t) * alpha
    jitops.index_add_(self_t, 0, index, src_t, alpha=alpha)
    if dtype in EPS:
        ref, bound = accumulate_reference(before, idx, terms, dtype)
        check_float(self_t, ref, bound, dtype)
    else:
        ref = before.copy()
        np.add.at(ref, idx, terms.astype(dtype))
        np.testing.assert_array_equal(host(self_t), ref)
    idx = rng.integers(0, 4, (64, 4, 20))
    index = torch.from_numpy(idx).to(DEVICE)
    for reduce, include_self in [("sum", True), ("amax", False), ("prod", True)]:
        self_t = device_tensor(rng, (64, 4, 20), dtype, "contiguous")
        src_t = cas_pack_terms(rng, reduce, dtype, (4, 20, 64)).permute(2, 0, 1)  # strides (1, 1280, 64)
        report = jitops.explain("scatter_reduce_", self_t, 1, index, src_t, reduce, include_self=include_self)[-1]
        assert report["spec"]["lane_runs"] == 0, report["spec"]
        before, terms = host(self_t), host(src_t)
        jitops.scatter_reduce_(self_t, 1, index, src_t, reduce, include_self=include_self)
        expect_reduced(self_t, before, scatter_positions(idx, 1), terms, reduce, include_self, dtype)


CAS_PACK_DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16"]


def cas_pack_elements(dtype, width, offset):
    """The elements a thread updates in one compare-and-swap: those that fill a 32-bit word, where the row's
    width and self's offset (in elements) keep every word whole; one a thread otherwise."""
    v = 4 // getattr(torch, dtype).itemsize
    return v if v >= 2 and width % v == 0 and offset % v == 0 else 1


def cas_pack_values(rng, reduce, dtype, shape):
    """Random values; for products, floats of magnitude 0.5 to 2 (no float16 subnormal, whose rounding is
    absolute) and integers in [-3, 3], so that products of many terms stay meaningful."""
    if reduce != "prod":
        return device_tensor(rng, shape, dtype, "contiguous")
    if dtype in EPS:
        values = rng.uniform(0.5, 2, shape) * rng.choice([-1, 1], shape)
        return torch.from_numpy(values).to(DEVICE).to(getattr(torch, dtype))
    return torch.from_numpy(rng.integers(-3, 4, shape).astype(dtype)).to(DEVICE)


def cas_pack_terms(rng, reduce, dtype, shape):
    """Source values: for float products, near 1 (1 +- 0.01), so thousands of terms into a hot row stay
    finite."""
    if reduce == "prod" and dtype in EPS:
        return torch.from_numpy(1 + rng.uniform(-0.01, 0.01, shape)).to(DEVICE).to(getattr(torch, dtype))
    return cas_pack_values(rng, reduce, dtype, shape)


@pytest.mark.parametrize("kind", ["sorted", "repeated", "random"])
@pytest.mark.parametrize("dtype", CAS_PACK_DTYPES)
def test_compare_and_swap_rows_update_a_word_at_once(dtype, kind):
    """Rows reached through an expanded index, updated by compare-and-swap (products, floating max and min,
    adds of 8- and 16-bit integers): a thread takes the row's elements that fill a 32-bit word and updates
    them in one loop; rows whose width or self's offset leave no whole word, and 32- and 64-bit elements, keep
    one element a thread. Sorted, 5 hot and random destinations, against numpy; the element that shares the
    first word with a misaligned self stays as it was."""
    rng = np.random.default_rng(seed("cas packs", dtype, kind))
    n, dests = 20011, 3001
    idx = {"sorted": np.sort(rng.integers(0, dests, n)), "repeated": rng.choice(rng.integers(0, dests, 5), n),
           "random": rng.integers(0, dests, n)}[kind]
    reduces = [("prod", True), ("prod", False), ("amax", True), ("amin", False)]
    if dtype not in EPS:
        reduces += [("add", True), ("sum", False)]
    for width, offset in ((32, 0), (6, 0), (32, 1)):
        for reduce, include_self in reduces:
            base = cas_pack_values(rng, reduce, dtype, (dests * width + offset,))
            self_t = base[offset:].view(dests, width)
            src_t = cas_pack_terms(rng, reduce, dtype, (n, 2 * width))[:, :width]  # rows a step apart
            index = torch.from_numpy(idx).to(DEVICE)[:, None].expand(n, width)
            vec = jitops.explain("scatter_reduce_", self_t, 0, index, src_t, "sum" if reduce == "add" else reduce,
                                 include_self=include_self)[-1]["spec"]["vec"]
            assert vec == cas_pack_elements(dtype, width, offset), (width, offset, reduce, vec)
            outside = host(base[:offset])
            reduce_rows_and_check(self_t, idx, index, src_t, reduce, include_self, dtype)
            np.testing.assert_array_equal(host(base[:offset]), outside)  # the first word's other element


HOT_ROW_WIDTHS = {"float16": (3, 32), "float32": (3, 6), "int8": (3, 32)}  # packs of 8, 2 and 4 elements


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_warps_rows_into_a_few_hot_rows_combine_across_rows(dtype):
    """Narrow rows (a warp across rows, several rows a thread) through an expanded index into 8 hot rows of
    3001, into random ones, and sorted (runs of rows a warp on one row): where lane_runs is 3, threads whose
    units met on one row make the warp combine lanes of different rows at one column, single elements and
    packs alike, before the atomics or compare-and-swap loops; products (lane_runs 5) also where a lane and
    the one a row above it meet. Every merging reduction against numpy, the row index taken whole; adds take
    lane_runs 3 on rows of 3 and products 5, max and min that read first neither."""
    rng = np.random.default_rng(seed("hot rows across a warp", dtype))
    n, dests = 200_003, 3001
    reduces = [("add", True), ("sum", False), ("mean", True), ("prod", True), ("prod", False), ("amax", False),
               ("amin", True)]
    reads_first = dtype not in ("int32", "int64")
    previous = jitops._core._set_private_products_mode(0)  # the walk's products (private copies: NOTES 110)
    try:
        rows_across_a_warp(rng, dtype, n, dests, reduces, reads_first)
    finally:
        jitops._core._set_private_products_mode(previous)


def rows_across_a_warp(rng, dtype, n, dests, reduces, reads_first):
    for kind in ("hot", "random", "sorted"):
        idx = {"hot": lambda: rng.integers(0, dests, 8)[rng.integers(0, 8, n)],
               "random": lambda: rng.integers(0, dests, n),
               "sorted": lambda: np.sort(rng.integers(0, dests, n))}[kind]()
        index_rows = torch.from_numpy(idx).to(DEVICE)[:, None]
        for width in HOT_ROW_WIDTHS.get(dtype, (3,)):
            index = index_rows.expand(n, width)
            for reduce, include_self in reduces:
                self_t = cas_pack_values(rng, reduce, dtype, (dests, width))
                src_t = cas_pack_terms(rng, reduce, dtype, (n, width))
                passes = jitops.explain("scatter_reduce_", self_t, 0, index, src_t,
                                        "sum" if reduce == "add" else reduce, include_self=include_self)
                spec = [r for r in passes if r["spec"]["op"] in (0, 3, 4, 5, 19)][-1]["spec"]
                if width == 3:
                    expected = 0 if reduce in ("amax", "amin") and reads_first else 5 if reduce == "prod" else 3
                    assert spec["lane_runs"] == expected, (reduce, spec)
                before, terms = host(self_t), host(src_t)
                if reduce == "add":
                    jitops.scatter_add_(self_t, 0, index, src_t)
                else:
                    jitops.scatter_reduce_(self_t, 0, index, src_t, reduce, include_self=include_self)
                try:  # the row index whole: numpy's ufunc.at reduces rows along dim 0
                    expect_reduced(self_t, before, idx, terms, reduce, include_self, dtype)
                except AssertionError as e:
                    raise AssertionError(f"{kind} width={width} reduce={reduce}: {e}") from None


@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "int64"])
def test_fills_through_a_few_hot_values(dtype):
    """index_fill_ of a 1-D self through 2M indices of 8 hot values, and of random ones (the linear walk,
    several units a thread, lanes that may meet): every named element takes the value, the rest stay."""
    rng = np.random.default_rng(seed("hot fills", dtype))
    n, size = 2_000_003, 1_000_003
    value = 2.75 if dtype in EPS else -3
    for kind in ("hot", "random"):
        idx = rng.integers(0, size, 8)[rng.integers(0, 8, n)] if kind == "hot" else rng.integers(0, size, n)
        self_t = device_tensor(rng, (size,), dtype, "contiguous")
        index = torch.from_numpy(idx).to(DEVICE)
        spec = jitops.explain("index_fill_", self_t, 0, index, value)[-1]["spec"]
        assert spec["unroll"] > 1 and spec["lane_runs"] == 1, spec
        ref = host(self_t).copy()
        ref[idx] = round_to(value, dtype) if dtype in EPS else np.array(value).astype(dtype)
        jitops.index_fill_(self_t, 0, index, value)
        np.testing.assert_array_equal(host(self_t), ref, err_msg=kind)


@pytest.fixture
def no_tiles():
    """The walks where src's layout would send an index_copy_ or index_add_ through tiles."""
    previous = jitops._core._set_scatter_tiles(0)
    yield
    jitops._core._set_scatter_tiles(previous)


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_linear_walks_past_the_old_grid_cap(dtype, no_tiles):
    """The linear walk's grid over all its units (NOTES 108): seed 1863's index_add_ from a transposed src at
    a fifth of its length (7.2M units a row of the index, 36M in all, past the 17.3M that 16 waves of blocks
    took in one loop), and a one-column amax of 24M terms, against numpy, self random and every term counted.
    The walk, not the tiles that take this layout now (test_scatter_tiles_gpu.py)."""
    rng = np.random.default_rng(seed("past the cap", dtype))
    np_dtype = np.dtype(dtype)

    def values(shape):
        if np_dtype.kind == "i":
            return rng.integers(-1000, 1000, shape).astype(np_dtype)
        return rng.standard_normal(shape).astype(np_dtype)

    self_host = values((8, 59, 5, 24465))
    src_host = values((5, 5, 24465, 59)).transpose(0, 3, 1, 2)  # (5, 59, 5, 24465), dim 1 dense
    index_host = np.array([3, 7, 3, 0, 5], dtype=np.int32)
    self_ = torch.from_numpy(self_host).to(DEVICE)
    src = torch.from_numpy(np.ascontiguousarray(src_host.transpose(0, 2, 3, 1))).to(DEVICE).permute(0, 3, 1, 2)
    assert jitops.explain("index_add_", self_, 0, torch.from_numpy(index_host).to(DEVICE), src, alpha=2)[0]["grid"][0] \
        > 132 * 8 * 16
    jitops.index_add_(self_, 0, torch.from_numpy(index_host).to(DEVICE), src, alpha=2)
    expected = self_host.astype(np.float64 if dtype == "float32" else np_dtype)
    for k, i in enumerate(index_host):
        expected[i] += 2 * src_host[k]
    got = self_.cpu().numpy()
    if dtype == "float32":  # two terms meet at row 3: one rounding each
        np.testing.assert_allclose(got, expected, rtol=2 * EPS[dtype] * 4, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)

    self_host = values((1 << 20, 1))
    picks = rng.integers(0, 1 << 20, (24 << 20, 1))
    terms = values((24 << 20, 1))
    self_ = torch.from_numpy(self_host).to(DEVICE)
    out = jitops.scatter_reduce_(self_, 0, torch.from_numpy(picks).to(DEVICE), torch.from_numpy(terms).to(DEVICE),
                                 "amax")
    order = np.argsort(picks[:, 0], kind="stable")
    sorted_picks, sorted_terms = picks[order, 0], terms[order, 0]
    starts = np.flatnonzero(np.r_[True, sorted_picks[1:] != sorted_picks[:-1]])
    expected = self_host[:, 0].copy()
    groups = sorted_picks[starts]
    expected[groups] = np.maximum(expected[groups], np.maximum.reduceat(sorted_terms, starts))
    np.testing.assert_array_equal(out.cpu().numpy()[:, 0], expected)
