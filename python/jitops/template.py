"""jitops.Template: a kernel template whose arguments each call fills from its arrays.

    src = r'''
    template <typename T, int Dims, typename Index>
    __global__ void scale(jitops::Tensor<T, Dims, Index> out, jitops::Tensor<const T, Dims, Index> x, float a) {
      for (Index i : jitops::grid_stride(out.numel())) out[i] = T(a * float(x[i]));
    }'''
    scale = jitops.Template(src, "scale", grid_stride=True)
    scale(out, x, 2.0)

From the arrays of a call: a ``typename`` that types a tensor (or a pointer)
gets that array's dtype; ``Dims`` is the dimension count left after
collapsing every tensor declared with it together (they share a shape; the
collapse keeps C order, so ``x[i]`` is the i-th element in C order of every
one of them); a tensor declared with a fixed rank (``Tensor<const T, 2,
Index>``) keeps its dims; an ``Index`` type is ``int32_t`` when every offset
of its tensors fits in 31 bits, else ``int64_t``. Other template parameters
take ``template_args={"N": 4}``, a default in the source, or a tunable value.
"""

import re
import weakref

import numpy as np

from . import _config, _core, _host
from .errors import CompileError, user_compile_error
from .explain import KernelReport

_template_launch = _core.template_launch

# C spellings of the element types a kernel may declare, by dtype name.
_C_TYPES = {
    "bool": "bool", "int8_t": "int8", "signed char": "int8", "char": "int8", "uint8_t": "uint8",
    "unsigned char": "uint8", "int16_t": "int16", "short": "int16", "uint16_t": "uint16", "unsigned short": "uint16",
    "int32_t": "int32", "int": "int32", "uint32_t": "uint32", "unsigned int": "uint32", "unsigned": "uint32",
    "int64_t": "int64", "long long": "int64", "long": "int64", "uint64_t": "uint64", "unsigned long long": "uint64",
    "unsigned long": "uint64", "size_t": "uint64", "__half": "float16", "half": "float16",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "float": "float32", "double": "float64",
    "float2": "complex64", "double2": "complex128",
}
_INDEX_TYPES = {"int32_t": 32, "int": 32, "int64_t": 64, "long long": 64}
_INT_KINDS = ("int", "unsigned", "unsigned int", "long", "long long", "size_t", "int32_t", "int64_t", "short", "bool")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")
_DTYPES = [row[0] for row in _core.dtypes()]  # position = the core's DType code


def _dtype_code(name):
    return _DTYPES.index(name)


def _strip_comments(code):
    code = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def _matching(text, start, open_char, close_char):
    """The index just past the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_char:
            depth += 1
        elif text[i] == close_char:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"code: unbalanced {open_char}{close_char} after {text[max(0, start - 30):start + 30]!r}")


def _split_top(text):
    """Splits at commas outside <>, () and []."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _norm(text):
    return " ".join(text.replace("*", " * ").replace("&", " & ").split()).replace(" * ", "*").replace(" *", "*")


def parse_signature(code, name):
    """The template parameters and kernel parameters of ``template <...> __global__ void name(...)``.

    Returns (params, args): params as [(name, "type" | "int", default)], args as
    [(name, kind, is_const, element, dims, index)] with each of element, dims,
    index a (template parameter index, fixed value) pair.
    """
    text = _strip_comments(code)
    found = None
    for m in re.finditer(r"__global__", text):
        head = re.match(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                        + re.escape(name) + r"\s*\(", text[m.start():])
        if head:
            found = (m.start(), m.start() + head.end() - 1)
            break
    if found is None:
        raise ValueError(f"name: no '__global__ void {name}(...)' in the code")
    start, paren = found
    before = text[:start].rstrip()
    base = max(before.rfind(";"), before.rfind("}")) + 1  # the template clause follows the previous declaration
    t = re.search(r"template\s*<", before[base:])
    if t is None:
        raise ValueError(f"code: {name} is not a template (expected 'template <...>' before '__global__'); "
                         "use jitops.RawKernel for a plain kernel")
    open_at = base + t.end() - 1
    close_at = _matching(before, open_at, "<", ">")
    params = []
    for part in _split_top(before[open_at + 1:close_at - 1]):
        default = None
        if "=" in part:
            part, default = (s.strip() for s in part.split("=", 1))
        words = part.split()
        if len(words) < 2 or not _IDENTIFIER.match(words[-1]):
            raise ValueError(f"code: cannot read the template parameter {part!r} of {name}")
        kind = " ".join(words[:-1])
        if kind in ("typename", "class"):
            params.append([words[-1], "type", default])
        elif kind in _INT_KINDS:
            params.append([words[-1], "int", default])
        else:
            raise ValueError(f"code: template parameter {part!r} of {name}: expected 'typename T' or an integer "
                             "parameter such as 'int N'")
    names = [p[0] for p in params]
    close = _matching(text, paren, "(", ")")
    args = []
    roles = {}
    for part in _split_top(text[paren + 1:close - 1]):
        args.append(_parse_arg(part, names, params, roles, name))
    # A number typed by an index type takes the width the arrays give it (element ref value 1).
    for i, a in enumerate(args):
        if a[1] == "scalar" and a[3][0] >= 0:
            p = names[a[3][0]]
            if roles.get(p) == "index":
                args[i] = a[:3] + ((a[3][0], 1),) + a[4:]
            else:
                _set_role(roles, p, "element", a[0])
    for p in params:
        if p[2] is not None:
            p[2] = _default_value(p, roles.get(p[0]), name)
    return [tuple(p) for p in params], args


def _parse_arg(part, names, params, roles, kernel):
    part = _norm(part.replace("__restrict__", "").replace("__restrict", ""))
    m = re.match(r"(.*?)([A-Za-z_]\w*)$", part)
    if not m or not m.group(1).strip():
        raise ValueError(f"code: cannot read the parameter {part!r} of {kernel}")
    ctype, arg = m.group(1).strip(), m.group(2)
    if ctype.endswith(" const"):  # the parameter itself is const (a const pointer): not what it points to
        ctype = ctype[:-6].strip()
    if ctype.startswith("const ") and re.match(r"const (?:::)?(?:jitops\s*::\s*)?Tensor\s*<", ctype):
        ctype = ctype[6:].strip()  # a const Tensor struct by value: its elements stay writable
    tensor = re.match(r"(?:::)?(?:jitops\s*::\s*)?Tensor\s*<(.*)>$", ctype)
    if tensor:
        pieces = _split_top(tensor.group(1))
        if len(pieces) != 3:
            raise ValueError(f"{arg}: expected jitops::Tensor<T, Dims, Index> (got {ctype!r})")
        element, is_const = _element_ref(pieces[0], names, roles, arg, "element")
        dims = _int_ref(pieces[1], names, params, roles, arg)
        index = _index_ref(pieces[2], names, roles, arg)
        return (arg, "tensor", is_const, element, dims, index)
    if ctype.endswith("*") and "*" not in ctype[:-1]:
        element, is_const = _element_ref(ctype[:-1].strip(), names, roles, arg, "element")
        return (arg, "pointer", is_const, element, (-1, 0), (-1, 0))
    if "&" in ctype or "*" in ctype:
        raise ValueError(f"{arg}: a kernel parameter must be a jitops::Tensor, a pointer or a number (got {ctype!r})")
    base = " ".join(ctype.replace("const", " ").split())
    if base in names:  # its role (element type or index type) is settled once every tensor is read
        return (arg, "scalar", True, (names.index(base), 0), (-1, 0), (-1, 0))
    element, _ = _element_ref(ctype, names, roles, arg, "type")
    return (arg, "scalar", True, element, (-1, 0), (-1, 0))


def _element_ref(text, names, roles, arg, what):
    text = _norm(text)
    is_const = text.startswith("const ") or text.endswith(" const")
    base = text.replace("const", " ").strip()
    base = " ".join(base.split())
    if base in names:
        _set_role(roles, base, "element", arg)
        return (names.index(base), 0), is_const
    if base in _C_TYPES:
        return (-1, _dtype_code(_C_TYPES[base])), is_const
    raise ValueError(f"{arg}: its {what} type {base!r} is neither a template parameter nor a type jitops passes "
                     f"({', '.join(sorted(set(_C_TYPES)))})")


def _int_ref(text, names, params, roles, arg):
    text = text.strip()
    if text in names:
        if params[names.index(text)][1] != "int":
            raise ValueError(f"{arg}: the Dims of a jitops::Tensor must be an integer template parameter (got {text})")
        _set_role(roles, text, "dims", arg)
        return (names.index(text), 0)
    if re.fullmatch(r"\d+", text) and 1 <= int(text) <= 16:
        return (-1, int(text))
    raise ValueError(f"{arg}: expected Dims to be an int template parameter or a rank from 1 to 16 (got {text!r})")


def _index_ref(text, names, roles, arg):
    text = _norm(text)
    if text in names:
        _set_role(roles, text, "index", arg)
        return (names.index(text), 0)
    if text in _INDEX_TYPES:
        return (-1, _INDEX_TYPES[text])
    raise ValueError(f"{arg}: expected Index to be a template parameter, int32_t or int64_t (got {text!r})")


def _set_role(roles, name, role, arg):
    if roles.setdefault(name, role) != role:
        raise ValueError(f"{arg}: template parameter {name} is used as both {roles[name]} and {role}")


def _default_value(param, role, kernel):
    name, kind, text = param
    if kind == "int":
        try:
            return int(text, 0)
        except ValueError:
            raise ValueError(f"code: the default of {name} in {kernel} must be an integer literal (got {text!r})") \
                from None
    text = _norm(text)
    if role == "index":
        if text not in _INDEX_TYPES:
            raise ValueError(f"code: the default of {name} must be int32_t or int64_t (got {text!r})")
        return _INDEX_TYPES[text]
    if text not in _C_TYPES:
        raise ValueError(f"code: the default of {name} must be a type jitops passes (got {text!r})")
    return _dtype_code(_C_TYPES[text])


class Template(_core.TemplateCall):
    """A ``__global__`` function template whose arguments the call's arrays fill (see the module's docstring).

    ``template(*args, grid=None, block=None, shared_mem=0, stream=None, template_args=None)``:
    arrays for its ``jitops::Tensor`` and pointer parameters (PyTorch, CuPy,
    JAX, jitops; numpy arrays are copied to the GPU and back), numbers for
    the rest. With no ``grid=``, the launch gives one thread to each element
    of the first array argument, in blocks of 256 (tuning may pick another
    size); with ``grid_stride=True`` (the kernel loops, e.g. with
    ``jitops::grid_stride``) the grid is capped at waves of resident blocks,
    and tuning picks the cap too. ``tunable={"ItemsPerThread": [1, 2, 4, 8]}``
    lets :func:`jitops.tune` pick those template arguments (the first value is
    the default). Compile errors raise :class:`jitops.CompileError` with
    NVRTC's log, the source numbered, and the template arguments tried.
    """

    def __init__(self, code, name, *, options=(), tunable=None, grid_stride=False):
        if not isinstance(code, str) or not code.strip():
            raise TypeError(f"code: expected CUDA C++ source as a non-empty str (got {type(code).__name__})")
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise TypeError(f"name: expected the kernel's name, a C identifier (got {name!r})")
        if isinstance(options, str) or not all(isinstance(o, str) for o in options):
            raise TypeError(f"options: expected a tuple of NVRTC option strings (got {options!r})")
        self.code = code
        self.name = name
        self.options = tuple(options)
        self.grid_stride = bool(grid_stride)
        params, args = parse_signature(code, name)
        self.template_params = tuple(p[0] for p in params)
        self.params = tuple(a[0] for a in args)
        self._param_kinds = {p[0]: p[1] for p in params}
        self._args = args
        self._roles = {params[a[5][0]][0]: "index" for a in args if a[5][0] >= 0}
        for a in args:
            if a[3][0] >= 0:
                self._roles.setdefault(params[a[3][0]][0], "element")
        self.tunable = {}
        tunables = []
        for key, values in (tunable or {}).items():
            if key not in self._param_kinds or self._param_kinds[key] != "int":
                raise ValueError(f"tunable: {key!r} is not an integer template parameter of {name} "
                                 f"(its template parameters: {list(self.template_params)})")
            values = [int(v) for v in values]
            if not values:
                raise ValueError(f"tunable: expected at least one value for {key!r}")
            self.tunable[key] = tuple(values)
            tunables.append((self.template_params.index(key), values))
        self._kernel = _core.TemplateKernel(name, code, list(self.options), [list(p) for p in params],
                                            [tuple(a) for a in args], tunables, self.grid_stride)
        _TEMPLATES_BY_KERNEL[id(self._kernel)] = self

    def __repr__(self):
        return f"Template({self.name!r}: <{', '.join(self.template_params)}>({', '.join(self.params)}))"

    def _forced(self, template_args):
        """template_args by parameter index, with dtype and type names as the core's codes."""
        if not template_args:
            return None
        forced = {}
        for key, value in template_args.items():
            if key not in self._param_kinds:
                raise ValueError(f"template_args: {key!r} is not a template parameter of {self.name} "
                                 f"(its template parameters: {list(self.template_params)})")
            index = self.template_params.index(key)
            if self._param_kinds[key] == "int":
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise TypeError(f"template_args: {key} expects an int (got {value!r})")
                forced[index] = int(value)
            elif self._roles.get(key) == "index":
                bits = _INDEX_TYPES.get(value) if isinstance(value, str) else {32: 32, 64: 64}.get(value)
                if bits is None:
                    raise ValueError(f"template_args: {key} expects 'int32_t' or 'int64_t' (got {value!r})")
                forced[index] = bits
            else:
                forced[index] = _dtype_code(_type_name(value, key))
        return forced

    # A call is _core.TemplateCall's (C); it comes here for template_args=, keywords it does not know, and to
    # word a compile error.
    def _call_python(self, *args, grid=None, block=None, shared_mem=0, stream=None, template_args=None):
        forced = self._forced(template_args) if template_args else None
        try:
            return _template_launch(self._kernel, args, grid, block, shared_mem, stream, forced, -1)
        except CompileError as exc:
            raise self._compile_error(exc, args, forced) from None

    def _compile_error(self, exc, args, forced):
        return user_compile_error(f"Template {self.name!r}", self.code, exc, _tried(exc.source))

    def explain(self, *args, arch=None, grid=None, block=None, shared_mem=0, template_args=None):
        """The kernel a call would launch (see :func:`jitops.explain`), with ``template_args`` (e.g.
        ``{"T": "float", "Dims": 1, "Index": "int32_t"}``); host arrays stand for device arrays, and
        ``arch="sm_90"`` needs no GPU."""
        forced = self._forced(template_args) if template_args else None
        virtual = tuple(_virtual(a, p) for a, p in zip(args, self.params))
        on_device = any(not _host.is_number(v) and _core.array_kind(v) not in ("host", "virtual") for v in virtual)
        explain_arch = _config.parse_arch(arch) if arch is not None else 0 if on_device else (
            _config.default_arch() or 90)
        try:
            reports = _template_launch(self._kernel, virtual, grid, block, shared_mem, None, forced, explain_arch)
        except CompileError as exc:
            raise self._compile_error(exc, args, forced) from None
        return [KernelReport(r) for r in reports]

    # ---- tuning (jitops.tune)

    def _tuning_candidates(self):
        """Configurations jitops.tune times: block sizes, grid caps (only for a kernel that loops) and
        the tunable template arguments."""
        import itertools

        waves = (2, 4, 8, 16, 64) if self.grid_stride else (16,)
        values = list(itertools.product(*self.tunable.values())) if self.tunable else [()]
        out = []
        for threads in (64, 128, 256, 512, 1024):
            for w in waves:
                for v in values:
                    config = f"threads={threads} unroll=1 waves={w} vector=16"
                    if v:
                        config += " template=" + ",".join(str(x) for x in v)
                    out.append(config)
        return out

    def _written(self, args):
        """The arrays the kernel may write: those of non-const tensor and pointer parameters."""
        return [a for a, spec in zip(args, self._args) if spec[1] != "scalar" and not spec[2]]


def _tried(source):
    m = re.search(r"// functions: (.*?);", source or "")
    return m.group(1) if m else ""


def _type_name(value, key):
    if isinstance(value, str):
        name = _C_TYPES.get(_norm(value), value)
    else:
        try:
            name = np.dtype(value).name
        except TypeError:
            name = str(value).replace("torch.", "")
    if name not in _DTYPES:
        raise ValueError(f"template_args: {key} expects a dtype or C type name (got {value!r})")
    return name


def _virtual(value, param):
    if value is None or _host.is_number(value) or not _host._is_host(value):
        return value
    host, dtype = _host._as_numpy(value, param, False)
    return _core.VirtualArray(list(host.shape), dtype)


def _launch_on_host(kernel, args, grid=None, block=None, shared_mem=0, stream=None, template_args=None, _explain=-1):
    """A call with host arrays (numpy, CPU tensors): each goes to the GPU, and back after the kernel when
    the kernel may write it."""
    from .raw_kernel import run_with_host_arrays

    template = _TEMPLATES_BY_KERNEL.get(id(kernel))
    written = set(template._written(range(len(args)))) if template else None
    run_with_host_arrays(args, lambda moved: _template_launch(kernel, moved, grid, block, shared_mem, stream,
                                                              template_args, _explain), written)


_TEMPLATES_BY_KERNEL = weakref.WeakValueDictionary()  # id of a TemplateKernel -> its Template


def _autotune(kernel, args):
    """Called after a call that planned a point with no tuning result while autotuning is on."""
    from .tuning import _autotune_call

    template = _TEMPLATES_BY_KERNEL.get(id(kernel))
    if template is not None:
        _autotune_call(template, template.name, list(args), {})
