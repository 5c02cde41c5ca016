"""A planned kernel run on the CPU (tests/host_kernels): where no GPU is at
hand, a launch's index arithmetic, staging and order of sums are checked on
real data against numpy. explain() plans on VirtualArrays standing at numpy
arrays' addresses, so the parameter block it reports points at them; the
specialized source is compiled by the host compiler against a shim of CUDA's
vocabulary and run block by block, a std::thread a CUDA thread."""

import ctypes
import hashlib
import os
import shutil
import subprocess

import jitops

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "..", "templates")

# What each family's include becomes on the host: its templates without
# cuda_fp16.h / cuda_bf16.h (16-bit floats run as unsigned short: their
# index arithmetic, not their rounding), and what those would have given.
PRELUDES = {
    "upsample.cuh": """#include "upsample_tiles.cuh"
namespace jitops {
template <typename T> struct AccumulateOf { typedef T type; };
template <> struct AccumulateOf<unsigned char> { typedef unsigned int type; };
template <> struct AccumulateOf<unsigned short> { typedef unsigned int type; };
}  // namespace jitops
""",
}
SHARED_NAMES = ["upsample_tile_shared"]


def compiler():
    return shutil.which("c++") or shutil.which("g++")


def virtual(a, dtype=None):
    """A VirtualArray standing for numpy array `a` (as `dtype`, default its own), at its address and strides."""
    return jitops._core.VirtualArray(list(a.shape), dtype or str(a.dtype), [s // a.itemsize for s in a.strides],
                                     address=a.ctypes.data)


def host_source(source):
    """The specialized source as the host compiles it (16-bit floats as unsigned short)."""
    for include, prelude in PRELUDES.items():
        source = source.replace(f'#include "{include}"', '#include "cuda_shim.h"\n' + prelude)
    for name in ("__half", "__nv_bfloat16"):
        source = source.replace(name, "unsigned short")
    return source + '\n#include "host_kernel_runner.h"\n'


class HostKernels:
    """Compiled specializations, one shared library each, cached in `directory`."""

    def __init__(self, directory):
        self.directory = str(directory)
        self.libraries = {}

    def library(self, source):
        text = host_source(source)
        key = hashlib.sha1(text.encode()).hexdigest()[:20]
        if key not in self.libraries:
            cpp = os.path.join(self.directory, key + ".cpp")
            so = os.path.join(self.directory, key + ".so")
            with open(cpp, "w") as f:
                f.write(text)
            defines = [f"-D{name}=host_shared" for name in SHARED_NAMES]
            subprocess.run([compiler(), "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", *defines,
                            "-I", TEMPLATES, "-I", os.path.join(HERE, "host_kernels"), cpp, "-o", so],
                           check=True, capture_output=True, text=True)
            self.libraries[key] = ctypes.CDLL(so)
        return self.libraries[key]

    def run(self, report):
        """Runs the one kernel an explain() report describes."""
        params = report["params"]
        grid, block = report["grid"], report["block"]
        assert grid[2] == 1 and block[2] == 1, "host kernels: 2-D grids and blocks at most"
        rc = self.library(report["source"]).run(ctypes.c_char_p(params), ctypes.c_size_t(len(params)),
                                                *[ctypes.c_uint(v) for v in (grid[0], grid[1], block[0], block[1])])
        assert rc == 0, "host kernels: the parameter block's size does not match the kernel's"
