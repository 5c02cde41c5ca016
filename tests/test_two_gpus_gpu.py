"""Per-device bookkeeping: arrays on GPU 1 run on GPU 1 (its own context,
modules and index-error slot), and arrays on two GPUs in one call are refused.
Skipped, with the reason, on a machine with one GPU."""

import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")


@two_gpus
def test_ops_on_gpu_1_run_there():
    x = torch.randn(1000, 64, device="cuda:1")
    idx = torch.randint(0, 1000, (300,), device="cuda:1")
    got = jitops.index_select(x, 0, idx)
    assert got.device == torch.device("cuda:1")
    assert torch.equal(got, x[idx])
    ours, theirs = x.clone(), x.clone()
    src = torch.randn(300, 64, device="cuda:1")
    jitops.index_add_(ours, 0, idx, src)
    theirs.index_add_(0, idx, src)
    assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    assert torch.equal(jitops.histc(x, bins=50), torch.histc(x, bins=50))
    assert jitops.explain(jitops.index_select, x, 0, idx)[0]["device"] == torch.cuda.get_device_name(1)


@two_gpus
def test_modules_are_loaded_per_device(fresh_cache):
    before = jitops.cache_stats()
    for dev in ("cuda:0", "cuda:1"):
        x = torch.randn(100, 8, device=dev)
        jitops.index_select(x, 0, torch.tensor([3], device=dev))
    after = jitops.cache_stats()
    assert after["compiles"] - before["compiles"] == 1  # one compile for the architecture
    assert after["module_loads"] - before["module_loads"] == 2  # one module per device


@two_gpus
def test_bad_index_on_gpu_1_is_raised_for_gpu_1():
    x1 = torch.randn(10, 4, device="cuda:1")
    jitops.index_select(x1, 0, torch.tensor([0, 12], device="cuda:1"))
    torch.cuda.synchronize(1)
    x0 = torch.randn(10, 4, device="cuda:0")
    assert torch.equal(jitops.index_select(x0, 0, torch.tensor([1], device="cuda:0")), x0[[1]])  # GPU 0 is clean
    jitops.synchronize(0)
    with pytest.raises(IndexError, match="index_select: index holds 12 at position 1 "):
        jitops.synchronize(1)
    assert torch.equal(jitops.index_select(x1, 0, torch.tensor([9], device="cuda:1")), x1[[9]])


@two_gpus
def test_arrays_on_two_gpus_are_refused():
    x = torch.randn(10, 20, device="cuda:0")
    idx = torch.tensor([1], device="cuda:1")
    with pytest.raises(ValueError, match=r"index: expected an array on cuda:0 like x \(got cuda:1\)"):
        jitops.index_select(x, 0, idx)
    with pytest.raises(ValueError, match=r"out: expected an array on cuda:0 like x \(got cuda:1\)"):
        jitops.index_select(x, 0, idx.to("cuda:0"), out=torch.empty(1, 20, device="cuda:1"))
    assert torch.equal(jitops.index_select(x, 0, idx.to("cuda:0")), x[[1]])
