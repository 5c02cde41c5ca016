"""Data-parallel training across two GPUs: a 2-process torchrun DDP step of a GNN layer and an embedding
written with jitops' ops (tests/ddp/train_step.py) gives, after the all-reduce, the gradients of the same
model written with PyTorch's ops; and the two processes, sharing one new disk cache, compile a
specialization once between them (the other reads it from disk)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

# NVLink multicast stays off: on a shared host a program using it can take the GPUs out of service.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_torchrun_ddp_step_matches_pytorch_and_compiles_once(tmp_path):
    env = dict(os.environ, JITOPS_CACHE_DIR=str(tmp_path / "shared-cache"), **NO_MULTICAST)
    script = pathlib.Path(__file__).parent / "ddp" / "train_step.py"
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for r in ranks:
        assert all(err < 1e-4 for err in r["errors"].values()), r["errors"]
    for name, total in ranks[0]["grad_sums"].items():  # the all-reduce ran: both ranks hold the same mean
        assert total == pytest.approx(ranks[1]["grad_sums"][name], rel=1e-6, abs=1e-9), name
    assert sum(r["counts"]["compiles"] for r in ranks) == 1, ranks
    assert sum(r["counts"]["disk_hits"] for r in ranks) == 1, ranks
