"""The dense elementwise loop with several packs a thread (unroll 2 or 4): every dtype with a number or a
one-element operand, bit for bit against PyTorch, at sizes whose last chunk is partial and with a tail of
fewer than one pack; forced launches whose grid loops over several chunks; ElementwiseKernel with several
outputs and with outputs that start as the caller's values. Outputs are poisoned first."""

import re

import numpy as np
import pytest

import jitops
from gpu_data import assert_same_bits, poisoned_like, random_host, to_numpy, to_torch
from test_elementwise_gpu import DTYPES, OPS, assert_same_values, rng_for

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"


def unrolled_size(dtype):
    """600k 16-byte packs and 5 elements: where the heuristic unrolls a full-vector operand (past two blocks an
    SM at two packs, within ~4 waves of one), with a partial last chunk and a tail of fewer than one pack."""
    return 600_000 * (16 // torch.empty(0, dtype=getattr(torch, dtype)).element_size()) + 5


def unroll_of(fn, *args, **kwargs):
    kernel = jitops.explain(fn, *args, **kwargs)[0]["kernel"]
    assert "dims=0" in kernel, kernel
    return int(re.search(r"unroll=(\d+)", kernel).group(1))


def random_device(rng, n, dtype):
    host = random_host(rng, (n,), dtype)
    if dtype in ("float16", "float32", "float64") and n > 3:
        host[3] = np.nan  # NaN must propagate through maximum
    return to_torch(torch, host, dtype, DEVICE)


@pytest.mark.parametrize("form", ["number", "one_element"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sub", "maximum"])
def test_heuristic_unrolls_one_moving_operand(op, dtype, form):
    rng = rng_for("unroll", op, dtype, form)
    n = unrolled_size(dtype)
    x = random_device(rng, n, dtype)
    y = 3 if form == "number" else random_device(rng, 1, dtype).expand(n)
    fn, torch_fn = getattr(jitops, op), OPS[op][0]
    expected = torch_fn(x, y)
    assert unroll_of(fn, x, y) > 1
    out = poisoned_like(torch, expected.shape, expected.dtype, DEVICE)
    assert fn(x, y, out=out) is out
    assert_same_values(out, expected)


@pytest.mark.parametrize("config", ["threads=128 unroll=4 waves=1 vector=16", "threads=256 unroll=2 waves=1 vector=8",
                                    "threads=64 unroll=4 waves=1 vector=4"])
@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "int64"])
def test_forced_unroll_loops_over_chunks(dtype, config):
    """One wave of blocks: each thread's loop takes several chunks of U packs, the last one partial."""
    rng = rng_for("forced", dtype, config)
    n = 1_000_003
    x, y = random_device(rng, n, dtype), random_device(rng, n, dtype)
    out = poisoned_like(torch, (n,), x.dtype, DEVICE)
    jitops._core._tuning_run(lambda: jitops.add(x, y, out=out), config)
    assert_same_values(out, x + y)
    plans, _ = jitops._core._tuning_run(lambda: jitops.explain(jitops.add, x, y, out=out), config)
    assert f"unroll={config.split()[1][-1]}" in plans[0]["kernel"]


def test_kernel_with_two_outputs_and_outputs_read_first():
    rng = rng_for("kernel outputs")
    n = 2_000_001
    host = random_host(rng, (n,), "int32") % 1000
    x = to_torch(torch, host, "int32", DEVICE)
    two = jitops.ElementwiseKernel("T x, S s", "T y, float32 z", "y = x * s; z = float(x) + 0.5f", "two_outputs_u")
    acc = jitops.ElementwiseKernel("T x", "T acc", "acc += x", "accumulate_u")
    start = rng.integers(-1000, 1000, n).astype(np.int32)
    for config in ("threads=256 unroll=2 waves=1 vector=16", "threads=128 unroll=4 waves=2 vector=8"):
        y, z = poisoned_like(torch, (n,), torch.int32, DEVICE), poisoned_like(torch, (n,), torch.float32, DEVICE)
        jitops._core._tuning_run(lambda: two(x, 3, y, z), config)
        assert_same_bits(to_numpy(torch, y), host * 3)
        assert_same_bits(to_numpy(torch, z), host.astype(np.float32) + np.float32(0.5))
        out = to_torch(torch, start, "int32", DEVICE)
        jitops._core._tuning_run(lambda: acc(x, out), config)
        assert_same_bits(to_numpy(torch, out), start + host)
