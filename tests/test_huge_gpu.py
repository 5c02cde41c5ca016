"""Every op past 2^31 elements (64-bit offsets): 3 x 10^9 int8 and 2^31 + 7
float16 elements, against PyTorch on the same GPU. Needs ~40 GB of GPU memory
(an H100 or H200); skipped with the reason on smaller GPUs."""

import pytest
from conftest import gpu_lock

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
N8 = 3_000_000_000
N16 = (1 << 31) + 7


@pytest.fixture(scope="module", autouse=True)
def enough_memory():
    if not torch.cuda.is_available() or torch.cuda.mem_get_info()[1] < (60 << 30):
        pytest.skip("needs a GPU with 60 GB or more")
    yield
    with gpu_lock():  # giving memory back changes what a memory-measuring test on another worker reads
        torch.cuda.empty_cache()


@pytest.fixture(scope="module")
def big8():
    g = torch.Generator(device=DEVICE).manual_seed(8)
    with gpu_lock():  # module-wide allocations happen between tests: under the shared lock too
        x = torch.randint(-128, 128, (N8,), dtype=torch.int8, device=DEVICE, generator=g)
    yield x
    del x


@pytest.fixture(scope="module")
def big16():
    g = torch.Generator(device=DEVICE).manual_seed(16)
    with gpu_lock():
        x = torch.randn(N16, dtype=torch.float16, device=DEVICE, generator=g)
    yield x
    del x


def far_indices(n, count=4096):
    """Indices spread over [0, n) with the ends and the 2^31 boundary included."""
    g = torch.Generator(device=DEVICE).manual_seed(n % 1000)
    idx = torch.randint(0, n, (count,), device=DEVICE, generator=g)
    idx[:6] = torch.tensor([0, n - 1, (1 << 31) - 1, 1 << 31, (1 << 31) + 1, n - 2], device=DEVICE)
    return idx


def offset_bits(op, *args, **kwargs):
    return {k["spec"].get("offset") for k in jitops.explain(op, *args, **kwargs)}


def test_gather_family_int8(big8):
    idx = far_indices(N8)
    assert offset_bits(jitops.index_select, big8, 0, idx) == {64}
    assert torch.equal(jitops.index_select(big8, 0, idx), big8[idx])
    assert torch.equal(jitops.take(big8, idx - N8), big8[idx])  # negative indices wrap
    rows = big8.view(3_000_000, 1000)  # columns picked from every row: offsets past 2^31
    cols = torch.tensor([999, 0, 500, 7], device=DEVICE)
    assert torch.equal(jitops.index_select(rows, 1, cols), rows.index_select(1, cols))
    gidx = torch.randint(0, 1000, (3_000_000, 2), device=DEVICE)
    assert torch.equal(jitops.gather(rows, 1, gidx), torch.gather(rows, 1, gidx))


def test_accumulate_family_int8(big8):
    idx = far_indices(N8, 1000)
    src = torch.randint(-3, 4, (1000,), dtype=torch.int8, device=DEVICE)
    ours, theirs = big8.clone(), big8.clone()
    assert offset_bits(jitops.index_add_, ours, 0, idx, src) == {64}
    jitops.index_add_(ours, 0, idx, src)
    theirs.index_add_(0, idx, src)
    assert torch.equal(ours, theirs)
    jitops.index_copy_(ours, 0, idx[:6], src[:6])
    theirs.index_copy_(0, idx[:6], src[:6])
    assert torch.equal(ours, theirs)
    jitops.index_fill_(ours, 0, idx, 5)
    theirs.index_fill_(0, idx, 5)
    assert torch.equal(ours, theirs)
    jitops.scatter_add_(ours, 0, idx, src)
    theirs.scatter_add_(0, idx, src)
    assert torch.equal(ours, theirs)
    jitops.scatter_reduce_(ours, 0, idx, src, "amax", include_self=False)
    theirs.scatter_reduce_(0, idx, src, "amax", include_self=False)
    assert torch.equal(ours, theirs)


def test_float16(big16):
    idx = far_indices(N16)
    assert torch.equal(jitops.index_select(big16, 0, idx), big16[idx])
    ours, theirs = big16.clone(), big16.clone()
    src = torch.randn(idx.numel(), dtype=torch.float16, device=DEVICE)
    jitops.index_add_(ours, 0, idx, src)
    theirs.index_add_(0, idx, src)
    assert torch.allclose(ours.float(), theirs.float(), rtol=2e-3, atol=2e-3)
    del ours, theirs
    assert torch.equal(jitops.mul(big16, 2.0), big16 * 2)
    # PyTorch bins float16 in float, as for float32 input; 4096 bins keep its float
    # counts below 2^24 per bin, where they are exact.
    counts = jitops.histc(big16, bins=4096, counts_dtype="int64")
    assert int(counts.sum()) == N16
    assert torch.equal(counts.double(), torch.histc(big16.float(), bins=4096).double())


def test_upsample_nearest2d_forward_and_backward():
    side = 23171  # 4 * side^2 > 2^31 output elements
    x = torch.randn(1, 1, side, side, dtype=torch.float16, device=DEVICE)
    up = jitops.upsample_nearest2d(x, scale_factor=2)
    assert up.numel() > (1 << 31)
    for dy in (0, 1):
        for dx in (0, 1):
            assert torch.equal(up[..., dy::2, dx::2], x)
    grad = torch.randn(1, 1, 2 * side, 2 * side, dtype=torch.float16, device=DEVICE)
    del up
    got = jitops.upsample_nearest2d_backward(grad, (1, 1, side, side), scale_factor=2)
    expected = grad.view(1, 1, side, 2, side, 2).float().sum((3, 5)).half()
    assert torch.allclose(got.float(), expected.float(), rtol=1e-3, atol=1e-3)
