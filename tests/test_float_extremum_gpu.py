"""Floating amax / amin on the GPU, where float32 and float64 go as integer reductions on the bits
(templates/jitops/float_extremum.cuh) and 16-bit floats as compare-and-swap loops: values of both signs,
signed zeros, infinities and NaNs of both signs in self and in src, raced by many threads into a few hot
destinations and spread over many, against numpy's maximum.at / minimum.at (NaN propagates, as in
torch.maximum)."""

import numpy as np
import pytest

import jitops
from test_scatter_gpu import DEVICE, expect_reduced, host, scatter_positions, seed

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

NEG_NAN = np.copysign(np.nan, -1.0)
SPECIALS = [np.nan, NEG_NAN, np.inf, -np.inf, 0.0, -0.0]


def values_with_specials(rng, shape, dtype, share, finite=None, forced=()):
    """Normal values of both signs with `share` of them NaN of either sign, infinities or signed zeros, and
    at least two NaNs of each sign (none where `finite` is set), `forced` (flat position, value) pairs last,
    as a device tensor of `dtype`. The NaNs' sign bits are set on the device: PyTorch's conversion to 16-bit
    floats drops a NaN's sign."""
    values = rng.standard_normal(shape)
    special = rng.random(shape) < share
    values[special] = rng.choice(SPECIALS, int(special.sum()))
    allowed = np.flatnonzero(~finite) if finite is not None else np.arange(values.size)
    values.reshape(-1)[rng.choice(allowed, 4, replace=False)] = [np.nan, NEG_NAN, np.nan, NEG_NAN]
    if finite is not None:
        values[finite & np.isnan(values)] = 1.5
    for position, value in forced:
        values.reshape(-1)[position] = value
    t = torch.from_numpy(values).to(DEVICE).to(getattr(torch, dtype))
    word = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    sign = torch.tensor(-(1 << (8 * t.element_size() - 1)), dtype=word, device=DEVICE)
    bits = t.view(word)
    negative_nan = torch.from_numpy(np.isnan(values) & np.signbit(values)).to(DEVICE)
    bits[negative_nan] = bits[negative_nan] | sign
    assert bool((bits[negative_nan] < 0).all())  # sign bits as integers: torch.signbit of a float16 NaN is False
    return t


@pytest.mark.parametrize("kind", ["hot", "random", "rows"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_floating_extrema_propagate_nans_of_either_sign(dtype, kind):
    """A million values into 8 hot destinations or 100003 random ones (1-D), or rows of 16 through an expanded
    index: self (include_self) and src carry NaNs of both signs; every destination a NaN reaches is NaN, every
    other one the exact max or min."""
    rng = np.random.default_rng(seed("float extrema", dtype, kind))
    n, dests, width = (1_000_003, 100_003, 1) if kind != "rows" else (200_003, 20_011, 16)
    hot = rng.integers(0, dests, 8)
    idx = hot[rng.integers(0, 8, n)] if kind == "hot" else rng.integers(0, dests, n)
    shape, src_shape = ((dests,), (n,)) if width == 1 else ((dests, width), (n, width))
    index = torch.from_numpy(idx).to(DEVICE)
    if width > 1:
        index = index[:, None].expand(n, width)
    pos = scatter_positions(host(index), 0)
    for reduce in ("amax", "amin"):
        for include_self in (True, False):
            # Two hot destinations start as NaNs of either sign, raced by values of both signs.
            self_t = values_with_specials(rng, shape, dtype, 0.02, forced=[(hot[0] * width, NEG_NAN),
                                                                           (hot[1] * width, np.nan)])
            # Half the hot destinations take no NaN from src, so that their exact extremum is checked too.
            finite = np.broadcast_to(np.isin(idx, hot[4:]).reshape(n, *([1] * (width > 1))), src_shape)
            src_t = values_with_specials(rng, src_shape, dtype, 2e-5, finite)
            before, terms = host(self_t), host(src_t)
            assert np.isnan(terms).any() and np.isnan(before[pos]).any()  # NaNs race in from both sides
            jitops.scatter_reduce_(self_t, 0, index, src_t, reduce, include_self=include_self)
            expect_reduced(self_t, before, pos, terms, reduce, include_self, dtype)
