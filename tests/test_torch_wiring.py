"""The PyTorch wiring (jitops._torch) on the CPU: routing of the plain names,
autograd formulas (gradcheck in float64), in-place semantics, the custom ops'
fake implementations (opcheck) and torch.compile(fullgraph=True), with
PyTorch's own ops standing in for jitops' kernels (library.KERNELS) so that no
GPU is needed. The same paths run jitops' kernels in test_autograd_gpu.py.
Skipped where PyTorch is not installed (CI)."""

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import jitops  # noqa: E402
from jitops import _core  # noqa: E402
from jitops._torch import install, library  # noqa: E402

install()
J = torch.ops.jitops


def _take(x, indices, axis):
    if axis is None:
        return torch.take(x, indices)
    a = axis % x.dim()
    flat = indices.reshape(-1)
    flat = torch.where(flat < 0, flat + x.shape[a], flat)
    return torch.index_select(x, a, flat).reshape(x.shape[:a] + indices.shape + x.shape[a + 1:])


def _up_backward(g, input_size, scale_factor=None):
    s = [None, None] if scale_factor is None else scale_factor
    return torch.ops.aten.upsample_nearest2d_backward(g, list(g.shape[2:]), list(input_size), s[0], s[1])


def _binary(fn):
    def run(x, y):
        if not torch.is_tensor(x):
            x = torch.tensor(x)
        if not torch.is_tensor(y):
            y = torch.tensor(y)
        return fn(x, y)
    return run


REFERENCE = {
    "index_select": lambda x, dim, index: torch.index_select(x, dim, index),
    "take": _take,
    "gather": lambda x, dim, index: torch.gather(x, dim, index),
    "index_add_": lambda s, d, i, src, alpha, deterministic=False: s.index_add_(d, i, src, alpha=alpha),
    "index_copy_": lambda s, d, i, src: s.index_copy_(d, i, src),
    "index_fill_": lambda s, d, i, v: s.index_fill_(d, i, v),
    "scatter_add_": lambda s, d, i, src, deterministic=False: s.scatter_add_(d, i, src),
    "scatter_reduce_": lambda s, d, i, src, reduce, include_self, deterministic=False: s.scatter_reduce_(
        d, i, src, reduce, include_self=include_self),
    "histc": lambda x, bins, lo, hi, counts_dtype=None: torch.histc(x, bins, lo, hi),
    "upsample_nearest2d": lambda x, size=None, scale_factor=None: F.interpolate(x, size=size,
                                                                               scale_factor=scale_factor,
                                                                               mode="nearest"),
    "upsample_nearest2d_backward": _up_backward,
    "add": _binary(torch.add), "sub": _binary(torch.sub), "mul": _binary(torch.mul), "div": _binary(torch.div),
    "maximum": _binary(torch.maximum), "minimum": _binary(torch.minimum),
}


@pytest.fixture(autouse=True)
def reference_kernels():
    library.KERNELS.update(REFERENCE)
    # The C++ nodes (jitops._torch_autograd, where built) call jitops' kernels themselves, not the stand-ins.
    cpp_nodes = _core._set_cpp_autograd(False)
    yield
    library.KERNELS.clear()
    _core._set_cpp_autograd(cpp_nodes)


def leaf(*shape, dtype=torch.float64, positive=False):
    t = torch.randn(*shape, dtype=dtype)
    return (t.abs() + 0.5 if positive else t).requires_grad_()


IDX = torch.tensor([0, 2, 2, 4])


def test_plain_names_route_to_the_custom_ops_and_carry_gradients():
    x = leaf(5, 3)
    y = jitops.index_select(x, 0, IDX)
    assert y.requires_grad and y.grad_fn is not None and "jitops" in type(y.grad_fn).__name__.lower() or y.grad_fn
    y.sum().backward()
    assert torch.equal(x.grad[:, 0], torch.tensor([1.0, 0, 2, 0, 1], dtype=torch.float64))


@pytest.mark.parametrize("case", ["index_select", "take_flat", "take_axis", "gather", "upsample_size",
                                  "upsample_scale", "upsample_backward", "add", "sub", "mul", "div", "maximum",
                                  "minimum", "mul_number", "div_number_first", "sub_number_first",
                                  "maximum_number"])
def test_gradcheck_functional(case):
    torch.manual_seed(0)
    cases = {
        "index_select": (lambda x: jitops.index_select(x, 1, torch.tensor([2, 0, 2])), (leaf(3, 4),)),
        "take_flat": (lambda x: jitops.take(x, torch.tensor([[0, -1], [5, 5]])), (leaf(2, 3),)),
        "take_axis": (lambda x: jitops.take(x, torch.tensor([1, -1, 1]), axis=1), (leaf(2, 3, 2),)),
        "gather": (lambda x: jitops.gather(x, 1, torch.tensor([[0, 0, 2], [1, 2, 1]])), (leaf(2, 3),)),
        "upsample_size": (lambda x: jitops.upsample_nearest2d(x, size=(5, 7)), (leaf(1, 2, 3, 4),)),
        "upsample_scale": (lambda x: jitops.upsample_nearest2d(x, scale_factor=1.5), (leaf(1, 2, 3, 4),)),
        "upsample_backward": (lambda g: jitops.upsample_nearest2d_backward(g, (1, 2, 3, 4), scale_factor=2),
                              (leaf(1, 2, 6, 8),)),
        "add": (lambda x, y: jitops.add(x, y), (leaf(3, 4), leaf(4))),
        "sub": (lambda x, y: jitops.sub(x, y), (leaf(3, 1), leaf(4))),
        "mul": (lambda x, y: jitops.mul(x, y), (leaf(3, 4), leaf(3, 1))),
        "div": (lambda x, y: jitops.div(x, y), (leaf(3, 4), leaf(4, positive=True))),
        "maximum": (lambda x, y: jitops.maximum(x, y), (leaf(3, 4), leaf(4))),
        "minimum": (lambda x, y: jitops.minimum(x, y), (leaf(3, 4), leaf(3, 4))),
        "mul_number": (lambda x: jitops.mul(x, 2.5), (leaf(3, 4),)),
        "div_number_first": (lambda x: jitops.div(3.0, x), (leaf(3, 4, positive=True),)),
        "sub_number_first": (lambda x: jitops.sub(2, x), (leaf(3, 4),)),
        "maximum_number": (lambda x: jitops.maximum(x, 0.25), (leaf(3, 4),)),
    }
    fn, inputs = cases[case]
    assert torch.autograd.gradcheck(fn, inputs)
    assert torch.autograd.gradgradcheck(fn, inputs)


def in_place(op, *args, **kwargs):
    """op applied to a clone of args[0] (a leaf): the gradient flows to the leaf and the other inputs."""
    def run(self, *tensors):
        it = iter(tensors)
        filled = [next(it) if a is None else a for a in args]
        return op(self.clone(), *filled, **kwargs)
    return run


REDUCTIONS = [(r, s) for r in ("sum", "mean", "prod", "amax", "amin") for s in (True, False)]


@pytest.mark.parametrize("case,include_self", [(c, True) for c in ("index_add", "index_add_alpha", "index_copy",
                                                                   "index_fill", "scatter_add")] + REDUCTIONS)
def test_gradcheck_in_place(case, include_self):
    torch.manual_seed(1)
    index = torch.tensor([[0, 1, 0], [2, 2, 1]])
    reduce_index = torch.tensor([[0, 1, 0, 2], [2, 2, 1, 0]])
    if case in ("sum", "mean", "prod", "amax", "amin"):
        fn = in_place(jitops.scatter_reduce_, 1, reduce_index, None, case, include_self=include_self)
        src = leaf(2, 4, positive=case == "prod")
        if case in ("amax", "amin"):  # distinct values: the max is differentiable (ties are tested apart)
            src = torch.randperm(8, dtype=torch.float64).reshape(2, 4).requires_grad_()
        assert torch.autograd.gradcheck(fn, (leaf(2, 3, positive=case == "prod"), src))
        return
    fns = {
        "index_add": (in_place(jitops.index_add_, 0, IDX, None), (leaf(5, 3), leaf(4, 3))),
        "index_add_alpha": (in_place(jitops.index_add_, 0, IDX, None, alpha=-1.5), (leaf(5, 3), leaf(4, 3))),
        "index_copy": (in_place(jitops.index_copy_, 0, torch.tensor([4, 0, 1]), None), (leaf(5, 3), leaf(3, 3))),
        "index_fill": (in_place(jitops.index_fill_, 1, torch.tensor([0, 2]), 7.0), (leaf(5, 3),)),
        "scatter_add": (in_place(jitops.scatter_add_, 1, index, None), (leaf(3, 3), leaf(2, 4))),
    }
    fn, inputs = fns[case]
    assert torch.autograd.gradcheck(fn, inputs)


def test_amax_ties_share_the_gradient_as_pytorch():
    self_ = torch.tensor([1.0, 5.0], dtype=torch.float64, requires_grad=True)
    src = torch.tensor([5.0, 5.0, 2.0], dtype=torch.float64, requires_grad=True)
    index = torch.tensor([1, 1, 0])
    ours = jitops.scatter_reduce_(self_.clone(), 0, index, src, "amax")
    ours.backward(torch.tensor([1.0, 3.0], dtype=torch.float64))
    got = self_.grad.clone(), src.grad.clone()
    self_.grad = src.grad = None
    self_.clone().scatter_reduce_(0, index, src, "amax").backward(torch.tensor([1.0, 3.0], dtype=torch.float64))
    assert torch.equal(got[0], self_.grad) and torch.equal(got[1], src.grad)


def test_in_place_rules_of_autograd():
    x = leaf(5, 3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        jitops.index_add_(x, 0, IDX, leaf(4, 3))
    base = leaf(6, 3).clone()
    view = base[1:]
    version = base._version
    src = leaf(4, 3)
    out = jitops.index_add_(view, 0, IDX, src)
    assert out is view and base._version > version
    base.sum().backward()
    assert torch.equal(src.grad, torch.ones(4, 3, dtype=torch.float64))
    # A tensor saved for backward and then changed in place: autograd notices, as with PyTorch's own ops.
    w, saved = leaf(5, 3), leaf(5, 3).clone()
    product = (w * saved).sum()
    jitops.index_add_(saved, 0, IDX, leaf(4, 3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.backward()


def test_out_with_grad_is_refused_as_pytorch_does():
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        jitops.index_select(leaf(5, 3), 0, IDX, out=torch.empty(4, 3, dtype=torch.float64))


def test_elementwise_kernel_without_a_backward_refuses_inputs_that_require_grad():
    k = jitops.ElementwiseKernel("T x", "T y", "y = x * 2", "twice")
    with pytest.raises(RuntimeError, match="twice.*has no backward"):
        k(leaf(100))


def test_determinism_switch_reaches_the_kernels():
    seen = []
    library.KERNELS["index_add_"] = lambda s, d, i, src, alpha, deterministic=False: (
        seen.append(deterministic), s.index_add_(d, i, src, alpha=alpha))
    x = leaf(5, 3).clone()
    jitops.index_add_(x, 0, IDX, leaf(4, 3))
    torch.use_deterministic_algorithms(True)
    try:
        jitops.index_add_(x, 0, IDX, leaf(4, 3))
    finally:
        torch.use_deterministic_algorithms(False)
    assert seen == [False, True]


OPCHECKS = {
    "index_select": (torch.randn(5, 3), 1, torch.tensor([2, 0])),
    "take": (torch.randn(5, 3), torch.tensor([[1, -2]]), None),
    "gather": (torch.randn(5, 3), 1, torch.tensor([[0, 2], [1, 1]])),
    "index_add": (torch.randn(5, 3), 0, IDX, torch.randn(4, 3), 2.0, False),
    "index_add_": (torch.randn(5, 3), 0, IDX, torch.randn(4, 3), 1, False),
    "index_copy": (torch.randn(5, 3), 0, torch.tensor([1, 3]), torch.randn(2, 3)),
    "index_copy_": (torch.randn(5, 3), 0, torch.tensor([1, 3]), torch.randn(2, 3)),
    "index_fill": (torch.randn(5, 3), 1, torch.tensor([0]), 2.5),
    "index_fill_": (torch.randn(5, 3), 1, torch.tensor([0]), 2.5),
    "scatter_add": (torch.randn(3, 3), 1, torch.tensor([[0, 1], [2, 2]]), torch.randn(2, 2), False),
    "scatter_add_": (torch.randn(3, 3), 1, torch.tensor([[0, 1], [2, 2]]), torch.randn(2, 2), False),
    "scatter_reduce": (torch.randn(3, 3), 1, torch.tensor([[0, 1], [2, 2]]), torch.randn(2, 2), "amax", True, False),
    "scatter_reduce_": (torch.randn(3, 3), 1, torch.tensor([[0, 1], [2, 2]]), torch.randn(2, 2), "mean", False,
                        False),
    "histc": (torch.randn(100), 10, -2.0, 2.0, None),
    "upsample_nearest2d": (torch.randn(1, 2, 3, 4), None, [2.0, 1.5]),
    "upsample_nearest2d_backward": (torch.randn(1, 2, 6, 8), [1, 2, 3, 4], [2.0, 2.0]),
    "mul": (torch.randn(3, 4), torch.randn(4)),
    "div_scalar": (torch.randn(3, 4), 2, True),
}


@pytest.mark.parametrize("name", list(OPCHECKS))
def test_opcheck(name):
    args = tuple(a.requires_grad_() if torch.is_tensor(a) and a.is_floating_point() and not name.endswith("_")
                 and name != "histc" else a for a in OPCHECKS[name])
    torch.library.opcheck(getattr(J, name).default, args)


def test_compile_fullgraph_traces_the_plain_names():
    def step(x, idx, w, src):
        y = jitops.index_select(x, 0, idx)
        z = jitops.mul(y, w)
        acc = torch.zeros(5, 3, dtype=x.dtype)
        jitops.index_add_(acc, 0, idx, src)
        up = jitops.upsample_nearest2d(z.reshape(1, 1, 4, 3), scale_factor=2)
        return z.sum() + acc.sum() + up.sum()

    x, w, src = leaf(5, 3), leaf(3), leaf(4, 3)
    eager = step(x, IDX, w, src)
    eager.backward()
    grads = [t.grad.clone() for t in (x, w, src)]
    for t in (x, w, src):
        t.grad = None
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    got = compiled(x, IDX, w, src)
    got.backward()
    assert torch.allclose(got, eager)
    for t, g in zip((x, w, src), grads):
        assert torch.allclose(t.grad, g)


def test_compile_with_a_dynamic_dim():
    def f(x, idx):
        return jitops.gather(x, 1, idx).sum(dim=1)

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for n in (6, 9):
        x = torch.randn(n, 4, dtype=torch.float64)
        idx = torch.randint(0, 4, (n, 2))
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(idx, 0)
        assert torch.allclose(compiled(x, idx), torch.gather(x, 1, idx).sum(dim=1))


def test_the_torch_extension_loads_where_it_was_built():
    """jitops._torch_autograd links PyTorch's C++ libraries: a symbol they do not export fails only at import."""
    import importlib.util

    if importlib.util.find_spec("jitops._torch_autograd") is None:
        pytest.skip("jitops._torch_autograd was not built (PyTorch not importable at build time)")
    import jitops._torch_autograd as extension

    assert "hook" in repr(extension.hook) and "native" in repr(extension.native)
    assert {"index_select", "mul", "index_add_"} <= set(extension.ops())
