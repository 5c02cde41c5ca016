"""What the default index checks cost: each indexed case timed with
set_index_checks("async") and with "off", in alternating rounds so that clock
and thermal drift fall on both alike; the best median of each mode is kept."""

import jitops


def index_check_cost(timer, fn, reps, rounds=5):
    before = jitops._core.index_checks()
    best = {"async": float("inf"), "off": float("inf")}
    try:
        for _ in range(rounds):
            for mode in best:
                jitops.set_index_checks(mode)
                best[mode] = min(best[mode], timer.median_us(fn, reps=reps))
    finally:
        jitops.set_index_checks(before)
    return {"checks_async_us": best["async"], "checks_off_us": best["off"],
            "checks_cost": best["async"] / best["off"] - 1.0}


def markdown_rows(cases):
    rows = [r for r in cases if r.get("checks_off_us")]
    if not rows:
        return []
    worst = max(r["checks_cost"] for r in rows)
    lines = ["", f"Index checks, default (\"async\") against \"off\" (best of 5 alternating medians; worst "
                 f"{100 * worst:+.1f}%):", "",
             "| case | index | async us | off us | cost |", "|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['index_dtype']} | {r['checks_async_us']:.1f} | {r['checks_off_us']:.1f} | "
                     f"{100 * r['checks_cost']:+.1f}% |")
    return lines
