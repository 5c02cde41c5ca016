"""The gather family: index_select, take and gather.

The functions are C++ builtins (METH_FASTCALL): the per-call work, argument
checks, specialization lookup and launch, happens in C++ with no Python frame
in between. Operands in host memory (numpy, CPU tensors, lists) are handed to
``jitops._host.run_op``, which copies them to the GPU and back.
"""

from . import _core

index_select = _core.index_select
take = _core.take
gather = _core.gather

# name -> (function, positions of array arguments, of index arguments, of out=)
OPS = {
    "index_select": (index_select, (0, 2, 3), (2,), 3),
    "take": (take, (0, 1, 3), (1,), 3),
    "gather": (gather, (0, 2, 3), (2,), 3),
}
