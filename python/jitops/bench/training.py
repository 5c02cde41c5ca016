"""The bench's training section: forward plus backward steps of three small
models, written once with jitops' ops and once with PyTorch's, checked
against each other, then timed in the same run (L2 flushed, median).

- embedding lookup: a bfloat16 table (131072, 4096), 16384 indices; the
  backward adds into the table's gradient (PyTorch: F.embedding);
- GNN message passing: float32 features (2^20, 64) and 2^24 random edges,
  gathered by edge source and scatter_add_-ed by edge target, and back;
- decoder upsample: float16 (16, 64, 128, 128), 2x nearest, and back.
"""

F_TOL = {"bfloat16": 2e-2, "float32": 1e-4, "float16": 2e-3}


def _embedding(torch, device, g):
    import jitops

    table = torch.randn(131072, 4096, device=device, generator=g).to(torch.bfloat16).requires_grad_()
    idx = torch.randint(0, 131072, (16384,), device=device, generator=g)
    upstream = torch.randn(16384, 4096, device=device, generator=g).to(torch.bfloat16)

    def ours():
        table.grad = None
        jitops.index_select(table, 0, idx).backward(upstream)
        return table.grad

    def theirs():
        table.grad = None
        torch.nn.functional.embedding(idx, table).backward(upstream)
        return table.grad

    return ours, theirs, "bfloat16", 2 * 16384 * 4096 * 2 * 2 + 16384 * 8


def _gnn(torch, device, g):
    import jitops

    n, e, f = 1 << 20, 1 << 24, 64
    x = torch.randn(n, f, device=device, generator=g).requires_grad_()
    src = torch.randint(0, n, (e,), device=device, generator=g)
    dst = torch.randint(0, n, (e,), device=device, generator=g)
    dst_rows = dst.view(-1, 1).expand(e, f)
    upstream = torch.randn(n, f, device=device, generator=g)

    def ours():
        x.grad = None
        out = torch.zeros(n, f, device=device)
        jitops.scatter_add_(out, 0, dst_rows, jitops.index_select(x, 0, src)).backward(upstream)
        return x.grad

    def theirs():
        x.grad = None
        out = torch.zeros(n, f, device=device)
        out.scatter_add_(0, dst_rows, torch.index_select(x, 0, src)).backward(upstream)
        return x.grad

    return ours, theirs, "float32", 4 * e * f * 4 + 2 * e * 8


def _upsample(torch, device, g):
    import jitops

    x = torch.randn(16, 64, 128, 128, device=device, generator=g).to(torch.float16).requires_grad_()
    upstream = torch.randn(16, 64, 256, 256, device=device, generator=g).to(torch.float16)

    def ours():
        x.grad = None
        jitops.upsample_nearest2d(x, scale_factor=2).backward(upstream)
        return x.grad

    def theirs():
        x.grad = None
        torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest").backward(upstream)
        return x.grad

    return ours, theirs, "float16", 2 * x.numel() * 2 * 5


STEPS = {"embedding lookup bf16 (131072x4096) 16384 idx": _embedding,
         "GNN message passing f32 (2^20x64) 2^24 edges": _gnn,
         "decoder upsample f16 (16,64,128,128) x2": _upsample}


def run_training(torch, timer, reps):
    """One row a step: jitops and PyTorch step times, speedup, and whether their gradients agree."""
    rows = []
    for name, make in STEPS.items():
        g = torch.Generator(device=timer.device).manual_seed(11)
        ours, theirs, dtype, min_bytes = make(torch, timer.device, g)
        got, expected = ours().float(), theirs().float()
        scale = expected.abs().max().item() or 1.0
        err = (got - expected).abs().max().item() / scale
        row = {"step": name, "correct": err <= F_TOL[dtype], "max_rel_error": err, "min_bytes": min_bytes}
        row["jitops_us"] = timer.median_us(ours, reps=reps)
        row["torch_us"] = timer.median_us(theirs, reps=reps)
        row["speedup"] = row["torch_us"] / row["jitops_us"]
        rows.append(row)
        del ours, theirs, got, expected
        torch.cuda.empty_cache()
    return rows


def markdown_rows(rows):
    if not rows:
        return []
    lines = ["", "Training steps (forward plus backward; target 1.2x PyTorch):", "",
             "| step | jitops us | PyTorch us | speedup | gradients agree |", "|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['step']} | {r['jitops_us']:.1f} | {r['torch_us']:.1f} | {r['speedup']:.2f}x | "
                     f"{'yes' if r['correct'] else 'NO'} ({r['max_rel_error']:.1e}) |")
    return lines
