# SPDX-License-Identifier: Apache-2.0
"""serene_torch.SSP trains with a slowed worker under SSP(s).

Run as every rank under serene-run against a switch whose job has the SSP
policy (run_ssp.sh starts one: --job 0:2,policy=ssp:2):
    serene-run -n 2 --switch HOST:PORT -- python3 test_ssp.py --slow-rank 1 \
        --delay-ms 30 --staleness 2

Every rank trains the same MLP, from the same seeded weights, on its shard of
the synthetic problem; the slow rank sleeps before each step. Checks: the
barrier runs the job as SSP(s); the fast rank ran ahead of the slow one and
was held by the barrier (it is never more than s clocks ahead); both finish
all steps; the test loss falls below 60% of the initial one and accuracy
passes 60%; after sync() both ranks hold the same model.
"""
import argparse
import time

import torch
import torch.nn.functional as F

import serene_torch
from torch_common import DIM, CLASSES, N_TRAIN, RANK, WORLD, check, cluster_dataset, log


def evaluate(model, x, y):
    with torch.no_grad():
        out = model(x)
        return F.cross_entropy(out, y).item(), 100.0 * (out.argmax(1) == y).float().mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--slow-rank", type=int, default=1)
    ap.add_argument("--delay-ms", type=float, default=30.0)
    ap.add_argument("--staleness", type=int, default=2, help="the job's SSP bound s")
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    # 20 fraction bits: updates of lr * grad down to 5e-7 count.
    serene_torch.init(store_frac_bits=20)
    (xtr, ytr), (xte, yte) = cluster_dataset()
    torch.manual_seed(1)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(DIM, 100), torch.nn.ReLU(),
                                torch.nn.Linear(100, CLASSES))
    ssp = serene_torch.SSP(model.parameters(), lr=0.05)
    loss0, acc0 = evaluate(model, xte, yte)
    order = torch.Generator().manual_seed(3 + RANK)
    max_lead, t0 = 0, time.monotonic()
    for epoch in range(args.epochs):
        perm = torch.randperm(N_TRAIN, generator=order)[RANK::WORLD]
        for i in range(0, perm.numel() - 63, 64):
            if RANK == args.slow_rank:
                time.sleep(args.delay_ms / 1000)
            idx = perm[i:i + 64]
            model.zero_grad()
            F.cross_entropy(model(xtr[idx]), ytr[idx]).backward()
            ssp.step()
            info = serene_torch.clock_info()
            max_lead = max(max_lead, (info["clock"] - 1) - info["low"])
        log(f"epoch {epoch}: clock {info['clock']}, test loss {evaluate(model, xte, yte)[0]:.3f}")
    extra = ssp.sync()
    loss, acc = evaluate(model, xte, yte)
    st = serene_torch.stats()
    log(f"{ssp.steps} steps in {time.monotonic() - t0:.1f} s (+{extra} sync clocks), policy "
        f"{info['mode']}:{info['staleness']}; test loss {loss0:.3f} -> {loss:.3f}, accuracy "
        f"{acc0:.1f}% -> {acc:.1f}%; max lead over the slowest {max_lead}, held {st['holds']} "
        f"times, {st['clock_wait_ns'] / 1e9:.2f} s waiting")
    check(info["mode"] == "ssp" and info["staleness"] == args.staleness,
          f"the job runs {info['mode']}:{info['staleness']}, not ssp:{args.staleness}")
    check(ssp.steps == args.epochs * (N_TRAIN // WORLD // 64), f"{ssp.steps} steps")
    check(extra == args.staleness, f"sync took {extra} extra clocks, want s = {args.staleness}")
    if RANK != args.slow_rank:
        check(max_lead >= 1, "the fast rank never ran ahead of the slow one")
        check(st["holds"] > 0, "the barrier never held the fast rank")
    check(max_lead <= args.staleness, f"ran {max_lead} clocks ahead, more than s")
    check(loss < 0.6 * loss0 and acc > 60, "did not learn")
    # Same model everywhere: the sum over ranks must be WORLD times ours.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    total = serene_torch.allreduce_(flat.clone())
    diff = (total - WORLD * flat).abs().max().item()
    check(diff < 1e-4, f"ranks hold different models (max difference {diff})")
    serene_torch.finalize()
    log("PASS")


if __name__ == "__main__":
    main()
