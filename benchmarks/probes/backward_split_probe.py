"""Where jitops' forward-plus-backward loses to PyTorch's on tiny tensors (issue 19 item 5): the
forward with a gradient needed, the backward alone (retain_graph, so the same graph each time) and the
whole call, jitops' C++ nodes beside PyTorch's ops, the sides alternated over rounds in one process;
then each op's backward work called directly from Python."""

import queue
import statistics
import sys
import threading

import torch
from probe_timing import host_loop_us

import jitops


def alternate(pairs, calls=500, rounds=5):
    for name, (ours, theirs) in pairs.items():
        for fn in (ours, theirs):
            host_loop_us(fn, 100)
        o, t = [], []
        for _ in range(rounds):
            o.append(host_loop_us(ours, calls))
            t.append(host_loop_us(theirs, calls))
        mo, mt = statistics.median(o), statistics.median(t)
        print(f"{name:40s} jitops {mo:7.2f} us  PyTorch {mt:7.2f} us  diff {mo - mt:+6.2f}", flush=True)


class Worker:
    """A persistent second thread (as the autograd engine's device thread is) that runs loops on request."""

    def __init__(self):
        self.jobs, self.done = queue.Queue(), queue.Queue()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            fn, n = self.jobs.get()
            self.done.put(host_loop_us(fn, n))

    def loop_us(self, fn, n):
        self.jobs.put((fn, n))
        return self.done.get()


def threads(pairs, calls=500, rounds=5):
    """The same calls on the main thread and on a persistent second thread, interleaved."""
    w = Worker()
    for name, (ours, theirs) in pairs.items():
        res = {k: [] for k in ("jm", "tm", "jw", "tw")}
        for fn in (ours, theirs):
            host_loop_us(fn, 100)
            w.loop_us(fn, 100)
        for _ in range(rounds):
            res["jm"].append(host_loop_us(ours, calls))
            res["tm"].append(host_loop_us(theirs, calls))
            res["jw"].append(w.loop_us(ours, calls))
            res["tw"].append(w.loop_us(theirs, calls))
        m = {k: statistics.median(v) for k, v in res.items()}
        print(f"{name:40s} main: jitops {m['jm']:6.2f} PyTorch {m['tm']:6.2f} | worker thread: jitops {m['jw']:6.2f} "
              f"PyTorch {m['tw']:6.2f}", flush=True)


def main():
    dev = "cuda"
    print("extension:", jitops._core._cpp_autograd_active(), file=sys.stderr)
    x = torch.randn(64, 16, device=dev)
    y = torch.randn(64, 16, device=dev)
    xg, yg = x.clone().requires_grad_(), y.clone().requires_grad_()
    idx = torch.randint(0, 64, (8,), device=dev)
    gidx = torch.randint(0, 16, (64, 4), device=dev)
    g = torch.ones(8, 16, device=dev)
    g64 = torch.ones(64, 16, device=dev)
    g64_exp = torch.ones((), device=dev).expand(64, 16)  # a sum's gradient
    g4 = torch.ones(64, 4, device=dev)
    sel_j, sel_t = jitops.index_select(xg, 0, idx), torch.index_select(xg, 0, idx)
    mul_j, mul_t = jitops.mul(xg, yg), torch.mul(xg, yg)
    gat_j, gat_t = jitops.gather(xg, 1, gidx), torch.gather(xg, 1, gidx)
    print(type(sel_j.grad_fn).__name__, sel_j.grad_fn.name(), mul_j.grad_fn.name(), gat_j.grad_fn.name())
    alternate({
        "floor: (x*1).backward": (lambda: (xg * 1).backward(g64), lambda: (xg * 1).backward(g64)),
        "fwd index_select (grad)": (lambda: jitops.index_select(xg, 0, idx), lambda: torch.index_select(xg, 0, idx)),
        "fwd index_select (no grad)": (lambda: jitops.index_select(x, 0, idx), lambda: torch.index_select(x, 0, idx)),
        "bwd only index_select (grad())": (lambda: torch.autograd.grad(sel_j, xg, g, retain_graph=True),
                                           lambda: torch.autograd.grad(sel_t, xg, g, retain_graph=True)),
        "bwd only index_select (.backward)": (lambda: sel_j.backward(g, retain_graph=True),
                                             lambda: sel_t.backward(g, retain_graph=True)),
        "fwd+bwd index_select": (lambda: jitops.index_select(xg, 0, idx).backward(g),
                                 lambda: torch.index_select(xg, 0, idx).backward(g)),
        "fwd mul (grad)": (lambda: jitops.mul(xg, yg), lambda: torch.mul(xg, yg)),
        "bwd only mul (grad())": (lambda: torch.autograd.grad(mul_j, (xg, yg), g64, retain_graph=True),
                                  lambda: torch.autograd.grad(mul_t, (xg, yg), g64, retain_graph=True)),
        "fwd+bwd mul": (lambda: jitops.mul(xg, yg).backward(g64), lambda: torch.mul(xg, yg).backward(g64)),
        "bwd only mul, g expanded (grad())": (lambda: torch.autograd.grad(mul_j, (xg, yg), g64_exp, retain_graph=True),
                                              lambda: torch.autograd.grad(mul_t, (xg, yg), g64_exp, retain_graph=True)),
        "fwd+bwd mul .sum() (the per-call table's)": (lambda: jitops.mul(xg, yg).sum().backward(),
                                                      lambda: torch.mul(xg, yg).sum().backward()),
        "fwd gather (grad)": (lambda: jitops.gather(xg, 1, gidx), lambda: torch.gather(xg, 1, gidx)),
        "bwd only gather (grad())": (lambda: torch.autograd.grad(gat_j, xg, g4, retain_graph=True),
                                     lambda: torch.autograd.grad(gat_t, xg, g4, retain_graph=True)),
        "fwd+bwd gather": (lambda: jitops.gather(xg, 1, gidx).backward(g4),
                           lambda: torch.gather(xg, 1, gidx).backward(g4)),
    })
    # In-place adds into a clone, reduced by sum (its gradient is an expanded tensor of strides 0), as the bench's
    # per-call table calls them: scatter_add_ against index_add_ (NOTES 70).
    acc = torch.zeros(64, 16, device=dev)
    sidx = torch.randint(0, 64, (8, 16), device=dev)
    srcg = torch.randn(8, 16, device=dev, requires_grad=True)
    one = torch.ones((), device=dev)
    sc_j, sc_t = jitops.scatter_add_(acc.clone(), 0, sidx, srcg).sum(), acc.clone().scatter_add_(0, sidx, srcg).sum()
    ia_j, ia_t = jitops.index_add_(acc.clone(), 0, idx, srcg).sum(), acc.clone().index_add_(0, idx, srcg).sum()
    g_full = torch.ones(64, 16, device=dev)
    g_exp = one.expand(64, 16)
    alternate({
        "fwd scatter_add_ (grad)": (lambda: jitops.scatter_add_(acc.clone(), 0, sidx, srcg),
                                    lambda: acc.clone().scatter_add_(0, sidx, srcg)),
        "fwd index_add_ (grad)": (lambda: jitops.index_add_(acc.clone(), 0, idx, srcg),
                                  lambda: acc.clone().index_add_(0, idx, srcg)),
        "bwd only scatter_add_ (grad())": (lambda: torch.autograd.grad(sc_j, srcg, retain_graph=True),
                                           lambda: torch.autograd.grad(sc_t, srcg, retain_graph=True)),
        "bwd only index_add_ (grad())": (lambda: torch.autograd.grad(ia_j, srcg, retain_graph=True),
                                         lambda: torch.autograd.grad(ia_t, srcg, retain_graph=True)),
        "direct gather, g contiguous": (lambda: jitops.gather(g_full, 0, sidx), lambda: torch.gather(g_full, 0, sidx)),
        "direct gather, g expanded": (lambda: jitops.gather(g_exp, 0, sidx), lambda: torch.gather(g_exp, 0, sidx)),
        "direct index_select, g expanded": (lambda: jitops.index_select(g_exp, 0, idx),
                                            lambda: torch.index_select(g_exp, 0, idx)),
    })
    threads({
        "direct index_add_ into zeros": (
            lambda: jitops.index_add_(torch.zeros(64, 16, device=dev), 0, idx, g, deterministic=False),
            lambda: torch.zeros(64, 16, device=dev).index_add_(0, idx, g)),
        "direct mul x2": (lambda: (jitops.mul(g64, y), jitops.mul(g64, x)), lambda: (torch.mul(g64, y), torch.mul(g64, x))),
        "direct index_select": (lambda: jitops.index_select(x, 0, idx), lambda: torch.index_select(x, 0, idx)),
    })


if __name__ == "__main__":
    main()
