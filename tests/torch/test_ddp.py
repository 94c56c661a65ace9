# SPDX-License-Identifier: Apache-2.0
"""DDP with the Serene comm hook trains like DDP with gloo.

Run as every rank under serene-run:
    serene-run -n 2 -- python3 test_ddp.py

A synthetic, seeded 10-class problem (Gaussian clusters that overlap, so the
accuracy is well below 100% and a difference would show) and an MLP are
trained twice from the same initial weights and the same batches: once by
DDP over gloo, once by DDP with serene_torch.allreduce_hook. Checks: both
learn (test accuracy > 60%), the accuracies differ by at most 1 point, every
rank ends with the same model, and the gradients really went through the
switch (hook calls, allreduce operations counted by libserene).

check_async: the hook returns before its allreduce completes, and its
future then holds what the synchronous allreduce_ gives for the same
input, bit for bit. Ordered, not timed: rank 0 calls the hook and checks
that the future is not done before a gloo barrier that rank 1 passes
before it starts its own part of the op, so the switch cannot have
answered yet.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import serene_torch
from torch_common import (CLASSES, DIM, N_TRAIN, RANK, WORLD, check, cluster_dataset, gloo_done,
                          gloo_init, log)

HIDDEN, BATCH, EPOCHS, LR = 100, 64, 4, 0.05


def train(mode, data):
    (xtr, ytr), (xte, yte) = data
    torch.manual_seed(1)  # same initial weights in both modes (DDP also broadcasts rank 0's)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, CLASSES))
    ddp = DDP(model)
    calls = [0]
    if mode == "serene":
        def hook(state, bucket):
            calls[0] += 1
            return serene_torch.allreduce_hook(state, bucket)
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    order = torch.Generator().manual_seed(3)
    for epoch in range(EPOCHS):
        perm = torch.randperm(N_TRAIN, generator=order)
        mine = perm[RANK::WORLD]  # this rank's shard of the epoch
        for i in range(0, mine.numel() - BATCH + 1, BATCH):
            idx = mine[i:i + BATCH]
            opt.zero_grad()
            F.cross_entropy(ddp(xtr[idx]), ytr[idx]).backward()
            opt.step()
    with torch.no_grad():
        acc = 100.0 * (model(xte).argmax(dim=1) == yte).float().mean().item()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return acc, flat, calls[0]


class _Bucket:
    """Stands in for dist.GradBucket: the hook reads only buffer()."""

    def __init__(self, buf):
        self._buf = buf

    def buffer(self):
        return self._buf


def check_async():
    g = torch.Generator().manual_seed(11 + RANK)
    x = torch.randn(1 << 16, generator=g)
    ref = serene_torch.allreduce_(x.clone(), "avg")
    buf = x.clone()
    if RANK == 0:
        fut = serene_torch.allreduce_hook(None, _Bucket(buf))
        pending = not fut.done()
        dist.barrier()  # rank 1 starts its part only after this
    else:
        dist.barrier()
        fut = serene_torch.allreduce_hook(None, _Bucket(buf))
        pending = True
    out = fut.wait()
    log(f"hook future pending at return: {pending}; same as allreduce_: {torch.equal(out, ref)}")
    check(pending, "the hook's future was done before the other rank started its allreduce")
    check(out is buf and torch.equal(out, ref), "the hook's result differs from allreduce_'s")


def main():
    serene_torch.init()
    gloo_init()
    check_async()
    data = cluster_dataset()
    acc_gloo, w_gloo, _ = train("gloo", data)
    before = serene_torch.stats()["ops_completed"]
    acc_serene, w_serene, calls = train("serene", data)
    ops = serene_torch.stats()["ops_completed"] - before
    log(f"test accuracy: DDP+gloo {acc_gloo:.2f}%, DDP+Serene hook {acc_serene:.2f}% "
        f"(hook calls {calls}, serene ops {ops}); max |w_gloo - w_serene| "
        f"{(w_gloo - w_serene).abs().max().item():.3g}")
    check(calls > 0 and ops >= calls, f"hook calls {calls}, serene ops {ops}: hook not used")
    check(acc_gloo > 60 and acc_serene > 60, "a run did not learn")
    check(abs(acc_gloo - acc_serene) <= 1.0, "accuracies differ by more than 1 point")
    # Every rank must hold the same model: compare against rank 0's.
    ref = w_serene.clone()
    dist.broadcast(ref, 0)
    check(torch.equal(ref, w_serene), "ranks hold different models after DDP+Serene")
    gloo_done()
    serene_torch.finalize()
    log("PASS")


if __name__ == "__main__":
    main()
