"""Bad calls on real GPU arrays, table-driven: each raises the exact exception
type with a message naming the argument, and a correct call of the same op
right after still gives the right answer (nothing was left broken)."""

import numpy as np
import pytest

import jitops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # the cases below are built on the GPU at collection
    pytest.skip("PyTorch sees no CUDA GPU", allow_module_level=True)

DEVICE = "cuda"


class MetalArray:
    """A DLPack producer on a device that is neither CUDA nor the host."""

    def __dlpack_device__(self):
        return (8, 0)  # kDLMetal

    def __dlpack__(self, stream=None):
        raise AssertionError("jitops must refuse the device before asking for the tensor")


def data():
    g = torch.Generator(device=DEVICE).manual_seed(5)
    x = torch.randn(10, 20, device=DEVICE, generator=g)
    return {
        "x": x,
        "idx": torch.tensor([3, 0, 9], device=DEVICE),
        "src": torch.randn(3, 20, device=DEVICE, generator=g),
        "gidx": torch.randint(0, 20, (10, 4), device=DEVICE, generator=g),
        "img": torch.randn(1, 2, 3, 4, device=DEVICE, generator=g),
    }


def _overlapping(d):
    return torch.zeros(1, 20, device=DEVICE).expand(10, 20)


def _read_only(d):
    a = np.zeros((10, 20), np.float32)
    a.flags.writeable = False
    return a


F64 = torch.float64
# (op, args built from the data dict, kwargs (or a function of the data), exception, message)
BAD = [
    # index_select
    ("index_select", lambda d: (d["x"], 2, d["idx"]), {}, IndexError, "dim: expected a dimension in [-2, 1] (got 2)"),
    ("index_select", lambda d: (d["x"], 0, d["idx"].float()), {}, TypeError, "index: expected an int32 or int64 array (got float32)"),
    ("index_select", lambda d: (d["x"], 0, d["idx"].view(3, 1)), {}, ValueError, "index: expected a 0-d or 1-d array"),
    ("index_select", lambda d: (d["x"], 0, d["idx"]), dict(out=torch.empty(3, 21, device=DEVICE)), ValueError, "out: expected shape (3, 20) (got (3, 21))"),
    ("index_select", lambda d: (d["x"], 0, d["idx"]), dict(out=torch.empty(3, 20, device=DEVICE, dtype=F64)), TypeError, "out: expected dtype float32 (got float64)"),
    ("index_select", lambda d: (d["x"], 0, d["idx"]), dict(out=torch.empty(3, 20)), ValueError, "out: expected an array on cuda:0 like x (got a host array)"),
    ("index_select", lambda d: (d["x"], 0, d["idx"], d["x"][:3]), {}, ValueError, "out: must not overlap the input x"),
    ("index_select", lambda d: (MetalArray(), 0, d["idx"]), {}, ValueError, "x: expected a CUDA or host array (got DLPack device type 8)"),
    ("index_select", lambda d: ("abc", 0, d["idx"]), {}, TypeError, "x: expected a numeric or bool array"),
    ("index_select", lambda d: (d["x"], 0, None), {}, TypeError, "index: expected an array (got None)"),
    ("index_select", lambda d: (d["x"], "0", d["idx"]), {}, TypeError, "dim: expected an int (got str)"),
    ("index_select", lambda d: (d["x"], 0, d["idx"]), dict(stream="s"), TypeError, "stream: expected"),
    # take
    ("take", lambda d: (d["x"], d["idx"]), dict(axis=2), IndexError, "axis: expected a dimension in [-2, 1] (got 2)"),
    ("take", lambda d: (d["x"], d["idx"].short()), {}, TypeError, "indices: expected an int32 or int64 array (got int16)"),
    ("take", lambda d: (d["x"], d["idx"]), dict(axis=1.0), TypeError, "axis: expected an int or None (got float)"),
    ("take", lambda d: (object(), d["idx"]), {}, TypeError, "x: expected"),
    # gather
    ("gather", lambda d: (d["x"], 1, d["gidx"][:, 0]), {}, ValueError, "index: expected as many dimensions as x (2) (got 1"),
    ("gather", lambda d: (d["x"], 1, torch.zeros(11, 3, dtype=torch.int64, device=DEVICE)), {}, ValueError, "index: size 11 of dimension 0 exceeds x's size 10"),
    ("gather", lambda d: (d["x"], 1, d["gidx"].double()), {}, TypeError, "index: expected an int32 or int64 array (got float64)"),
    ("gather", lambda d: (d["x"], 1, d["gidx"]), dict(out=torch.empty(10, 4, device=DEVICE).t()), ValueError, "out: expected shape (10, 4) (got (4, 10))"),
    # index_add_ / index_copy_ / index_fill_
    ("index_add_", lambda d: (d["x"], 0, d["idx"], d["src"].double()), {}, TypeError, "source: expected dtype float32 like self (got float64)"),
    ("index_add_", lambda d: (d["x"], 0, d["idx"], d["src"][:2]), {}, ValueError, "source: expected self's shape (10,20) with dimension 0 of size len(index) = 3"),
    ("index_add_", lambda d: (d["x"], -3, d["idx"], d["src"]), {}, IndexError, "dim: expected a dimension in [-2, 1] (got -3)"),
    ("index_add_", lambda d: (d["x"], 0, d["idx"].view(1, 3), d["src"]), {}, ValueError, "index: expected a 0-d or 1-d array"),
    ("index_add_", lambda d: (_overlapping(d), 0, d["idx"], d["src"]), {}, ValueError, "self: expected an array whose elements do not overlap"),
    ("index_add_", lambda d: (_read_only(d), 0, d["idx"].cpu().numpy(), d["src"].cpu().numpy()), {}, ValueError, "self: expected a writable array (got a read-only numpy array)"),
    ("index_add_", lambda d: (d["x"].to(torch.complex64), 0, d["idx"], d["src"].to(torch.complex64)), {}, TypeError, "self: index_add_ supports int8, uint8"),
    ("index_add_", lambda d: (d["x"], 0, d["idx"], d["src"]), dict(alpha="a"), TypeError, "alpha: expected a number (got str)"),
    ("index_add_", lambda d: (d["x"].int(), 0, d["idx"], d["src"].int()), dict(alpha=0.5), TypeError, "alpha: expected an integer for an integer self"),
    ("index_add_", lambda d: (d["x"], 0, d["idx"], d["src"]), dict(deterministic="yes"), TypeError, "deterministic: expected a bool (got str)"),
    ("index_copy_", lambda d: (d["x"], 0, d["idx"], d["src"].half()), {}, TypeError, "source: expected dtype float32 like self (got float16)"),
    ("index_copy_", lambda d: (d["x"], 1, d["idx"], d["src"]), {}, ValueError, "source: expected self's shape (10,20) with dimension 1 of size len(index) = 3"),
    ("index_fill_", lambda d: (d["x"], 0, d["idx"], "v"), {}, TypeError, "value: expected a number (got str)"),
    ("index_fill_", lambda d: (d["x"], 0, d["idx"].float(), 1.0), {}, TypeError, "index: expected an int32 or int64 array (got float32)"),
    ("index_fill_", lambda d: (_overlapping(d), 0, d["idx"], 1.0), {}, ValueError, "self: expected an array whose elements do not overlap"),
    # scatter_add_ / scatter_reduce_
    ("scatter_add_", lambda d: (d["x"], 1, d["gidx"][:, 0], d["x"]), {}, ValueError, "index: expected index, src and self to have the same number of dimensions"),
    ("scatter_add_", lambda d: (d["x"], 1, d["gidx"], d["x"].half()), {}, TypeError, "src: expected dtype float32 like self (got float16)"),
    ("scatter_add_", lambda d: (d["x"], 1, torch.zeros(10, 21, dtype=torch.int64, device=DEVICE), d["x"]), {}, ValueError, "index: size 21 of dimension 1 exceeds src's"),
    ("scatter_add_", lambda d: (d["x"], 2, d["gidx"], d["x"]), {}, IndexError, "dim: expected a dimension in [-2, 1] (got 2)"),
    ("scatter_reduce_", lambda d: (d["x"], 1, d["gidx"], d["x"], "max"), {}, ValueError, "reduce: expected 'sum', 'prod', 'mean', 'amax' or 'amin' (got 'max')"),
    ("scatter_reduce_", lambda d: (d["x"], 1, d["gidx"], d["x"], 3), {}, TypeError, "reduce: expected a str (got int)"),
    ("scatter_reduce_", lambda d: (d["x"], 1, d["gidx"], d["x"], "sum"), dict(include_self="no"), TypeError, "include_self: expected a bool (got str)"),
    # histc
    ("histc", lambda d: (d["x"],), dict(bins=0), ValueError, "bins: expected a positive number of bins"),
    ("histc", lambda d: (d["x"],), dict(bins=-4), ValueError, "bins: expected a positive number of bins"),
    ("histc", lambda d: (d["x"],), dict(bins=2.5), TypeError, "bins: expected an int (got float)"),
    ("histc", lambda d: (d["x"],), dict(min=3, max=1), ValueError, "max: expected max >= min"),
    ("histc", lambda d: (d["x"],), dict(min=float("nan"), max=1), ValueError, "min: expected a finite range"),
    ("histc", lambda d: (d["x"],), dict(min=0, max=float("inf")), ValueError, "min: expected a finite range"),
    ("histc", lambda d: (d["x"],), dict(bins=10, out=torch.empty(11, device=DEVICE)), ValueError, "out: expected shape (10,) (got (11,))"),
    ("histc", lambda d: (d["x"],), dict(bins=10, out=torch.empty(10, device=DEVICE, dtype=F64)), TypeError, "out: expected dtype float32 (got float64)"),
    ("histc", lambda d: (d["x"].to(torch.complex64),), {}, TypeError, "x: histc supports floating and integer dtypes (got complex64)"),
    ("histc", lambda d: (d["x"],), dict(counts_dtype="complex64"), TypeError, "counts_dtype: expected an integer or floating dtype"),
    ("histc", lambda d: (d["x"],), lambda d: dict(bins=200, out=d["x"].view(-1)), ValueError, "out: must not overlap the input x"),
    # upsample_nearest2d (+ backward)
    ("upsample_nearest2d", lambda d: (d["img"][0],), dict(scale_factor=2), ValueError, "x: expected a 4-d array (N, C, H, W)"),
    ("upsample_nearest2d", lambda d: (d["img"],), dict(size=(6, 8), scale_factor=2), ValueError, "size: expected exactly one of size and scale_factor (got both)"),
    ("upsample_nearest2d", lambda d: (d["img"],), {}, ValueError, "size: expected exactly one of size and scale_factor (got neither)"),
    ("upsample_nearest2d", lambda d: (d["img"],), dict(scale_factor=-1), ValueError, "scale_factor: expected positive finite scales"),
    ("upsample_nearest2d", lambda d: (d["img"].int(),), dict(scale_factor=2), TypeError, "x: upsample_nearest2d supports float16, bfloat16, float32, float64 and uint8 (got int32)"),
    ("upsample_nearest2d_backward", lambda d: (d["img"], (1, 2, 3)), {}, TypeError, "input_size: expected a sequence of 4 ints"),
    ("upsample_nearest2d_backward", lambda d: (torch.zeros(1, 2, 6, 8, device=DEVICE), (1, 3, 3, 4)), {}, ValueError, "grad_output: expected shape (1, 3, 6, 8) for input_size (1, 3, 3, 4)"),
    # elementwise
    ("add", lambda d: (d["x"], torch.zeros(3, 3, device=DEVICE)), {}, ValueError, "y: shape (3,3) does not broadcast with (10,20)"),
    ("mul", lambda d: (d["x"], d["x"].to(torch.complex64)), {}, TypeError,
     "y: expected an integer, floating or bool dtype (got complex64)"),
    ("maximum", lambda d: (d["x"], "s"), {}, TypeError, "y: expected a numeric or bool array"),
    ("div", lambda d: (d["x"], d["x"]), dict(out=torch.empty(10, 21, device=DEVICE)), ValueError, "out: expected shape (10, 20) (got (10, 21))"),
]


def good_call(op, d):
    """A correct call of `op` and PyTorch's answer."""
    x, idx, src, gidx, img = d["x"], d["idx"], d["src"], d["gidx"], d["img"]
    if op == "index_select":
        return jitops.index_select(x, 0, idx), x[idx]
    if op == "take":
        return jitops.take(x, idx), x.reshape(-1)[idx]
    if op == "gather":
        return jitops.gather(x, 1, gidx), torch.gather(x, 1, gidx)
    if op in ("index_add_", "index_copy_", "index_fill_"):
        a, b = x.clone(), x.clone()
        extra = (2.0,) if op == "index_fill_" else (src,)
        return getattr(jitops, op)(a, 0, idx, *extra), getattr(b, op)(0, idx, *extra)
    if op in ("scatter_add_", "scatter_reduce_"):
        a, b = x.clone(), x.clone()
        extra = ("amax",) if op == "scatter_reduce_" else ()
        return getattr(jitops, op)(a, 1, gidx, x, *extra), getattr(b, op)(1, gidx, x, *extra)
    if op == "histc":
        return jitops.histc(x, bins=7), torch.histc(x, bins=7)
    if op == "upsample_nearest2d":
        return jitops.upsample_nearest2d(img, scale_factor=2), torch.nn.functional.interpolate(img, scale_factor=2)
    if op == "upsample_nearest2d_backward":
        g = torch.randn(1, 2, 6, 8, device=DEVICE)
        return jitops.upsample_nearest2d_backward(g, (1, 2, 3, 4)), g.view(1, 2, 3, 2, 4, 2).sum((3, 5))
    return getattr(jitops, op)(x, src[0]), getattr(torch, op)(x, src[0])


def test_the_table_is_large_and_covers_every_op():
    assert len(BAD) >= 40
    assert {row[0] for row in BAD} >= {"index_select", "take", "gather", "index_add_", "index_copy_", "index_fill_",
                                       "scatter_add_", "scatter_reduce_", "histc", "upsample_nearest2d",
                                       "upsample_nearest2d_backward", "add"}


@pytest.mark.parametrize("op,make_args,kwargs,exc,message", BAD, ids=[f"{r[0]}-{r[4][:36]}" for r in BAD])
def test_bad_call_then_good_call(op, make_args, kwargs, exc, message):
    d = data()
    before = {k: v.clone() for k, v in d.items()}
    with pytest.raises(exc) as info:
        getattr(jitops, op)(*make_args(d), **(kwargs(d) if callable(kwargs) else kwargs))
    assert type(info.value) is exc
    assert message in str(info.value)
    for k in d:  # a refused call changes nothing
        assert torch.equal(d[k], before[k]), k
    got, expected = good_call(op, d)
    torch.cuda.synchronize()
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-5)
