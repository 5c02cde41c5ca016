import contextlib
import fcntl
import os
import sys
import tempfile

import pytest

# JAX must not take most of the GPU at import: other tests allocate gigabytes.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jitops


def _gpu_reason():
    ok, why = jitops._core.driver_available()
    if not ok:
        return "no CUDA driver: " + why.splitlines()[0]
    if jitops._core.device_count() == 0:
        return "no CUDA device"
    return None


GPU_SKIP_REASON = _gpu_reason()


def pytest_collection_modifyitems(config, items):
    if GPU_SKIP_REASON is None:
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


_LOCKS = os.path.join(tempfile.gettempdir(), "jitops-gpu-tests")


@contextlib.contextmanager
def gpu_lock(exclusive=False):
    """The GPU among pytest-xdist workers: tests share it, and a test that measures device memory (marker
    exclusive_gpu) has it alone. A readers-writer lock over two files, the gate first, so a waiting
    exclusive test is not starved by the shared ones that keep starting."""
    with open(_LOCKS + ".gate", "a") as gate, open(_LOCKS + ".rw", "a") as rw:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(rw, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(rw, fcntl.LOCK_UN)
            if exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _gpu_share(request):
    if "gpu" not in request.keywords or GPU_SKIP_REASON is not None:
        yield
        return
    with gpu_lock(exclusive="exclusive_gpu" in request.keywords):
        yield


@pytest.fixture
def upsample_tiles_on_narrow_rows():
    """The upsample backward tile kernel on small shapes too: by default output-gradient rows under 256
    bytes and tiles under 2 KiB of shared memory go to the row kernels (test_upsample_tiles_spec.py checks
    those defaults)."""
    previous_row = jitops._core._set_upsample_tile_min_row_bytes(0)
    previous_tile = jitops._core._set_upsample_tile_min_bytes(0)
    yield
    jitops._core._set_upsample_tile_min_row_bytes(previous_row)
    jitops._core._set_upsample_tile_min_bytes(previous_tile)


@pytest.fixture
def fresh_cache(tmp_path):
    """An empty disk cache and nothing in memory; restores the previous cache after."""
    previous = jitops._core.cache_config()
    jitops.clear_memory_cache()
    jitops.set_cache_dir(tmp_path / "cache")
    yield tmp_path / "cache"
    jitops.clear_memory_cache()
    jitops.set_cache_dir(previous["directory"], previous["enabled"])


def run_python(code, env=None):
    """Runs code in a new interpreter; returns its stdout."""
    import subprocess

    full_env = dict(os.environ, **(env or {}))
    out = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout
