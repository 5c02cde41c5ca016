"""python -m jitops bench: correctness first, then jitops and PyTorch side by
side in one process, and the copy speed of the same machine in the same run."""

import datetime
import json
import platform
import sys

from .cases import CASES
from .jit_costs import compile_and_load, per_call_us
from .timing import Timer


def _print_row(cells, widths):
    print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))))


def launch_references(torch, timer, reps):
    """What a launch costs under this timing: an empty kernel, and a 4 KiB copy
    (one DRAM read after the L2 flush, then a write)."""
    src = torch.empty(1024, dtype=torch.float32, device=timer.device).normal_()
    dst = torch.empty_like(src)
    return {
        "empty_kernel_us": timer.median_us(lambda: torch.cuda._sleep(0), reps=reps),
        "small_copy_us": timer.median_us(lambda: dst.copy_(src), reps=reps),
    }


def run_cases(torch, device, args):
    timer = Timer(torch, device)
    bandwidth = timer.copy_bandwidth()
    print(f"device-to-device copy: {bandwidth / 1e12:.2f} TB/s (bytes read + written)")
    refs = launch_references(torch, timer, args.reps)
    print(f"launch references: empty kernel {refs['empty_kernel_us']:.1f} us, 4 KiB copy {refs['small_copy_us']:.1f} us")
    headers = ["case", "index", "jitops us", "torch us", "speedup", "GB/s", "% copy"]
    widths = [52, 5, 10, 10, 8, 8, 7]
    _print_row(headers, widths)
    rows = []
    for case in CASES:
        if args.filter and args.filter not in case.name:
            continue
        for index_dtype in (torch.int64, torch.int32) if case.indexed else (None,):
            ours, theirs, min_bytes = case.build(torch, device, index_dtype)
            expected = theirs()
            got = ours()
            torch.cuda.synchronize(device)
            if case.rtol:
                correct = bool(torch.allclose(got.float(), expected.float(), rtol=case.rtol, atol=case.rtol))
            else:
                correct = bool(torch.equal(got, expected))
            ours_us = timer.median_us(ours, reps=args.reps)
            theirs_us = timer.median_us(theirs, reps=args.reps)
            copy_us = timer.copy_us(min_bytes / 2, reps=args.reps)
            row = {
                "case": case.name,
                "index_dtype": str(index_dtype).replace("torch.", "") if index_dtype is not None else "-",
                "correct": correct,
                "min_bytes": min_bytes,
                "jitops_us": ours_us,
                "torch_us": theirs_us,
                "speedup": theirs_us / ours_us,
                "jitops_gbps": min_bytes / (ours_us * 1e-6) / 1e9,
                "copy_us": copy_us,
                "copy_share": copy_us / ours_us,
                "floor_us": min_bytes / bandwidth * 1e6,
            }
            rows.append(row)
            _print_row(
                [
                    case.name + ("" if correct else "  WRONG"),
                    row["index_dtype"].replace("int", "i"),
                    f"{ours_us:.1f}",
                    f"{theirs_us:.1f}",
                    f"{row['speedup']:.2f}x",
                    f"{row['jitops_gbps']:.0f}",
                    f"{100 * row['copy_share']:.0f}%",
                ],
                widths,
            )
            sys.stdout.flush()
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
            report["per_call"] = per_call_us(torch, device)
            for name, row in report["per_call"].items():
                print(f"per-call wall time, cached, tiny tensors: {name}: jitops {row['jitops_us']:.2f} us, "
                      f"PyTorch {row['torch_us']:.2f} us")
        bandwidth, refs, rows = run_cases(torch, device, args)
        report["copy_bandwidth_Bps"] = bandwidth
        report["launch_references"] = refs
        report["cases"] = rows
        if not all(r["correct"] for r in rows):
            print("some results differ from PyTorch", file=sys.stderr)
            status = 2
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)
    if args.markdown and "cases" in report:
        with open(args.markdown, "w") as f:
            f.write(markdown(report))
    return status


def markdown(report):
    """The results as the table kept in benchmarks/RESULTS.md."""
    lines = [
        f"GPU: {report['gpu']}; PyTorch {report['torch']}; measured {report['date']}; "
        f"device-to-device copy {report['copy_bandwidth_Bps'] / 1e12:.2f} TB/s (read + written); "
        f"empty kernel {report['launch_references']['empty_kernel_us']:.1f} us, "
        f"4 KiB copy {report['launch_references']['small_copy_us']:.1f} us under the same timing.",
        "",
        "| case | index | min MB | floor us | jitops us | PyTorch us | speedup | % of copy | correct |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["cases"]:
        lines.append(
            f"| {r['case']} | {r['index_dtype']} | {r['min_bytes'] / 1e6:.2f} | {r['floor_us']:.1f} | "
            f"{r['jitops_us']:.1f} | {r['torch_us']:.1f} | {r['speedup']:.2f}x | {100 * r['copy_share']:.0f}% | "
            f"{'yes' if r['correct'] else 'NO'} |"
        )
    if "jit_costs" in report and "error" not in report["jit_costs"]:
        c = report["jit_costs"]
        lines += ["", f"JIT: first compile {c['first_compile_ms']:.1f} ms (NVRTC {c['nvrtc_compile_ms']:.1f} ms); "
                      f"new process, disk hit: read {c['disk_hit_read_ms']:.2f} ms + module load "
                      f"{c['disk_hit_module_load_ms']:.2f} ms."]
    if "per_call" in report:
        lines.append("")
        for name, row in report["per_call"].items():
            lines.append(f"Per-call wall time, cached, tiny CUDA tensors, {name}: jitops {row['jitops_us']:.2f} us, "
                         f"PyTorch {row['torch_us']:.2f} us.")
    return "\n".join(lines) + "\n"
