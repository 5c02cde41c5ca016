"""The disk and memory caches: counters, new processes, corrupt files, races."""

import glob
import json
import os
import subprocess
import sys

import pytest

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


# 20 distinct specializations: 5 element sizes x 2 index dtypes x 2 and 3 collapsed dims.
TWENTY_SPECS = (
    "import hashlib, json, jitops\n"
    "from jitops import VirtualArray as V\n"
    "def twenty():\n"
    "    out = {}\n"
    "    for dt in ('int8', 'int16', 'float32', 'float64', 'complex128'):\n"
    "        for it in ('int32', 'int64'):\n"
    "            for shape in ([500, 3], [40, 6, 5]):\n"
    "                (k,) = jitops.explain('index_select', V(shape, dt), 1, V([7], it), arch='sm_90')\n"
    "                out[k['kernel']] = hashlib.sha256(k['cubin']).hexdigest()\n"
    "    return out\n"
)


def test_eight_processes_compile_twenty_kernels_once(tmp_path):
    # Each process waits at a file barrier, then asks for the same 20 new kernels.
    barrier = tmp_path / "go"
    code = TWENTY_SPECS + (
        "import os, time\n"
        f"while not os.path.exists({str(barrier)!r}): time.sleep(0.005)\n"
        "print(json.dumps({'cubins': twenty(), 'stats': jitops.cache_stats()}))\n"
    )
    env = dict(os.environ, JITOPS_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(8)]
    barrier.write_text("go")
    results = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    stats = [r["stats"] for r in results]
    assert len(results[0]["cubins"]) == 20
    # every process has the same 20 kernels, bit for bit
    assert all(r["cubins"] == results[0]["cubins"] for r in results)
    # each compiled exactly once across the 8 processes; the rest were disk hits
    assert sum(s["compiles"] for s in stats) == 20
    assert sum(s["disk_hits"] for s in stats) == 8 * 20 - 20
    # no process ever read a partial file (it would fail its checksum and count here)
    assert sum(s["disk_rejected"] for s in stats) == 0
    assert len(cache_files(tmp_path / "cache")) == 20
    assert not [f for f in os.listdir(tmp_path / "cache") if ".tmp." in f]


def _works_from_memory(env, preamble=""):
    """Runs the 20 kernels twice in a new process; returns (stats, stderr)."""
    code = TWENTY_SPECS + preamble + (
        "first = twenty()\n"
        "again = twenty()\n"
        "assert first == again and len(first) == 20\n"
        "print(json.dumps(jitops.cache_stats()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, **env))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def test_read_only_cache_dir_works_from_memory_and_warns_once():
    # /proc/self/fdinfo exists and refuses new files even to root (chmod would not stop root).
    if not os.path.isdir("/proc/self/fdinfo"):
        pytest.skip("no /proc here")
    stats, err = _works_from_memory({"JITOPS_CACHE_DIR": "/proc/self/fdinfo"})
    assert stats["compiles"] == 20 and stats["memory_hits"] >= 20 and stats["disk_writes"] == 0
    assert err.count("jitops: warning") == 1 and "cannot write to the cache directory /proc/self/fdinfo" in err


def test_full_cache_dir_works_from_memory_and_leaves_no_partial_file(tmp_path):
    # A file-size limit makes every cache write fail part way (EFBIG), as a full disk would.
    preamble = ("import resource, signal\n"
                "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n")
    stats, err = _works_from_memory({"JITOPS_CACHE_DIR": str(tmp_path / "cache")}, preamble)
    assert stats["compiles"] == 20 and stats["disk_writes"] == 0
    assert err.count("jitops: warning") == 1 and "cannot write to the cache directory" in err
    left = os.listdir(tmp_path / "cache")
    assert not [f for f in left if f.endswith(".jitops") or ".tmp." in f], left


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
