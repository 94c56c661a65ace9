#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""grad_error.py - the error of each 16-bit path on real gradients, measured
through the real back ends: ResNet-18 (examples/torch/train_e2e.py's model)
on the MNIST digits, N ranks under torchrun, each its own minibatch.

    bench/grad_error.sh [--nproc 4] [--points 0,20,60] [--batch 32] [--out FILE.md]

At each training point (a number of SGD steps of the averaged gradient,
lr 0.05, taken the same on every rank) every rank computes its gradient
g_r, and the mean over ranks goes through:
  serene 32     serene_torch.allreduce_(g, "avg", wire_bits=32)
  serene 16     the same with wire_bits=16: float32 in, 16-bit values on the
                wire, float32 out (serene-ddp16)
  serene fp16   what torch's fp16_compress_hook hands the "serene" backend:
                (g.half() / N) summed through the switch as 16-bit values
  gloo fp16     the same through a Gloo group: float16 on Gloo's ring, its
                own float16 additions (the baseline, gloo-ddp-fp16)
  bf16 (torch)  (g.bfloat16() / N) summed in bfloat16 on one rank, in rank
                order: Gloo here has no bfloat16 allreduce, so this is
                torch's arithmetic, not a back end's
The reference is the mean of the gathered g_r in float64. Per path: the
relative L2 error ||r - ref|| / ||ref||, the largest error relative to
the gradient's largest magnitude, and the share of elements nonzero in the
reference that come back as 0. Rank 0 prints a markdown table (and writes
it to --out). Started by bench/grad_error.sh (torchrun, a serene-switch with
GRAD_ERROR_ELEMS words per packet: as many 32-bit values, twice as many
16-bit ones); needs the torch extension (build with
-Dtorch=enabled).
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

import serene_torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "torch"))
from train_e2e import make_model, shape  # noqa: E402
from train_torch import load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="SRDIGIT1 file (examples/train/fetch_data.sh)")
    ap.add_argument("--points", default="0,20,60", help="SGD steps before each measurement")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    points = sorted({int(p) for p in a.points.split(",")})
    torch.manual_seed(1)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("serene")
    rank, world = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    (xtr, ytr), _, classes = load(argparse.Namespace(data=a.data, synthetic=False, synthetic_n=0))
    xtr, ytr = torch.from_numpy(np.ascontiguousarray(xtr)), torch.from_numpy(ytr)
    model = make_model("resnet18", classes)
    params = [p for p in model.parameters()]
    gen = torch.Generator().manual_seed(7)
    rows, done, t0 = [], 0, time.time()

    def grad():
        idx = torch.randint(0, len(xtr), (a.batch,), generator=gen)
        model.zero_grad()
        F.cross_entropy(model(shape(xtr[idx], "resnet18")), ytr[idx]).backward()
        return torch.cat([p.grad.reshape(-1) for p in params])

    for pt in points:
        while done < pt:  # the same SGD steps on every rank: the averaged gradient
            g = grad()
            serene_torch.allreduce_(g, "avg", wire_bits=32)
            o = 0
            with torch.no_grad():
                for p in params:
                    p.sub_(0.05 * g[o:o + p.numel()].view_as(p))
                    o += p.numel()
            done += 1
        # A different minibatch per rank at the measurement.
        for _ in range(rank + 1):
            g = grad()
        gathered = [torch.empty_like(g) for _ in range(world)]
        dist.all_gather(gathered, g, group=gloo)
        ref = torch.stack(gathered).double().mean(0)
        res = {}
        for name, bits in (("serene 32", 32), ("serene 16", 16)):
            t = g.clone()
            serene_torch.allreduce_(t, "avg", wire_bits=bits)
            res[name] = t.double()
        h = g.half().div_(world)
        t = h.clone()
        dist.all_reduce(t)  # float16 through the "serene" backend: 16-bit values
        res["serene fp16"] = t.double()
        t = h.clone()
        dist.all_reduce(t, group=gloo)
        res["gloo fp16"] = t.double()
        gb = [x.bfloat16().div_(world) for x in gathered]
        acc = gb[0].clone()
        for x in gb[1:]:
            acc += x
        res["bf16 (torch)"] = acc.double()
        nz = ref != 0
        for name, r in res.items():
            rel = float((r - ref).norm() / ref.norm())
            worst = float((r - ref).abs().max() / ref.abs().max())
            zeroed = float(((r == 0) & nz).sum()) / float(nz.sum())
            rows.append((pt, name, rel, worst, zeroed))
        if rank == 0:
            print(f"grad_error: step {pt}: {g.numel()} gradients, {time.time() - t0:.0f} s",
                  flush=True)
    if rank == 0:
        lines = [f"ResNet-18 ({g.numel():,} gradients), N = {world}, batch {a.batch} per rank, "
                 f"MNIST digits; training points (SGD steps) {a.points}; "
                 f"{os.environ.get('GRAD_ERROR_ELEMS', '?')} words per packet (a 32-bit value "
                 "each, two 16-bit ones)", "",
                 "| step | path | rel. L2 error | max error / max abs | nonzero -> 0 |",
                 "|---|---|---|---|---|"]
        lines += [f"| {pt} | {n} | {rel:.2e} | {w:.2e} | {100 * z:.3f}% |"
                  for pt, n, rel, w, z in rows]
        text = "\n".join(lines)
        print(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text + "\n")
    dist.barrier(group=gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
