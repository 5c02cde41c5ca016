"""The gather family: index_select, take and gather.

Each function takes PyTorch, CuPy or JAX arrays on a CUDA device (used in
place, with their strides, through DLPack or the tensor's attributes), numpy
arrays and CPU tensors (copied to the GPU and back), and returns the caller's
array type. The per-call work (argument checks, specialization lookup,
launch) happens in C++; host operands take a slower path through ``_host``.
"""

from . import _core, _host

_host.register_arg_names("index_select", ("x", "dim", "index", "out", "stream"))
_host.register_arg_names("take", ("x", "indices", "axis", "out", "stream"))
_host.register_arg_names("gather", ("x", "dim", "index", "out", "stream"))

_RUN = -1  # explain_arch value that means "launch"


def index_select(x, dim, index, out=None, *, stream=None):
    """Select ``index`` entries of ``x`` along ``dim``, like ``torch.index_select``.

    ``index`` is a 0-d or 1-d int32/int64 array; indices must lie in
    ``[0, x.shape[dim])``. The result has ``x``'s shape with ``dim`` resized to
    ``len(index)``. ``out=`` receives the result instead of a new array;
    ``stream=`` takes a raw handle, a ``torch.cuda.Stream`` or an object with
    ``__cuda_stream__`` (default: PyTorch's or CuPy's current stream for their
    arrays, else the default stream).
    """
    try:
        return _core.index_select(x, dim, index, out, stream, _RUN)
    except _core.HostOperands:
        return _host.run(_core.index_select, (x, dim, index, out, stream, _RUN), (0, 2, 3), (2,), 3, 4)


def take(x, indices, axis=None, out=None, *, stream=None):
    """Take elements of ``x`` at ``indices``, like ``numpy.take`` (mode="raise") and ONNX Gather.

    With ``axis=None`` ``x`` is read as if flattened in C order and the result
    has ``indices``' shape; otherwise the result's shape is
    ``x.shape[:axis] + indices.shape + x.shape[axis+1:]``. Negative indices
    count from the end; indices outside ``[-n, n)`` raise IndexError.
    """
    try:
        return _core.take(x, indices, axis, out, stream, _RUN)
    except _core.HostOperands:
        return _host.run(_core.take, (x, indices, axis, out, stream, _RUN), (0, 1, 3), (1,), 3, 4)


def gather(x, dim, index, out=None, *, stream=None):
    """Gather values of ``x`` along ``dim`` at ``index``, like ``torch.gather``.

    Also ``numpy.take_along_axis``, ONNX GatherElements and
    ``paddle.index_sample`` (2-D): ``out[i][j] = x[i][index[i][j]]`` for
    ``dim=1``. ``index`` has ``x``'s number of dimensions and no size larger
    than ``x``'s outside ``dim``; the result has ``index``'s shape.
    """
    try:
        return _core.gather(x, dim, index, out, stream, _RUN)
    except _core.HostOperands:
        return _host.run(_core.gather, (x, dim, index, out, stream, _RUN), (0, 2, 3), (2,), 3, 4)


# name -> (public function, core function, positions of array arguments)
OPS = {
    "index_select": (index_select, _core.index_select, (0, 2, 3)),
    "take": (take, _core.take, (0, 1, 3)),
    "gather": (gather, _core.gather, (0, 2, 3)),
}
