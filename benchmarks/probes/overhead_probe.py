"""Where the per-call wall time of a cached jitops call goes (run on a GPU).

Times, per call, in a tight Python loop: the whole op, the op with out= given
(no allocation), the C++ entry without the Python wrapper, and the PyTorch
pieces jitops calls into (new_empty, the current-stream query, attribute reads).
"""

import time

import torch

import jitops
from jitops import _core

N = 20000


def per_call(fn, n=N):
    for _ in range(500):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


x = torch.randn(64, 16, device="cuda")
idx = torch.randint(0, 64, (8,), device="cuda")
out = torch.empty(8, 16, device="cuda")
rows = [
    ("torch.index_select", lambda: torch.index_select(x, 0, idx)),
    ("torch.index_select out=", lambda: torch.index_select(x, 0, idx, out=out)),
    ("jitops.index_select", lambda: jitops.index_select(x, 0, idx)),
    ("jitops.index_select out=", lambda: jitops.index_select(x, 0, idx, out=out)),
    ("_core.index_select out= (positional)", lambda: _core.index_select(x, 0, idx, out)),
    ("x.new_empty((8, 16))", lambda: x.new_empty((8, 16))),
    ("_cuda_getCurrentRawStream", lambda: torch._C._cuda_getCurrentRawStream(0)),
    ("x.data_ptr()", lambda: x.data_ptr()),
    ("x.shape, x.stride()", lambda: (x.shape, x.stride())),
    ("x.dtype, x.is_cuda, x.get_device()", lambda: (x.dtype, x.is_cuda, x.get_device())),
    ("empty kernel via torch (x.zero_ on 1 elem)", lambda: out[0, 0].zero_()),
]
for name, fn in rows:
    print(f"{name:45s} {per_call(fn):6.2f} us")

print("--- allocation routes")
dt, dev = x.dtype, x.device
alloc_rows = [
    ("x.new_empty((8, 16))", lambda: x.new_empty((8, 16))),
    ("torch.empty((8, 16), dtype, device)", lambda: torch.empty((8, 16), dtype=dt, device=dev)),
    ("torch.empty_strided", lambda: torch.empty_strided((8, 16), (16, 1), dtype=dt, device=dev)),
    ("torch.empty_like(out)", lambda: torch.empty_like(out)),
]
for name, fn in alloc_rows:
    print(f"{name:45s} {per_call(fn):6.2f} us")

print("--- without torch parsing (jitops.DeviceArray operands)")
dx = jitops.DeviceArray(0, [64, 16], "float32")
didx = jitops.DeviceArray(0, [8], "int64")
didx.copy_from_host(__import__("numpy").arange(8))
dout = jitops.DeviceArray(0, [8, 16], "float32")
print(f"{'_core.index_select DeviceArrays out=':45s} {per_call(lambda: _core.index_select(dx, 0, didx, dout)):6.2f} us")
print(f"{'_core.array_kind(x)':45s} {per_call(lambda: _core.array_kind(x)):6.2f} us")

print("--- parsing alone (three operands)")
print(f"{'_core._parse_only(torch x, idx, out)':45s} {per_call(lambda: _core._parse_only(x, idx, out)):6.2f} us")
print(f"{'_core._parse_only(DeviceArrays)':45s} {per_call(lambda: _core._parse_only(dx, didx, dout)):6.2f} us")
