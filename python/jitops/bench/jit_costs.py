"""JIT costs: first compile of a specialization, a disk-cache hit in a new
process, and the per-call wall time of cached calls on small tensors."""

import json
import os
import subprocess
import sys
import tempfile
import time

# Run in a fresh process so nothing is warm: compiles (or loads) one
# specialization and prints how long that took.
_PROBE = r"""
import json, time, jitops
from jitops import VirtualArray
# Rows of 33 floats: an unusual specialization, so nothing else warmed it.
if jitops.is_available():  # device arrays: the kernel is also loaded (cuModuleLoadData), not launched
    x, idx, arch = jitops.DeviceArray(0, [1000, 33], "float32"), jitops.DeviceArray(0, [7], "int64"), None
else:
    x, idx, arch = VirtualArray([1000, 33], "float32"), VirtualArray([7], "int64"), "sm_90"
t0 = time.perf_counter()
r = jitops.explain("index_select", x, 0, idx, arch=arch)[0]
t1 = time.perf_counter()
print(json.dumps({"origin": r["origin"], "prepare_ms": r["prepare_ms"], "load_ms": r["load_ms"],
                  "compile_ms": r["compile_ms"], "wall_ms": (t1 - t0) * 1e3, "kernel": r["kernel"]}))
"""


def compile_and_load():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, JITOPS_CACHE_DIR=cache, JITOPS_CACHE="1")
        runs = []
        for _ in range(2):  # first: compile; second: disk hit in a new process
            out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                return {"error": f"probe exited with {out.returncode}: {out.stderr.strip()[-400:]}"}
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, second = runs
    return {
        "kernel": first["kernel"],
        "first_compile_ms": first["prepare_ms"],  # NVRTC load + compile + cache write
        "nvrtc_compile_ms": first["compile_ms"],
        "first_origin": first["origin"],
        "disk_hit_origin": second["origin"],
        "disk_hit_read_ms": second["prepare_ms"],
        "disk_hit_module_load_ms": second["load_ms"],
    }


def _loop_us(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6
