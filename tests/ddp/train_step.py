"""One rank of the DDP test (tests/test_ddp_gpu.py), started by torchrun: a GNN layer and an embedding
written with jitops' ops, wrapped in DistributedDataParallel, against the same model with PyTorch's ops.
Writes rank<R>.json in the folder named by argv[1]: the relative gradient errors after the all-reduce,
and this rank's compiles and disk hits for one specialization both ranks ask for at once."""

import json
import os
import sys

import torch

import jitops


def model(impl, n, f, vocab, dim):
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


def compile_counts(device):
    """Both ranks ask at once for a specialization no other test uses (int16, 5 dims): one compiles it
    into the shared disk cache, the other must read it from there."""
    odd = torch.arange(7 * 3 * 5 * 2 * 3, device=device).to(torch.int16).reshape(7, 3, 5, 2, 3)
    index = torch.tensor([4, 0], device=device)
    before = jitops.cache_stats()
    torch.distributed.barrier()
    picked = jitops.index_select(odd, 2, index)
    torch.cuda.synchronize(device)
    after = jitops.cache_stats()
    assert torch.equal(picked, torch.index_select(odd, 2, index))
    return {k: after[k] - before[k] for k in ("compiles", "disk_hits")}


def main(workdir):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    torch.distributed.init_process_group("nccl", rank=rank, world_size=world)
    counts = compile_counts(device)

    n, f, vocab, dim, edges = 2000, 32, 5000, 64, 40000
    g = torch.Generator(device=device).manual_seed(100 + rank)  # each rank its own batch
    src = torch.randint(0, n, (edges,), device=device, generator=g)
    dst = torch.randint(0, n, (edges,), device=device, generator=g)
    idx = torch.randint(0, vocab, (4096,), device=device, generator=g)
    grads = {}
    for impl in ("jitops", "torch"):
        ddp = torch.nn.parallel.DistributedDataParallel(model(impl, n, f, vocab, dim).to(device),
                                                        device_ids=[device.index])
        ddp(src, dst, idx).backward()
        grads[impl] = {name: p.grad.detach().cpu() for name, p in ddp.module.named_parameters()}
    errors = {name: float((grads["jitops"][name] - grads["torch"][name]).abs().max() /
                          grads["torch"][name].abs().max().clamp_min(1e-30)) for name in grads["torch"]}
    # DDP averages gradients over the ranks; each rank's own batch differs, so equal gradients on both
    # ranks show the all-reduce ran.
    with open(os.path.join(workdir, f"rank{rank}.json"), "w") as out:
        json.dump({"counts": counts, "errors": errors,
                   "grad_sums": {name: float(t.double().sum()) for name, t in grads["jitops"].items()}}, out)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
