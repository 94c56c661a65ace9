# SPDX-License-Identifier: Apache-2.0
"""The torch.distributed backend "serene" under torchrun, nothing else.

    torchrun --standalone --nproc_per_node 2 test_pg.py

(meson runs `python3 -m torch.distributed.run`, which is torchrun, so the
interpreter is the one that imports torch.) No serene-run and no
SERENE_SWITCH: rank 0 starts the embedded serene-switch through the
process group's rendezvous ($SERENE_SWITCH_BIN names the build's).

Checks:
- broadcast, all_gather, barrier and an int64 all_reduce work (delegated
  to Gloo);
- float32 all_reduce SUM and AVG, async and sync, and
  all_reduce_coalesced go through the switch (libserene's op counter
  moves) and agree with a Gloo group on the same ranks within the
  quantization bound;
- DDP over "serene": one step from the same weights and batch leaves the
  parameters within lr times the bound of DDP over Gloo; full training
  reaches Gloo's test accuracy within 1 point, the same model on every
  rank, through the switch.
Every wait is bounded: the group's timeout (60 s) and libserene's deadline.
"""
import datetime
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import serene_torch

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
HIDDEN, BATCH, EPOCHS, LR = 100, 64, 3, 0.05
DIM, CLASSES, N_TRAIN, N_TEST = 32, 10, 4096, 2048


def log(*args):
    print(f"rank {RANK}:", *args, flush=True)


def check(cond, what):
    if not cond:
        log("FAIL:", what)
        sys.exit(1)


def bound(values, n, avg):
    """serene.h's allreduce bound for the exact results of `values` (all
    ranks' inputs' max magnitude taken over the whole tensor: >= each
    packet's): N * 2^(E-B) (SUM) or 2^(E-B) (AVG), plus an ulp of the
    result; plus an ulp for Gloo's own float rounding."""
    m = float(values.abs().max())
    e = max(math.floor(math.log2(m)) if m > 0 else -96, -96)
    b = 30 - math.ceil(math.log2(n))
    ulp = 2.0 ** (math.floor(math.log2(m)) - 23) if m > 0 else 2.0 ** -149
    return (1 if avg else n) * 2.0 ** (e - b) + n * ulp


def ops_done():
    return serene_torch.stats()["ops_completed"]


def check_delegated():
    t = torch.full((5,), float(RANK + 1))
    dist.broadcast(t, 0)
    check(torch.equal(t, torch.ones(5)), f"broadcast gave {t}")
    outs = [torch.zeros(3, dtype=torch.int32) for _ in range(WORLD)]
    dist.all_gather(outs, torch.full((3,), RANK, dtype=torch.int32))
    check(all(torch.equal(o, torch.full((3,), r, dtype=torch.int32)) for r, o in enumerate(outs)),
          f"all_gather gave {outs}")
    dist.barrier()
    i = torch.tensor([RANK + 1], dtype=torch.int64)
    before = ops_done()
    dist.all_reduce(i)
    check(int(i) == WORLD * (WORLD + 1) // 2 and ops_done() == before,
          f"int64 all_reduce gave {int(i)} (or went to the switch)")
    log("ok broadcast, all_gather, barrier, int64 all_reduce (gloo)")


def check_allreduce(gloo):
    g = torch.Generator().manual_seed(11 + RANK)
    x = torch.randn(3000, generator=g) * (RANK + 1)
    allx = [torch.zeros_like(x) for _ in range(WORLD)]
    dist.all_gather(allx, x, group=gloo)
    allx = torch.stack(allx)
    exact = allx.double().sum(0)
    for op, avg in ((dist.ReduceOp.SUM, False), (dist.ReduceOp.AVG, True)):
        before = ops_done()
        t = x.clone()
        work = dist.all_reduce(t, op=op, async_op=True)
        check(work.wait(), "wait() returned false")
        want = exact / WORLD if avg else exact
        err = float((t.double() - want).abs().max())
        b = bound(allx, WORLD, avg)
        check(ops_done() == before + 1, "all_reduce did not go through the switch")
        check(err <= b, f"{'AVG' if avg else 'SUM'}: error {err:.3g} above the bound {b:.3g}")
        log(f"ok all_reduce {'AVG' if avg else 'SUM'} async: error {err:.3g} <= {b:.3g}")
    parts = [x[:1000].clone().view(10, 100), x[1000:].clone()]
    before = ops_done()
    dist.all_reduce_coalesced(parts)
    err = float((torch.cat([p.reshape(-1) for p in parts]).double() - exact).abs().max())
    check(ops_done() == before + 1 and err <= bound(allx, WORLD, False),
          f"all_reduce_coalesced: error {err:.3g}, ops {ops_done() - before}")
    log(f"ok all_reduce_coalesced: one op, error {err:.3g}")


def dataset():
    g = torch.Generator().manual_seed(7)
    centers = torch.randn(CLASSES, DIM, generator=g)

    def draw(n):
        y = torch.randint(0, CLASSES, (n,), generator=g)
        return centers[y] + 2.0 * torch.randn(n, DIM, generator=g), y
    return draw(N_TRAIN), draw(N_TEST)


def train(group, data, epochs, steps=None):
    (xtr, ytr), (xte, yte) = data
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, CLASSES))
    # group None: no DDP (this rank's own gradients).
    ddp = model if group is None else DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    order = torch.Generator().manual_seed(3)
    grads, done = None, 0
    for _ in range(epochs):
        mine = torch.randperm(N_TRAIN, generator=order)[RANK::WORLD]
        for i in range(0, mine.numel() - BATCH + 1, BATCH):
            idx = mine[i:i + BATCH]
            opt.zero_grad()
            F.cross_entropy(ddp(xtr[idx]), ytr[idx]).backward()
            grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
            opt.step()
            done += 1
            if steps is not None and done == steps:
                break
    with torch.no_grad():
        acc = 100.0 * (model(xte).argmax(dim=1) == yte).float().mean().item()
    return acc, torch.cat([p.detach().reshape(-1) for p in model.parameters()]), grads


def check_ddp(gloo):
    data = dataset()
    serene = dist.distributed_c10d._get_default_group()
    _, _, g_local = train(None, data, 1, steps=1)
    g_all = [torch.zeros_like(g_local) for _ in range(WORLD)]
    dist.all_gather(g_all, g_local, group=gloo)
    _, w_gloo, _ = train(gloo, data, 1, steps=1)
    before = ops_done()
    _, w_serene, _ = train(serene, data, 1, steps=1)
    # (DDP's first step has one bucket; it rebuilds them by bucket_cap_mb after it.)
    check(ops_done() - before >= 1, "DDP step: no switch op")
    # DDP divides each rank's gradients by N and sums them: SUM's bound on
    # g/N; the update adds lr times that, and each weight's rounding (an ulp).
    wmax = float(w_gloo.abs().max())
    b = LR * bound(torch.stack(g_all) / WORLD, WORLD, False) + 2.0 ** (math.floor(math.log2(wmax)) - 23)
    err = float((w_gloo - w_serene).abs().max())
    check(err <= b, f"one DDP step: max |w_gloo - w_serene| {err:.3g} above the bound {b:.3g}")
    log(f"ok one DDP step: params within {err:.3g} <= {b:.3g} of gloo's")
    acc_gloo, _, _ = train(gloo, data, EPOCHS)
    before = ops_done()
    acc_serene, w, _ = train(serene, data, EPOCHS)
    ops = ops_done() - before
    log(f"test accuracy: DDP over gloo {acc_gloo:.2f}%, over serene {acc_serene:.2f}% "
        f"({ops} switch ops)")
    steps = EPOCHS * (N_TRAIN // WORLD // BATCH)
    # One bucket a step: DDP caps its first bucket at 1 MiB, which holds this model.
    check(ops >= steps, f"{ops} switch ops in {steps} steps: want a bucket each")
    check(acc_gloo > 60 and acc_serene > 60, "a run did not learn")
    check(abs(acc_gloo - acc_serene) <= 1.0, "accuracies differ by more than 1 point")
    ref = w.clone()
    dist.broadcast(ref, 0)
    check(torch.equal(ref, w), "ranks hold different models after DDP over serene")


def main():
    check("SERENE_SWITCH" not in os.environ, "SERENE_SWITCH is set: this test starts its own")
    dist.init_process_group("serene", timeout=datetime.timedelta(seconds=60))
    check(dist.get_backend().lower() == "serene", f"backend {dist.get_backend()}")
    check(isinstance(dist.distributed_c10d._get_default_group(), serene_torch.ProcessGroupSerene),
          "the default group is not serene's")
    gloo = dist.new_group(backend="gloo")
    check_delegated()
    check_allreduce(gloo)
    check_ddp(gloo)
    dist.barrier()
    dist.destroy_process_group()
    log("PASS")


if __name__ == "__main__":
    main()
