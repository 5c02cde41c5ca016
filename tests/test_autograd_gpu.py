"""jitops in PyTorch training, on the GPU with jitops' kernels: gradients
against PyTorch autograd (float32, float16, bfloat16, random data) and
gradcheck in float64 for every differentiable op and argument; opcheck of
every custom op; torch.compile(fullgraph=True) in the default mode, with
mode="reduce-overhead" and with a dynamic dim; CUDA-graph capture of forward
and backward; the determinism switch; the fast path's version counter (bumped once by every out= write) and
histc's output without a gradient. Each gradient test runs twice: through the C++ autograd nodes
(jitops._torch_autograd, where it was built) and through the Python path they fall back to."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import jitops  # noqa: E402
from jitops import _core  # noqa: E402
from jitops._torch import install  # noqa: E402
from gpu_data import poison_free_blocks  # noqa: E402

pytestmark = pytest.mark.gpu
install()
DEVICE = "cuda"
J = torch.ops.jitops
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
RTOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


@pytest.fixture(params=["cpp_nodes", "python_path"])
def autograd_path(request):
    """The C++ autograd nodes, or the Python path (gradients.py) that serves every call they decline."""
    use_nodes = request.param == "cpp_nodes"
    previous = _core._set_cpp_autograd(use_nodes)
    if use_nodes and not _core._cpp_autograd_active():
        _core._set_cpp_autograd(previous)
        pytest.skip("jitops._torch_autograd was not built (PyTorch not importable when jitops was built)")
    yield request.param
    _core._set_cpp_autograd(previous)


def rand(*shape, dtype=torch.float32, positive=False, seed=0):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    t = torch.randn(*shape, device=DEVICE, generator=g, dtype=torch.float32)
    return (t.abs() + 0.5 if positive else t).to(dtype).requires_grad_()


def index(values):
    return torch.tensor(values, device=DEVICE)


# Each case: (jitops function, PyTorch function, input factory) over the same leaves.
def _cases(dtype):
    idx, rows = index([0, 2, 2, 4, 1]), index([[0, 1, 0, 2], [2, 2, 1, 0]])
    return {
        "index_select": (lambda x: jitops.index_select(x, 1, idx), lambda x: torch.index_select(x, 1, idx),
                         lambda: (rand(4, 5, dtype=dtype),)),
        "take": (lambda x: jitops.take(x, index([[3, -1], [0, 3]]), axis=1),
                 lambda x: x[:, index([[3, 4], [0, 3]])],  # numpy.take: -1 is the last
                 lambda: (rand(2, 5, 3, dtype=dtype),)),
        "gather": (lambda x: jitops.gather(x, 1, rows), lambda x: torch.gather(x, 1, rows),
                   lambda: (rand(2, 3, dtype=dtype),)),
        "upsample": (lambda x: jitops.upsample_nearest2d(x, scale_factor=1.5),
                     lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest"),
                     lambda: (rand(2, 3, 6, 5, dtype=dtype),)),
        "upsample_channels_last": (
            lambda x: jitops.upsample_nearest2d(x, size=(9, 7)), lambda x: F.interpolate(x, size=(9, 7), mode="nearest"),
            lambda: (rand(2, 8, 6, 5, dtype=dtype).detach().to(memory_format=torch.channels_last).requires_grad_(),)),
        "mul_broadcast": (lambda x, y: jitops.mul(x, y), torch.mul, lambda: (rand(4, 5, dtype=dtype), rand(5, dtype=dtype,
                                                                                                         seed=1))),
        "div": (lambda x, y: jitops.div(x, y), torch.div,
                lambda: (rand(4, 5, dtype=dtype), rand(4, 1, dtype=dtype, positive=True, seed=1))),
        "maximum": (lambda x, y: jitops.maximum(x, y), torch.maximum,
                    lambda: (rand(4, 5, dtype=dtype), rand(4, 5, dtype=dtype, seed=1))),
        "sub_number_first": (lambda x: jitops.sub(2.0, x), lambda x: 2.0 - x, lambda: (rand(4, 5, dtype=dtype),)),
        "mul_number": (lambda x: jitops.mul(x, -2.5), lambda x: x * -2.5, lambda: (rand(4, 5, dtype=dtype),)),
        "div_number_first": (lambda x: jitops.div(3, x), lambda x: 3 / x,
                             lambda: (rand(4, 5, dtype=dtype, positive=True),)),
        "mul_mixed_dtypes": (  # float16 / bfloat16 with float32 (gradcheck's float64 stays float64)
            lambda x, y: jitops.mul(x, y), torch.mul,
            lambda: (rand(3, 4, dtype=dtype), rand(3, 4, dtype=torch.float64 if dtype == torch.float64 else torch.float32,
                                                    seed=1))),
        "mul_channels_last": (
            lambda x, y: jitops.mul(x, y), torch.mul,
            lambda: tuple(rand(2, 3, 4, 5, dtype=dtype, seed=s).detach().to(memory_format=torch.channels_last)
                          .requires_grad_() for s in (0, 1))),
        "index_add_": (lambda s, src: jitops.index_add_(s.clone(), 0, idx, src, alpha=0.5),
                       lambda s, src: s.clone().index_add_(0, idx, src, alpha=0.5),
                       lambda: (rand(5, 3, dtype=dtype), rand(5, 3, dtype=dtype, seed=1))),
        "index_copy_": (lambda s, src: jitops.index_copy_(s.clone(), 0, index([4, 0]), src),
                        lambda s, src: s.clone().index_copy_(0, index([4, 0]), src),
                        lambda: (rand(5, 3, dtype=dtype), rand(2, 3, dtype=dtype, seed=1))),
        "index_fill_": (lambda s: jitops.index_fill_(s.clone(), 1, index([0, 2]), -1.5),
                        lambda s: s.clone().index_fill_(1, index([0, 2]), -1.5), lambda: (rand(5, 3, dtype=dtype),)),
        "scatter_add_": (lambda s, src: jitops.scatter_add_(s.clone(), 1, rows, src),
                         lambda s, src: s.clone().scatter_add_(1, rows, src),
                         lambda: (rand(2, 3, dtype=dtype), rand(2, 4, dtype=dtype, seed=1))),
        **{f"scatter_reduce_{r}_{i}": (
            lambda s, src, r=r, i=i: jitops.scatter_reduce_(s.clone(), 1, rows, src, r, include_self=i),
            lambda s, src, r=r, i=i: s.clone().scatter_reduce_(1, rows, src, r, include_self=i),
            lambda r=r: (rand(2, 3, dtype=dtype, positive=r == "prod"), rand(2, 4, dtype=dtype, positive=r == "prod",
                                                                            seed=1)))
           for r in ("sum", "mean", "prod", "amax", "amin") for i in (True, False)},
    }


CASES = ["index_select", "take", "gather", "upsample", "upsample_channels_last", "mul_broadcast", "div", "maximum",
         "sub_number_first", "mul_number", "div_number_first", "mul_mixed_dtypes", "mul_channels_last", "index_add_", "index_copy_", "index_fill_", "scatter_add_"] + [
    f"scatter_reduce_{r}_{i}" for r in ("sum", "mean", "prod", "amax", "amin") for i in (True, False)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_gradients_match_pytorch(case, dtype, autograd_path):
    ours, theirs, make = _cases(dtype)[case]
    inputs = make()
    twins = tuple(t.detach().clone().requires_grad_() for t in inputs)
    out, expected = ours(*inputs), theirs(*twins)
    assert out.requires_grad and out.dtype == expected.dtype and out.shape == expected.shape
    torch.testing.assert_close(out, expected, rtol=RTOL[dtype], atol=RTOL[dtype])
    upstream = torch.randn(out.shape, device=DEVICE, dtype=torch.float32).to(out.dtype)
    out.backward(upstream)
    expected.backward(upstream)
    for a, b in zip(inputs, twins):
        torch.testing.assert_close(a.grad, b.grad, rtol=4 * RTOL[dtype], atol=4 * RTOL[dtype])
        assert a.grad.stride() == b.grad.stride()  # laid out as PyTorch lays its gradient out


@pytest.mark.parametrize("case", CASES)
def test_gradcheck_float64(case, autograd_path):
    ours, _, make = _cases(torch.float64)[case]
    inputs = make()
    if case.startswith(("scatter_reduce_amax", "scatter_reduce_amin")):  # ties are not differentiable: distinct values
        inputs = tuple((torch.randperm(t.numel(), device=DEVICE, dtype=torch.float64).reshape(t.shape) + 10 * k)
                       .requires_grad_() for k, t in enumerate(inputs))
    assert torch.autograd.gradcheck(ours, inputs)


def test_double_backward(autograd_path):
    x = rand(3, 4, dtype=torch.float64)
    assert torch.autograd.gradgradcheck(lambda x: jitops.index_select(x, 0, index([2, 0, 2])), (x,))
    assert torch.autograd.gradgradcheck(lambda x: jitops.upsample_nearest2d(x, scale_factor=2),
                                        (rand(1, 2, 3, 4, dtype=torch.float64),))
    assert torch.autograd.gradgradcheck(lambda x, y: jitops.mul(x, y), (x, rand(4, dtype=torch.float64, seed=2)))


def _opcheck_args():
    from test_torch_wiring import OPCHECKS

    def to_gpu(a):
        return a.to(DEVICE) if torch.is_tensor(a) else a

    return {name: tuple(to_gpu(a) for a in args) for name, args in OPCHECKS.items()}


@pytest.mark.parametrize("name", ["index_select", "take", "gather", "index_add", "index_add_", "index_copy",
                                  "index_copy_", "index_fill", "index_fill_", "scatter_add", "scatter_add_",
                                  "scatter_reduce", "scatter_reduce_", "histc", "upsample_nearest2d",
                                  "upsample_nearest2d_backward", "mul", "div_scalar"])
def test_opcheck(name):
    args = _opcheck_args()[name]
    args = tuple(a.requires_grad_() if torch.is_tensor(a) and a.is_floating_point() and not name.endswith("_")
                 and name != "histc" else a for a in args)
    torch.library.opcheck(getattr(J, name).default, args)


def gnn_layer(impl, x, src, dst, weight, n):
    """Gather by edge source, scale, scatter_add_ by edge target; jitops or PyTorch ops."""
    if impl == "jitops":
        msgs = jitops.mul(jitops.index_select(x, 0, src), weight)
        out = torch.zeros(n, x.shape[1], device=DEVICE, dtype=x.dtype)
        return jitops.index_add_(out, 0, dst, msgs)
    msgs = torch.index_select(x, 0, src) * weight
    return torch.zeros(n, x.shape[1], device=DEVICE, dtype=x.dtype).index_add_(0, dst, msgs)


def _graph_inputs(n=300, e=2000, f=16, seed=3):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(n, f, device=DEVICE, generator=g, requires_grad=True)
    weight = torch.randn(f, device=DEVICE, generator=g, requires_grad=True)
    src = torch.randint(0, n, (e,), device=DEVICE, generator=g)
    dst = torch.randint(0, n, (e,), device=DEVICE, generator=g)
    return x, src, dst, weight, n


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compile_fullgraph_matches_pytorch(mode):
    def step(impl, x, src, dst, weight, n):
        h = gnn_layer(impl, x, src, dst, weight, n)
        up = (jitops.upsample_nearest2d if impl == "jitops" else
              lambda t, scale_factor: F.interpolate(t, scale_factor=scale_factor, mode="nearest"))(
            h.reshape(1, 1, n, -1), scale_factor=2)
        return (h * h).sum() + up.mean()

    compiled = torch.compile(lambda *a: step("jitops", *a), fullgraph=True, mode=None if mode == "default" else mode)
    for seed in (3, 4):
        x, src, dst, weight, n = _graph_inputs(seed=seed)
        xr, wr = x.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
        loss = compiled(x, src, dst, weight, n)
        loss.backward()
        ref = step("torch", xr, src, dst, wr, n)
        ref.backward()
        torch.testing.assert_close(loss, ref, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(weight.grad, wr.grad, rtol=1e-4, atol=1e-4)


def test_compile_with_a_dynamic_dim():
    compiled = torch.compile(lambda x, idx: jitops.gather(x, 1, idx).sum(1), fullgraph=True)
    for n in (64, 100, 37):
        x = torch.randn(n, 8, device=DEVICE)
        idx = torch.randint(0, 8, (n, 3), device=DEVICE)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(idx, 0)
        torch.testing.assert_close(compiled(x, idx), torch.gather(x, 1, idx).sum(1))


def test_cuda_graph_capture_of_forward_and_backward(autograd_path):
    x, src, dst, weight, n = _graph_inputs()
    static_x = x.detach().clone().requires_grad_()

    def fwd_bwd():
        static_x.grad = None
        loss = gnn_layer("jitops", static_x, src, dst, weight.detach(), n).square().sum()
        loss.backward()
        return loss

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):  # warm-up: compiles and loads the kernels outside the capture
            fwd_bwd()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    static_x.grad = None
    with torch.cuda.graph(graph):
        loss = gnn_layer("jitops", static_x, src, dst, weight.detach(), n).square().sum()
        loss.backward()
    for seed in (5, 6):
        fresh = torch.randn(n, x.shape[1], device=DEVICE, generator=torch.Generator(device=DEVICE).manual_seed(seed))
        with torch.no_grad():
            static_x.copy_(fresh)
            static_x.grad.zero_()
        graph.replay()
        xr = fresh.clone().requires_grad_()
        ref = gnn_layer("torch", xr, src, dst, weight.detach(), n).square().sum()
        ref.backward()
        torch.testing.assert_close(loss, ref, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(static_x.grad, xr.grad, rtol=1e-4, atol=1e-4)


def test_determinism_switch_gives_the_same_bits(autograd_path):
    x, src, dst, weight, n = _graph_inputs(e=200000, seed=7)

    def grads():
        x.grad = weight.grad = None
        gnn_layer("jitops", x, src, dst, weight, n).square().sum().backward()
        return x.grad.clone(), weight.grad.clone()

    torch.use_deterministic_algorithms(True)
    try:
        runs = [grads() for _ in range(4)]
        self_t = torch.zeros(100, 32, device=DEVICE)
        idx = torch.randint(0, 100, (100000,), device=DEVICE)
        vals = torch.randn(100000, 32, device=DEVICE)
        sums = [jitops.index_add_(self_t.clone(), 0, idx, vals) for _ in range(4)]
    finally:
        torch.use_deterministic_algorithms(False)
    for r in runs[1:]:
        assert torch.equal(r[0], runs[0][0]) and torch.equal(r[1], runs[0][1])
    for s in sums[1:]:
        assert torch.equal(s, sums[0])


@pytest.mark.parametrize("index_shape", [(), (0,), (3, 2)], ids=["0-d", "empty", "2-d"])
def test_an_out_write_bumps_the_version_once_whatever_its_shape(index_shape):
    """PyTorch 2.11's _increment_version iterates what it is given: a 0-d out once raised, an empty out
    was never bumped and an n-row out was bumped n times."""
    x = torch.randn(6, device=DEVICE)
    idx = torch.from_numpy(np.random.default_rng(5).integers(-6, 6, index_shape)).to(DEVICE)
    out = torch.full(index_shape, float("nan"), device=DEVICE)
    version = out._version
    assert jitops.take(x, idx, out=out) is out
    assert out._version == version + 1
    assert torch.equal(out.cpu(), torch.from_numpy(np.asarray(np.take(x.cpu().numpy(), idx.cpu().numpy()))))


def test_fast_path_moves_the_version_counter_and_histc_has_no_gradient():
    w = rand(5, 3)
    saved = torch.randn(5, 3, device=DEVICE)
    product = (w * saved).sum()
    version = saved._version
    jitops.index_add_(saved, 0, index([0, 4]), torch.randn(2, 3, device=DEVICE))  # no grad anywhere: fast path
    assert saved._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.backward()
    x = rand(1000)
    counts = jitops.histc(x, bins=10, min=-3, max=3)
    assert not counts.requires_grad and counts.grad_fn is None
    assert torch.equal(counts, torch.histc(x.detach(), bins=10, min=-3, max=3))
    assert torch.histc(x, bins=10, min=-3, max=3).requires_grad is False
    with torch.no_grad():  # grad mode off: the fast path, no graph
        y = jitops.index_select(x, 0, index([1, 2]))
    assert not y.requires_grad


# The ops whose eager autograd calls the C++ nodes take (python/torch_autograd/nodes.cpp), and a call of each.
_NODE_CALLS = {
    "index_select": lambda x: jitops.index_select(x, 0, index([1, 0])),
    "gather": lambda x: jitops.gather(x, 1, index([[0, 0], [1, 0], [2, 2]])),
    "upsample_nearest2d": lambda x: jitops.upsample_nearest2d(x.reshape(1, 1, 3, 4), scale_factor=2),
    "upsample_nearest2d_backward": lambda x: jitops.upsample_nearest2d_backward(x[:, :3].reshape(1, 1, 3, 3),
                                                                                  (1, 1, 2, 2), scale_factor=1.5),
    "mul": lambda x: jitops.mul(x, x),
    "div": lambda x: jitops.div(3, x),
    "add": lambda x: jitops.add(x, 1),
    "sub": lambda x: jitops.sub(x, x[:1]),
    "index_add_": lambda x: jitops.index_add_(torch.zeros(5, 4, device=DEVICE), 0, index([4, 1, 4]), x),
    "scatter_add_": lambda x: jitops.scatter_add_(torch.zeros(2, 4, device=DEVICE), 0, index([[1, 0, 1, 1]]), x),
    "index_copy_": lambda x: jitops.index_copy_(torch.zeros(5, 4, device=DEVICE), 0, index([4, 1, 0]), x),
    "index_fill_": lambda x: jitops.index_fill_(x * 1, 1, index([0, 2]), 1.5),
    "take": lambda x: jitops.take(x, index([[3, -1], [0, 11]])),
    "scatter_reduce_": lambda x: jitops.scatter_reduce_(torch.zeros(2, 4, device=DEVICE), 0, index([[1, 0, 1, 1]]), x,
                                                        "amax"),
}


@pytest.mark.parametrize("name", sorted(_NODE_CALLS))
def test_the_cpp_nodes_take_the_eager_calls_they_list(name, autograd_path):
    """Each listed op's eager call builds a C++ node on the nodes' path and a Python node otherwise, with the
    same output and gradient as PyTorch's own op would give (checked above); a call the nodes decline (out=,
    tensor subclasses) keeps the Python path."""
    if autograd_path == "cpp_nodes":
        import jitops._torch_autograd as nodes

        assert set(_NODE_CALLS) == set(nodes.ops())
    x = rand(3, 4, positive=True)
    y = _NODE_CALLS[name](x)
    node = y.grad_fn.name()
    if autograd_path == "cpp_nodes":
        assert node.startswith("jitops::"), node
    else:
        assert not node.startswith("jitops::"), node
    y.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_index_writes_and_take_run_native_entries_with_pytorchs_gradients():
    """index_copy_ and index_fill_ under the C++ nodes write through _core's native entry (one launch) and
    their backward zeroes the written entries of a copy of the gradient natively (index_copy_'s source: one
    gather more); take gathers natively from a contiguous x (a transposed one: the Python call) and its
    backward adds into zeros natively, negative indices counted from the end. Values and
    gradients against PyTorch's on random data, and again under create_graph (the backward's ops recorded)."""
    previous = _core._set_cpp_autograd(True)
    try:
        if not _core._cpp_autograd_active():
            pytest.skip("jitops._torch_autograd was not built")
        s, src, x = rand(7, 33), rand(7, 3, seed=1), rand(6, 5, 4, seed=2)
        cols = index([30, 2, 17])
        calls = {  # name: (ours, theirs, leaves, forward launches, backward launches)
            "index_copy_": (lambda: jitops.index_copy_(s * 1, 1, cols, src), lambda: (s * 1).index_copy_(1, cols, src),
                            [s, src], 1, 2),
            "index_fill_": (lambda: jitops.index_fill_(s * 1, 1, cols.int(), -2.5),
                            lambda: (s * 1).index_fill_(1, cols, -2.5), [s], 1, 1),
            "take": (lambda: jitops.take(x, index([[5, -1], [119, 0], [-120, 7]])),
                     lambda: torch.take(x, index([[5, 119], [119, 0], [0, 7]])), [x], 1, 1),
            "take axis": (lambda: jitops.take(x, index([3, -1, 3]), axis=-2),
                          lambda: torch.index_select(x, 1, index([3, 4, 3])), [x], 1, 1),
            "take, x transposed": (lambda: jitops.take(x.transpose(0, 2), index([[5, -1]]).int()),
                                   lambda: torch.take(x.transpose(0, 2), index([[5, 119]])), [x], 0, 1),
        }
        for name, (ours, theirs, leaves, forward_launches, backward_launches) in calls.items():
            before = _core._native_launches()
            out = ours()
            assert _core._native_launches() - before == forward_launches, name
            assert out.grad_fn.name().startswith("jitops::"), name
            expected = theirs()
            torch.testing.assert_close(out, expected)
            upstream = torch.randn(out.shape, device=DEVICE)
            before = _core._native_launches()
            grads = torch.autograd.grad(out, leaves, upstream)
            assert _core._native_launches() - before == backward_launches, name
            reference = torch.autograd.grad(expected, leaves, upstream)
            for g, e in zip(grads, reference):
                torch.testing.assert_close(g, e)
            for g, e in zip(torch.autograd.grad(ours(), leaves, upstream, create_graph=True), reference):
                torch.testing.assert_close(g, e)
    finally:
        _core._set_cpp_autograd(previous)


def test_in_place_on_a_leaf_that_requires_grad_is_refused_before_it_writes(autograd_path):
    leaf = rand(5, 3)
    before = leaf.detach().clone()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        jitops.index_add_(leaf, 0, index([0, 4]), rand(2, 3, seed=1))
    if autograd_path == "cpp_nodes":  # PyTorch's own ops refuse before writing, and so do the nodes
        assert torch.equal(leaf.detach(), before)


def test_saved_tensors_follow_pytorchs_rules(autograd_path):
    """A second backward through a freed graph and a saved input written in place both raise PyTorch's errors;
    retain_graph keeps the graph."""
    x = rand(6, 4)
    y = jitops.index_select(x, 0, index([5, 0, 5]))
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    once = torch.zeros(6, 4, device=DEVICE).index_add_(0, index([5, 0, 5]), torch.ones(3, 4, device=DEVICE))
    assert torch.equal(x.grad, 2 * once)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    a, b = rand(3, 4), rand(3, 4, seed=1)
    a2 = a * 1
    z = jitops.mul(a2, b)
    a2.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_only_the_gradients_asked_for_are_computed(autograd_path):
    """autograd.grad with a subset of the inputs: the others are left alone, and the values are PyTorch's."""
    x, y = rand(3, 4), rand(4, seed=1)
    (gx,) = torch.autograd.grad(jitops.mul(x, y).sum(), x)
    torch.testing.assert_close(gx, y.detach().expand(3, 4))
    assert x.grad is None and y.grad is None
    s, src = rand(5, 3), rand(2, 3, seed=2)
    (gsrc,) = torch.autograd.grad(jitops.index_add_(s * 1, 0, index([4, 1]), src, alpha=2).sum(), src)
    torch.testing.assert_close(gsrc, torch.full((2, 3), 2.0, device=DEVICE))
    rows = index([[0, 4, 4], [2, 2, 0]])
    for reduce in ("sum", "mean", "amax"):  # each side alone, include_self=False: PyTorch's values
        ours = jitops.scatter_reduce_(s * 1, 0, rows, src, reduce, include_self=False)
        theirs = (s * 1).scatter_reduce_(0, rows, src, reduce, include_self=False)
        for leaf in (s, src):
            upstream = torch.randn(5, 3, device=DEVICE)
            (g,) = torch.autograd.grad(ours, leaf, upstream, retain_graph=True)
            (e,) = torch.autograd.grad(theirs, leaf, upstream, retain_graph=True)
            torch.testing.assert_close(g, e, msg=f"{reduce} {tuple(leaf.shape)}")


def test_backward_products_take_the_native_entry_and_pending_errors_still_raise():
    """With no graph recorded, the C++ nodes' products (mul's, div's, a number's) run through _core's native
    entry, no Python object made; with create_graph they go through the Python ops (recorded again); an index
    error a kernel recorded before the backward is raised by it, as on the Python path."""
    previous, checks = _core._set_cpp_autograd(True), _core.index_checks()
    try:
        if not _core._cpp_autograd_active():
            pytest.skip("jitops._torch_autograd was not built")
        x, y = rand(2, 3, 4, 5).detach().to(memory_format=torch.channels_last).requires_grad_(), rand(3, 1, 1, seed=1)
        upstream = torch.randn(2, 3, 4, 5, device=DEVICE).to(memory_format=torch.channels_last)
        before = _core._native_launches()
        gx, gy = torch.autograd.grad(jitops.mul(x, y), [x, y], upstream)
        assert _core._native_launches() - before == 1  # both products in one launch
        tx, ty = torch.autograd.grad(torch.mul(x, y), [x, y], upstream)
        torch.testing.assert_close(gx, tx)
        torch.testing.assert_close(gy, ty)
        assert gx.stride() == tx.stride()  # channels-last, as PyTorch's product is
        before = _core._native_launches()
        (gx,) = torch.autograd.grad(jitops.mul(x, y).sum(), x, create_graph=True)
        assert _core._native_launches() == before and gx.requires_grad  # g * y, recorded: y requires grad
        torch.testing.assert_close(gx, y.detach().expand_as(x))
        loss = jitops.mul(x, 3.0).sum()
        jitops.set_index_checks("async")
        jitops.gather(torch.randn(4, 4, device=DEVICE), 1, index([[0, 9]] * 4))  # recorded, not yet raised
        torch.cuda.synchronize()
        with pytest.raises(IndexError, match="gather"):
            loss.backward()
        assert torch.isfinite(jitops.mul(x, y)).all()  # the context works on
    finally:
        _core._set_cpp_autograd(previous)
        jitops.set_index_checks(checks)


@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_mul_and_div_gradients_come_from_one_launch(op, dtype):
    """mul's and div's backward with both gradients needed and one dtype throughout makes both gradients in
    one launch (reading the upstream gradient once), into poisoned outputs, with PyTorch's values and layouts:
    same shapes, a broadcast operand (its gradient summed), channels-last, odd sizes, and the expanded
    gradient of .sum(). Mixed dtypes make them apart (mul: two products; div: a quotient, then its own
    formula's four launches); one gradient needed makes one."""
    previous = _core._set_cpp_autograd(True)
    try:
        if not _core._cpp_autograd_active():
            pytest.skip("jitops._torch_autograd was not built")
        ours, theirs = getattr(jitops, op), getattr(torch, op)

        def divisor(*shape, seed, dtype=dtype):  # in [1, 4] or so: quotients of moderate size
            return (rand(*shape, dtype=dtype, seed=seed).detach().abs() + 1).requires_grad_()

        second = divisor if op == "div" else lambda *shape, seed, dtype=dtype: rand(*shape, dtype=dtype, seed=seed)
        cl = lambda t: t.detach().to(memory_format=torch.channels_last).requires_grad_()  # noqa: E731
        cases = {
            "same shape": (rand(5, 7, 333, dtype=dtype), second(5, 7, 333, seed=1)),
            "y broadcast": (rand(6, 1001, dtype=dtype), second(1001, seed=1)),
            "both broadcast": (rand(9, 1, dtype=dtype), second(1, 77, seed=1)),
            "channels-last": (cl(rand(2, 3, 17, 5, dtype=dtype)), second(3, 1, 1, seed=1)),
        }
        for name, (x, y) in cases.items():
            z = ours(x, y)
            upstream = torch.randn(z.shape, device=DEVICE, dtype=dtype).to(memory_format=torch.channels_last
                                                                             if name == "channels-last" else
                                                                             torch.contiguous_format)
            poison_free_blocks(torch, DEVICE, 2, z.numel() * z.element_size())
            before = _core._native_launches()
            gx, gy = torch.autograd.grad(z, [x, y], upstream)
            assert _core._native_launches() - before == 1, name
            tx, ty = torch.autograd.grad(theirs(x, y), [x, y], upstream)
            torch.testing.assert_close(gx, tx, rtol=RTOL[dtype], atol=RTOL[dtype], msg=name)
            torch.testing.assert_close(gy, ty, rtol=RTOL[dtype], atol=RTOL[dtype] * 10, msg=name)
            assert gx.stride() == tx.stride() and gy.stride() == ty.stride(), name
        x, y = rand(4, 300, dtype=dtype), second(4, 300, seed=2)
        before = _core._native_launches()
        ours(x, y).sum().backward()  # .sum()'s gradient, expanded (strides 0)
        assert _core._native_launches() - before == 2, "the forward and one backward launch"
        tx, ty = torch.autograd.grad(theirs(x, y).sum(), [x, y])
        torch.testing.assert_close(x.grad, tx, rtol=RTOL[dtype], atol=RTOL[dtype])
        torch.testing.assert_close(y.grad, ty, rtol=RTOL[dtype], atol=RTOL[dtype])
        ones = torch.ones(4, 300, device=DEVICE, dtype=dtype)
        before = _core._native_launches()
        (gx,) = torch.autograd.grad(ours(x, y.detach()), [x], ones)
        assert _core._native_launches() - before == 2, "the forward and one gradient"
        torch.testing.assert_close(gx, torch.autograd.grad(theirs(x, y.detach()), [x], ones)[0])
        other = torch.float32 if dtype != torch.float32 else torch.float64
        w = second(4, 300, seed=3, dtype=other)
        before = _core._native_launches()
        gx, gw = torch.autograd.grad(ours(x, w).sum(), [x, w])
        assert _core._native_launches() - before == (3 if op == "mul" else 6), "mixed dtypes: made apart"
        tx, tw = torch.autograd.grad(theirs(x, w).sum(), [x, w])
        torch.testing.assert_close(gx, tx)
        torch.testing.assert_close(gw, tw)
    finally:
        _core._set_cpp_autograd(previous)


def test_a_products_forward_with_a_gradient_takes_the_native_entry():
    """mul, div, add and sub of contiguous tensors, or of a tensor and a number, that need a gradient make
    their forward through _core's native entry (one launch, no second Python call), with PyTorch's values,
    dtype, strides and gradients (number - x and number / x take the plain call); operands of other layouts
    take the plain call, whose result follows its inputs' stride order as PyTorch's does."""
    previous = _core._set_cpp_autograd(True)
    try:
        if not _core._cpp_autograd_active():
            pytest.skip("jitops._torch_autograd was not built")
        x, y, h = rand(6, 5), rand(1, 5, positive=True, seed=1), rand(6, 5, dtype=torch.float16, seed=2)
        calls = {
            "mul": (lambda: jitops.mul(x, y), lambda: torch.mul(x, y), [x, y]),
            "div": (lambda: jitops.div(x, y), lambda: torch.div(x, y), [x, y]),
            "mixed dtypes": (lambda: jitops.mul(h, x), lambda: torch.mul(h, x), [h, x]),
            "number * x": (lambda: jitops.mul(2.5, h), lambda: torch.mul(h, 2.5), [h]),
            "x / number": (lambda: jitops.div(x, 3), lambda: torch.div(x, 3), [x]),
            "add": (lambda: jitops.add(x, y), lambda: torch.add(x, y), [x, y]),
            "sub, mixed dtypes": (lambda: jitops.sub(h, x), lambda: torch.sub(h, x), [h, x]),
            "number + x": (lambda: jitops.add(0.75, h), lambda: torch.add(h, 0.75), [h]),
            "x - number": (lambda: jitops.sub(x, 2), lambda: torch.sub(x, 2), [x]),
            "number - x": (lambda: jitops.sub(1.5, h), lambda: 1.5 - h, [h]),
            "number / x": (lambda: jitops.div(2, y), lambda: 2 / y, [y]),
        }
        for name, (ours, theirs, leaves) in calls.items():
            before = _core._native_launches()
            z = ours()
            plain_call = name in ("number - x", "number / x")  # no native entry: the Python call
            assert _core._native_launches() - before == (0 if plain_call else 1), name
            expected = theirs()
            assert z.dtype == expected.dtype and z.stride() == expected.stride(), name
            assert z.grad_fn is not None and z.grad_fn.name().startswith("jitops::"), name
            torch.testing.assert_close(z, expected)
            upstream = torch.randn(z.shape, device=DEVICE, dtype=z.dtype)
            for g, e in zip(torch.autograd.grad(z, leaves, upstream), torch.autograd.grad(expected, leaves, upstream)):
                torch.testing.assert_close(g, e)
        t = rand(5, 6, seed=3).t()  # (6, 5), transposed: the plain call, the result transposed as PyTorch's
        before = _core._native_launches()
        z = jitops.mul(t, y)
        assert _core._native_launches() == before
        assert z.stride() == torch.mul(t, y).stride() == (1, 6)
        torch.testing.assert_close(z, torch.mul(t, y))
        with torch.no_grad():  # no gradient needed: the plain call
            before = _core._native_launches()
            jitops.mul(x, y)
            assert _core._native_launches() == before
    finally:
        _core._set_cpp_autograd(previous)


def _native_backward_cases():
    """name -> (loss of jitops' op, the same with PyTorch's, the leaves), each backward one native call."""
    idx32, rows = index([4, 1, 1]).int(), index([[0, 4, 4], [2, 2, 0], [1, 3, 3], [0, 0, 0]])
    x, src = rand(5, 3), rand(3, 3, seed=1)
    img = rand(2, 3, 4, 5, seed=2)
    img_cl = img.detach().to(memory_format=torch.channels_last).requires_grad_()
    grad_out = rand(2, 3, 8, 15, seed=3)
    F = torch.nn.functional
    return {
        "index_select": (lambda: jitops.index_select(x, 0, idx32), lambda: torch.index_select(x, 0, idx32.long()),
                         [x]),
        "gather": (lambda: jitops.gather(x.t(), 1, rows[:3]), lambda: torch.gather(x.t(), 1, rows[:3]), [x]),
        "index_add_ source": (lambda: jitops.index_add_(torch.zeros(5, 3, device=DEVICE), 0, idx32, src),
                              lambda: torch.zeros(5, 3, device=DEVICE).index_add_(0, idx32, src), [src]),
        "scatter_add_ src": (lambda: jitops.scatter_add_(torch.zeros(5, 3, device=DEVICE), 0, rows[:3], src),
                             lambda: torch.zeros(5, 3, device=DEVICE).scatter_add_(0, rows[:3], src), [src]),
        "upsample scale": (lambda: jitops.upsample_nearest2d(img, scale_factor=(2, 3)),
                           lambda: F.interpolate(img, scale_factor=(2, 3), mode="nearest"), [img]),
        "upsample size, channels_last": (lambda: jitops.upsample_nearest2d(img_cl, size=(7, 11)),
                                         lambda: F.interpolate(img_cl, size=(7, 11), mode="nearest"), [img_cl]),
        "upsample backward": (lambda: jitops.upsample_nearest2d_backward(grad_out, (2, 3, 4, 5), scale_factor=(2, 3)),
                              lambda: torch.ops.aten.upsample_nearest2d_backward(grad_out, [8, 15], [2, 3, 4, 5],
                                                                                 2.0, 3.0), [grad_out]),
    }


_NATIVE_BACKWARDS = ["gather", "index_add_ source", "index_select", "scatter_add_ src", "upsample backward",
                     "upsample scale", "upsample size, channels_last"]


@pytest.mark.parametrize("name", _NATIVE_BACKWARDS)
def test_index_and_upsample_backwards_take_the_native_entry(name):
    """The C++ nodes' gathers, adds at an index and upsampling run through _core's native entry (no Python
    object, no GIL) when no graph is recorded, giving PyTorch's gradients and layouts; the determinism switch
    and create_graph send them through the Python ops."""
    previous = _core._set_cpp_autograd(True)
    try:
        if not _core._cpp_autograd_active():
            pytest.skip("jitops._torch_autograd was not built")
        cases = _native_backward_cases()
        assert sorted(cases) == _NATIVE_BACKWARDS
        ours, theirs, leaves = cases[name]
        y = ours()
        upstream = torch.randn(y.shape, device=DEVICE).to(memory_format=torch.channels_last if y.dim() == 4 and
                                                          y.stride(1) == 1 else torch.contiguous_format)
        before = _core._native_launches()
        grads = torch.autograd.grad(y, leaves, upstream)
        assert _core._native_launches() - before == 1
        expected = torch.autograd.grad(theirs(), leaves, upstream)
        for g, e in zip(grads, expected):
            torch.testing.assert_close(g, e)
            assert g.stride() == e.stride()
        torch.use_deterministic_algorithms(True)
        try:
            y = ours()  # (a forward may take the native entry too: counted apart, in the next test)
            before = _core._native_launches()
            grads = torch.autograd.grad(y, leaves, upstream)
        finally:
            torch.use_deterministic_algorithms(False)
        accumulates = name in ("index_select", "gather")  # their backward adds at the index
        assert (_core._native_launches() - before == 0) == accumulates
        torch.testing.assert_close(grads[0], expected[0])
        y = ours()
        before = _core._native_launches()
        grads = torch.autograd.grad(y, leaves, upstream, create_graph=True)
        assert _core._native_launches() == before
        torch.testing.assert_close(grads[0], expected[0])
    finally:
        _core._set_cpp_autograd(previous)


def test_index_and_upsample_forwards_with_a_gradient_take_the_native_entry():
    """index_select and gather of contiguous operands, upsample by a scale (contiguous or channels_last x),
    index_add_ (alpha 1) and scatter_add_ that need a gradient make their forward through _core's native
    entry: one launch, no second Python call, PyTorch's values and strides, the in-place op's version
    moved. Other calls take the plain Python call (a transposed x, alpha 2, size=, the determinism switch),
    and bad arguments raise the plain call's errors."""
    previous = _core._set_cpp_autograd(True)
    try:
        if not _core._cpp_autograd_active():
            pytest.skip("jitops._torch_autograd was not built")
        F = torch.nn.functional
        x, src, img = rand(5, 3), rand(3, 3, seed=1), rand(2, 3, 4, 5, seed=2)
        img_cl = img.detach().to(memory_format=torch.channels_last).requires_grad_()
        idx, rows = index([4, 1, 1]), index([[0, 2, 2], [2, 1, 0], [1, 0, 0]])
        native = {
            "index_select": (lambda: jitops.index_select(x, 0, idx.int()), lambda: torch.index_select(x, 0, idx)),
            "gather": (lambda: jitops.gather(x, 1, rows), lambda: torch.gather(x, 1, rows)),
            "upsample": (lambda: jitops.upsample_nearest2d(img, scale_factor=2),
                         lambda: F.interpolate(img, scale_factor=2, mode="nearest")),
            "upsample channels_last": (lambda: jitops.upsample_nearest2d(img_cl, scale_factor=(2, 3)),
                                       lambda: F.interpolate(img_cl, scale_factor=(2, 3), mode="nearest")),
            "index_add_": (lambda: jitops.index_add_(x * 1, 0, idx, src), lambda: (x * 1).index_add_(0, idx, src)),
            "scatter_add_": (lambda: jitops.scatter_add_(x * 1, 0, rows, src),
                             lambda: (x * 1).scatter_add_(0, rows, src)),
        }
        plain = {
            "index_select of a transposed x": (lambda: jitops.index_select(x.t(), 0, index([2, 0])),
                                               lambda: torch.index_select(x.t(), 0, index([2, 0]))),
            "upsample to a size": (lambda: jitops.upsample_nearest2d(img, size=(7, 9)),
                                   lambda: F.interpolate(img, size=(7, 9), mode="nearest")),
            "index_add_ alpha 2": (lambda: jitops.index_add_(x * 1, 0, idx, src, alpha=2),
                                   lambda: (x * 1).index_add_(0, idx, src, alpha=2)),
        }
        for cases, launches in ((native, 1), (plain, 0)):
            for name, (ours, theirs) in cases.items():
                before = _core._native_launches()
                y = ours()
                assert _core._native_launches() - before == launches, name
                expected = theirs()
                assert y.grad_fn is not None and y.grad_fn.name().startswith("jitops::"), name
                assert y.stride() == expected.stride(), name
                torch.testing.assert_close(y, expected)
                upstream = torch.randn_like(expected)
                leaves = [x, src] if "add_" in name else [img_cl] if "channels_last" in name else \
                    [img] if "upsample" in name else [x]
                for g, e in zip(torch.autograd.grad(y, leaves, upstream), torch.autograd.grad(expected, leaves, upstream)):
                    torch.testing.assert_close(g, e)
        s = x * 1
        version = s._version
        jitops.index_add_(s, 0, idx, src)
        assert s._version > version  # autograd sees the write (x's gradient checked above)
        torch.use_deterministic_algorithms(True)
        try:
            before = _core._native_launches()
            y = jitops.index_add_(x * 1, 0, idx, src)
            assert _core._native_launches() == before  # the deterministic path, through Python
            torch.testing.assert_close(y, (x * 1).index_add_(0, idx, src))
        finally:
            torch.use_deterministic_algorithms(False)
        with torch.no_grad():
            expected_errors = []
            for call in (lambda: jitops.gather(x, 1, idx), lambda: jitops.index_select(x, 2, idx)):
                with pytest.raises((ValueError, IndexError)) as info:
                    call()
                expected_errors.append((info.type, str(info.value)))
        for call, (kind, message) in zip((lambda: jitops.gather(x, 1, idx), lambda: jitops.index_select(x, 2, idx)),
                                         expected_errors):
            with pytest.raises(kind) as info:
                call()
            assert str(info.value) == message
    finally:
        _core._set_cpp_autograd(previous)


_DUAL_CALLS = {
    "mul": lambda d: jitops.mul(d, torch.ones(3, 4, device=DEVICE)),
    "add number": lambda d: jitops.add(d, 2.0),
    "index_select": lambda d: jitops.index_select(d, 0, index([2, 0])),
    "gather": lambda d: jitops.gather(d, 1, index([[0], [3], [1]])),
    "take": lambda d: jitops.take(d, index([5, 0])),
    "upsample_nearest2d": lambda d: jitops.upsample_nearest2d(d.reshape(1, 1, 3, 4), scale_factor=2),
    "index_add_ (dual source)": lambda d: jitops.index_add_(torch.zeros(5, 4, device=DEVICE), 0, index([4, 0, 4]), d),
}


@pytest.mark.parametrize("name", sorted(_DUAL_CALLS))
def test_forward_mode_tangents_are_refused_never_dropped(name, autograd_path):
    """jitops has no forward-mode formulas: a dual tensor's call raises (PyTorch's own custom ops would pass
    its tangent over without a word)."""
    import torch.autograd.forward_ad as fwAD

    x, t = torch.randn(3, 4, device=DEVICE), torch.randn(3, 4, device=DEVICE)
    with fwAD.dual_level():
        with pytest.raises(NotImplementedError, match="forward-mode AD"):
            _DUAL_CALLS[name](fwAD.make_dual(x, t))
    assert torch.isfinite(jitops.mul(x, t)).all()  # and jitops works on after it


def test_histc_of_a_dual_tensor_has_no_tangent_as_in_pytorch():
    import torch.autograd.forward_ad as fwAD

    x, t = torch.randn(3, 4, device=DEVICE), torch.randn(3, 4, device=DEVICE)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        ours, theirs = jitops.histc(d, 4, -1, 1), torch.histc(d, 4, -1, 1)
        assert fwAD.unpack_dual(theirs).tangent is None and fwAD.unpack_dual(ours).tangent is None
        assert torch.equal(ours, theirs)
