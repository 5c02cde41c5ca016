"""SASS (the GPU's machine code) of a compiled kernel, through the CUDA
toolkit's cuobjdump or nvdisasm where one is installed."""

import os
import shutil
import subprocess
import tempfile

from . import _config


def _tool_candidates():
    seen = set()
    for name in ("cuobjdump", "nvdisasm"):
        paths = [os.path.join(root, "bin", name) for root in _config._cuda_roots()]
        paths += [os.path.join(d, name) for d in _config._nvidia_wheel_dirs("bin")]
        paths.append(shutil.which(name) or "")
        for path in paths:
            if path and path not in seen:
                seen.add(path)
                yield name, path


def disassemble(cubin):
    """The SASS listing of CUBIN bytes (a KernelReport's ``cubin``)."""
    if not cubin:
        raise ValueError("cubin: expected the CUBIN bytes of a compiled kernel (got nothing: a PTX-only target?)")
    tried = []
    for name, path in _tool_candidates():
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            tried.append(path)
            continue
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            args = [path, "-sass", f.name] if name == "cuobjdump" else [path, f.name]
            out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout
        tried.append(f"{path} (exit {out.returncode}: {out.stderr.strip()[:200]})")
    raise RuntimeError(
        "no cuobjdump or nvdisasm found to disassemble with; looked at: " + ", ".join(tried)
        + ". Install the CUDA toolkit's binaries or pip install nvidia-cuda-nvdisasm."
    )
