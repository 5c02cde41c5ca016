"""Writers killed at random moments, with no GPU: over 100 rounds, 8 processes
at a time compile the same 20 specializations into one disk cache (explain for
sm_90) and merge tuning results into one tuning file, and are killed with
SIGKILL at random times (the cache emptied every 20 rounds, so that compiles
and first writes are killed too). No process ever reads a partial file (none
is ever rejected), no lock stays held, every process that finishes has
correct kernels, and afterwards the kernels load from disk, the tuning file
parses line by line and the counters file reads."""

import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

WORKER = r"""
import json, random, sys
import jitops
from jitops import VirtualArray as V, tuning

rng = random.Random(int(sys.argv[1]))
# 20 specializations: element size x index dtype x dims after collapsing.
shapes = {1: ([9], 0), 2: ([9, 5], 0), 3: ([9, 5, 3], 1)}
specs = [(d, i, k) for d in ("int8", "float16", "float32", "float64") for i in ("int32", "int64") for k in (1, 2, 3)]
specs = specs[:20]
rng.shuffle(specs)
for dtype, index_dtype, dims in specs:
    shape, dim = shapes[dims]
    (r,) = jitops.explain("index_select", V(shape, dtype), dim, V([2], index_dtype), arch="sm_90")
    assert ".entry jitops_kernel" in r["ptx"] and r["cubin_bytes"] > 0, r["kernel"]
    tuning._store(-1, 90, [{"point": "%016x" % rng.getrandbits(64), "description": "killed writers"}],
                  [{"config": "threads=128 unroll=1 waves=4 vector=16", "median_us": rng.uniform(1, 9)}])
stats = jitops.cache_stats()
with open(sys.argv[2], "w") as f:
    json.dump(stats, f)
"""


def _start(cache, seed, out):
    env = dict(os.environ, JITOPS_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, "-c", WORKER, str(seed), str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_killed_writers_leave_a_sound_cache(tmp_path):
    cache = tmp_path / "cache"
    rng = random.Random(2026)
    finished, killed = [], 0
    for round_ in range(100):
        if round_ % 20 == 0 and cache.exists():
            shutil.rmtree(cache)
        procs = [(_start(cache, round_ * 8 + k, tmp_path / f"r{round_}_{k}.json"), tmp_path / f"r{round_}_{k}.json")
                 for k in range(8)]
        deadline = {p.pid: time.monotonic() + rng.uniform(0.05, 0.6) if rng.random() < 0.75 else None
                    for p, _ in procs}
        while any(p.poll() is None for p, _ in procs):
            now = time.monotonic()
            for p, _ in procs:
                if p.poll() is None and deadline[p.pid] is not None and now >= deadline[p.pid]:
                    p.send_signal(signal.SIGKILL)
                    killed += 1
            time.sleep(0.005)
        for p, out in procs:
            if p.returncode == 0:
                finished.append(json.loads(out.read_text()))
            else:
                assert p.returncode == -signal.SIGKILL, p.stderr.read().decode()
    assert killed > 100 and len(finished) > 50
    # No process saw half a file: every read validated.
    assert all(s["disk_rejected"] == 0 for s in finished)
    # No lock is left held.
    for name in os.listdir(cache):
        if name.endswith(".lock"):
            with open(cache / name, "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    for name in os.listdir(cache / "tuning"):
        if name.endswith(".lock"):
            with open(cache / "tuning" / name, "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # A later process finds every kernel on disk, and reads the tuning file and counters.
    check = tmp_path / "check.json"
    p = _start(cache, 99999, check)
    assert p.wait(timeout=300) == 0, p.stderr.read().decode()
    stats = json.loads(check.read_text())
    assert stats["compiles"] == 0 and stats["disk_rejected"] == 0 and stats["disk_hits"] == 20  # all 20 on disk
    (tsv,) = [n for n in os.listdir(cache / "tuning") if n.endswith(".tsv")]
    for line in (cache / "tuning" / tsv).read_text().splitlines():
        if not line.startswith("#"):
            point, config, us, description = line.split("\t")
            assert len(point) == 16 and config.startswith("threads=") and float(us) > 0
    counters = cache / "counters.json"
    if counters.exists():
        json.loads(counters.read_text())
