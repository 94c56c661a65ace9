# SPDX-License-Identifier: Apache-2.0
"""DDP iteration time with several gradient buckets: the "serene" backend
(async Work, overlaps backward) against Gloo with serene_torch's allreduce_hook
(asynchronous too since it returns a pending future), and plain Gloo.

    torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 \\
        bench/torch_overlap.py [--layers 5 --width 1024 --bucket-mb 4 ...]

(bench/torch_overlap.sh sets PYTHONPATH and SERENE_SWITCH_BIN from a build
directory and runs this.) The default group is "serene" (rank 0 starts the
embedded switch); a Gloo group on the same ranks carries the two other
modes:
  serene  DDP(model)                                 default group "serene"
  hook    DDP(model, process_group=gloo) + register_comm_hook(allreduce_hook)
  sync    DDP(model, process_group=gloo) + a synchronous hook: the bucket
          averaged by serene_torch.allreduce_ inside the hook, which returns
          a completed future (backward waits for every bucket)
  gloo    DDP(model, process_group=gloo)
  local   the model alone, no DDP: the compute, for scale
The model is an MLP of --layers square Linear layers of --width (4 MiB of
float32 gradients each at 1024) and a 10-way head; bucket_cap_mb is
--bucket-mb, so a step sends several buckets. Each mode gets a fresh DDP
from the same weights; modes take turns for --rounds rounds of --iters
timed iterations (after --warmup untimed ones, in which DDP rebuilds its
buckets), so the host's load drifts across all three alike. Reported:
rank 0's median and best iteration time (forward, backward with its
allreduces, SGD step) per mode, in ms. Verified after timing: each mode
with DDP leaves the same parameters on every rank.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import serene_torch

MODES = ("serene", "hook", "sync", "gloo", "local")


def build(args):
    torch.manual_seed(1)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(args.width, 10))
    return torch.nn.Sequential(*layers)


def sync_hook(state, bucket):
    """The synchronous baseline: average the bucket before returning."""
    buf = bucket.buffer()
    serene_torch.allreduce_(buf, "avg")
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


def wrap(mode, gloo, args):
    model = build(args)
    if mode == "local":
        return model
    if mode == "serene":
        return DDP(model, bucket_cap_mb=args.bucket_mb)
    ddp = DDP(model, process_group=gloo, bucket_cap_mb=args.bucket_mb)
    if mode == "hook":
        ddp.register_comm_hook(None, serene_torch.allreduce_hook)
    elif mode == "sync":
        ddp.register_comm_hook(None, sync_hook)
    return ddp


def run(ddp, opt, batch, n):
    x, y = batch
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return times


def same_on_all_ranks(ddp, gloo):
    w = torch.cat([p.detach().reshape(-1) for p in ddp.parameters()])
    ref = w.clone()
    dist.broadcast(ref, 0, group=gloo)
    return torch.equal(ref, w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=5)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--bucket-mb", type=float, default=4)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="one JSON object on rank 0's stdout")
    args = ap.parse_args()

    dist.init_process_group("serene", timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    g = torch.Generator().manual_seed(5 + rank)
    batch = (torch.randn(args.batch, args.width, generator=g),
             torch.randint(0, 10, (args.batch,), generator=g))
    ddps = {m: wrap(m, gloo, args) for m in MODES}
    opts = {m: torch.optim.SGD(d.parameters(), lr=1e-3) for m, d in ddps.items()}
    times = {m: [] for m in MODES}
    for m in MODES:
        run(ddps[m], opts[m], batch, args.warmup)
    for _ in range(args.rounds):
        for m in MODES:
            dist.barrier(group=gloo)
            times[m] += run(ddps[m], opts[m], batch, args.iters)
    ok = all(same_on_all_ranks(ddps[m], gloo) for m in MODES if m != "local")
    grads_mib = sum(p.numel() for p in ddps["gloo"].parameters()) * 4 / 2**20
    if rank == 0:
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        res = {m: {"median_ms": 1e3 * statistics.median(t), "best_ms": 1e3 * min(t),
                   "iters": len(t)} for m, t in times.items()}
        cfg = (f"world {world}, MLP {args.layers}x{args.width}^2 + head ({grads_mib:.1f} MiB "
               f"of gradients), batch {args.batch}, bucket_cap_mb {args.bucket_mb}, "
               f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
               f"loadavg {' '.join(load)}")
        if args.json:
            print(json.dumps({"config": cfg, "results": res, "verified": ok}))
        else:
            print(cfg)
            for m in MODES:
                r = res[m]
                print(f"{m:7s} median {r['median_ms']:8.1f} ms  best {r['best_ms']:8.1f} ms  "
                      f"({r['iters']} iterations)")
            print("verified: same parameters on every rank" if ok else "MISMATCH across ranks")
        sys.stdout.flush()
    dist.barrier(group=gloo)
    del ddps, opts
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
