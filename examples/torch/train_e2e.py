#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""train_e2e.py - a real data-parallel training job under torchrun, timed
the way its user sees it: wall time to a test accuracy.

    torchrun --nnodes N ... train_e2e.py --system serene-ddp --model resnet18 \
        --data digits.bin --steps 300 --out DIR

--system picks how the ranks combine their gradients, the one thing that
differs between runs:
  gloo-ddp         DDP over init_process_group("gloo") (Gloo's ring
                   allreduce, float32 values)
  gloo-ddp-fp16    the same with torch's fp16_compress_hook (float16 values
                   on the ring: what a practitioner on slow links turns on)
  serene-ddp       DDP over init_process_group("serene") (the switch sums;
                   float32 gradients as 32-bit values: SERENE_WIRE_BITS=32)
  serene-ddp16     the same with SERENE_WIRE_BITS=16: float32 gradients,
                   16-bit values on the wire
  serene-ddp-fp16  DDP over "serene" with torch's fp16_compress_hook
                   (float16 buckets through the switch as 16-bit values)
  serene-ssp       no DDP: serene_torch.SSP over the switch's store; the job's
                   policy (ssp:S) is the switch's (SERENE_SWITCH_JOB_OPTS for
                   the embedded one, the job spec for a switch given in
                   SERENE_SWITCH); --staleness S states it and is checked
  serene-stream    no DDP: serene_torch.StaleSync(model, optimizer,
                   wire_bits=--wire-bits): SSP over the streaming allreduce
                   (each step starts its clock's allreduce of the gradients
                   and applies, through the optimizer, every sum the switch's
                   bound requires); the policy as for serene-ssp, checked
Everything else is the same for every system: the model and its seeded
initial weights, SGD (lr, --momentum, default 0; serene-ssp is plain SGD
only: each SSP worker adds -lr/N * grad to the store, so a clock of N
updates is DDP's step), the shards (each epoch a seeded permutation, rank r
takes every N-th sample from r), the batch per rank, and the stragglers:
before a step, with probability --straggle-p (seeded by rank and step), a
rank sleeps U(lo, hi) times --straggle-base-ms (default: the median compute
time of a step measured before the timed loop, which does not depend on the
system).

Models: resnet18 (torchvision's, 11.2 M parameters, its first convolution
taking 1 channel, the standard stem: 28x28 digits shrink to 7x7 before
the first block) and mlp (the demo's 784-100-10).
Data: --data, the SRDIGIT1 file of examples/train/fetch_data.sh or a
directory of MNIST idx files, split 8:2 (train_torch.py's reader), or
--synthetic.

Timing: the compute of a step (forward, backward, optimizer) is measured
alone, on the rank's own model copy, for --calib steps before the timed
loop; a step's communication is its wall time less that median. Rank 0
measures the initial test accuracy off the clock (wall time 0). Every
--eval-every steps (and at the end) the ranks meet at a barrier (on the
clock: under SSP a rank ahead waits there for the slowest), then the clock
stops and rank 0 measures the test accuracy of its model (for SSP: its
local copy, all pulled or applied updates in) outside the timed loop. The
time to --target-acc is interpolated linearly in wall time between the last
evaluation below the target and the first at or above it
(time_to_target_s; 0 when the initial accuracy is already there; "never"
when no evaluation reaches it); time_to_target_eval_s is the wall time of
that first evaluation. Rank 0 writes DIR/steps.csv (step, wall_s, loss),
DIR/evals.csv (step, wall_s, test_acc; step 0 the initial accuracy) and
DIR/summary.txt (key=value: system, model, world, steps, momentum,
wire_bits, steps_per_s, step_ms, compute_ms, comm_ms, final_acc,
time_to_target_s, ...). A progress line goes to stdout every --eval-every
steps.
"""
import argparse
import os
import random
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import serene_torch
from train_torch import load

SYSTEMS = ["gloo-ddp", "gloo-ddp-fp16", "serene-ddp", "serene-ddp16", "serene-ddp-fp16",
           "serene-ssp", "serene-stream"]


def make_model(name, classes):
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.ReLU(),
                                   torch.nn.Linear(100, classes))
    import torchvision
    m = torchvision.models.resnet18(num_classes=classes)
    m.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return m


def shape(x, model):
    return x if model == "mlp" else x.view(-1, 1, 28, 28)


def accuracy(model, xte, yte, name):
    model.eval()
    with torch.no_grad():
        hits = 0
        for i in range(0, len(xte), 500):
            hits += (model(shape(xte[i:i + 500], name)).argmax(1) == yte[i:i + 500]).sum().item()
    model.train()
    return 100.0 * hits / len(xte)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="SRDIGIT1 file or directory of MNIST idx files")
    src.add_argument("--synthetic", action="store_true", help="MNIST-shaped synthetic data")
    ap.add_argument("--synthetic-n", type=int, default=10000)
    ap.add_argument("--system", choices=SYSTEMS, required=True)
    ap.add_argument("--staleness", type=int, default=0,
                    help="serene-ssp, serene-stream: the job's s (checked)")
    ap.add_argument("--wire-bits", type=int, choices=[16, 32], default=16,
                    help="serene-stream: bits per value on the wire")
    ap.add_argument("--momentum", type=float, default=0.0,
                    help="SGD momentum (not serene-ssp: plain SGD through the store)")
    ap.add_argument("--model", choices=["resnet18", "mlp"], default="resnet18")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--straggle-p", type=float, default=0.0)
    ap.add_argument("--straggle-range", default="0.5,2", help="LO,HI: sleep U(LO,HI) x base")
    ap.add_argument("--straggle-base-ms", type=float, default=0.0, help="0: median compute")
    ap.add_argument("--calib", type=int, default=5, help="compute-only steps measured first")
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--target-acc", type=float, default=90.0)
    ap.add_argument("--out", default=None, help="rank 0's results directory")
    ap.add_argument("--expect-accuracy", type=float, metavar="PCT",
                    help="exit 1 when the final test accuracy is below PCT (tests)")
    a = ap.parse_args(argv)
    lo, _, hi = a.straggle_range.partition(",")
    a.straggle = (float(lo), float(hi or lo))
    if a.steps < 1 or a.batch < 1 or a.eval_every < 1 or a.calib < 1:
        ap.error("--steps, --batch, --eval-every and --calib must be positive")
    if not 0 <= a.straggle_p <= 1 or not 0 <= a.straggle[0] <= a.straggle[1]:
        ap.error("--straggle-p must be in 0..1 and --straggle-range LO,HI with 0 <= LO <= HI")
    if not 0 <= a.momentum < 1:
        ap.error("--momentum must be in [0, 1)")
    if a.system == "serene-ssp" and a.momentum != 0:
        ap.error("serene-ssp adds -lr/N * grad to the store (plain SGD): --momentum must be 0; "
                 "serene-stream runs SSP through the optimizer, momentum included")
    if a.staleness < 0:
        ap.error("--staleness must be >= 0")
    return a


def wire_bits(a):
    """Bits per gradient value on the wire (the store's words for serene-ssp)."""
    if a.system in ("gloo-ddp-fp16", "serene-ddp16", "serene-ddp-fp16"):
        return 16
    return a.wire_bits if a.system == "serene-stream" else 32


def check_policy(staleness):
    """The switch's policy (known after the first clock) is --staleness's."""
    info = serene_torch.clock_info()
    want = "bsp" if staleness == 0 else f"ssp:{staleness}"
    got = info["mode"] if info["mode"] != "ssp" else f"ssp:{info['staleness']}"
    if got != want:
        raise SystemExit(f"train_e2e: the job runs {got} at the switch, --staleness says {want}")


def calibrate(a, model, opt, xtr, ytr, n):
    """Median compute time of a step (s): a copy of the model, this rank's
    first batches, no communication, after 2 warm-up steps (allocation);
    the real model is left untouched."""
    import copy
    m = copy.deepcopy(model)
    o = torch.optim.SGD(m.parameters(), lr=0.0, momentum=a.momentum)
    times = []
    for k in range(n + 2):
        idx = torch.arange(k * a.batch, (k + 1) * a.batch) % len(xtr)
        t0 = time.perf_counter()
        o.zero_grad()
        F.cross_entropy(m(shape(xtr[idx], a.model)), ytr[idx]).backward()
        o.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[2:])


def main(argv=None):
    a = parse(argv)
    if a.system == "serene-stream" and not hasattr(serene_torch, "StaleSync"):
        raise SystemExit("train_e2e: --system serene-stream needs serene_torch.StaleSync (SSP over "
                         f"the streaming allreduce), which {serene_torch.__file__} does not have")
    torch.manual_seed(a.seed)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    (xtr, ytr), (xte, yte), classes = load(a)
    xtr, ytr = torch.from_numpy(np.ascontiguousarray(xtr)), torch.from_numpy(ytr)
    xte, yte = torch.from_numpy(np.ascontiguousarray(xte)), torch.from_numpy(yte)
    model = make_model(a.model, classes)  # the same weights on every rank (seed)
    if a.system.startswith("serene-ddp"):
        # Read by libserene when init_process_group creates its context.
        os.environ["SERENE_WIRE_BITS"] = "16" if a.system == "serene-ddp16" else "32"
    dist.init_process_group("gloo" if a.system.startswith("gloo-") else "serene")
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    ssp = sync = None
    if a.system == "serene-ssp":
        # Each worker adds -lr/N * grad: one clock of N updates is DDP's
        # step on the averaged gradient.
        ssp = serene_torch.SSP(model.parameters(), lr=a.lr / world)
        net = model
    elif a.system == "serene-stream":
        sync = serene_torch.StaleSync(model, opt, wire_bits=a.wire_bits)
        net = model
    else:
        net = DDP(model)
        if a.system.endswith("-fp16"):
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            net.register_comm_hook(None, default_hooks.fp16_compress_hook)
    compute_s = calibrate(a, model, opt, xtr[rank::world], ytr[rank::world], a.calib)
    base = a.straggle_base_ms / 1000 if a.straggle_base_ms > 0 else compute_s
    rng = random.Random(a.seed * 1000003 + rank)
    order = torch.Generator().manual_seed(a.seed)
    steps_per_epoch = (len(xtr) // world) // a.batch
    if steps_per_epoch < 1:
        raise SystemExit(f"train_e2e: {len(xtr)} samples do not make a batch of {a.batch} per rank")
    mine, wall, evals, rows, step_times = None, 0.0, [], [], []
    # The initial accuracy, off the clock (the others wait at the barrier):
    # the time to target is interpolated from it.
    evals.append((0, 0.0, accuracy(model, xte, yte, a.model) if rank == 0 else 0.0))
    dist.barrier()
    for step in range(a.steps):
        k = step % steps_per_epoch
        if k == 0:
            mine = torch.randperm(len(xtr), generator=order)[rank::world]
        idx = mine[k * a.batch:(k + 1) * a.batch]
        t0 = time.perf_counter()
        if a.straggle_p > 0 and rng.random() < a.straggle_p:
            time.sleep(rng.uniform(*a.straggle) * base)
        loss = F.cross_entropy(net(shape(xtr[idx], a.model)), ytr[idx])
        if ssp:
            model.zero_grad()
            loss.backward()
            ssp.step()
        elif sync:
            loss.backward()  # the gradients are zero: sync.step() zeroed them
            sync.step()
        else:
            opt.zero_grad()
            loss.backward()
            opt.step()
        dt = time.perf_counter() - t0
        if ssp and step == 0:
            check_policy(a.staleness)
        if sync and step == 0 and sync.staleness != a.staleness:
            raise SystemExit(f"train_e2e: StaleSync runs with staleness {sync.staleness} (the "
                             f"switch's policy), --staleness says {a.staleness}")
        wall += dt
        step_times.append(dt)
        evaluate = (step + 1) % a.eval_every == 0 or step + 1 == a.steps
        if evaluate:
            # On the clock: a rank ahead (SSP) waits here for the slowest,
            # so that the wait an evaluation forces is not free.
            t1 = time.perf_counter()
            dist.barrier()
            wall += time.perf_counter() - t1
        rows.append((step + 1, wall, loss.item()))
        if evaluate:
            acc = accuracy(model, xte, yte, a.model) if rank == 0 else 0.0
            evals.append((step + 1, wall, acc))
            if rank == 0:
                print(f"train_e2e: {a.system} {a.model} N={world} step {step + 1}/{a.steps} "
                      f"{wall:.1f} s loss {loss.item():.3f} test {acc:.2f}%", flush=True)
            dist.barrier()  # every rank resumes together: rank 0's test is not on the clock
    if ssp:
        ssp.sync()
    if sync:
        sync.sync()  # every outstanding sum applied: the replicas are identical
    final = accuracy(model, xte, yte, a.model)
    if rank == 0:
        write(a, world, rows, evals, step_times, compute_s, base, final)
    dist.destroy_process_group()
    if a.expect_accuracy is not None and final < a.expect_accuracy:
        print(f"train_e2e: rank {rank}: FAIL: final test accuracy {final:.2f}% < "
              f"{a.expect_accuracy}%", flush=True)
        return 1
    return 0


def time_to_target(evals, target):
    """(interpolated, at the evaluation) wall times to the first evaluation
    at or above target; evals[0] is the initial accuracy at 0 s. (None,
    None) when none reaches it."""
    for i, (_, w, acc) in enumerate(evals):
        if acc >= target:
            if i == 0:
                return 0.0, 0.0
            _, w0, acc0 = evals[i - 1]  # the last evaluation below the target
            return w0 + (target - acc0) / (acc - acc0) * (w - w0), w
    return None, None


def write(a, world, rows, evals, step_times, compute_s, base, final):
    step = statistics.median(step_times)
    hit, hit_eval = time_to_target(evals, a.target_acc)
    summary = {
        "system": a.system, "model": a.model, "world": world, "steps": a.steps,
        "batch": a.batch, "lr": a.lr, "momentum": a.momentum, "wire_bits": wire_bits(a),
        "seed": a.seed, "staleness": a.staleness, "straggle_p": a.straggle_p,
        "straggle_range": a.straggle_range, "straggle_base_ms": round(base * 1000, 1),
        "wall_s": round(rows[-1][1], 2), "steps_per_s": round(len(rows) / rows[-1][1], 3),
        "step_ms": round(step * 1000, 1), "compute_ms": round(compute_s * 1000, 1),
        "comm_ms": round(max(step - compute_s, 0) * 1000, 1), "final_acc": round(final, 2),
        "initial_acc": round(evals[0][2], 2), "target_acc": a.target_acc,
        "time_to_target_s": round(hit, 2) if hit is not None else "never",
        "time_to_target_eval_s": round(hit_eval, 2) if hit_eval is not None else "never",
    }
    line = " ".join(f"{k}={v}" for k, v in summary.items())
    print(f"train_e2e: {line}", flush=True)
    if not a.out:
        return
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "steps.csv"), "w") as f:
        f.write("step,wall_s,loss\n")
        f.writelines(f"{s},{w:.4f},{lo:.5f}\n" for s, w, lo in rows)
    with open(os.path.join(a.out, "evals.csv"), "w") as f:
        f.write("step,wall_s,test_acc\n")
        f.writelines(f"{s},{w:.4f},{acc:.3f}\n" for s, w, acc in evals)
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in summary.items())


if __name__ == "__main__":
    sys.exit(main())
