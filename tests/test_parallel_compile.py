"""Compiles in parallel, with no GPU: different specializations compile at the
same time in one process (each still once), and a call whose kernel is
already prepared does not wait behind another thread's compile."""

import threading
import time

import jitops
from jitops import VirtualArray as V

SPECS = [("int8", "int32", [11, 3]), ("int16", "int32", [11, 3]), ("float32", "int32", [11, 3]),
         ("float64", "int32", [11, 3]), ("int8", "int64", [11, 3, 5]), ("int16", "int64", [11, 3, 5]),
         ("float32", "int64", [11, 3, 5]), ("float64", "int64", [11, 3, 5])]


def explain(dtype, index_dtype, shape):
    return jitops.explain("gather", V(shape, dtype), 1, V(shape[:1] + [2] + shape[2:], index_dtype), arch="sm_90")


def test_different_keys_compile_at_once_each_once(fresh_cache):
    before = jitops.cache_stats()
    threads = [threading.Thread(target=explain, args=spec) for spec in SPECS + SPECS]  # every key asked twice
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = jitops.cache_stats()
    assert after["compiles"] - before["compiles"] == len(SPECS)
    assert after["most_concurrent_compiles"] >= 2


def test_a_prepared_kernel_does_not_wait_for_another_compile(fresh_cache):
    explain(*SPECS[0])  # prepared in this process
    started = threading.Event()

    def compile_new():
        started.set()
        explain("float16", "int64", [13, 7, 5, 3])

    worker = threading.Thread(target=compile_new)
    worker.start()
    started.wait()
    time.sleep(0.02)  # the worker is inside NVRTC now (a compile takes 50-300 ms)
    t0 = time.perf_counter()
    (r,) = explain(*SPECS[0])
    waited = time.perf_counter() - t0
    compiling = worker.is_alive()
    worker.join()
    assert r["origin"] == "memory"
    assert compiling and waited < 0.05, f"a cached explain took {waited * 1e3:.1f} ms during another compile"
