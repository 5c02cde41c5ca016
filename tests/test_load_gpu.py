"""jitops under load on the GPU: 16 threads on their own streams, a bounded
module cache that unloads what it evicts, unloading at exit, and memory that
stays flat over 10^5 calls."""

import json
import os
import subprocess
import sys
import threading

import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DEVICE = "cuda"


def calls_for(seed):
    """One round of calls over several op families, with PyTorch's answers."""
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(300, 40, device=DEVICE, generator=g)
    idx = torch.randint(0, 300, (77,), device=DEVICE, generator=g)
    gidx = torch.randint(0, 40, (300, 9), device=DEVICE, generator=g)
    src = torch.randn(77, 40, device=DEVICE, generator=g)
    xh = x.half()
    return [
        (lambda: jitops.index_select(x, 0, idx), lambda: x[idx]),
        (lambda: jitops.take(xh, idx.int()), lambda: xh.reshape(-1)[idx.long()]),
        (lambda: jitops.gather(x, 1, gidx), lambda: torch.gather(x, 1, gidx)),
        (lambda: jitops.index_add_(x.clone(), 0, idx, src), lambda: x.clone().index_add_(0, idx, src)),
        (lambda: jitops.scatter_add_(x.clone(), 1, gidx, x), lambda: x.clone().scatter_add_(1, gidx, x)),
        (lambda: jitops.histc(x, bins=33), lambda: torch.histc(x, bins=33)),
        (lambda: jitops.mul(x, x), lambda: x * x),
    ]


def test_sixteen_threads_on_their_own_streams(fresh_cache):
    start = jitops.cache_stats()
    barrier = threading.Barrier(16)
    failures = []

    def worker(k):
        stream = torch.cuda.Stream()
        try:
            with torch.cuda.stream(stream):
                barrier.wait()
                for rep in range(10):
                    for ours, theirs in calls_for(1000 * k + rep):
                        got, expected = ours(), theirs()
                        stream.synchronize()
                        if not torch.allclose(got.float(), expected.float(), rtol=1e-4, atol=1e-4):
                            failures.append((k, rep))
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            failures.append((k, repr(exc)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert failures == []
    # one compile per distinct specialization, however many threads raced for it
    kernels = set()
    x = torch.randn(300, 40, device=DEVICE)
    idx = torch.randint(0, 300, (77,), device=DEVICE)
    gidx = torch.randint(0, 40, (300, 9), device=DEVICE)
    for op, args in ((jitops.index_select, (x, 0, idx)), (jitops.take, (x.half(), idx.int())),
                     (jitops.gather, (x, 1, gidx)), (jitops.index_add_, (x, 0, idx, torch.randn(77, 40, device=DEVICE))),
                     (jitops.scatter_add_, (x, 1, gidx, x)), (jitops.histc, (x, 33)), (jitops.mul, (x, x))):
        kernels.update(k["kernel"] for k in jitops.explain(op, *args))
    end = jitops.cache_stats()
    assert end["compiles"] - start["compiles"] == len(kernels)


def _ten_kernels():
    """10 distinct specializations (element size x collapsed dims), each checked."""
    for dtype in (torch.int8, torch.int16, torch.float32, torch.float64, torch.complex128):
        for shape in ((50, 3), (20, 6, 5)):
            x = torch.arange(torch.Size(shape).numel(), device=DEVICE).reshape(shape).to(dtype)
            idx = torch.tensor([2, 0, 1], device=DEVICE)
            assert torch.equal(jitops.index_select(x, 1, idx), x.index_select(1, idx))


def test_evicted_modules_are_unloaded_and_reloaded(fresh_cache):
    limit = jitops._core.memory_cache_limit()
    try:
        jitops.set_memory_cache_limit(4)
        before = jitops.cache_stats()
        _ten_kernels()
        after = jitops.cache_stats()
        assert after["compiles"] - before["compiles"] == 10
        assert after["module_loads"] - before["module_loads"] == 10
        assert after["modules_loaded"] == 4
        assert after["module_unloads"] - before["module_unloads"] == 6
        _ten_kernels()  # evicted kernels come back from memory (compiled code kept), loaded again
        again = jitops.cache_stats()
        assert again["compiles"] == after["compiles"]
        assert again["module_loads"] - after["module_loads"] >= 6
    finally:
        jitops.set_memory_cache_limit(limit)


def test_modules_are_unloaded_at_exit(tmp_path):
    # The report hook is registered before jitops is imported, so it runs after jitops' own exit hook.
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sys.modules['jitops'].cache_stats())))\n"
        "import torch, jitops\n"
        "x = torch.randn(100, 8, device='cuda')\n"
        "jitops.index_select(x, 0, torch.tensor([3, 1], device='cuda'))\n"
        "jitops.gather(x, 1, torch.zeros(100, 2, dtype=torch.int64, device='cuda'))\n"
        "torch.cuda.synchronize()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, JITOPS_CACHE_DIR=str(tmp_path)))
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats["module_loads"] == 2 and stats["module_unloads"] == 2 and stats["modules_loaded"] == 0


def _resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _device_used():
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return total - free


@pytest.mark.exclusive_gpu
def test_hundred_thousand_calls_keep_memory_flat():
    rounds = calls_for(7)
    x = torch.randn(64, 16, device=DEVICE)
    idx = torch.randint(0, 64, (16,), device=DEVICE)
    out = torch.empty(16, 16, device=DEVICE)
    det = torch.zeros(64, 16, device=DEVICE)
    ops = [lambda: jitops.index_select(x, 0, idx, out=out),
           lambda: jitops.index_add_(det, 0, idx, out, deterministic=True),  # sort scratch per call
           lambda: jitops.histc(x, bins=10)]                                 # range scratch per call
    ops += [ours for ours, _ in rounds]
    for _ in range(300):  # warm: kernels loaded, allocators grown to their working size
        for op in ops:
            op()
    rss, dev, loaded = _resident_bytes(), _device_used(), jitops.cache_stats()["modules_loaded"]
    calls = 0
    while calls < 100_000:
        for op in ops:
            op()
        calls += len(ops)
    rss_growth, dev_growth = _resident_bytes() - rss, _device_used() - dev
    assert jitops.cache_stats()["modules_loaded"] == loaded
    assert rss_growth < 8 << 20, f"host memory grew {rss_growth / 2**20:.1f} MiB over {calls} calls"
    assert dev_growth <= 2 << 20, f"device memory grew {dev_growth / 2**20:.1f} MiB over {calls} calls"
