"""What the default index checks cost: each indexed case timed with
set_index_checks("async") and with "off" in interleaved pairs, in alternating
order (L2 flushed before each run, as every bench timing), so that drift and
any advantage of going first or second fall on both alike. Each mode's time is the mean of its middle half of runs: a
median of event times quantized to ~0.5 us cannot resolve a 1% difference
on a 5 us kernel, the interquartile mean of 200 jittered runs can."""

import jitops


def _interquartile_mean(samples):
    s = sorted(samples)
    middle = s[len(s) // 4: len(s) - len(s) // 4] or s
    return sum(middle) / len(middle)


def index_check_cost(timer, fn, reps):
    torch = timer.torch
    before = jitops._core.index_checks()
    modes = ("async", "off")
    samples = {m: [] for m in modes}
    try:
        for mode in modes:  # warm both
            jitops.set_index_checks(mode)
            fn()
        runs = []
        for i in range(2 * reps):
            for mode in (modes if i % 2 == 0 else modes[::-1]):  # ABBA: neither mode always goes first
                jitops.set_index_checks(mode)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                timer.flush.zero_()
                start.record()
                fn()
                end.record()
                runs.append((mode, start, end))
        torch.cuda.synchronize(timer.device)
    finally:
        jitops.set_index_checks(before)
    for mode, start, end in runs:
        samples[mode].append(start.elapsed_time(end) * 1000.0)
    on, off = _interquartile_mean(samples["async"]), _interquartile_mean(samples["off"])
    return {"checks_async_us": on, "checks_off_us": off, "checks_cost": on / off - 1.0}


def markdown_rows(cases):
    rows = [r for r in cases if r.get("checks_off_us")]
    if not rows:
        return []
    worst = max(r["checks_cost"] for r in rows)
    lines = ["", f"Index checks, default (\"async\") against \"off\" (interleaved runs, interquartile means; worst "
                 f"{100 * worst:+.1f}%):", "",
             "| case | index | async us | off us | cost |", "|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['index_dtype']} | {r['checks_async_us']:.1f} | {r['checks_off_us']:.1f} | "
                     f"{100 * r['checks_cost']:+.1f}% |")
    return lines
