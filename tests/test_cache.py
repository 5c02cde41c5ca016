"""The disk and memory caches: counters, new processes, corrupt files, races."""

import glob
import json
import os
import subprocess
import sys

import jitops
from jitops import VirtualArray as V

from conftest import run_python


def explain_once(rows=1000, cols=33, dtype="float32"):
    return jitops.explain("index_select", V([rows, cols], dtype), 0, V([7], "int64"), arch="sm_90")[0]


def cache_files(directory):
    return sorted(glob.glob(os.path.join(str(directory), "*.jitops")))


def test_compiles_once_then_memory(fresh_cache):
    before = jitops.cache_stats()
    first = explain_once()
    second = explain_once()
    after = jitops.cache_stats()
    assert first["origin"] == "compiled" and second["origin"] == "memory"
    assert after["compiles"] - before["compiles"] == 1
    assert after["disk_writes"] - before["disk_writes"] == 1
    assert len(cache_files(fresh_cache)) == 1


def test_new_process_hits_disk(fresh_cache):
    explain_once()
    code = (
        "import json, jitops\n"
        "from jitops import VirtualArray as V\n"
        "r = jitops.explain('index_select', V([1000, 33], 'float32'), 0, V([7], 'int64'), arch='sm_90')[0]\n"
        "print(json.dumps([r['origin'], jitops.cache_stats()]))\n"
    )
    origin, stats = json.loads(run_python(code, {"JITOPS_CACHE_DIR": str(fresh_cache)}))
    assert origin == "disk"
    assert stats["compiles"] == 0 and stats["disk_hits"] == 1


def test_memory_clear_then_disk(fresh_cache):
    explain_once()
    jitops.clear_memory_cache()
    assert explain_once()["origin"] == "disk"


def test_key_separates_specializations(fresh_cache):
    explain_once(cols=33)
    explain_once(cols=34)  # float2 instead of float: another kernel
    explain_once(cols=33, dtype="int32")  # same bytes moved: same kernel
    assert len(cache_files(fresh_cache)) == 2


def _corrupt(path, how):
    data = open(path, "rb").read()
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "garbage":
        data = os.urandom(len(data))
    elif how == "empty":
        data = b""
    elif how == "flipped":
        middle = len(data) // 2
        data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]
    elif how == "other-version":
        data = data[:8] + (99).to_bytes(4, "little") + data[12:]
    open(path, "wb").write(data)


def test_corrupt_files_are_misses_and_rewritten(fresh_cache):
    explain_once()
    (path,) = cache_files(fresh_cache)
    for how in ("truncated", "garbage", "empty", "flipped", "other-version"):
        _corrupt(path, how)
        jitops.clear_memory_cache()
        before = jitops.cache_stats()
        r = explain_once()
        after = jitops.cache_stats()
        assert r["origin"] == "compiled", how
        assert after["disk_rejected"] - before["disk_rejected"] == 1, how
        jitops.clear_memory_cache()
        assert explain_once()["origin"] == "disk", how  # the rewritten file is whole again


def test_cache_off(tmp_path):
    code = (
        "import json, jitops\n"
        "from jitops import VirtualArray as V\n"
        "jitops.explain('index_select', V([1000, 33], 'float32'), 0, V([7], 'int64'), arch='sm_90')\n"
        "print(json.dumps(jitops.cache_stats()))\n"
    )
    stats = json.loads(run_python(code, {"JITOPS_CACHE": "0", "JITOPS_CACHE_DIR": str(tmp_path)}))
    assert stats["compiles"] == 1 and stats["disk_writes"] == 0
    assert cache_files(tmp_path) == []


def test_processes_racing_on_one_key_compile_it_once(tmp_path):
    # Each process waits at a file barrier, then asks for the same new kernels.
    barrier = tmp_path / "go"
    code = (
        "import json, os, time, jitops\n"
        "from jitops import VirtualArray as V\n"
        f"while not os.path.exists({str(barrier)!r}): time.sleep(0.005)\n"
        "for cols in (36, 37, 38):\n"
        "    jitops.explain('take', V([500, cols], 'int16'), V([9], 'int32'), axis=0, arch='sm_90')\n"
        "print(json.dumps(jitops.cache_stats()))\n"
    )
    env = dict(os.environ, JITOPS_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    barrier.write_text("go")
    stats = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    # int16 rows of 36, 37, 38 move as 8-, 2- and 4-byte units: 3 kernels in all.
    assert sum(s["compiles"] for s in stats) == 3
    assert sum(s["disk_hits"] for s in stats) == 4 * 3 - 3
    assert len(cache_files(tmp_path / "cache")) == 3


def test_unwritable_cache_dir_still_works(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    code = (
        "import json, jitops\n"
        "from jitops import VirtualArray as V\n"
        "r = jitops.explain('index_select', V([1000, 33], 'float32'), 0, V([7], 'int64'), arch='sm_90')[0]\n"
        "print(json.dumps(r['origin']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, JITOPS_CACHE_DIR=str(blocked / "cache")))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == "compiled"
    assert out.stderr.count("jitops: warning") == 1
