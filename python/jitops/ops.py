"""The ops: the gather family (index_select, take, gather), the accumulate
family (index_add_, index_copy_, index_fill_, scatter_add_, scatter_reduce_,
in place on self), histc, upsample_nearest2d and its backward, and the
elementwise binary ops (add, sub, mul, div, maximum, minimum).

The functions are C++ builtins (METH_FASTCALL): the per-call work, argument
checks, specialization lookup and launch, happens in C++ with no Python frame
in between. Operands in host memory (numpy, CPU tensors, lists) are handed to
``jitops._host.run_op``, which copies them to the GPU and back.
"""

from . import _core

index_select = _core.index_select
take = _core.take
gather = _core.gather
index_add_ = _core.index_add_
index_copy_ = _core.index_copy_
index_fill_ = _core.index_fill_
scatter_add_ = _core.scatter_add_
scatter_reduce_ = _core.scatter_reduce_
histc = _core.histc
upsample_nearest2d = _core.upsample_nearest2d
upsample_nearest2d_backward = _core.upsample_nearest2d_backward
add = _core.add
sub = _core.sub
mul = _core.mul
div = _core.div
maximum = _core.maximum
minimum = _core.minimum

# name -> (function, positions of array arguments, of index arguments, of the
# array written: out= for the gather family, self for the in-place ops)
OPS = {
    "index_select": (index_select, (0, 2, 3), (2,), 3),
    "take": (take, (0, 1, 3), (1,), 3),
    "gather": (gather, (0, 2, 3), (2,), 3),
    "index_add_": (index_add_, (0, 2, 3), (2,), 0),
    "index_copy_": (index_copy_, (0, 2, 3), (2,), 0),
    "index_fill_": (index_fill_, (0, 2), (2,), 0),
    "scatter_add_": (scatter_add_, (0, 2, 3), (2,), 0),
    "scatter_reduce_": (scatter_reduce_, (0, 2, 3), (2,), 0),
    "histc": (histc, (0, 4), (), 4),
    "upsample_nearest2d": (upsample_nearest2d, (0, 3), (), 3),
    "upsample_nearest2d_backward": (upsample_nearest2d_backward, (0, 3), (), 3),
}
for _name in ("add", "sub", "mul", "div", "maximum", "minimum"):
    OPS[_name] = (globals()[_name], (0, 1, 2), (), 2)
