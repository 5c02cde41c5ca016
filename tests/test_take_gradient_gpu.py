"""take's gradient under the C++ node: zeros with the output's gradient added at the indices, negative ones
counted from the end by the add kernel itself (one launch, no remainder first), for every floating dtype and
both index dtypes, into the flattened x and along the first, a middle and the last axis, few and many
(repeated) indices; against numpy's np.add.at in float64, the gradient's block poisoned in the caching
allocator first. Rows enough for the row sums (which read no wrap: the index is wrapped first, on the Python
path) and the determinism switch (the ordered sums, likewise) give numpy's values too."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import jitops  # noqa: E402
from jitops import _core  # noqa: E402
from gpu_data import poison_free_blocks  # noqa: E402

pytestmark = pytest.mark.gpu
DEVICE = "cuda"

CASES = {  # name: (x's shape, axis, the index's shape, whether the add is one native launch)
    "flat, few": ((6, 5, 4), None, (3, 2), True),
    "flat, many": ((33, 7), None, (5000,), True),
    "axis 0": ((50, 33), 0, (200,), True),
    "axis 1 of 3, 2-d index": ((7, 40, 5), 1, (9, 11), True),
    "last axis": ((9, 130), -1, (400,), True),
    "rows": ((4096, 64), 0, (20000,), False),  # the row sums may take it: not counted
}
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 5e-2}


@pytest.fixture
def cpp_nodes():
    previous = _core._set_cpp_autograd(True)
    if not _core._cpp_autograd_active():
        _core._set_cpp_autograd(previous)
        pytest.skip("jitops._torch_autograd was not built")
    yield
    _core._set_cpp_autograd(previous)


def numpy_gradient(shape, axis, index, g):
    """float64 zeros of `shape` with g added at index (numpy's wrap), along axis or into the flattened zeros."""
    out = np.zeros(shape)
    flat_index = index.reshape(-1)
    if axis is None:
        np.add.at(out.reshape(-1), flat_index % out.size, g.reshape(-1))
        return out
    a = axis % len(shape)
    rows = shape[:a] + (flat_index.size,) + shape[a + 1:]
    np.add.at(np.moveaxis(out, a, 0), flat_index % shape[a], np.moveaxis(g.reshape(rows), a, 0))
    return out


def check(name, dtype, index_dtype, deterministic=False):
    shape, axis, index_shape, one_launch = CASES[name]
    rng = np.random.default_rng([len(name), dtype.itemsize, index_dtype.itemsize])
    x = torch.from_numpy(rng.standard_normal(shape)).to(DEVICE, dtype).requires_grad_()
    extent = x.numel() if axis is None else shape[axis]
    index_host = rng.integers(-extent, extent, index_shape)
    idx = torch.from_numpy(index_host).to(DEVICE, index_dtype)
    out = jitops.take(x, idx, axis=axis)
    assert out.grad_fn.name() == "jitops::TakeBackward"
    upstream_host = rng.standard_normal(tuple(out.shape))
    upstream = torch.from_numpy(upstream_host).to(DEVICE, dtype)
    poison_free_blocks(torch, DEVICE, 2, x.numel() * x.element_size())
    before = _core._native_launches()
    (grad,) = torch.autograd.grad(out, [x], upstream)
    launches = _core._native_launches() - before
    if one_launch:
        assert launches == (0 if deterministic else 1), name
    expected = numpy_gradient(shape, axis, index_host, upstream.double().cpu().numpy())
    assert grad.dtype == dtype and tuple(grad.shape) == shape
    error = np.abs(grad.double().cpu().numpy() - expected).max() / max(1.0, np.abs(expected).max())
    assert error < TOLERANCE[dtype], (name, error)


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", list(CASES))
def test_negative_indices_count_from_the_end_in_the_add(cpp_nodes, name, dtype, index_dtype):
    check(name, dtype, index_dtype)


@pytest.mark.parametrize("name", ["flat, many", "axis 1 of 3, 2-d index", "rows"])
def test_the_determinism_switch_wraps_before_the_ordered_sums(cpp_nodes, name):
    torch.use_deterministic_algorithms(True)
    try:
        check(name, torch.float32, torch.int64, deterministic=True)
    finally:
        torch.use_deterministic_algorithms(False)
