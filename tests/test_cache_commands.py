"""python -m jitops warmup and cache {info,list,clear,prune}, and the
JITOPS_CACHE_MAX_BYTES cap (least recently used kernels go first)."""

import json
import os
import subprocess
import sys

import pytest

from jitops import cache_admin

OPS = "index_select,mul"


def cli(cache, *args, env=None):
    out = subprocess.run([sys.executable, "-m", "jitops", *args], capture_output=True, text=True,
                         env=dict(os.environ, JITOPS_CACHE_DIR=str(cache), **(env or {})))
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("warm") / "cache"
    first = cli(cache, "warmup", "--arch", "sm_90", "--ops", OPS, "--dtypes", "float32", "--jobs", "2")
    return cache, first


def test_warmup_compiles_into_the_cache(warm_cache):
    cache, first = warm_cache
    assert "0 already on disk" in first
    kernels = int(first.split(" kernels:")[0].rsplit(" ", 1)[1])
    assert kernels >= 5 and len(cache_admin.entries(cache)) == kernels


def test_second_warmup_finds_everything_on_disk(warm_cache):
    cache, first = warm_cache
    again = cli(cache, "warmup", "--arch", "sm_90", "--ops", OPS, "--dtypes", "float32", "--jobs", "2")
    assert " 0 compiled" in again


def test_warmup_reports_unsupported_dtypes(tmp_path):
    out = cli(tmp_path / "c", "warmup", "--ops", "histc", "--dtypes", "bool,float32", "--jobs", "1")
    assert "not supported: histc: x: histc supports floating and integer dtypes (got bool)" in out


def test_warmup_rejects_unknown_op(tmp_path):
    out = subprocess.run([sys.executable, "-m", "jitops", "warmup", "--ops", "transpose"], capture_output=True,
                         text=True, env=dict(os.environ, JITOPS_CACHE_DIR=str(tmp_path)))
    assert out.returncode != 0 and "ops: expected names among" in out.stderr


def test_info_and_list(warm_cache):
    cache, _ = warm_cache
    info = json.loads(cli(cache, "cache", "info"))
    assert info["entries"] == len(cache_admin.entries(cache)) and info["bytes"] > 0
    assert info["counters"]["compiles"] >= info["entries"]  # lifetime counters of every process
    listing = cli(cache, "cache", "list").splitlines()
    assert len(listing) == info["entries"] and all("sm90" in line for line in listing)
    assert any("gather unit=" in line for line in listing) and any("elementwise" in line for line in listing)


def test_prune_drops_least_recently_used_first(tmp_path):
    cache = tmp_path / "cache"
    cli(cache, "warmup", "--ops", "mul", "--dtypes", "float32,float16", "--jobs", "2")
    entries = cache_admin.entries(cache)
    assert len(entries) >= 4
    for age, e in enumerate(entries):  # make the first files the oldest, a day apart
        t = 1_000_000 + age * 86400
        os.utime(cache / e["file"], (t, t))
    newest = entries[-1]
    out = cli(cache, "cache", "prune", "--max-bytes", str(newest["bytes"]))
    assert f"removed {len(entries) - 1} kernels" in out
    assert [e["file"] for e in cache_admin.entries(cache)] == [newest["file"]]


def test_max_bytes_env_caps_the_cache(tmp_path):
    cache = tmp_path / "cache"
    cli(cache, "warmup", "--ops", "mul", "--dtypes", "float32,float16", "--jobs", "1",
        env={"JITOPS_CACHE_MAX_BYTES": "40K"})
    total = sum(e["bytes"] for e in cache_admin.entries(cache))
    assert 0 < total <= 40 * 1024


def test_clear_removes_everything(tmp_path):
    cache = tmp_path / "cache"
    cli(cache, "warmup", "--ops", "mul", "--dtypes", "float32", "--jobs", "1")
    assert cache_admin.entries(cache)
    out = cli(cache, "cache", "clear")
    assert out.startswith("removed ") and not cache_admin.entries(cache)
    assert not any(name.endswith((".jitops", ".lock")) for name in os.listdir(cache))


def test_prune_needs_a_size(tmp_path):
    out = subprocess.run([sys.executable, "-m", "jitops", "cache", "prune", "--max-bytes", "lots"],
                         capture_output=True, text=True, env=dict(os.environ, JITOPS_CACHE_DIR=str(tmp_path)))
    assert out.returncode != 0 and "max-bytes: expected a size" in out.stderr


def test_parse_size():
    assert cache_admin.parse_size("500M") == 500 << 20 and cache_admin.parse_size("1024") == 1024
    with pytest.raises(ValueError, match="max-bytes"):
        cache_admin.parse_size("-1")
