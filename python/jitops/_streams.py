"""Stream arguments as raw CUstream handles (for the host path's waits)."""


def stream_handle(stream):
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    if hasattr(stream, "ptr"):
        return int(stream.ptr)
    raise TypeError(
        "stream: expected an int handle, a torch.cuda.Stream, a cupy Stream or an object with "
        f"__cuda_stream__ (got {type(stream).__name__})"
    )
