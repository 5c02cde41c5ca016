"""The disk cache under attack, with no GPU: what jitops creates is the
user's alone (0700 directories, 0600 files); entries, tuning files and
directories owned by another user or writable by others are refused (counted
as rejected, one warning naming the path and the fix), the call compiling and
working from memory; JITOPS_CACHE_SHARED=group trusts the directory's group;
no symbolic link in the cache is followed. Foreign owners are planted with
os.chown, which needs root (CI runs as root)."""

import os
import stat
import subprocess
import sys

import pytest

import jitops
from jitops import VirtualArray as V

FOREIGN_UID = 12345
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="planting files of another user needs root (os.chown)")


def explain_once():
    """A small kernel compiled for sm_90 through the disk cache; its report (origin: compiled / disk / memory)."""
    (r,) = jitops.explain("index_select", V([37, 5], "float32"), 0, V([3], "int64"), arch="sm_90")
    return r


def entry_files(directory):
    return sorted(p for p in os.listdir(directory) if p.endswith(".jitops"))


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def cache(fresh_cache):
    explain_once()  # the entry, its lock, the directory
    jitops.clear_memory_cache()
    return str(fresh_cache)


def reload():
    jitops.clear_memory_cache()
    before = jitops.cache_stats()["disk_rejected"]
    r = explain_once()
    return r["origin"], jitops.cache_stats()["disk_rejected"] - before


def test_what_jitops_creates_is_the_users_alone(cache):
    assert mode(cache) == 0o700
    (entry,) = entry_files(cache)
    assert mode(os.path.join(cache, entry)) == 0o600
    assert mode(os.path.join(cache, entry + ".lock")) == 0o600
    assert reload() == ("disk", 0)


def test_a_directory_the_user_made_keeps_its_mode(tmp_path):
    made = tmp_path / "mine"
    made.mkdir(mode=0o750)
    os.chmod(made, 0o750)
    previous = jitops._core.cache_config()
    jitops.set_cache_dir(made)
    try:
        jitops.clear_memory_cache()
        explain_once()
        assert mode(made) == 0o750 and entry_files(made)
    finally:
        jitops.clear_memory_cache()
        jitops.set_cache_dir(previous["directory"], previous["enabled"])


@needs_root
def test_an_entry_of_another_user_is_refused(cache):
    (entry,) = entry_files(cache)
    os.chown(os.path.join(cache, entry), FOREIGN_UID, -1)
    assert reload() == ("compiled", 1)


@pytest.mark.parametrize("bits", [stat.S_IWGRP, stat.S_IWOTH])
def test_an_entry_others_can_write_is_refused(cache, bits):
    (entry,) = entry_files(cache)
    path = os.path.join(cache, entry)
    os.chmod(path, 0o600 | bits)
    assert reload() == ("compiled", 1)


def test_a_directory_every_user_can_write_is_refused_and_left_alone(cache):
    os.chmod(cache, 0o777)
    jitops.clear_memory_cache()
    for name in entry_files(cache):
        os.unlink(os.path.join(cache, name))
    r = explain_once()
    assert r["origin"] == "compiled" and entry_files(cache) == []  # nothing written there either
    assert jitops._core.cache_directory_trust(cache)[0] is False


@needs_root
def test_a_directory_of_another_user_is_refused(cache):
    os.chown(cache, FOREIGN_UID, -1)
    origin, _ = reload()
    assert origin == "compiled"
    info = jitops.cache_admin.ownership(cache)
    assert info["trusted"] is False and info["uid"] == FOREIGN_UID and "another user" in info["why_not"]


def test_a_group_shared_cache_trusts_its_group_when_asked(cache, monkeypatch):
    os.chmod(cache, 0o770)
    (entry,) = entry_files(cache)
    os.chmod(os.path.join(cache, entry), 0o660)
    assert reload() == ("compiled", 1)
    monkeypatch.setenv("JITOPS_CACHE_SHARED", "group")
    assert reload() == ("disk", 0)
    os.chmod(os.path.join(cache, entry), 0o662)  # writable by others: refused even so
    assert reload() == ("compiled", 1)


def test_no_symbolic_link_is_followed(cache, tmp_path):
    (entry,) = entry_files(cache)
    path = os.path.join(cache, entry)
    elsewhere = tmp_path / "planted.jitops"
    os.rename(path, elsewhere)  # a valid kernel, reached only through a link
    os.symlink(elsewhere, path)
    assert reload() == ("compiled", 1)
    assert os.path.islink(path) is False  # the compile renamed a real file over the link
    # A lock that is a link: the target is not created or written.
    target = tmp_path / "lock-target"
    os.unlink(path)
    os.unlink(path + ".lock")
    os.symlink(target, path + ".lock")
    jitops.clear_memory_cache()
    explain_once()
    assert not target.exists()


def test_tuning_files_are_refused_likewise(fresh_cache):
    path = jitops.tuning.tuning_file(-1, 90)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "w") as f:
        f.write("0123456789abcdef\tthreads=128 unroll=1 waves=4 vector=16\t1.0\tplanted\n")
    os.chmod(path, 0o600)
    assert jitops.tuning._read(path)  # the user's own file is read
    os.chmod(path, 0o666)
    before = jitops.cache_stats()["disk_rejected"]
    assert jitops.tuning._read(path) == {}
    assert jitops.cache_stats()["disk_rejected"] == before + 1


def test_one_warning_names_the_path_and_the_fix(fresh_cache):
    code = (
        "import os, jitops\n"
        "from jitops import VirtualArray as V\n"
        f"jitops.set_cache_dir({str(fresh_cache)!r})\n"
        "def run():\n"
        "    jitops.clear_memory_cache()\n"
        "    jitops.explain('index_select', V([37, 5], 'float32'), 0, V([3], 'int64'), arch='sm_90')\n"
        "run()\n"
        "d = jitops.cache_dir()\n"
        "def plant():\n"
        "    for name in os.listdir(d):\n"
        "        if name.endswith('.jitops'): os.chmod(os.path.join(d, name), 0o666)\n"
        "plant(); run()\n"  # refused, compiled, written again as the user's own
        "plant(); run()\n"
        "print(jitops.cache_stats()['disk_rejected'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
    warnings = [line for line in out.stderr.splitlines() if "refusing to load from the disk cache" in line]
    assert len(warnings) == 1
    assert "is writable by every user (mode 0666)" in warnings[0] and str(fresh_cache) in warnings[0]
    assert "chmod 700" in warnings[0] and "JITOPS_CACHE_SHARED=group" in warnings[0]


def test_cache_info_says_whether_the_directory_is_trusted(cache):
    out = subprocess.run([sys.executable, "-m", "jitops", "cache", "info", "--dir", cache], capture_output=True,
                         text=True)
    assert out.returncode == 0 and '"trusted": true' in out.stdout and '"mode": "0o700"' in out.stdout
