#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""train_torch.py - the paper's MLP (784-100-10) on MNIST, data-parallel with
PyTorch DDP, its gradients averaged in the switch by the Serene comm hook.

    serene-run -n 2 -- /usr/bin/python3 train_torch.py --data FILE_OR_DIR
    serene-run -n 2 -- /usr/bin/python3 train_torch.py --synthetic

--data takes the SRDIGIT1 file of examples/train/fetch_data.sh, or a
directory with MNIST's idx files (train-images-idx3-ubyte and
train-labels-idx1-ubyte, optionally .gz; also t10k-* for the test split).
--synthetic draws MNIST-shaped data (784 inputs, 10 classes) instead: no
download. --backend gloo trains the same way with DDP's own gloo allreduce,
for comparison. Each rank takes its shard of every epoch; one line per epoch
(rank 0): loss, test accuracy, time. --expect-accuracy PCT makes a final
accuracy below PCT an error (exit status 1), for tests.

DDP needs a process group for its start-up broadcast: gloo, rendezvousing
through a FileStore in the temporary directory named after the launch's
SERENE_JOB_NONCE (so it needs no MASTER_ADDR/MASTER_PORT).
"""
import argparse
import datetime
import gzip
import os
import struct
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import serene_torch


def read_srdigit(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != b"SRDIGIT1" or len(raw) < 28:
        raise ValueError(f"{path}: not an SRDIGIT1 file")
    n, rows, cols, classes, maxval = struct.unpack_from("<5I", raw, 8)
    px = n * rows * cols
    if len(raw) != 28 + px + n:
        raise ValueError(f"{path}: {len(raw)} bytes, want {28 + px + n}")
    x = np.frombuffer(raw, np.uint8, px, 28).reshape(n, rows * cols).astype(np.float32) / maxval
    y = np.frombuffer(raw, np.uint8, n, 28 + px).astype(np.int64)
    # A fixed split: the last fifth of a seeded permutation is the test set.
    perm = np.random.default_rng(0).permutation(n)
    cut = n - n // 5
    return (x[perm[:cut]], y[perm[:cut]]), (x[perm[cut:]], y[perm[cut:]]), classes


def read_idx(path):
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            with (gzip.open(p) if p.endswith(".gz") else open(p, "rb")) as f:
                raw = f.read()
            ndim = raw[3]
            dims = struct.unpack_from(">%dI" % ndim, raw, 4)
            return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)
    raise FileNotFoundError(path + "[.gz]")


def load(args):
    if args.synthetic:
        g = torch.Generator().manual_seed(0)
        protos = torch.rand(10, 784, generator=g)

        def draw(n):
            y = torch.randint(0, 10, (n,), generator=g)
            x = (protos[y] + 1.5 * torch.randn(n, 784, generator=g)).clamp(0, 1)
            return x.numpy(), y.numpy()
        return draw(args.synthetic_n), draw(args.synthetic_n // 5), 10
    if os.path.isfile(args.data):
        return read_srdigit(args.data)
    d = args.data
    xtr = read_idx(os.path.join(d, "train-images-idx3-ubyte"))
    ytr = read_idx(os.path.join(d, "train-labels-idx1-ubyte"))
    xtr = xtr.reshape(len(xtr), -1).astype(np.float32) / 255
    try:
        xte = read_idx(os.path.join(d, "t10k-images-idx3-ubyte"))
        yte = read_idx(os.path.join(d, "t10k-labels-idx1-ubyte"))
        xte = xte.reshape(len(xte), -1).astype(np.float32) / 255
    except FileNotFoundError:
        cut = len(xtr) - len(xtr) // 6
        xtr, xte, ytr, yte = xtr[:cut], xtr[cut:], ytr[:cut], ytr[cut:]
    return (xtr, ytr.astype(np.int64)), (xte, yte.astype(np.int64)), 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="SRDIGIT1 file or directory of MNIST idx files")
    src.add_argument("--synthetic", action="store_true", help="MNIST-shaped synthetic data")
    ap.add_argument("--synthetic-n", type=int, default=10000, help="training images (synthetic)")
    ap.add_argument("--backend", choices=["serene", "gloo"], default="serene")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--expect-accuracy", type=float, metavar="PCT",
                    help="exit with status 1 if the final test accuracy is below PCT")
    args = ap.parse_args()
    torch.set_num_threads(1)  # ranks share the host's cores

    serene_torch.init()
    rank, world = serene_torch.rank(), serene_torch.world_size()
    store_path = os.path.join(tempfile.gettempdir(), "serene-torch-example-%s-%s" % (
        os.environ.get("SERENE_JOB", "0"), os.environ.get("SERENE_JOB_NONCE", "0")))
    dist.init_process_group("gloo", store=dist.FileStore(store_path, world), rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    (xtr, ytr), (xte, yte), classes = load(args)
    xtr, ytr, xte, yte = map(torch.from_numpy, (xtr, ytr, xte, yte))
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(xtr.shape[1], 100), torch.nn.ReLU(),
                                torch.nn.Linear(100, classes))
    ddp = DDP(model)
    if args.backend == "serene":
        ddp.register_comm_hook(None, serene_torch.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    if rank == 0:
        print(f"train_torch: {world} ranks, {len(xtr)} training / {len(xte)} test images, "
              f"backend {args.backend}, batch {args.batch} per rank, lr {args.lr}", flush=True)
    order = torch.Generator().manual_seed(args.seed)
    t_start = time.monotonic()
    for epoch in range(args.epochs):
        t0 = time.monotonic()
        mine = torch.randperm(len(xtr), generator=order)[rank::world]
        steps = len(mine) // args.batch  # the same on every rank: shards differ by <= 1
        steps = min(steps, (len(xtr) // world) // args.batch)
        total = 0.0
        for i in range(steps):
            idx = mine[i * args.batch:(i + 1) * args.batch]
            opt.zero_grad()
            loss = F.cross_entropy(ddp(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.item()
        with torch.no_grad():
            acc = 100.0 * (model(xte).argmax(1) == yte).float().mean().item()
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {total / max(steps, 1):.4f}, "
                  f"test accuracy {acc:.2f}%, {time.monotonic() - t0:.2f} s", flush=True)
    if rank == 0:
        st = serene_torch.stats()
        via = (f"; serene: {st['ops_completed']} operations, {st['retransmissions']} "
               "retransmissions" if args.backend == "serene" else "")
        print(f"train_torch: done in {time.monotonic() - t_start:.1f} s; final test accuracy "
              f"{acc:.2f}%{via}", flush=True)
    dist.barrier()
    dist.destroy_process_group()  # FileStore removes its file when the last rank closes it
    serene_torch.finalize()
    if args.expect_accuracy is not None and acc < args.expect_accuracy:
        print(f"train_torch: rank {rank}: final test accuracy {acc:.2f}% is below the expected "
              f"{args.expect_accuracy}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
