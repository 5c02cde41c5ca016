"""Exceptions jitops raises besides TypeError / ValueError / IndexError.

All of them keep their context as attributes and pickle (so they cross
process pools), as CuPy's CompileException and cuda.core's NVRTCError do.
"""


class JitopsError(RuntimeError):
    """Base class of jitops' own exceptions."""


class CompileError(JitopsError):
    """NVRTC rejected a specialized kernel.

    Attributes: ``log`` (NVRTC's log), ``options``, ``kernel_name`` and
    ``source`` (the specialized source; ``numbered_source()`` numbers it).
    """

    def __init__(self, message, log="", options=(), kernel_name="", source=""):
        super().__init__(message)
        self.log = log
        self.options = list(options)
        self.kernel_name = kernel_name
        self.source = source

    def __reduce__(self):
        return (type(self), (str(self), self.log, self.options, self.kernel_name, self.source))

    def numbered_source(self):
        return "\n".join(f"{i:4d} | {line}" for i, line in enumerate(self.source.splitlines(), 1))


def user_compile_error(what, code, exc, tried=""):
    """A CompileError for a user's own source: NVRTC's log (its line numbers count in ``code``), ``code``
    numbered, and the template arguments tried; the specialized source stays in ``source``."""
    numbered = "\n".join(f"{i:4d} | {line}" for i, line in enumerate(code.splitlines(), 1))
    head = f"{what} does not compile" + (f" for {tried}" if tried else "")
    return CompileError(f"{head}:\n{exc.log}\n\nyour source:\n{numbered}", exc.log, exc.options, exc.kernel_name,
                        exc.source)


class CudaError(JitopsError):
    """A CUDA driver call failed: ``call`` names it, ``code`` and ``name`` the CUDA error."""

    def __init__(self, message, call="", code=0, name=""):
        super().__init__(message)
        self.call = call
        self.code = code
        self.name = name

    def __reduce__(self):
        return (type(self), (str(self), self.call, self.code, self.name))


class CudaUnavailableError(JitopsError):
    """The CUDA driver or NVRTC could not be loaded; the message lists where jitops looked."""
