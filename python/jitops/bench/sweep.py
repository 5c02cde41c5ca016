"""python -m jitops bench --sweep: the drawn cases of sweep_cases.py, each checked
against PyTorch and then timed beside it (the bench's timing: CUDA events, L2
flushed before each run, median), with a summary per op family.

A case measured below 0.97x PyTorch is timed twice more and counts at the
median of its three ratios (BENCHMARKS.md's noise rule). Cases PyTorch itself
refuses (a dtype it lacks on CUDA) are listed as skipped, not counted.
"""

import math
import statistics

from .layouts import Index, build_torch, build_virtual
from .progress import Progress
from .sweep_cases import FAMILIES, Ref, SweepCase, draw_cases
from .timing import NOISE_BAND, RestoringRun, Timer, timed_pair
_KERNELS = {}


def _kernel(spec):
    """The jitops.ElementwiseKernel of a ("kernel", in, out, operation, name) spec, made once."""
    if spec not in _KERNELS:
        import jitops

        _KERNELS[spec] = jitops.ElementwiseKernel(*spec[1:])
    return _KERNELS[spec]


def jitops_callable(case: SweepCase):
    import jitops

    return _kernel(case.op) if isinstance(case.op, tuple) else getattr(jitops, case.op)


def call_args(case, values):
    return [values[a] if isinstance(a, Ref) else a for a in case.args], dict(case.kwargs)


def explain_case(case, arch="sm_90"):
    """The kernels jitops would launch for `case`, planned for `arch` with no GPU (VirtualArray operands)."""
    import jitops

    args, kwargs = call_args(case, build_virtual(case.operands))
    if isinstance(case.op, tuple):
        return _kernel(case.op).explain(*args, arch=arch, **kwargs)
    return jitops.explain(case.op, *args, arch=arch, **kwargs)


# ---------------------------------------------------------------------------- correctness


def _float64_reference(torch, case, built):
    """PyTorch's result computed in float64 from the same inputs (the accumulate check's yardstick)."""
    values = {}
    for name, spec in case.operands.items():
        v = built.values[name]
        if name == case.inplace:
            v = built.fresh(name, spec)
        if torch.is_tensor(v) and v.is_floating_point():
            v = v.double()
        if isinstance(spec, Index):
            v = v.long()  # PyTorch's scatter ops take no int32 indices
        values[name] = v
    return case.reference(torch, values)


def _relative_error(torch, got, ref):
    scale = ref.abs().max().item() if ref.numel() else 0.0
    return (got.double() - ref).abs().max().item() / max(scale, 1e-30) if ref.numel() else 0.0


def _binned_counts(torch, x, bins, lo, hi):
    """Exact (int64) counts of torch.histc's own binning: the range as it resolves it, and each value's bin
    as its kernel works it out, (x - min) * bins / (max - min) in x's dtype. Float64 binning is no yardstick:
    it moves values that sit at a bin edge (up to a dozen of 10^8 normal values, NOTES 58)."""
    x = x.reshape(-1)
    lo, hi = (x.min(), x.max()) if lo == hi == 0 else (torch.tensor(lo, dtype=x.dtype, device=x.device),
                                                      torch.tensor(hi, dtype=x.dtype, device=x.device))
    if bool(lo == hi):
        lo, hi = lo - 1, hi + 1
    inside = x[(x >= lo) & (x <= hi)]
    return torch.bincount(((inside - lo) * bins / (hi - lo)).long().clamp_(max=bins - 1), minlength=bins)


def _same_counts(torch, case, built, ours, theirs):
    """A histogram: PyTorch's bit for bit, except where PyTorch's float32 counts passed 2^24 and stopped
    counting exactly; there, the exact count of PyTorch's binning, rounded to the counts' dtype."""
    if torch.equal(ours, theirs):
        return True, ""
    saturated = theirs.double() >= 2 ** 24
    if not bool(saturated.any()):
        return False, "counts differ"
    _, bins, lo, hi = case.args
    exact = _binned_counts(torch, built.values["x"], bins, lo, hi).to(ours.dtype)
    ok = torch.equal(ours[saturated], exact[saturated]) and torch.equal(ours[~saturated], theirs[~saturated])
    return ok, "" if ok else "counts differ (where PyTorch's float32 counts passed 2^24: from its binning's exact counts)"


def check(torch, case, built, ours, theirs):
    """(correct, detail): jitops' result against PyTorch's."""
    if tuple(ours.shape) != tuple(theirs.shape):
        return False, f"shape {tuple(ours.shape)} != PyTorch's {tuple(theirs.shape)}"
    if ours.dtype != theirs.dtype:
        return False, f"dtype {ours.dtype} != PyTorch's {theirs.dtype}"
    if case.compare == "exact":
        if ours.is_floating_point() or ours.is_complex():
            same = torch.equal(ours.contiguous().view(-1).view(torch.uint8), theirs.contiguous().view(-1).view(torch.uint8)) \
                or torch.equal(ours, theirs)
        else:
            same = torch.equal(ours, theirs)
        return bool(same), "" if same else "values differ"
    if case.compare == "counts":
        return _same_counts(torch, case, built, ours, theirs)
    if case.compare == "close":  # the kernels compute in float32 whatever T is
        tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-6, torch.float64: 1e-6}[ours.dtype]
        same = torch.allclose(ours.double(), theirs.double(), rtol=tol, atol=tol)
        return bool(same), "" if same else "values differ beyond rounding"
    ref = _float64_reference(torch, case, built)
    eps = torch.finfo(ours.dtype).eps
    ours_err, theirs_err = _relative_error(torch, ours, ref), _relative_error(torch, theirs, ref)
    ok = ours_err <= 2 * theirs_err + 8 * eps
    return ok, f"error {ours_err:.2e} vs PyTorch's {theirs_err:.2e} (against float64)"


# ---------------------------------------------------------------------------- one case


def _runners(torch, case, built, long_indices=False, shared_target=False):
    """(ours, theirs) zero-argument calls on their own copies of the operands (in-place ops modify theirs,
    restored before each timed run).
    `long_indices`: PyTorch is given int64 copies of int32 indices, made here, outside its timed calls (most
    of its indexing ops refuse int32; a PyTorch user converts once).
    `shared_target`: for timing, an in-place op's two sides modify one copy (each run restores it first), so
    both meet the same placement in memory. Where a few hot destinations take every store, their time is set
    by the L2 slices those lines fall in: seed 1813's int8 index_fill_ took 1.47 to 6.6 ms over five copies
    of self, PyTorch within 1% of jitops on each (or 1.22x slower), where on copies of their own the sweep
    had put jitops at 0.60x (NOTES 101)."""
    fn = jitops_callable(case)
    ours_values, theirs_values = dict(built.values), dict(built.values)
    if case.inplace:
        spec = case.operands[case.inplace]
        ours_values[case.inplace] = built.fresh(case.inplace, spec)
        theirs_values[case.inplace] = ours_values[case.inplace] if shared_target else built.fresh(case.inplace, spec)
    if long_indices:
        for name, spec in case.operands.items():
            if isinstance(spec, Index):
                theirs_values[name] = theirs_values[name].long()
    args, kwargs = call_args(case, ours_values)
    ours, theirs = (lambda: fn(*args, **kwargs)), (lambda: case.reference(torch, theirs_values))
    if not case.inplace:
        return ours, theirs
    pristine = built.values[case.inplace]
    return (RestoringRun(ours, ours_values[case.inplace], pristine),
            RestoringRun(theirs, theirs_values[case.inplace], pristine))


def _refuses_int32(exc):
    return any(k in str(exc) for k in ("Long", "long tensor", "int64", "Int64"))


def run_case(torch, timer, case, seed, reps, tune=False):
    row = {"family": case.family, "case": case.name, "min_bytes": case.min_bytes}
    built = build_torch(torch, case.operands, timer.device, seed)
    ours, theirs = _runners(torch, case, built)
    long_indices = False
    try:
        try:
            expected = theirs()
        except (RuntimeError, IndexError) as exc:
            if not _refuses_int32(exc):
                raise
            long_indices = True
            ours, theirs = _runners(torch, case, built, long_indices)
            expected = theirs()
            row["torch_index"] = "int64 (PyTorch refuses int32 here; converted outside its timing)"
    except (RuntimeError, NotImplementedError) as exc:  # PyTorch lacks this dtype or layout on CUDA
        row["skipped"] = f"PyTorch: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        return row
    except Exception as exc:  # noqa: BLE001 - a fault of the case itself: a failure, the sweep goes on
        row["error"] = f"reference: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        row["correct"] = False
        return row
    try:
        got = ours()
        torch.cuda.synchronize(timer.device)
    except Exception as exc:  # noqa: BLE001 - recorded as a failure of the case, the sweep goes on
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        row["correct"] = False
        return row
    row["correct"], row["detail"] = check(torch, case, built, got, expected)
    if case.family == "upsample_nearest2d" and case.operands["x"].layout == "channels_last":
        same_layout = got.is_contiguous(memory_format=torch.channels_last) == expected.is_contiguous(
            memory_format=torch.channels_last)
        row["correct"] = row["correct"] and same_layout
        if not same_layout:
            row["detail"] = "result layout differs from PyTorch's (channels_last)"
    del got, expected
    ours, theirs = _runners(torch, case, built, long_indices, shared_target=True)
    row["jitops_us"], row["torch_us"], row["timings"] = timed_pair(timer, ours, theirs, reps)
    row["speedup"] = row["torch_us"] / row["jitops_us"]
    row["floor_us"] = case.min_bytes / timer.bandwidth * 1e6
    if row["floor_us"] >= 10:
        row["copy_us"] = timer.copy_us(case.min_bytes / 2, reps=reps)
        row["copy_share"] = row["copy_us"] / row["jitops_us"]
    if tune:
        import jitops

        args, kwargs = call_args(case, dict(built.values, **({case.inplace: built.fresh(case.inplace,
                                                                                         case.operands[case.inplace])}
                                                            if case.inplace else {})))
        result = jitops.tune(jitops_callable(case), *args, **kwargs)
        row["tuned_us"] = timer.median_us(ours, reps=reps)
        row["tune_gain"] = result.default_us / result.best_us if result.best_us else None
    return row


# ---------------------------------------------------------------------------- summary


def _geomean(values):
    return math.exp(statistics.fmean(math.log(v) for v in values))


def ceiling(timed, launch_us):
    """The geomean speedup a library would reach that moved only each case's minimum bytes at copy speed, in
    a call no shorter than an empty jitops launch: PyTorch's time over max(copy floor, launch). A family whose
    ceiling is under a target cannot meet it on these cases. None without the launch time or the floors."""
    if not launch_us or not timed or any("floor_us" not in r for r in timed):
        return None
    return _geomean(r["torch_us"] / max(r["floor_us"], launch_us) for r in timed)


# The memory reads, one waiting on the other, that an op of each family makes before its first store, after
# the L2 flush (Timer.chain_floors_us): a gather reads its index, then the element it names; every other
# family reads one operand (an elementwise input, a fill's or a scatter's index) before it stores.
CHAINS = {"index_select": "two_reads", "take": "two_reads", "gather": "two_reads"}


def latency_ceiling(timed, chain_floors):
    """As `ceiling`, with each case's shortest call the family's chain of reads (`chain_floors`, from
    Timer.chain_floors_us) rather than an empty launch: PyTorch's time over max(copy floor, that chain)."""
    if not chain_floors or not timed or any("floor_us" not in r for r in timed):
        return None
    return _geomean(r["torch_us"] / max(r["floor_us"], chain_floors[CHAINS.get(r["family"], "one_read")])
                    for r in timed)


def summarize(rows, launch_us=None, chain_floors=None):
    """Per family: cases timed, geomean speedup, worst case, share at >= 0.97x, failures and skips, and the
    ceilings (above) where `launch_us`, an empty launch's time, and `chain_floors` are given."""
    summary = {}
    for family in FAMILIES:
        mine = [r for r in rows if r["family"] == family]
        if not mine:
            continue
        timed = [r for r in mine if "speedup" in r]
        failed = [r for r in mine if not r.get("correct", True)]
        entry = {"cases": len(timed), "failed": len(failed), "skipped": sum(1 for r in mine if "skipped" in r)}
        if timed:
            entry["geomean"] = _geomean(r["speedup"] for r in timed)
            entry["ceiling"] = ceiling(timed, launch_us)
            entry["latency_ceiling"] = latency_ceiling(timed, chain_floors)
            worst = min(timed, key=lambda r: r["speedup"])
            entry["worst"] = {"case": worst["case"], "speedup": worst["speedup"], "jitops_us": worst["jitops_us"],
                              "torch_us": worst["torch_us"]}
            entry["at_least_0.97"] = sum(1 for r in timed if r["speedup"] >= NOISE_BAND) / len(timed)
            shares = [r["copy_share"] for r in timed if "copy_share" in r]
            if shares:
                entry["copy_share_min"] = min(shares)
        summary[family] = entry
    timed = [r for r in rows if "speedup" in r]
    if timed:
        summary["all"] = {"cases": len(timed),
                          "geomean": _geomean(r["speedup"] for r in timed), "ceiling": ceiling(timed, launch_us),
                          "latency_ceiling": latency_ceiling(timed, chain_floors),
                          "below_0.97": sum(1 for r in timed if r["speedup"] < NOISE_BAND),
                          "failed": sum(1 for r in rows if not r.get("correct", True)),
                          "worst": min(r["speedup"] for r in timed)}
    return summary


def summary_lines(summary, seed):
    lines = [f"sweep seed {seed}:",
             f"{'family':30s} {'cases':>5s} {'geomean':>8s} {'>=0.97x':>8s} {'failed':>6s}  worst"]
    for family, e in summary.items():
        if family == "all":
            continue
        if "geomean" not in e:
            lines.append(f"{family:30s} {e['cases']:5d} {'-':>8s} {'-':>8s} {e['failed']:6d}")
            continue
        w = e["worst"]
        lines.append(f"{family:30s} {e['cases']:5d} {e['geomean']:7.2f}x {100 * e['at_least_0.97']:7.0f}% "
                     f"{e['failed']:6d}  {w['speedup']:.2f}x {w['case']} ({w['jitops_us']:.1f} vs {w['torch_us']:.1f} us)")
    if "all" in summary:
        a = summary["all"]
        lines.append(f"all: {a['cases']} cases, geomean {a['geomean']:.2f}x, {a['below_0.97']} below 0.97x, "
                     f"{a['failed']} failed, worst {a['worst']:.2f}x")
    bounds = [f"{f} {e['ceiling']:.2f}x" for f, e in summary.items() if e.get("ceiling")]
    if bounds:
        lines.append("ceiling (PyTorch over max(copy floor, empty launch)): " + ", ".join(bounds))
    bounds = [f"{f} {e['latency_ceiling']:.2f}x" for f, e in summary.items() if e.get("latency_ceiling")]
    if bounds:
        lines.append("latency ceiling (PyTorch over max(copy floor, the family's dependent reads)): " + ", ".join(bounds))
    return lines


def markdown(report):
    """The sweep's summary and its slowest cases as Markdown, for benchmarks/RESULTS.md."""
    launch, chains = report.get("launch_us"), report.get("chain_floors_us")
    lines = [f"Sweep, seed {report['seed']}, {report['per_family']} cases a family: {report['gpu']}, PyTorch "
             f"{report['torch']}, {report['date']}, copy {report['copy_bandwidth_Bps'] / 1e12:.2f} TB/s"
             + (f", empty jitops launch {launch:.2f} us" if launch else "")
             + (f", one read then a store {chains['one_read']:.2f} us, two dependent reads then a store "
                f"{chains['two_reads']:.2f} us" if chains else "") + ".", "",
             "Ceiling: PyTorch's time over max(copy floor, empty launch), in geomean: what moving only each "
             "case's minimum bytes at copy speed, in the shortest call, would reach. Latency ceiling: the same "
             "with the shortest call that makes the family's reads, one waiting on the other, after the L2 "
             "flush (a gather: its index, then the element; any other family: one read before its store).", "",
             "| family | cases | geomean | ceiling | at >= 0.97x | failed | worst case | worst | latency ceiling |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|"]

    def bound(e, key="ceiling"):
        return f"{e[key]:.2f}x" if e.get(key) else "-"

    for family, e in report["summary"].items():
        if family == "all" or "geomean" not in e:
            continue
        lines.append(f"| {family} | {e['cases']} | {e['geomean']:.2f}x | {bound(e)} | {100 * e['at_least_0.97']:.0f}% | "
                     f"{e['failed']} | {e['worst']['case']} | {e['worst']['speedup']:.2f}x | "
                     f"{bound(e, 'latency_ceiling')} |")
    a = report["summary"].get("all")
    if a:
        lines.append(f"| all | {a['cases']} | {a['geomean']:.2f}x | {bound(a)} | {a['cases'] - a['below_0.97']} of "
                     f"{a['cases']} | {a['failed']} | | {a['worst']:.2f}x | {bound(a, 'latency_ceiling')} |")
    slow = sorted((r for r in report["cases"] if "speedup" in r), key=lambda r: r["speedup"])[:10]
    if slow:
        lines += ["", "Slowest cases against PyTorch:", "", "| case | jitops us | PyTorch us | speedup | % of copy |",
                  "|---|---:|---:|---:|---:|"]
        for r in slow:
            share = f"{100 * r['copy_share']:.0f}%" if "copy_share" in r else "-"
            lines.append(f"| {r['case']} | {r['jitops_us']:.1f} | {r['torch_us']:.1f} | {r['speedup']:.2f}x | {share} |")
    return "\n".join(lines) + "\n"


def run_sweep(torch, device, args):
    """Draws, checks and times the sweep; returns the report (JSON-ready)."""
    import datetime

    timer = Timer(torch, device)
    timer.bandwidth = timer.copy_bandwidth()
    launch_us = timer.empty_launch_us()
    chain_floors = timer.chain_floors_us()
    cases = draw_cases(args.seed, args.cases, args.filter)
    rows = []
    print(f"sweep seed {args.seed}: {len(cases)} cases; copy {timer.bandwidth / 1e12:.2f} TB/s")
    with Progress(len(cases), f"sweep {args.seed}") as progress:
        for i, case in enumerate(cases):
            row = run_case(torch, timer, case, seed=hash((args.seed, i)) & 0x7FFFFFFF, reps=args.reps, tune=args.tune)
            rows.append(row)
            if "speedup" in row:
                mark = "" if row["correct"] else "  WRONG " + row.get("detail", "")
                progress.write(f"{row['speedup']:6.2f}x {row['jitops_us']:9.1f} {row['torch_us']:9.1f}  "
                               f"{row['case']}{mark}")
            else:
                progress.write(f"{'ERROR' if 'error' in row else 'skip':>7s} {row.get('error') or row.get('skipped')}  "
                               f"{row['case']}")
            progress.update()
            if i % 16 == 15:
                torch.cuda.empty_cache()
    summary = summarize(rows, launch_us, chain_floors)
    for line in summary_lines(summary, args.seed):
        print(line)
    return {"seed": args.seed, "per_family": args.cases, "gpu": torch.cuda.get_device_name(device),
            "torch": torch.__version__, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "copy_bandwidth_Bps": timer.bandwidth, "launch_us": launch_us, "chain_floors_us": chain_floors,
            "summary": summary, "cases": rows}


def main(args):
    """The --sweep entry of python -m jitops bench: 0 when every case ran and matched PyTorch."""
    import json
    import sys

    import jitops

    try:
        import torch
    except ImportError:
        torch = None
    if not jitops.is_available() or torch is None or not torch.cuda.is_available():
        print("no CUDA GPU (or no PyTorch with CUDA) here: the sweep needs both", file=sys.stderr)
        return 1
    device = torch.device("cuda", torch.cuda.current_device())
    report = run_sweep(torch, device, args)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(report))
    failed = report["summary"].get("all", {}).get("failed", 0)
    if failed:
        print(f"{failed} sweep cases failed (wrong result or error)", file=sys.stderr)
    return 2 if failed else 0
