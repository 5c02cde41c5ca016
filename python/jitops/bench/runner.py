"""python -m jitops bench: correctness first, then jitops, PyTorch and CuPy
side by side in one process, and the copy speed of the same machine in the
same run. With --tune, each case is also tuned (jitops.tune) and timed again."""

import datetime
import json
import platform
import sys

from .cases import CASES
from .checks import index_check_cost
from .jit_costs import compile_and_load
from .per_call import per_call_table, user_kernel_table
from .training import run_training
from .progress import Progress
from .timing import Timer, timed_pair

_HEADERS = ["case", "index", "jitops us", "torch us", "cupy us", "speedup", "GB/s", "% copy"]
_WIDTHS = [52, 5, 10, 10, 10, 8, 8, 7]


def _row_text(cells):
    return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, _WIDTHS)))


def launch_references(torch, timer, reps):
    """What a launch costs under this timing: an empty kernel, and a 4 KiB copy
    (one DRAM read after the L2 flush, then a write)."""
    src = torch.empty(1024, dtype=torch.float32, device=timer.device).normal_()
    dst = torch.empty_like(src)
    return {
        "empty_kernel_us": timer.median_us(lambda: torch.cuda._sleep(0), reps=reps),
        "small_copy_us": timer.median_us(lambda: dst.copy_(src), reps=reps),
    }


def _matches(torch, got, expected, rtol):
    got = torch.as_tensor(got, device=expected.device)
    if got.shape != expected.shape:
        return False
    if rtol:
        return bool(torch.allclose(got.float(), expected.float(), rtol=rtol, atol=rtol))
    return bool(torch.equal(got.to(expected.dtype), expected))


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # noqa: BLE001 - CuPy is optional: missing, or without a usable GPU
        return None


def _kernel_compile_ms(call):
    """NVRTC time of each specialization the call uses (from the kernels' records)."""
    import jitops

    op, args, kwargs = call
    try:
        return {r["kernel"]: r["compile_ms"] for r in jitops.explain(op, *args, **kwargs)}
    except Exception:  # noqa: BLE001 - explain covers the ops, not every callable
        return {}


def _run_case(torch, cp, timer, case, index_dtype, args):
    built = case.build(torch, device=timer.device, index_dtype=index_dtype, cp=cp)
    expected = built.theirs()
    got = built.ours()
    torch.cuda.synchronize(timer.device)
    correct = _matches(torch, got, expected, case.rtol)
    row = {
        "case": case.name,
        "index_dtype": str(index_dtype).replace("torch.", "") if index_dtype is not None else "-",
        "correct": correct,
        "min_bytes": built.min_bytes,
    }
    # CuPy is checked before anything is timed: the timed runs of an in-place
    # case keep adding into PyTorch's result.
    row["cupy_us"] = row["cupy_correct"] = None
    if built.cupy is not None:
        try:
            cupy_result = built.cupy()
            cp.cuda.get_current_stream().synchronize()
            row["cupy_correct"] = _matches(torch, cupy_result, expected, max(case.rtol, 1e-3))
        except Exception as exc:  # noqa: BLE001 - CuPy lacking a dtype or op is a gap in its column
            row["cupy_error"] = f"{type(exc).__name__}: {exc}"[:200]
    row["jitops_us"], row["torch_us"], row["timings"] = timed_pair(timer, built.ours, built.theirs, args.reps)
    if row["cupy_correct"] is not None:
        row["cupy_us"] = timer.median_us(built.cupy, reps=args.reps)
    row["copy_us"] = timer.copy_us(built.min_bytes / 2, reps=args.reps)
    row["speedup"] = row["torch_us"] / row["jitops_us"]
    row["jitops_gbps"] = built.min_bytes / (row["jitops_us"] * 1e-6) / 1e9
    row["copy_share"] = row["copy_us"] / row["jitops_us"]
    row["compile_ms"] = _kernel_compile_ms(built.call)
    if case.indexed and not args.no_checks:
        row.update(index_check_cost(timer, built.ours, reps=args.reps))
    if args.tune:
        import jitops

        op, op_args, op_kwargs = built.call
        result = jitops.tune(op, *op_args, reps=args.tune_reps, **op_kwargs)
        row["tuned_config"] = result.chosen
        row["tune_default_us"] = result.default_us
        row["tune_best_us"] = result.best_us
        row["tuned_us"] = timer.median_us(built.ours, reps=args.reps)
    return row


def _cells(row):
    cupy = f"{row['cupy_us']:.1f}" if row["cupy_us"] is not None else "-"
    if row.get("cupy_correct") is False:
        cupy += "!"
    return [
        row["case"] + ("" if row["correct"] else "  WRONG"),
        row["index_dtype"].replace("int", "i"),
        f"{row['jitops_us']:.1f}",
        f"{row['torch_us']:.1f}",
        cupy,
        f"{row['speedup']:.2f}x",
        f"{row['jitops_gbps']:.0f}",
        f"{100 * row['copy_share']:.0f}%",
    ]


def run_cases(torch, device, args):
    timer = Timer(torch, device)
    cp = _cupy()
    bandwidth = timer.copy_bandwidth()
    print(f"device-to-device copy: {bandwidth / 1e12:.2f} TB/s (bytes read + written)")
    refs = launch_references(torch, timer, args.reps)
    print(f"launch references: empty kernel {refs['empty_kernel_us']:.1f} us, 4 KiB copy {refs['small_copy_us']:.1f} us")
    print("CuPy:", cp.__version__ if cp else "not installed (its column stays empty)")
    jobs = [(case, index_dtype) for case in CASES if not args.filter or args.filter in case.name
            for index_dtype in ((torch.int64, torch.int32) if case.indexed else (None,))]
    print(_row_text(_HEADERS))
    rows = []
    with Progress(len(jobs), "bench") as progress:
        for case, index_dtype in jobs:
            row = _run_case(torch, cp, timer, case, index_dtype, args)
            row["floor_us"] = row["min_bytes"] / bandwidth * 1e6
            rows.append(row)
            text = _row_text(_cells(row))
            if "checks_cost" in row:
                text += f"  checks {100 * row['checks_cost']:+.1f}%"
            if args.tune and row.get("tune_best_us"):
                text += (f"  tuned {row['tuned_us']:.1f} us ({row['tune_default_us'] / row['tune_best_us']:.2f}x "
                         f"in tuning: {row['tuned_config']})")
            progress.write(text)
            progress.update()
    return bandwidth, refs, rows


def main(args):
    import jitops

    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "jitops": jitops.__version__,
        "python": platform.python_version(),
    }
    status = 0
    if not args.no_jit_costs:
        costs = compile_and_load()
        report["jit_costs"] = costs
        if "error" in costs:
            print("JIT cost probe failed:", costs["error"], file=sys.stderr)
            status = 3
        else:
            print(
                f"JIT: first compile {costs['first_compile_ms']:.1f} ms (NVRTC {costs['nvrtc_compile_ms']:.1f} ms; "
                f"{costs['kernel']}); new process, {costs['disk_hit_origin']} hit: "
                f"read {costs['disk_hit_read_ms']:.3f} ms + module load {costs['disk_hit_module_load_ms']:.3f} ms"
            )
    try:
        import torch
    except ImportError:
        torch = None
    if not jitops.is_available() or torch is None or not torch.cuda.is_available():
        print("no CUDA GPU (or no PyTorch with CUDA) here: only the JIT costs above were measured", file=sys.stderr)
        status = 1
    else:
        device = torch.device("cuda", torch.cuda.current_device())
        report["gpu"] = torch.cuda.get_device_name(device)
        report["torch"] = torch.__version__
        print(f"GPU: {report['gpu']}, PyTorch {torch.__version__}")
        if not args.no_jit_costs:
            report["per_call"] = per_call_table(torch, device)
            report["user_kernels_per_call"] = user_kernel_table(torch, device)
            for name, row in report["user_kernels_per_call"].items():
                print(f"per-call wall time, {name}: jitops {row['jitops_us']:.2f} us, other {row['other_us']:.2f} us")
            for kind, rows in report["per_call"].items():
                for name, row in rows.items():
                    print(f"per-call wall time ({kind}), cached, tiny tensors: {name}: jitops {row['jitops_us']:.2f} "
                          f"us, PyTorch {row['torch_us']:.2f} us")
        bandwidth, refs, rows = run_cases(torch, device, args)
        report["copy_bandwidth_Bps"] = bandwidth
        report["launch_references"] = refs
        report["cases"] = rows
        if not args.no_training:
            report["training"] = run_training(torch, Timer(torch, device), min(args.reps, 30))
            for r in report["training"]:
                print(f"training step {r['step']}: jitops {r['jitops_us']:.1f} us, PyTorch {r['torch_us']:.1f} us "
                      f"({r['speedup']:.2f}x), gradients {'agree' if r['correct'] else 'DIFFER'}")
        if not all(r["correct"] for r in rows + report.get("training", [])):
            print("some results differ from PyTorch", file=sys.stderr)
            status = 2
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)
    if args.markdown and "cases" in report:
        from .report import markdown

        with open(args.markdown, "w") as f:
            f.write(markdown(report))
    if args.plot and "cases" in report:
        from .report import plot

        plot(report, args.plot)
    return status
