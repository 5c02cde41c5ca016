"""jitops.RawKernel and jitops.RawModule: a user's CUDA C++ through jitops' JIT.

    axpy = jitops.RawKernel(r'''
    extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] += a * x[i];
    }''', "axpy")
    axpy((blocks,), (256,), (numpy.float32(2.0), x, y, n))

Called as CuPy's are: ``kernel(grid, block, args, shared_mem=0, stream=None)``.
Arrays (PyTorch, CuPy, JAX, jitops, anything with DLPack) pass as their
device pointers, numbers as CuPy types them (bool, int as int64, float as
float64, complex as complex128, numpy scalars as their dtype). Where the
driver reports the kernel's parameter sizes, an int narrows to a smaller
integer parameter when its value fits, and an argument that does not fit its
parameter is refused (a Python float for a ``float`` parameter, say: pass
``numpy.float32``). numpy arrays are copied to the GPU and back around the
launch. Compiled with NVRTC for the GPU at hand, cached on disk like the
built-in ops, inspectable with :meth:`explain` (source, PTX, SASS, registers).
"""

import numpy as np

from . import _config, _core, _host
from .errors import CompileError, user_compile_error
from .explain import KernelReport

_raw_launch = _core.raw_launch


def _check_code(code, name, options):
    if not isinstance(code, str) or not code.strip():
        raise TypeError(f"code: expected CUDA C++ source as a non-empty str (got {type(code).__name__})")
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name: expected the kernel's name as a non-empty str (got {name!r})")
    if isinstance(options, str) or not all(isinstance(o, str) for o in options):
        raise TypeError(f"options: expected a tuple of NVRTC option strings (got {options!r})")
    return tuple(options)


class _Function:
    """One __global__ function of a compiled program: launch, inspect, attributes."""

    def __init__(self, program, index, name, code):
        self._fn = _core.RawFunction(program, index, name)
        self.name = name
        self._code = code

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        try:
            return _raw_launch(self._fn, grid, block, args, shared_mem, stream)
        except CompileError as exc:
            raise user_compile_error(f"kernel {self.name!r}", self._code, exc) from None

    def explain(self, arch=None):
        """The compiled function (see :func:`jitops.explain`); ``arch="sm_90"`` needs no GPU."""
        arch_value = _config.parse_arch(arch) if arch is not None else (_config.default_arch() or _device_arch())
        try:
            report = KernelReport(self._fn.describe(arch_value))
        except CompileError as exc:
            raise user_compile_error(f"kernel {self.name!r}", self._code, exc) from None
        report.update(kernel=self.name, grid=None, block=None, param_bytes=None, config=None, config_origin="fixed",
                      tuning_point=None, regime="raw")
        return [report]

    def _attributes(self, device=0):
        try:
            return self._fn.load(device)
        except CompileError as exc:
            raise user_compile_error(f"kernel {self.name!r}", self._code, exc) from None

    def compile(self, arch=None):
        """Compiles now (or finds it in the cache), for ``arch`` or the current GPU."""
        self.explain(arch)

    @property
    def attributes(self):
        """registers, shared_bytes (static), local_bytes, max_threads and param_sizes on device 0."""
        return self._attributes()

    @property
    def num_regs(self):
        return self._attributes()["registers"]

    @property
    def max_threads_per_block(self):
        return self._attributes()["max_threads"]

    @property
    def shared_size_bytes(self):
        return self._attributes()["shared_bytes"]

    @property
    def local_size_bytes(self):
        return self._attributes()["local_bytes"]

    def __repr__(self):
        return f"<jitops kernel {self.name}>"


def _device_arch(device=0):
    if not _core.driver_available()[0]:
        raise ValueError("arch: no GPU is present to compile for; pass arch='sm_90' (or set JITOPS_ARCH)")
    return _core.device_info(device)["arch"]


class RawKernel(_Function):
    """A user's ``__global__`` function ``name`` in ``code``, like ``cupy.RawKernel``.

    ``options`` are NVRTC options added after jitops' own (an ``--std=`` of
    yours replaces its ``--std=c++17``); jitops headers (``jitops/tensor.cuh``:
    ``jitops::check_index``) and the CUDA headers are on the include path.
    The name may be an ``extern "C"`` function or a C++ one (it is looked up
    as a name expression, so an overloaded or template name needs
    :class:`RawModule` with ``name_expressions``).
    """

    def __init__(self, code, name, options=()):
        options = _check_code(code, name, options)
        self.code = code
        self.options = options
        program = _core.user_program(name, code, False, list(options), [name])
        super().__init__(program, 0, name, code)


class RawModule:
    """Several kernels of one source, like ``cupy.RawModule``: ``get_function(name)``.

    ``name_expressions`` lists template instances (``"axpy<float, 4>"``) or
    overloaded names to instantiate; ``get_function`` takes one of them, or any
    other function's name. The module is compiled once for all of them.
    """

    def __init__(self, code=None, *, path=None, options=(), name_expressions=None):
        if path is not None:
            raise ValueError("path: jitops compiles CUDA source (code=); load prebuilt cubins with the driver or CuPy")
        names = list(name_expressions or ())
        options = _check_code(code, "module", options)
        if not all(isinstance(n, str) and n.strip() for n in names):
            raise TypeError(f"name_expressions: expected a list of non-empty str (got {name_expressions!r})")
        self.code = code
        self.options = options
        self.name_expressions = tuple(names)
        self._functions = {}

    def get_function(self, name):
        """The function ``name``: one of ``name_expressions``, or the name of a non-template function."""
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"name: expected a function name or name expression (got {name!r})")
        fn = self._functions.get(name)
        if fn is None:
            names = list(self.name_expressions)
            if name not in names:
                names.append(name)  # compiled with the listed ones, once per distinct set
            program = _core.user_program(_label(names[0]), self.code, False, list(self.options), names)
            fn = self._functions[name] = _Function(program, names.index(name), name, self.code)
        return fn

    def explain(self, arch=None):
        """The compiled module, through its first name expression."""
        if not self.name_expressions:
            raise ValueError("name_expressions: explain() of a module needs a function; use get_function(name).explain()")
        return self.get_function(self.name_expressions[0]).explain(arch)


def _label(name_expression):
    """A file-name-safe label for NVRTC's messages: "axpy<float, 4>" -> "axpy"."""
    head = name_expression.split("<", 1)[0].strip().lstrip("&").split("::")[-1]
    return "".join(c if c.isalnum() or c == "_" else "_" for c in head) or "module"


def run_with_host_arrays(args, launch, written=None):
    """Runs ``launch(device_args)`` with each host array of ``args`` (numpy, CPU tensors) copied to the GPU,
    then copies back those the kernel may write (``written``: their positions; None: all)."""
    args = list(args)
    device = next((_host._device_of(a) for a in args if _is_device_array(a)), 0)
    moved = []
    for i, a in enumerate(args):
        if _is_host_array(a):
            host, dtype = _host._as_numpy(a, f"args[{i}]", False)
            copy = _host.to_device(host, dtype, device)
            moved.append((i, a, copy))
            args[i] = copy
    launch(tuple(args))
    _core.synchronize(device)
    for i, original, copy in moved:
        if written is None or i in written:
            _copy_back(original, copy)


def _launch_on_host(function, grid, block, args, shared_mem=0, stream=None):
    """A launch whose args include host arrays: any of them may be written, so all come back."""
    run_with_host_arrays(args, lambda moved: _raw_launch(function, grid, block, moved, shared_mem, stream))


def _is_host_array(a):
    return not _host.is_number(a) and not isinstance(a, (complex, np.generic)) and _host._is_host(a)


def _is_device_array(a):
    if _host.is_number(a) or isinstance(a, (complex, np.generic)):
        return False
    try:
        return not _host._is_host(a)
    except Exception:  # noqa: BLE001 - not an array at all: the launch names it
        return False


def _copy_back(original, device_array):
    result = _host._result_for(original, device_array)
    if isinstance(original, np.ndarray):
        if original.flags.writeable:
            np.copyto(original, result.reshape(original.shape).view(original.dtype) if result.dtype != original.dtype
                      else result.reshape(original.shape))
    elif hasattr(original, "copy_"):
        original.copy_(result)
