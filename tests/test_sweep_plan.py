"""The sweep's case generator, with no GPU: it draws every family with the
variety the sweep promises, the same cases for the same seed, and jitops
plans and explains every case it draws for sm_90."""

import numpy as np
import pytest

from jitops.bench.layouts import dense
from jitops.bench.sweep import explain_case, markdown, summarize, summary_lines
from jitops.bench.sweep_cases import FAMILIES, REDUCTIONS, draw_cases


def _texts(cases):
    return " | ".join(c.name for c in cases)


def test_every_family_drawn_and_seeds_repeat():
    cases = draw_cases(5, 4)
    assert {c.family for c in cases} == set(FAMILIES)
    assert all(sum(1 for c in cases if c.family == f) == 4 for f in FAMILIES)
    assert _texts(cases) == _texts(draw_cases(5, 4))
    assert _texts(cases) != _texts(draw_cases(6, 4))
    assert [c.name for c in draw_cases(5, 4, "histc")] == [c.name for c in cases if c.family == "histc"]


def test_the_draws_cover_layouts_dtypes_indices_and_scales():
    cases = draw_cases(1, 10) + draw_cases(2, 10)
    text = _texts(cases)
    for layout in ("transposed", "sliced", "channels_last", "expanded"):
        assert f" {layout}" in text, layout
    for dtype in ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                  "complex64", "complex128"):
        assert f"{dtype}(" in text, dtype
    for kind in ("random", "sorted", "repeated", "unique"):
        assert f" {kind}" in text, kind
    assert "idx int32" in text and "idx int64" in text
    for scale in ("x2", "x3", "x1.5", "x0.5", "size="):
        assert f" {scale}" in text, scale
    for reduce in REDUCTIONS:
        assert f"scatter_reduce_ {reduce} " in text, reduce
    for shape in ("expanded rows", "full index", "one column", "narrow rows"):
        assert shape in text, shape
    assert "auto range" in text and "range(-3,3)" in text
    elementwise = [c for c in cases if c.family == "elementwise"]
    assert any(not hasattr(c.operands["y"], "shape") for c in elementwise)  # a Python number
    assert any(hasattr(c.operands["y"], "shape") and c.operands["y"].dtype != c.operands["x"].dtype
               for c in elementwise)  # mixed dtypes
    ndims = {len(spec.shape) for c in cases for spec in c.operands.values() if hasattr(spec, "shape")}
    assert {1, 2, 3, 4, 5} <= ndims
    sizes = [spec.numel for c in cases for spec in c.operands.values() if hasattr(spec, "layout")]
    assert min(sizes) < 1 << 12 and max(sizes) > 1 << 24 and max(sizes) <= 1 << 27


def test_layouts_describe_real_views():
    import numpy as np

    rng = np.random.default_rng(3)
    sliced = dense((4, 5, 6), "float32", "sliced", rng)
    assert sliced.storage > sliced.numel and sliced.layout == "sliced"
    last = dense((2, 3, 4, 5), "float16", "channels_last", rng)
    assert last.strides == (60, 1, 15, 3)
    t = dense((7, 9), "int8", "transposed", rng)
    assert t.strides == (1, 7)
    e = dense((6, 5, 4), "float32", "expanded", rng)
    assert 0 in e.strides and e.storage < e.numel


@pytest.mark.parametrize("seed", [11, 12])
def test_jitops_plans_every_drawn_case_for_sm90(seed):
    for case in draw_cases(seed, 3):
        reports = explain_case(case, arch="sm_90")
        assert reports, case.name
        for r in reports:
            assert r["arch"] == "sm_90" and r["grid"][0] >= 1 and r["block"][0] >= 1, case.name
            assert ".target sm_90" in r["ptx"] and r["registers"] > 0, case.name


def test_summary_counts_the_noise_band_and_failures():
    rows = [{"family": "take", "case": "a", "speedup": 2.0, "jitops_us": 5.0, "torch_us": 10.0, "correct": True},
            {"family": "take", "case": "b", "speedup": 0.5, "jitops_us": 20.0, "torch_us": 10.0, "correct": True,
             "copy_share": 0.4},
            {"family": "take", "case": "c", "error": "boom", "correct": False},
            {"family": "histc", "case": "d", "skipped": "PyTorch: no"}]
    s = summarize(rows)
    assert s["take"]["cases"] == 2 and s["take"]["failed"] == 1 and s["take"]["geomean"] == pytest.approx(1.0)
    assert s["take"]["worst"]["case"] == "b" and s["take"]["at_least_0.97"] == 0.5
    assert s["histc"] == {"cases": 0, "failed": 0, "skipped": 1}
    assert s["all"]["below_0.97"] == 1 and s["all"]["failed"] == 1
    text = "\n".join(summary_lines(s, 7))
    assert "take" in text and "0.50x b" in text
    md = markdown({"seed": 7, "per_family": 2, "gpu": "G", "torch": "t", "date": "d", "copy_bandwidth_Bps": 3e12,
                   "summary": s, "cases": rows})
    assert "| take | 2 | 1.00x | - | 50% | 1 | b | 0.50x |" in md and "| b | 20.0 | 10.0 | 0.50x | 40% |" in md


class _ScriptedTimer:
    """median_us answers from a script of times, in call order (jitops' side, then PyTorch's, a pair at a time)."""

    def __init__(self, times):
        self.times, self.calls = list(times), []

    def median_us(self, fn, reps):
        self.calls.append(fn)
        return self.times.pop(0)


def test_a_pair_below_the_noise_band_is_timed_twice_more_and_counts_at_its_median():
    # BENCHMARKS.md's rule, for the sweep and the public table alike: one pair at or above 0.97x counts as
    # timed; below it, two more pairs, and the pair with the median ratio counts (a disturbed jitops run of
    # 63 us against a usual 9 does not make the row).
    from jitops.bench.timing import timed_pair

    timer = _ScriptedTimer([10.0, 9.8])
    assert timed_pair(timer, "ours", "theirs", 50) == (10.0, 9.8, 1) and timer.calls == ["ours", "theirs"]
    timer = _ScriptedTimer([63.1, 13.8, 9.3, 13.7, 9.4, 13.9])
    assert timed_pair(timer, "ours", "theirs", 50) == (9.3, 13.7, 3)
    timer = _ScriptedTimer([20.0, 10.0, 21.0, 10.0, 10.5, 10.0])  # slower twice of three: it stays below
    assert timed_pair(timer, "ours", "theirs", 50) == (20.0, 10.0, 3)


def test_ceiling_is_pytorchs_time_over_the_copy_floor_or_the_launch():
    """Per family, the geomean of PyTorch's time over max(copy floor, empty launch): a case under the launch
    counts at the launch, one above it at its floor; no ceiling without the launch time or a floor."""
    rows = [{"family": "take", "case": "small", "speedup": 1.2, "jitops_us": 5.0, "torch_us": 6.0, "floor_us": 0.1},
            {"family": "take", "case": "big", "speedup": 1.0, "jitops_us": 40.0, "torch_us": 40.0, "floor_us": 32.0}]
    s = summarize(rows, launch_us=4.0)
    assert s["take"]["ceiling"] == pytest.approx(((6.0 / 4.0) * (40.0 / 32.0)) ** 0.5)
    assert s["all"]["ceiling"] == pytest.approx(s["take"]["ceiling"])
    assert summarize(rows)["take"]["ceiling"] is None
    no_floor = {k: v for k, v in rows[0].items() if k != "floor_us"}
    assert summarize([no_floor, rows[1]], launch_us=4.0)["take"]["ceiling"] is None
    md = markdown({"seed": 1, "per_family": 2, "gpu": "G", "torch": "t", "date": "d", "copy_bandwidth_Bps": 3e12,
                   "launch_us": 4.0, "summary": s, "cases": rows})
    assert f"| take | 2 | 1.10x | {s['take']['ceiling']:.2f}x | 100% |" in md and "empty jitops launch 4.00 us" in md


def test_latency_ceiling_takes_each_familys_chain_of_reads():
    """A gather's shortest call is two dependent reads, any other family's one: each case counts PyTorch's time
    over max(copy floor, its family's chain); the markdown names both chains' times and adds the column."""
    rows = [{"family": "take", "case": "small", "speedup": 1.2, "jitops_us": 5.0, "torch_us": 6.0, "floor_us": 0.1},
            {"family": "take", "case": "big", "speedup": 1.0, "jitops_us": 40.0, "torch_us": 40.0, "floor_us": 32.0},
            {"family": "index_fill_", "case": "f", "speedup": 1.1, "jitops_us": 5.0, "torch_us": 5.5,
             "floor_us": 0.2}]
    chains = {"one_read": 4.5, "two_reads": 5.0}
    s = summarize(rows, launch_us=4.0, chain_floors=chains)
    assert s["take"]["latency_ceiling"] == pytest.approx(((6.0 / 5.0) * (40.0 / 32.0)) ** 0.5)
    assert s["index_fill_"]["latency_ceiling"] == pytest.approx(5.5 / 4.5)
    assert s["index_fill_"]["ceiling"] == pytest.approx(5.5 / 4.0)
    assert s["all"]["latency_ceiling"] == pytest.approx((6.0 / 5.0 * 40.0 / 32.0 * 5.5 / 4.5) ** (1 / 3))
    assert summarize(rows, launch_us=4.0)["take"]["latency_ceiling"] is None
    md = markdown({"seed": 1, "per_family": 2, "gpu": "G", "torch": "t", "date": "d", "copy_bandwidth_Bps": 3e12,
                   "launch_us": 4.0, "chain_floors_us": chains, "summary": s, "cases": rows})
    assert f"| {s['take']['latency_ceiling']:.2f}x |" in md and "two dependent reads then a store 5.00 us" in md
    assert "latency ceiling" in "\n".join(summary_lines(s, 1))


def test_pytorch_references_run_for_small_cases_on_the_cpu():
    """Each family's PyTorch side (operands, reference, int64 indices where PyTorch wants them, the check) runs;
    PyTorch may refuse a dtype on the CPU, never with anything but RuntimeError/NotImplementedError."""
    torch = pytest.importorskip("torch")
    from jitops.bench import sweep
    from jitops.bench.layouts import build_torch

    ran = set()
    for i, case in enumerate(draw_cases(21, 6)):
        if sum(getattr(s, "storage", 0) or 0 for s in case.operands.values()) > 1 << 20:
            continue
        built = build_torch(torch, case.operands, "cpu", i)
        _, theirs = sweep._runners(torch, case, built)
        try:
            try:
                result = theirs()
            except (RuntimeError, IndexError) as exc:
                if not sweep._refuses_int32(exc):
                    raise
                _, theirs = sweep._runners(torch, case, built, long_indices=True)
                result = theirs()
        except (RuntimeError, NotImplementedError):
            continue
        assert sweep.check(torch, case, built, result, result)[0], case.name
        ran.add(case.family)
    assert len(ran) >= 10


def test_in_place_cases_start_every_timed_run_from_the_drawn_values():
    """The timed call of an in-place op restores its operand first (outside the timing): a product applied
    twice with the restore between equals one application, and both libraries' selves are their own."""
    torch = pytest.importorskip("torch")
    from jitops.bench import sweep
    from jitops.bench.layouts import build_torch
    from jitops.bench.sweep_cases import draw_scatter_reduce

    rng = np.random.default_rng(5)
    case = next(c for c in (draw_scatter_reduce(rng, "prod") for _ in range(50))
                if "include_self=True" in c.name
                and sum(s.storage for s in c.operands.values() if hasattr(s, "storage")) < 1 << 18)
    built = build_torch(torch, case.operands, "cpu", 3)
    ours, theirs = sweep._runners(torch, case, built, long_indices=True)
    assert ours.target is not theirs.target and ours.target is not built.values["self"]
    once = theirs().clone()
    theirs.before()
    again = theirs()
    assert torch.equal(once, again)
    assert not torch.equal(theirs(), once)  # without the restore the product compounds


def test_timed_in_place_sides_share_one_copy_and_the_check_keeps_two():
    """The timing's two sides of an in-place op modify one copy of self (the same placement in memory for
    both, NOTES 101), restored before each run, so each side's run gives its own result from the drawn
    values; the correctness check's sides keep copies of their own."""
    torch = pytest.importorskip("torch")
    from jitops.bench import sweep
    from jitops.bench.layouts import build_torch

    case = next(c for c in draw_cases(1813, 10) if c.family == "index_fill_" and c.inplace
                and sum(s.storage for s in c.operands.values() if hasattr(s, "storage")) < 1 << 20)
    built = build_torch(torch, case.operands, "cpu", 4)
    _, theirs = sweep._runners(torch, case, built, long_indices=True, shared_target=True)
    other, _ = sweep._runners(torch, case, built, long_indices=True, shared_target=True)
    assert other.target is not theirs.target  # each call of _runners copies anew
    ours, theirs = sweep._runners(torch, case, built, long_indices=True, shared_target=True)
    assert ours.target is theirs.target and ours.target is not built.values[case.inplace]
    assert theirs.target.data_ptr() != built.values[case.inplace].data_ptr()
    theirs.before()
    once = theirs().clone()
    assert not torch.equal(once, built.values[case.inplace])  # the fill changed self
    ours.target.copy_(torch.zeros_like(ours.target))
    theirs.before()
    assert torch.equal(theirs(), once)  # restored from the drawn values, not from the other side's result
    ours, theirs = sweep._runners(torch, case, built, long_indices=True)
    assert ours.target is not theirs.target


def test_histc_counts_past_2_24_are_judged_by_pytorchs_own_binning():
    """Where PyTorch's float32 counts pass 2^24 they stop being exact; the sweep then wants the exact count
    of PyTorch's binning ((x - min) * bins / (max - min) in x's dtype), rounded to the counts' dtype, and
    PyTorch's count bit for bit in every other bin."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from jitops.bench import sweep

    x = torch.randn(10000, generator=torch.Generator().manual_seed(3))
    for lo, hi in ((0, 0), (-1, 2)):
        exact = sweep._binned_counts(torch, x, 7, lo, hi)
        assert int(exact.sum()) == int(((x >= (x.min() if lo == hi else lo)) & (x <= (x.max() if lo == hi else hi))).sum())
        case = SimpleNamespace(args=(None, 7, lo, hi))
        built = SimpleNamespace(values={"x": x})
        ours = exact.float()
        theirs = ours.clone()
        theirs[3] = 2.0 ** 24 + 8  # a saturated bin of PyTorch's, which ours need not equal
        assert sweep._same_counts(torch, case, built, ours, theirs) == (True, "")
        wrong = ours.clone()
        wrong[3] += 1
        assert not sweep._same_counts(torch, case, built, wrong, theirs)[0]
        wrong = ours.clone()
        wrong[0] += 1  # an unsaturated bin must be PyTorch's exactly
        assert not sweep._same_counts(torch, case, built, wrong, theirs)[0]


def test_elementwise_floor_counts_the_result_at_pytorchs_dtype():
    """The sweep's copy floor for an elementwise case writes the result at the dtype PyTorch gives it, for
    every pair of the drawn dtypes and every drawn Python number."""
    torch = pytest.importorskip("torch")
    from jitops.bench.sweep_cases import ARITH_DTYPES, BINARY, torch_result_dtype

    for op in BINARY:
        for a in ARITH_DTYPES:
            x = torch.ones(3, dtype=getattr(torch, a))
            operands = [torch.ones(3, dtype=getattr(torch, b)) for b in ARITH_DTYPES] + [3, -2, 0.5, 2.5, 7, 0.25]
            for y in operands:
                if op in ("maximum", "minimum") and not torch.is_tensor(y):
                    expected = torch.clamp(x, min=y).dtype  # the sweep's reference for a number
                else:
                    expected = getattr(torch, op)(x, y).dtype
                given = str(y.dtype).replace("torch.", "") if torch.is_tensor(y) else y
                assert torch_result_dtype(op, a, given) == str(expected).replace("torch.", ""), (op, a, y)
