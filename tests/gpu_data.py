"""Random device data of every jitops dtype, and bit-exact comparison against
numpy references (data-moving ops must reproduce the bits)."""

import contextlib

import numpy as np

import jitops

UNSIGNED_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def random_host(rng, shape, dtype):
    """Random numpy data of jitops dtype `dtype` (bfloat16 as its int16 bits); never zeros."""
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "bfloat16":
        f = rng.standard_normal(shape).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
    np_dtype = np.dtype(dtype)
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return rng.integers(info.min, info.max, shape, dtype=np_dtype, endpoint=True)
    if np_dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


def to_torch(torch, host, dtype, device):
    t = torch.from_numpy(np.ascontiguousarray(host)).to(device)
    return t.view(torch.bfloat16) if dtype == "bfloat16" else t


def to_numpy(torch, t):
    """A tensor's values as numpy (bfloat16 as int16 bits; unsigned via same-size signed views)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy()
    if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
        signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}[t.dtype]
        return t.view(signed).numpy().view({torch.uint16: np.uint16, torch.uint32: np.uint32,
                                            torch.uint64: np.uint64}[t.dtype])
    return t.numpy()


def bits(a):
    a = np.ascontiguousarray(a)
    flat = a.reshape(-1)
    if a.dtype.itemsize == 16:
        return flat.view(np.uint64)
    return flat.view(UNSIGNED_BITS[a.dtype.itemsize])


def assert_same_bits(got, expected):
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype.itemsize == expected.dtype.itemsize
    np.testing.assert_array_equal(bits(got), bits(expected))


def poisoned_like(torch, shape, dtype, device):
    """An output buffer full of 0xA5 bytes, so unwritten elements show."""
    t = torch.empty(shape, dtype=dtype, device=device)
    if t.numel():
        t.view(-1).view(torch.uint8).fill_(0xA5)
    return t


def poison_free_blocks(torch, device, count, nbytes):
    """`count` blocks of `nbytes` filled with 0xA5 and handed back to PyTorch's caching allocator, which
    gives freed blocks to the next allocations that fit: outputs made in C++ most likely start poisoned
    (the allocator does not promise which block it picks)."""
    torch.cuda.empty_cache()
    blocks = [torch.full((nbytes,), 0xA5, dtype=torch.uint8, device=device) for _ in range(count)]
    del blocks


DTYPES = list(jitops.DTYPES)


@contextlib.contextmanager
def index_checks_synced():
    """Bad index values raise at the call that meets them (jitops.set_index_checks("sync")), then async again."""
    jitops.set_index_checks("sync")
    try:
        yield
    finally:
        jitops.set_index_checks("async")
