"""Data-parallel training across two GPUs (torch.distributed, NCCL, one
process a GPU, started with the spawn method): a GNN layer and an embedding
written with jitops' ops, wrapped in DistributedDataParallel, give after the
all-reduce the gradients of the same model written with PyTorch's ops; and
the two processes, sharing one new disk cache, compile a specialization once
between them (the other reads it from disk)."""

import json
import os

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


def _model(impl, n, f, vocab, dim):
    import jitops

    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(0)  # the same parameters on every rank
            self.features = nn.Parameter(torch.randn(n, f, generator=g))
            self.weight = nn.Parameter(torch.randn(f, generator=g))
            self.table = nn.Parameter(torch.randn(vocab, dim, generator=g))

        def forward(self, src, dst, idx):
            if impl == "jitops":
                msgs = jitops.mul(jitops.index_select(self.features, 0, src), self.weight)
                out = torch.zeros(n, f, device=msgs.device)
                out = jitops.scatter_add_(out, 0, dst.view(-1, 1).expand(-1, f), msgs)
                emb = jitops.index_select(self.table, 0, idx)
            else:
                msgs = torch.index_select(self.features, 0, src) * self.weight
                out = torch.zeros(n, f, device=msgs.device).scatter_add_(0, dst.view(-1, 1).expand(-1, f), msgs)
                emb = torch.nn.functional.embedding(idx, self.table)
            return out.square().mean() + emb.square().mean()

    return Layer()


def _worker(rank, world, workdir):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    torch.distributed.init_process_group("nccl", init_method=f"file://{workdir}/rendezvous", rank=rank,
                                         world_size=world)
    import jitops

    device = torch.device("cuda", rank)
    # One specialization no other test uses (int16, 5 dims), called by both ranks at once.
    odd = torch.arange(7 * 3 * 5 * 2 * 3, device=device).to(torch.int16).reshape(7, 3, 5, 2, 3)
    before = jitops.cache_stats()
    torch.distributed.barrier()
    picked = jitops.index_select(odd, 2, torch.tensor([4, 0], device=device))
    torch.cuda.synchronize(device)
    after = jitops.cache_stats()
    counts = {k: after[k] - before[k] for k in ("compiles", "disk_hits")}
    assert torch.equal(picked, torch.index_select(odd, 2, torch.tensor([4, 0], device=device)))

    n, f, vocab, dim, edges = 2000, 32, 5000, 64, 40000
    g = torch.Generator(device=device).manual_seed(100 + rank)  # each rank its own batch
    src = torch.randint(0, n, (edges,), device=device, generator=g)
    dst = torch.randint(0, n, (edges,), device=device, generator=g)
    idx = torch.randint(0, vocab, (4096,), device=device, generator=g)
    grads = {}
    for impl in ("jitops", "torch"):
        model = torch.nn.parallel.DistributedDataParallel(_model(impl, n, f, vocab, dim).to(device),
                                                          device_ids=[rank])
        model(src, dst, idx).backward()
        grads[impl] = {name: p.grad.detach().cpu() for name, p in model.module.named_parameters()}
    errors = {name: float((grads["jitops"][name] - grads["torch"][name]).abs().max() /
                          grads["torch"][name].abs().max().clamp_min(1e-30)) for name in grads["torch"]}
    with open(os.path.join(workdir, f"rank{rank}.json"), "w") as out:
        json.dump({"counts": counts, "errors": errors}, out)
    torch.distributed.destroy_process_group()


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_ddp_step_matches_pytorch_and_compiles_once(tmp_path):
    env = {"JITOPS_CACHE_DIR": str(tmp_path / "shared-cache"), "NCCL_NVLS_ENABLE": "0",
           "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the spawned processes inherit them
    try:
        torch.multiprocessing.spawn(_worker, args=(2, str(tmp_path)), nprocs=2, join=True)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for r in ranks:
        assert all(err < 1e-4 for err in r["errors"].values()), r["errors"]
    assert sum(r["counts"]["compiles"] for r in ranks) == 1, ranks
    assert sum(r["counts"]["disk_hits"] for r in ranks) == 1, ranks
