"""The disk cache, seen and managed: ``python -m jitops cache info | list |
clear | prune``. Kernel files are ``<hash>.sm<arch>.jitops``; a disk hit
refreshes a file's mtime, so mtime is its last use. Counters of every process
that used the cache add up in ``counters.json`` (written at exit, under a lock)."""

import atexit
import fcntl
import json
import os
import shutil
import struct
import time

from . import _core

KERNEL_SUFFIX = ".jitops"
COUNTERS = "counters.json"
_HEADER_BYTES = 32  # magic, format, reserved, payload size, checksum (jit/disk_cache.cpp)


def _kernel_name(path):
    """The "// jitops kernel: ..." line of the stored key, or "?" for a file that does not parse."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEADER_BYTES + 8 + 4096)
        (n,) = struct.unpack_from("<Q", head, _HEADER_BYTES)
        key = head[_HEADER_BYTES + 8:_HEADER_BYTES + 8 + min(n, 4096)].decode("utf-8", "replace")
        for line in key.splitlines():
            if line.startswith("// jitops kernel:"):
                return line[len("// jitops kernel:"):].strip()
    except (OSError, struct.error):
        pass
    return "?"


def entries(directory):
    """Kernel files, least recently used first: file, bytes, last_used (epoch seconds), arch, kernel."""
    found = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return found
    for name in names:
        if not name.endswith(KERNEL_SUFFIX) or name.startswith("."):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        arch = name.split(".")[-2] if name.count(".") >= 2 else "?"
        found.append({"file": name, "bytes": st.st_size, "last_used": st.st_mtime, "arch": arch,
                      "kernel": _kernel_name(path)})
    found.sort(key=lambda e: e["last_used"])
    return found


def lifetime_counters(directory):
    try:
        with open(os.path.join(directory, COUNTERS)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def ownership(directory):
    """The directory's owner and mode, and whether jitops trusts it (jit/cache_trust.h) and why not."""
    trusted, why = _core.cache_directory_trust(directory)
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        return {"exists": False, "trusted": trusted}
    try:
        import pwd

        owner = pwd.getpwuid(st.st_uid).pw_name
    except (ImportError, KeyError):
        owner = str(st.st_uid)
    result = {"exists": True, "owner": owner, "uid": st.st_uid, "gid": st.st_gid, "mode": oct(st.st_mode & 0o7777),
              "trusted": trusted, "shared_by_group": os.environ.get("JITOPS_CACHE_SHARED") == "group"}
    if not trusted:
        result["why_not"] = f"the directory {why}: jitops neither loads from it nor writes to it"
    return result


def info(directory):
    kernels = entries(directory)
    tuning_dir = os.path.join(directory, "tuning")
    tuning = sorted(os.listdir(tuning_dir)) if os.path.isdir(tuning_dir) else []
    return {
        "directory": directory,
        "ownership": ownership(directory),
        "entries": len(kernels),
        "bytes": sum(e["bytes"] for e in kernels),
        "max_bytes": os.environ.get("JITOPS_CACHE_MAX_BYTES") or None,
        "tuning_files": [t for t in tuning if t.endswith(".tsv")],
        "counters": lifetime_counters(directory),
    }


def clear(directory):
    """Deletes every kernel file, lock, tuning result and counter jitops wrote; returns the files removed."""
    removed = 0
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    for name in names:
        path = os.path.join(directory, name)
        if name == "tuning" and os.path.isdir(path):
            removed += len(os.listdir(path))
            shutil.rmtree(path, ignore_errors=True)
        elif (name.endswith((KERNEL_SUFFIX, ".lock")) or name == COUNTERS or name.startswith(".jitops-tmp")
              or KERNEL_SUFFIX + ".tmp." in name):
            try:
                os.unlink(path)
                removed += 1
            except FileNotFoundError:
                pass
    return removed


def prune(directory, max_bytes):
    """Deletes least recently used kernels until they total at most max_bytes (the C++ eviction itself)."""
    return _core.cache_prune(directory, int(max_bytes))


def parse_size(text):
    """"500M", "2G", "1048576" -> bytes."""
    text = str(text).strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"max-bytes: expected a size such as 500M or 1048576 (got {text!r})") from None
    if value < 0:
        raise ValueError(f"max-bytes: expected a size of at least 0 (got {text!r})")
    return int(value * scale)


def _record_counters():
    """At exit: adds this process's counters to the directory's lifetime totals."""
    config = _core.cache_config()
    stats = _core.cache_stats()
    if not config["enabled"] or not any(stats.values()):
        return
    directory = config["directory"]
    try:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, COUNTERS + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            totals = lifetime_counters(directory)
            for key, value in stats.items():
                if key != "modules_loaded":  # a level, not a count
                    totals[key] = totals.get(key, 0) + int(value)
            totals["processes"] = totals.get("processes", 0) + 1
            totals["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
            tmp = os.path.join(directory, f".jitops-tmp-counters-{os.getpid()}")
            with open(tmp, "w") as f:
                json.dump(totals, f)
            os.replace(tmp, os.path.join(directory, COUNTERS))
    except OSError:
        pass  # a read-only cache: the counters are this process's only


atexit.register(_record_counters)
