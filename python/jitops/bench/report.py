"""The bench report as the Markdown table kept in benchmarks/RESULTS.md, and
as a chart (speedup over PyTorch and share of copy speed per case)."""

from .checks import markdown_rows as checks_rows
from .per_call import markdown_rows as per_call_rows
from .training import markdown_rows as training_rows


def markdown(report):
    lines = [
        f"GPU: {report['gpu']}; PyTorch {report['torch']}; measured {report['date']}; "
        f"device-to-device copy {report['copy_bandwidth_Bps'] / 1e12:.2f} TB/s (read + written); "
        f"empty kernel {report['launch_references']['empty_kernel_us']:.1f} us, "
        f"4 KiB copy {report['launch_references']['small_copy_us']:.1f} us under the same timing.",
        "",
        "| case | index | min MB | floor us | jitops us | PyTorch us | CuPy us | speedup | % of copy | correct |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["cases"]:
        cupy = f"{r['cupy_us']:.1f}" if r.get("cupy_us") is not None else "-"
        if r.get("cupy_correct") is False:
            cupy += " (differs)"
        lines.append(
            f"| {r['case']} | {r['index_dtype']} | {r['min_bytes'] / 1e6:.2f} | {r['floor_us']:.1f} | "
            f"{r['jitops_us']:.1f} | {r['torch_us']:.1f} | {cupy} | {r['speedup']:.2f}x | "
            f"{100 * r['copy_share']:.0f}% | {'yes' if r['correct'] else 'NO'} |"
        )
    tuned = [r for r in report["cases"] if r.get("tune_best_us")]
    if tuned:
        lines += ["", "Tuning (jitops.tune, medians in the tuning run; then the case timed again):", "",
                  "| case | index | heuristic us | tuned us | gain | chosen | case after tuning us |",
                  "|---|---|---:|---:|---:|---|---:|"]
        for r in tuned:
            lines.append(f"| {r['case']} | {r['index_dtype']} | {r['tune_default_us']:.1f} | {r['tune_best_us']:.1f} | "
                         f"{r['tune_default_us'] / r['tune_best_us']:.2f}x | {r['tuned_config']} | "
                         f"{r['tuned_us']:.1f} |")
    lines += checks_rows(report["cases"])
    if "jit_costs" in report and "error" not in report["jit_costs"]:
        c = report["jit_costs"]
        lines += ["", f"JIT: first compile {c['first_compile_ms']:.1f} ms (NVRTC {c['nvrtc_compile_ms']:.1f} ms); "
                      f"new process, disk hit: read {c['disk_hit_read_ms']:.2f} ms + module load "
                      f"{c['disk_hit_module_load_ms']:.2f} ms."]
    compiles = {k: v for r in report["cases"] for k, v in r.get("compile_ms", {}).items()}
    if compiles:
        times = sorted(compiles.values())
        lines.append(f"NVRTC compile per specialization over the {len(times)} the cases use: median "
                     f"{times[len(times) // 2]:.0f} ms, max {times[-1]:.0f} ms.")
    lines += training_rows(report.get("training", []))
    if "per_call" in report:
        lines += per_call_rows(report["per_call"])
    if report.get("user_kernels_per_call"):
        lines += ["", "Per-call wall time of users' kernels, tiny tensors, kernels cached (us a call):", "",
                  "| call | jitops | compared with | ratio |", "|---|---:|---:|---:|"]
        for name, row in report["user_kernels_per_call"].items():
            lines.append(f"| {name} | {row['jitops_us']:.2f} | {row['other_us']:.2f} | "
                         f"{row['other_us'] / row['jitops_us']:.2f}x |")
    return "\n".join(lines) + "\n"


def plot(report, path):
    """Two bar charts, one bar per case: speedup over PyTorch, and % of copy speed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"--plot: matplotlib is not installed; no chart written to {path}")
        return False
    rows = report["cases"]
    labels = [f"{r['case']} [{r['index_dtype']}]" for r in rows]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 0.5 * len(rows) + 3), sharex=False)
    for ax, key, scale, title, line in ((ax1, "speedup", 1, "speedup over PyTorch (x)", 1.0),
                                        (ax2, "copy_share", 100, "% of device-to-device copy speed", 85)):
        ax.barh(range(len(rows)), [r[key] * scale for r in rows])
        ax.axvline(line, color="red", linewidth=1)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(title)
    fig.suptitle(f"jitops bench, {report['gpu']}, {report['date']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"chart written to {path}")
    return True
