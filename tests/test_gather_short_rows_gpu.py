"""2-D gathers whose rows hold fewer than 32 units and not a power of two (3, 5, 13, 21, 31 columns) over
rows enough to fill the GPU: a block of that many lanes a row, its warps spanning rows. index_select,
take (negative values wrapped, a transposed x) and gather against numpy, bit for bit, for 1- to 16-byte
elements and both index dtypes, the output poisoned first; a bad index still raises with its position."""

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, index_checks_synced, poisoned_like, random_host, to_numpy, to_torch

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"
ROWS = 40000  # 2-D spaces of 120000 units or more: past two blocks of threads an SM on an H100


def planned_block(fn, *args, **kwargs):
    (report,) = jitops.explain(fn, *args, **kwargs)
    assert report["spec"]["dims"] == 2, report["kernel"]
    return report["block"]


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "float64", "complex128"])
@pytest.mark.parametrize("cols", [3, 5, 13, 21, 31])
def test_index_select_and_take_of_short_rows(cols, dtype, index_dtype):
    rng = np.random.default_rng([cols, len(dtype), len(index_dtype)])
    extent = 2 * cols + 7
    host = random_host(rng, (ROWS, extent), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    index_host = rng.integers(0, extent, cols).astype(index_dtype)
    idx = torch.from_numpy(index_host).to(DEVICE)
    assert planned_block(jitops.index_select, x, 1, idx)[0] == cols
    out = poisoned_like(torch, (ROWS, cols), x.dtype, DEVICE)
    assert jitops.index_select(x, 1, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), np.take(host, index_host, axis=1))
    wrapped = (index_host - extent * rng.integers(0, 2, cols)).astype(index_dtype)  # some counted from the end
    xt = to_torch(torch, np.ascontiguousarray(host.T), dtype, DEVICE).t()  # x's values stored column-major
    out = poisoned_like(torch, (ROWS, cols), x.dtype, DEVICE)
    jitops.take(xt, torch.from_numpy(wrapped).to(DEVICE), axis=1, out=out)
    assert_same_bits(to_numpy(torch, out), np.take(host, wrapped, axis=1))


@pytest.mark.parametrize("cols", [5, 21])
@pytest.mark.parametrize("dtype", ["uint8", "bfloat16", "int64"])
def test_gather_of_short_rows(cols, dtype):
    rng = np.random.default_rng([cols, len(dtype), 3])
    host = random_host(rng, (ROWS, 40), dtype)
    x = to_torch(torch, host, dtype, DEVICE)
    index_host = rng.integers(0, 40, (ROWS, cols))
    idx = torch.from_numpy(index_host).to(DEVICE)
    assert planned_block(jitops.gather, x, 1, idx)[0] == cols
    out = poisoned_like(torch, (ROWS, cols), x.dtype, DEVICE)
    assert jitops.gather(x, 1, idx, out=out) is out
    assert_same_bits(to_numpy(torch, out), np.take_along_axis(host, index_host, axis=1))


def test_a_bad_index_in_short_rows_names_its_position():
    x = torch.arange(ROWS * 30, dtype=torch.float32, device=DEVICE).reshape(ROWS, 30)
    idx = torch.tensor([0, 4, 29, 30, 2], device=DEVICE)  # 30 is past the end, at position 3
    with index_checks_synced(), pytest.raises(IndexError, match=r"index holds 30 at position 3 "):
        jitops.index_select(x, 1, idx)
