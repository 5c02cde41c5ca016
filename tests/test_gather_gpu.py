"""The gather family on the GPU against numpy, bit for bit: every op x dtype x
index dtype x 1-5 dims x contiguous and strided inputs, output poisoned first."""

import zlib

import numpy as np
import pytest

import jitops

from gpu_data import DTYPES, assert_same_bits, poisoned_like, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"


def seed(*parts):
    return zlib.crc32(repr(parts).encode())


def every_case(test):
    """Parametrizes a test over every dtype x index dtype x 1-7 dims x layout: strided views of 4-6 dims take
    kernels of their own, of 7 the generic walk (kSpecializedDims, runtime/launch_shape.h)."""
    for name, values in (("layout", ["contiguous", "strided"]), ("ndim", [1, 2, 3, 4, 5, 6, 7]),
                         ("index_dtype", ["int64", "int32"]), ("dtype", DTYPES)):
        test = pytest.mark.parametrize(name, values)(test)
    return test


def make_x(rng, ndim, dtype, layout):
    """A device tensor of random values, contiguous or a strided view (sliced and transposed)."""
    shape = tuple(int(s) for s in rng.integers(1, 7, ndim))
    if layout == "contiguous":
        host = random_host(rng, shape, dtype)
        return to_torch(torch, host, dtype, DEVICE), host
    base_shape = shape[:-1] + (shape[-1] * 2 + 1,)
    base_host = random_host(rng, base_shape, dtype)
    base = to_torch(torch, base_host, dtype, DEVICE)
    x, host = base[..., 1::2], base_host[..., 1::2]
    if ndim >= 2:
        perm = list(rng.permutation(ndim))
        x, host = x.permute(*perm), host.transpose(perm)
    return x, host


def make_index(rng, n_shape, high, index_dtype, negative=False, strided=False):
    low = -high if negative else 0
    host = rng.integers(low, high, n_shape) if high > 0 else np.zeros(n_shape, dtype=np.int64)
    host = host.astype(index_dtype)
    if strided and host.ndim >= 1 and host.size:
        wide = np.repeat(host, 2, axis=-1)  # every other element is the real index
        dev = torch.from_numpy(wide).to(DEVICE)[..., ::2]
        return dev, host
    host = np.array(host)  # keeps 0-d indices 0-d (ascontiguousarray would make them 1-d)
    return torch.from_numpy(host).to(DEVICE), host


@every_case
def test_index_select(dtype, index_dtype, ndim, layout):
    rng = np.random.default_rng(seed("index_select", dtype, index_dtype, ndim, layout))
    x, host = make_x(rng, ndim, dtype, layout)
    for dim in range(-ndim, ndim):
        n = int(rng.integers(1, 9))
        idx, idx_host = make_index(rng, (n,), host.shape[dim], index_dtype, strided=layout == "strided")
        expected = np.take(host, idx_host, axis=dim)
        out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
        result = jitops.index_select(x, dim, idx, out=out)
        assert result is out
        assert_same_bits(to_numpy(torch, out), expected)
    # A fresh output, of the caller's type.
    fresh = jitops.index_select(x, 0, make_index(rng, (3,), host.shape[0], index_dtype)[0])
    assert isinstance(fresh, torch.Tensor) and fresh.device == x.device and fresh.dtype == x.dtype


@every_case
def test_take(dtype, index_dtype, ndim, layout):
    rng = np.random.default_rng(seed("take", dtype, index_dtype, ndim, layout))
    x, host = make_x(rng, ndim, dtype, layout)
    for axis in [None] + list(range(-ndim, ndim)):
        high = host.size if axis is None else host.shape[axis]
        idx_shape = tuple(int(s) for s in rng.integers(1, 4, int(rng.integers(0, 3))))
        idx, idx_host = make_index(rng, idx_shape, high, index_dtype, negative=True, strided=layout == "strided")
        expected = np.take(host, idx_host, axis=axis)
        out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
        jitops.take(x, idx, axis=axis, out=out)
        assert_same_bits(to_numpy(torch, out), expected)


@every_case
def test_gather(dtype, index_dtype, ndim, layout):
    rng = np.random.default_rng(seed("gather", dtype, index_dtype, ndim, layout))
    x, host = make_x(rng, ndim, dtype, layout)
    for dim in range(-ndim, ndim):
        # index: at most x's size outside dim, any size along it
        shape = [int(rng.integers(1, s + 1)) for s in host.shape]
        shape[dim] = int(rng.integers(1, 8))
        idx, idx_host = make_index(rng, tuple(shape), host.shape[dim], index_dtype, strided=layout == "strided")
        window = tuple(slice(None) if d == dim % ndim else slice(0, shape[d]) for d in range(ndim))
        expected = np.take_along_axis(host[window], idx_host, axis=dim)
        out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
        jitops.gather(x, dim, idx, out=out)
        assert_same_bits(to_numpy(torch, out), expected)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "float64"])
def test_benchmark_shapes(dtype):
    """The benchmark's shapes (vectorized rows, columns, 1-D, 2-D gather) against numpy."""
    rng = np.random.default_rng(seed("bench", dtype))
    for shape, dim, n in [((5000, 1024), 0, 819), ((1024, 3276), 1, 409), ((1 << 22,), 0, 1 << 19),
                          ((64, 128, 256), 1, 64)]:
        host = random_host(rng, shape, dtype)
        x = to_torch(torch, host, dtype, DEVICE)
        idx_host = rng.integers(0, shape[dim], n)
        got = jitops.index_select(x, dim, torch.from_numpy(idx_host).to(DEVICE))
        assert_same_bits(to_numpy(torch, got), np.take(host, idx_host, axis=dim))
    for x_shape, idx_shape in [((510, 3850), (510, 1)), ((100, 128), (100, 64)), ((510, 128), (510, 96))]:
        host = random_host(rng, x_shape, dtype)
        idx_host = rng.integers(0, x_shape[1], idx_shape)
        got = jitops.gather(to_torch(torch, host, dtype, DEVICE), 1, torch.from_numpy(idx_host).to(DEVICE))
        assert_same_bits(to_numpy(torch, got), np.take_along_axis(host, idx_host, axis=1))


def test_misaligned_and_odd_rows():
    rng = np.random.default_rng(7)
    host = random_host(rng, (300, 67), "float32")
    base = to_torch(torch, host, "float32", DEVICE)
    for x, h in [(base[:, 1:65], host[:, 1:65]), (base[1:, :64], host[1:, :64]), (base, host)]:
        idx = rng.integers(0, x.shape[0], 50)
        got = jitops.index_select(x, 0, torch.from_numpy(idx).to(DEVICE))
        assert_same_bits(to_numpy(torch, got), np.take(h, idx, axis=0))


def test_empty_and_zero_dim():
    x = torch.randn(5, 3, device=DEVICE)
    empty_idx = torch.empty(0, dtype=torch.int64, device=DEVICE)
    assert jitops.index_select(x, 0, empty_idx).shape == (0, 3)
    assert jitops.index_select(torch.randn(0, 3, device=DEVICE), 1, torch.tensor([2], device=DEVICE)).shape == (0, 1)
    assert jitops.take(x, empty_idx).shape == (0,)
    assert jitops.gather(x, 1, torch.empty(5, 0, dtype=torch.int64, device=DEVICE)).shape == (5, 0)
    scalar = torch.tensor(3.5, device=DEVICE)
    got = jitops.index_select(scalar, 0, torch.tensor([0], device=DEVICE))
    assert got.shape == () and got.item() == 3.5
    got = jitops.take(x, torch.tensor(4, device=DEVICE))  # 0-d index: a 0-d result
    assert got.shape == () and got.item() == x.reshape(-1)[4].item()


def test_past_2_31_elements_uses_64_bit_offsets():
    n = ((1 << 31) // 1021 + 2) * 1021 + 77  # past 2^31, and its 1021-byte rows too
    x = torch.empty(n, dtype=torch.uint8, device=DEVICE).random_(0, 256)
    idx_host = np.array([0, 5, n - 1, n - 2, (1 << 31) + 3, (1 << 31) - 1, 12345], dtype=np.int64)
    expected = np.array([x[int(i)].item() for i in idx_host], dtype=np.uint8)
    idx = torch.from_numpy(idx_host).to(DEVICE)
    r = jitops.explain(jitops.index_select, x, 0, idx)[0]
    assert r["spec"]["offset"] == 64
    assert_same_bits(to_numpy(torch, jitops.index_select(x, 0, idx)), expected)
    assert_same_bits(to_numpy(torch, jitops.take(x, -torch.from_numpy(n - idx_host).to(DEVICE))), expected)
    # Rows of 1021 bytes move byte by byte, so offsets past 2^31 need 64 bits.
    # (Rows of 1 KiB would move as 16-byte units whose offsets still fit in 32.)
    rows = x[: (n // 1021) * 1021].view(-1, 1021)
    assert rows.numel() > (1 << 31)
    ridx_host = np.array([rows.shape[0] - 1, 3, rows.shape[0] // 2 + 7], dtype=np.int64)
    got = jitops.index_select(rows, 0, torch.from_numpy(ridx_host).to(DEVICE))
    assert jitops.explain(jitops.index_select, rows, 0, torch.from_numpy(ridx_host).to(DEVICE))[0]["spec"]["offset"] == 64
    for k, r_i in enumerate(ridx_host):
        assert torch.equal(got[k], rows[int(r_i)])
    del x, rows
    torch.cuda.empty_cache()


def test_bad_index_raises_and_context_survives():
    x = torch.randn(5, 4, device=DEVICE)
    good = torch.tensor([0, 4], device=DEVICE)
    jitops.set_index_checks("sync")
    try:
        with pytest.raises(IndexError, match=r"index_select: index holds 9 at position 1 .*dimension of size 5 \(valid: \[0, 5\)\)"):
            jitops.index_select(x, 0, torch.tensor([1, 9, 2], device=DEVICE))
        with pytest.raises(IndexError, match=r"take: indices holds -6 at position 0 .*\(valid: \[-5, 5\)\)"):
            jitops.take(x, torch.tensor([-6], device=DEVICE), axis=0)
        with pytest.raises(IndexError, match=r"gather: index holds -1 at position 1 "):
            jitops.gather(x, 1, torch.tensor([[0], [-1], [1], [2], [3]], device=DEVICE))
        assert torch.equal(jitops.index_select(x, 0, good), x[[0, 4]])
    finally:
        jitops.set_index_checks("async")
    jitops.index_select(x, 0, torch.tensor([7], device=DEVICE))  # async: found later
    with pytest.raises(IndexError, match="index holds 7 at position 0 "):
        jitops.synchronize()
    assert torch.equal(jitops.index_select(x, 0, good), x[[0, 4]])
    assert torch.equal(jitops.take(x, torch.tensor([-1, -20], device=DEVICE)[:1]), x.reshape(-1)[[-1]])


def test_numpy_in_numpy_out():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 30)).astype(np.float32)
    idx = rng.integers(0, 40, 17)
    got = jitops.index_select(x, 0, idx)
    assert isinstance(got, np.ndarray)
    assert_same_bits(got, np.take(x, idx, axis=0))
    out = np.full((17, 30), np.nan, dtype=np.float32)
    assert jitops.index_select(x, 0, idx, out=out) is out
    assert_same_bits(out, np.take(x, idx, axis=0))
    xt = x.T  # non-contiguous host input
    assert_same_bits(jitops.take(xt, [3, -1, 5]), np.take(xt, [3, -1, 5]))
    gidx = rng.integers(0, 30, (40, 7))
    assert_same_bits(jitops.gather(x, 1, gidx), np.take_along_axis(x, gidx, axis=1))
    with pytest.raises(IndexError, match="index holds 40 at position 1 "):
        jitops.index_select(x, 0, [1, 40])
    cpu = torch.from_numpy(x)
    got = jitops.index_select(cpu, 0, torch.from_numpy(idx))
    assert isinstance(got, torch.Tensor) and got.device.type == "cpu"
    assert torch.equal(got, torch.index_select(cpu, 0, torch.from_numpy(idx)))
    bf = cpu.to(torch.bfloat16)
    assert torch.equal(jitops.index_select(bf, 0, torch.from_numpy(idx)), bf[torch.from_numpy(idx)])


def test_device_tensor_with_host_index():
    x = torch.randn(10, 3, device=DEVICE)
    got = jitops.index_select(x, 0, [9, 0, 9])
    assert got.device == x.device and torch.equal(got, x[[9, 0, 9]])


def test_streams():
    x = torch.randn(4096, 256, device=DEVICE)
    idx = torch.randint(0, 4096, (3000,), device=DEVICE)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got_current = jitops.index_select(x, 0, idx)  # PyTorch's current stream: side
    got_explicit = jitops.index_select(x, 0, idx, stream=side)
    got_handle = jitops.index_select(x, 0, idx, stream=side.cuda_stream)
    side.synchronize()
    expected = torch.index_select(x, 0, idx)
    for got in (got_current, got_explicit, got_handle):
        assert torch.equal(got, expected)


def test_cupy_in_cupy_out():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(5)
    host = rng.standard_normal((50, 20)).astype(np.float32)
    x = cupy.asarray(host)
    idx_host = rng.integers(0, 20, (50, 6))
    got = jitops.gather(x, 1, cupy.asarray(idx_host))
    assert isinstance(got, cupy.ndarray)
    assert_same_bits(cupy.asnumpy(got), np.take_along_axis(host, idx_host, axis=1))
    got = jitops.take(x.T, cupy.asarray([-1, 0, 7]), axis=1)
    assert_same_bits(cupy.asnumpy(got), np.take(host.T, [-1, 0, 7], axis=1))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        got = jitops.index_select(x, 0, cupy.asarray([3, 4]))
    s.synchronize()
    assert_same_bits(cupy.asnumpy(got), host[[3, 4]])


@pytest.mark.exclusive_gpu
def test_jax_in_jax_out():
    jax = pytest.importorskip("jax")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU backend here")
    rng = np.random.default_rng(6)
    host = rng.standard_normal((30, 8)).astype(np.float32)
    x = jax.device_put(host, gpu)
    idx_host = rng.integers(0, 30, 11).astype(np.int32)
    got = jitops.index_select(x, 0, jax.device_put(idx_host, gpu))
    assert isinstance(got, jax.Array)
    assert_same_bits(np.asarray(got), np.take(host, idx_host, axis=0))


def test_jitops_device_arrays():
    rng = np.random.default_rng(8)
    host = rng.standard_normal((12, 5))
    x = jitops.DeviceArray(0, [12, 5], "float64")
    x.copy_from_host(host)
    idx = jitops.DeviceArray(0, [4], "int64")
    idx.copy_from_host(np.array([11, 0, 3, 3]))
    got = jitops.index_select(x, 0, idx)
    assert isinstance(got, jitops.DeviceArray)
    back = np.empty((4, 5))
    got.copy_to_host(back)
    assert_same_bits(back, host[[11, 0, 3, 3]])
    assert_same_bits(np.from_dlpack(torch.from_dlpack(got).cpu()), host[[11, 0, 3, 3]])


def test_explain_on_device_reports_resources_and_origin():
    x = torch.randn(1000, 1024, device=DEVICE)
    idx = torch.randint(0, 1000, (100,), device=DEVICE)
    jitops.index_select(x, 0, idx)
    r = jitops.explain(jitops.index_select, x, 0, idx)[0]
    assert r["origin"] == "memory"
    assert r["registers"] > 0 and r["spec"]["unit"] == 16
    assert "H100" in r["device"] or "H200" in r["device"] or r["device"]


def test_cache_counters_on_device(fresh_cache):
    x = torch.randn(77, 5, device=DEVICE, dtype=torch.float64)
    idx = torch.randint(0, 77, (9,), device=DEVICE)
    before = jitops.cache_stats()
    for _ in range(5):
        jitops.index_select(x, 0, idx)
    after = jitops.cache_stats()
    assert after["compiles"] - before["compiles"] == 1
    assert after["module_loads"] - before["module_loads"] == 1
    assert after["memory_hits"] - before["memory_hits"] >= 4


def test_errors_on_device():
    x = torch.randn(5, 4, device=DEVICE)
    with pytest.raises(TypeError, match=r"index: expected an int32 or int64 array \(got float32\)"):
        jitops.index_select(x, 0, torch.tensor([1.0], device=DEVICE))
    with pytest.raises(ValueError, match="out: must not overlap the input x"):
        jitops.index_select(x, 0, torch.tensor([1], device=DEVICE), out=x[:1])
    with pytest.raises(ValueError, match=r"out: expected shape \(1, 4\) \(got \(2, 4\)\)"):
        jitops.index_select(x, 0, torch.tensor([1], device=DEVICE), out=torch.empty(2, 4, device=DEVICE))
    assert torch.equal(jitops.index_select(x, 1, torch.tensor([3], device=DEVICE)), x[:, [3]])


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "float64", "complex128"])
def test_tiles_from_x_dense_along_another_dim(dtype):
    """index_select and take along an outer axis of a channels_last or transposed x into a contiguous
    output: the tile regime (x read along its dense dim into shared memory, the output written along its
    own). Odd sizes, so that tiles are ragged at both edges; negative indices for take; every 1- to 16-byte
    unit."""
    rng = np.random.default_rng(seed("tiles", dtype))
    host = random_host(rng, (21, 37, 45, 19), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    channels_last = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # C innermost
    transposed = x.permute(3, 2, 1, 0).contiguous().permute(3, 2, 1, 0)  # dim 0 innermost
    # (along the last axis, the output's inner dim of 7 is too short for a tile)
    for view, axes in ((channels_last, (0, 2)), (transposed, (0, 1, 2))):
        for axis in axes:
            idx, idx_host = make_index(rng, (7,), host.shape[axis], "int64")
            expected = np.take(host, idx_host, axis=axis)
            plan = jitops.explain("index_select", view, axis, idx)[0]
            assert plan["spec"]["tile_a"] > 0, (axis, plan["kernel"])
            out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
            jitops.index_select(view, axis, idx, out=out)
            assert_same_bits(to_numpy(torch, out), expected)
            idx, idx_host = make_index(rng, (2, 3), host.shape[axis], "int32", negative=True)
            expected = np.take(host, idx_host, axis=axis)
            out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
            jitops.take(view, idx, axis=axis, out=out)
            assert_same_bits(to_numpy(torch, out), expected)


def l2_bytes():
    return torch.cuda.get_device_properties(0).L2_cache_size


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "float64", "complex128"])
def test_tiles_with_the_index_along_the_outputs_inner_dim(dtype):
    """index_select and take along the dim that becomes the output's inner one, from an x dense along
    another dim: tiles that load an index value per element (x read along its dense dim, the output written
    along the index). Ragged tiles at both edges, repeated and negative indices, every 1- to 16-byte unit.
    Units of a byte tile only where x's touched bytes pass three quarters of the L2 (x's rows sized from the
    device's L2: 6400 of 6321 bytes, 40 MB, on an H100's 50 MB; more on an H200's 60 MB); from a smaller x,
    and from torch.gather's x of two rows, they take the strided walk."""
    rng = np.random.default_rng(seed("index tiles", dtype))
    byte = np.dtype(dtype).itemsize == 1
    past_three_quarters = max(6400, -(-int(0.76 * l2_bytes()) // (21 * 301)))
    host = random_host(rng, (past_three_quarters if byte else 37, 21, 301), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    transposed = x.permute(2, 1, 0).contiguous().permute(2, 1, 0)  # dim 0 innermost
    idx, idx_host = make_index(rng, (355,), host.shape[2], "int64")
    expected = np.take(host, idx_host, axis=2)
    assert jitops.explain("index_select", transposed, 2, idx)[0]["spec"]["index_each"] == 1
    if byte:
        small = transposed[:37]
        assert jitops.explain("index_select", small, 2, idx)[0]["spec"]["index_each"] == 0
        out = poisoned_like(torch, expected[:37].shape, x.dtype, DEVICE)
        jitops.index_select(small, 2, idx, out=out)
        assert_same_bits(to_numpy(torch, out), expected[:37])
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.index_select(transposed, 2, idx, out=out)
    assert_same_bits(to_numpy(torch, out), expected)
    idx, idx_host = make_index(rng, (17, 23), host.shape[2], "int32", negative=True)
    expected = np.take(host, idx_host, axis=2)
    assert jitops.explain("take", transposed, idx, axis=2)[0]["spec"]["index_each"] == 1
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.take(transposed, idx, axis=2, out=out)
    assert_same_bits(to_numpy(torch, out), expected)
    # torch.gather along an axis of 2 (under 32 bytes of rows) with an index varying along dim 0 (x's dense
    # dim), expanded along dim 2
    pair = transposed[:, :2]
    rows = torch.from_numpy(rng.integers(0, 2, (host.shape[0], 40, 1))).to(DEVICE)
    idx = rows.expand(-1, -1, host.shape[2])
    expected = np.take_along_axis(host[:, :2], np.broadcast_to(rows.cpu().numpy(), idx.shape), axis=1)
    assert jitops.explain("gather", pair, 1, idx)[0]["spec"]["index_each"] == (1 < pair.element_size() < 16)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.gather(pair, 1, idx, out=out)
    assert_same_bits(to_numpy(torch, out), expected)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float16", "float32", "float64", "complex128"])
def test_tiles_of_a_full_gather_index(dtype):
    """torch.gather with a full index from an x dense along another dim than the output's inner one (a
    channels_last x along H, a transposed x along its dense dim): tiles where the axis's rows hold under 32
    bytes and a unit 2 or more, x read along its dense dim, each element loading its own index value: a contiguous index staged
    along the output's inner dim through shared memory first (index_each 2), a channels_last one loaded along
    x's dense dim (1). Ragged tiles at both edges; the wide units keep the strided walk and are checked the
    same way."""
    rng = np.random.default_rng(seed("full index tiles", dtype))
    host = random_host(rng, (3, 2053, 4, 23), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    channels_last = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # C innermost
    host_t = random_host(rng, (5, 301, 403), dtype)
    transposed = to_torch(torch, host_t, dtype, DEVICE).permute(2, 1, 0).contiguous().permute(2, 1, 0)
    for view, view_host, axis, index_shape in ((channels_last, host, 2, (3, 2053, 7, 23)),
                                               (transposed, host_t, 0, (3, 301, 403))):
        for index_dtype, index_layout in (("int64", "contiguous"), ("int32", "contiguous"), ("int64", "channels_last")):
            idx, idx_host = make_index(rng, index_shape, view_host.shape[axis], index_dtype, negative=False)
            if index_layout == "channels_last":
                if idx.dim() != 4:
                    continue
                idx = idx.to(memory_format=torch.channels_last)
            expected = np.take_along_axis(view_host, idx_host.astype(np.int64), axis=axis)
            plan = jitops.explain("gather", view, axis, idx)[0]
            tiled = view_host.shape[axis] * view.element_size() < 32 and view.element_size() >= 2
            mode = (1 if index_layout == "channels_last" else 2) if tiled else 0
            assert (plan["spec"]["tile_a"] > 0) == tiled and plan["spec"]["index_each"] == mode, plan["kernel"]
            out = poisoned_like(torch, expected.shape, view.dtype, DEVICE)
            jitops.gather(view, axis, idx, out=out)
            assert_same_bits(to_numpy(torch, out), expected)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float16", "bfloat16", "float32", "int64", "float64",
                                   "complex128"])
def test_tiles_along_the_indexed_axis(dtype):
    """x stored with the indexed axis innermost and the output dense along another dim: tiles whose lanes run
    along the index's values, each reading its row of x along the axis (rows of 96 bytes: 3 sectors), for
    index_select, take (a 2-d index, negative values) and torch.gather with an index expanded along the
    output's inner dim (sweep seed 912's shape). Ragged tiles at both edges (19 and 21 values, 331 and 640
    columns), every 1- to 16-byte unit, bit for bit. Units of a byte tile only where x's touched bytes (19
    values' rows of 45 x N) pass three quarters of the L2 (N sized from the device's L2: x of 216 MB on an
    H100, more on an H200; the gather's smaller x takes the strided walk). An axis of 64-byte rows keeps the
    plans it had (x's dim of 45 rows stages it through tiles of one index value)."""
    rng = np.random.default_rng(seed("axis tiles", dtype))
    unit = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    rows = 96 // unit
    columns = max(50021, -(-int(0.76 * l2_bytes()) // (19 * 45)) | 1)  # odd: a ragged tile edge
    host = random_host(rng, (rows, 45, columns if unit == 1 else 331), dtype)
    x = to_torch(torch, host, dtype, DEVICE).permute(2, 1, 0).contiguous().permute(2, 1, 0)  # axis innermost
    idx, idx_host = make_index(rng, (19,), rows, "int64")
    plan = jitops.explain("index_select", x, 0, idx)[0]
    assert plan["spec"]["tile_a"] > 0 and plan["spec"]["index_each"] == 1, plan["kernel"]
    expected = np.take(host, idx_host, axis=0)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.index_select(x, 0, idx, out=out)
    assert_same_bits(to_numpy(torch, out), expected)
    idx, idx_host = make_index(rng, (3, 7), rows, "int32", negative=True)
    assert jitops.explain("take", x, idx, axis=0)[0]["spec"]["index_each"] == 1
    expected = np.take(host, idx_host, axis=0)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.take(x, idx, axis=0, out=out)
    assert_same_bits(to_numpy(torch, out), expected)
    host_g = random_host(rng, (rows, 41, 640), dtype)
    xg = to_torch(torch, host_g, dtype, DEVICE).permute(2, 1, 0).contiguous().permute(2, 1, 0)
    values = rng.integers(0, rows, (15, 28, 1))
    idx = torch.from_numpy(values).to(DEVICE).int().expand(-1, -1, 640)
    assert jitops.explain("gather", xg, 0, idx)[0]["spec"]["index_each"] == (unit > 1)
    expected = np.take_along_axis(host_g[:, :28], np.broadcast_to(values, (15, 28, 640)), axis=0)
    out = poisoned_like(torch, expected.shape, xg.dtype, DEVICE)
    jitops.gather(xg, 0, idx, out=out)
    assert_same_bits(to_numpy(torch, out), expected)
    short = x[: 64 // unit]  # rows of 64 bytes: neighbouring lanes of the walk share them
    idx, idx_host = make_index(rng, (19,), short.shape[0], "int64")
    assert jitops.explain("index_select", short, 0, idx)[0]["spec"]["index_each"] == 0
    out = poisoned_like(torch, (19,) + tuple(short.shape[1:]), x.dtype, DEVICE)
    jitops.index_select(short, 0, idx, out=out)
    assert_same_bits(to_numpy(torch, out), np.take(host[: 64 // unit], idx_host, axis=0))


@pytest.mark.parametrize("dtype", ["int16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_tiles_of_a_short_dense_dim(dtype):
    """x stored (K, 8, B) and read as (8, B, K): its dense dim B is under 16 units (9, 5, 3 or 2 of them, 18
    to 32 bytes; the tile's edge along it ragged but for complex128) and the output's inner dim K lies 8 B
    units apart in x, a sector a lane for the strided walk (sweep seed 1819's shape). index_select, take
    along axis 0 with a 2-d index of negative values, and torch.gather with an index expanded along B (2^18
    units or more: it loads an index value per element), each tiled and bit for bit against numpy; K odd,
    so the tiles along it are ragged too."""
    rng = np.random.default_rng(seed("short dense dim", dtype))
    unit = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    short = {2: 9, 4: 5, 8: 3, 16: 2}[unit]
    host = random_host(rng, (8, short, 4099), dtype)
    x = to_torch(torch, host, dtype, DEVICE).permute(2, 0, 1).contiguous().permute(1, 2, 0)  # B innermost
    assert x.stride() == (short, 1, 8 * short)
    idx, idx_host = make_index(rng, (19,), 8, "int64")
    plan = jitops.explain("index_select", x, 0, idx)[0]
    assert plan["spec"]["tile_b"] > 0 and plan["spec"]["index_each"] == 0, plan["kernel"]
    out = poisoned_like(torch, (19, short, 4099), x.dtype, DEVICE)
    jitops.index_select(x, 0, idx, out=out)
    assert_same_bits(to_numpy(torch, out), np.take(host, idx_host, axis=0))
    idx, idx_host = make_index(rng, (3, 7), 8, "int32", negative=True)
    assert jitops.explain("take", x, idx, axis=0)[0]["spec"]["tile_b"] > 0
    out = poisoned_like(torch, (3, 7, short, 4099), x.dtype, DEVICE)
    jitops.take(x, idx, axis=0, out=out)
    assert_same_bits(to_numpy(torch, out), np.take(host, idx_host, axis=0))
    values = rng.integers(0, 8, (64, 1, 4099))
    idx = torch.from_numpy(values).to(DEVICE).expand(-1, short, -1)
    assert jitops.explain("gather", x, 0, idx)[0]["spec"]["tile_b"] > 0
    out = poisoned_like(torch, (64, short, 4099), x.dtype, DEVICE)
    jitops.gather(x, 0, idx, out=out)
    expected = np.take_along_axis(host, np.broadcast_to(values, (64, short, 4099)), axis=0)
    assert_same_bits(to_numpy(torch, out), expected)


def test_a_bad_index_in_a_tile_along_the_axis_is_reported():
    x = torch.randn(331, 45, 24, device=DEVICE).permute(2, 1, 0)  # (24, 45, 331), dim 0 innermost
    idx = torch.randint(0, 24, (19,), device=DEVICE)
    idx[11] = 24
    assert jitops.explain("index_select", x, 0, idx)[0]["spec"]["index_each"] == 1
    jitops.set_index_checks("sync")
    try:
        with pytest.raises(IndexError, match=r"index_select: index holds 24 at position 11 .*\(valid: \[0, 24\)\)"):
            jitops.index_select(x, 0, idx)
        idx[11] = 23
        assert torch.equal(jitops.index_select(x, 0, idx), x[idx])
    finally:
        jitops.set_index_checks("async")


def test_a_bad_value_of_a_full_gather_index_in_a_tile_is_reported():
    x = torch.randn(3, 2053, 4, 23, device=DEVICE).to(memory_format=torch.channels_last)
    idx = torch.randint(0, 4, (3, 2053, 7, 23), device=DEVICE)
    idx[1, 1000, 5, 17] = 4
    assert jitops.explain("gather", x, 2, idx)[0]["spec"]["index_each"] == 2
    position = ((1 * 2053 + 1000) * 7 + 5) * 23 + 17
    jitops.set_index_checks("sync")
    try:
        with pytest.raises(IndexError, match=rf"gather: index holds 4 at position {position} .*\(valid: \[0, 4\)\)"):
            jitops.gather(x, 2, idx)
        idx[1, 1000, 5, 17] = 3
        assert torch.equal(jitops.gather(x, 2, idx), torch.gather(x, 2, idx))
    finally:
        jitops.set_index_checks("async")


def test_a_bad_index_in_a_tile_is_reported():
    x = torch.randn(4, 64, 192, device=DEVICE).permute(0, 2, 1)  # (4, 192, 64), dim 1 innermost
    jitops.set_index_checks("sync")
    try:
        assert jitops.explain("index_select", x, 0, torch.tensor([1, 9, 2], device=DEVICE))[0]["spec"]["tile_a"] > 0
        with pytest.raises(IndexError, match=r"index_select: index holds 9 at position 1 .*\(valid: \[0, 4\)\)"):
            jitops.index_select(x, 0, torch.tensor([1, 9, 2], device=DEVICE))
        with pytest.raises(IndexError, match=r"take: indices holds -5 at position 2 .*\(valid: \[-4, 4\)\)"):
            jitops.take(x, torch.tensor([[0, 3], [-5, -4]], device=DEVICE), axis=0)
        assert torch.equal(jitops.index_select(x, 0, torch.tensor([3, 0], device=DEVICE)), x[[3, 0]])
        # an index value per element (the indexed dim innermost in the output): the first bad one's position
        y = torch.randn(300, 40, 64, device=DEVICE).permute(2, 1, 0)  # (64, 40, 300), dim 0 innermost
        idx = torch.randint(0, 300, (120,), device=DEVICE)
        idx[57] = 300
        assert jitops.explain("index_select", y, 2, idx)[0]["spec"]["index_each"] == 1
        with pytest.raises(IndexError, match=r"index_select: index holds 300 at position 57 .*\(valid: \[0, 300\)\)"):
            jitops.index_select(y, 2, idx)
        idx[57] = 299
        assert torch.equal(jitops.index_select(y, 2, idx), y[:, :, idx])
    finally:
        jitops.set_index_checks("async")


@pytest.mark.parametrize("dtype", DTYPES)
def test_an_expanded_index_serves_several_rows_a_load(dtype):
    """An index expanded along a dim other than the output's inner one: each index load serves several rows
    of that dim (a ragged last group of rows: 1001 is no multiple of the rows a load serves), in the linear
    layout (gather, 4 dims; index_select along the inner dim of an x whose outer dims do not collapse) and the
    2-D one (rows sharing one load). The first bad index's position is the first in C order of the expanded index."""
    rng = np.random.default_rng(seed("index reuse", dtype))
    host = random_host(rng, (1001, 30, 21, 3), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    rows = rng.integers(0, 3, (1, 30, 17, 5))
    idx = torch.from_numpy(rows).to(DEVICE).expand(1001, -1, -1, -1)
    assert jitops.explain("gather", x, 3, idx)[0]["spec"]["reuse"] > 1
    expected = np.take_along_axis(host[:, :, :17], np.broadcast_to(rows, idx.shape), axis=3)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.gather(x, 3, idx, out=out)
    assert_same_bits(to_numpy(torch, out), expected)

    rows_of_x = x[:, :15, :, 0]  # (1001, 15, 21), dims 0 and 1 apart: the index is expanded along both
    picks, picks_host = make_index(rng, (45,), 21, "int32")
    assert jitops.explain("index_select", rows_of_x, 2, picks)[0]["spec"]["reuse"] > 1
    expected = np.take(host[:, :15, :, 0], picks_host, axis=2)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.index_select(rows_of_x, 2, picks, out=out)
    assert_same_bits(to_numpy(torch, out), expected)

    big = to_torch(torch, random_host(rng, (8000, 1003), dtype), dtype, DEVICE)
    wide = big[:, :1000]  # 2-D: a thread's rows share one index load
    picks, picks_host = make_index(rng, (77,), 1000, "int64")
    spec = jitops.explain("index_select", wide, 1, picks)[0]["spec"]
    assert spec["dims"] == 2 and spec["reuse"] == spec["unroll"] > 1
    expected = np.take(to_numpy(torch, wide), picks_host, axis=1)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.index_select(wide, 1, picks, out=out)
    assert_same_bits(to_numpy(torch, out), expected)

    jitops.set_index_checks("sync")
    try:
        bad = torch.from_numpy(rows.copy()).to(DEVICE)
        bad[0, 4, 9, 2] = 3
        position = (4 * 17 + 9) * 5 + 2  # in row 0 of the expanded index
        with pytest.raises(IndexError, match=rf"^gather: index holds 3 at position {position} .*\[0, 3\)"):
            jitops.gather(x, 3, bad.expand(1001, -1, -1, -1))
    finally:
        jitops.set_index_checks("async")


@pytest.mark.parametrize("dtype", ["float64", "int64", "complex64", "complex128", "float32"])
def test_units_of_8_bytes_past_the_old_grid_cap(dtype):
    """Seed 1870's shape at a quarter: a full index into a channels_last x along C, 25M units, a grid of a block
    for every unit group (more than 16 waves of resident blocks; NOTES 108), against numpy, the output poisoned.
    float32 moves in units of 4 bytes here and keeps the capped grid-stride loop."""
    rng = np.random.default_rng(seed("past the cap", dtype))
    host = random_host(rng, (24, 4096, 32, 3), dtype)  # N, H, W, C in memory
    x = to_torch(torch, host, dtype, DEVICE).permute(0, 3, 1, 2)  # channels_last (24, 3, 4096, 32)
    picks = rng.integers(0, 3, (24, 8, 4096, 32)).astype(np.int32)
    idx = torch.from_numpy(picks).to(DEVICE)
    r = jitops.explain("gather", x, 1, idx)[0]
    if r["spec"]["unit"] >= 8:  # one pass over the units, no grid-stride loop
        assert r["grid"][0] * r["block"][0] * r["spec"]["unroll"] >= picks.size > 132 * 8 * 16 * 256 * 4
    expected = np.take_along_axis(host.transpose(0, 3, 1, 2), picks.astype(np.int64), axis=1)
    out = poisoned_like(torch, expected.shape, x.dtype, DEVICE)
    jitops.gather(x, 1, idx, out=out)
    assert_same_bits(to_numpy(torch, out), expected)
