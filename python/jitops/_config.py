"""Where jitops finds NVRTC, the CUDA headers and its cache directory."""

import glob
import importlib.util
import os


def _cuda_roots():
    roots = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    roots.append("/usr/local/cuda")
    return roots


def _nvidia_wheel_dirs(sub):
    """lib/ or include/ folders of the nvidia-* wheels (nvidia-cuda-nvrtc, nvidia-cuda-runtime)."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    found = []
    for base in spec.submodule_search_locations:
        found += sorted(glob.glob(os.path.join(base, "*", sub)))
    return found


def nvrtc_dirs():
    """Directories to look for libnvrtc in; JITOPS_NVRTC_DIR alone when set."""
    if os.environ.get("JITOPS_NVRTC_DIR"):
        return [os.environ["JITOPS_NVRTC_DIR"]]
    dirs = []
    for root in _cuda_roots():
        dirs += [os.path.join(root, "lib64"), os.path.join(root, "lib")]
    return dirs + _nvidia_wheel_dirs("lib")


def nvrtc_loader_fallback():
    """Whether the dynamic loader's own path is tried after nvrtc_dirs()."""
    return not os.environ.get("JITOPS_NVRTC_DIR")


def include_dirs():
    return [os.path.join(root, "include") for root in _cuda_roots()] + _nvidia_wheel_dirs("include")


def cache_dir():
    if os.environ.get("JITOPS_CACHE_DIR"):
        return os.environ["JITOPS_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jitops")


def cache_enabled():
    return os.environ.get("JITOPS_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def default_arch():
    """JITOPS_ARCH ("sm_90" or "90") as an int, or None."""
    value = os.environ.get("JITOPS_ARCH")
    return parse_arch(value) if value else None


def parse_arch(value):
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    for prefix in ("sm_", "compute_", "sm"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    if not text.isdigit():
        raise ValueError(f"arch: expected a name like 'sm_90' (got {value!r})")
    return int(text)
