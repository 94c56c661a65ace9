# SPDX-License-Identifier: Apache-2.0
"""serene_torch.StaleSync (the stream mode) under serene-run, against a
switch whose job runs the policy given (run_stale.sh starts it, with loss
and duplication, and changes the policy mid-run when asked):

    serene-run -n 3 --switch HOST:PORT -- python3 test_stale.py \
        --staleness 2 --steps 60 --dir DIR [--expect-switch]

Every rank trains the same MLP from the same seeded weights (SGD with
momentum 0.9: the optimizer's state must stay the same on every replica)
on its own shard; stragglers: each step, with probability 0.3, a rank
sleeps 10-40 ms (seeded per rank). Checks:
- every clock's policy is the job's (--staleness, or with --expect-switch
  the ones run_stale.sh installs: a change from BSP to SSP(4) and back,
  each at one clock, the same on every rank);
- the bound: before computing clock c + 1, a rank holds the sums of every
  clock <= c - s(c) (from StaleSync's log of (next clock, applied));
- a rank ran ahead of the slowest when s > 0 (applied < next clock);
- after sync(), every rank's parameters, buffers and optimizer state are
  bit for bit rank 0's (each writes them to DIR; rank 0 compares);
- the test loss falls;
- with --same-data (every rank trains on the same batches, so each own
  gradient is the clock's mean up to the 16-bit rounding), the lookahead
  makes the stream mode SGD itself: after sync() the model is within 1%
  of a local torch.optim.SGD trained on those batches (relative to the
  distance the weights travelled); computed on the stale replica alone it
  is not.
The ranks' logs (clock, applied, mode, s per step) go to DIR too.
"""
import argparse
import copy
import json
import os
import random
import time

import torch
import torch.nn.functional as F

import serene_torch
from torch_common import CLASSES, DIM, N_TRAIN, RANK, WORLD, check, cluster_dataset, log


def barrier():
    """Every rank here: a one-value allreduce."""
    t = torch.ones(1)
    serene_torch.allreduce_(t, wire_bits=32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--staleness", type=int, required=True, help="the job's s at clock 0")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--expect-switch", action="store_true",
                    help="the policy changes BSP -> SSP(4) -> BSP while the job runs")
    ap.add_argument("--wire-bits", type=int, default=16)
    ap.add_argument("--same-data", action="store_true",
                    help="every rank the same batches; compare with a local SGD")
    ap.add_argument("--lookahead", default="auto", help="StaleSync's lookahead ('none': None)")
    a = ap.parse_args()
    serene_torch.init()
    (xtr, ytr), (xte, yte) = cluster_dataset()
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, 64), torch.nn.BatchNorm1d(64),
                                torch.nn.ReLU(), torch.nn.Linear(64, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ref = copy.deepcopy(model) if a.same_data else None
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9) if ref else None
    w0 = [p.detach().clone() for p in model.parameters()]
    trace = []
    sync = serene_torch.StaleSync(model, opt, wire_bits=a.wire_bits,
                                  log=lambda nxt, applied: trace.append([nxt, applied]),
                                  lookahead=None if a.lookahead == "none" else a.lookahead)
    with torch.no_grad():
        loss0 = F.cross_entropy(model.eval()(xte), yte).item()
    model.train()
    rng = random.Random(1000 + RANK)
    mine = torch.randperm(N_TRAIN, generator=torch.Generator().manual_seed(5))
    mine = mine if a.same_data else mine[RANK::WORLD]
    policy = []
    go_file = os.path.join(a.dir, "clock")
    for k in range(a.steps):
        if rng.random() < 0.3:
            time.sleep(rng.uniform(0.010, 0.040))
        idx = mine[(k * 32) % (len(mine) - 32):][:32]
        F.cross_entropy(model(xtr[idx]), ytr[idx]).backward()
        sync.step()
        if ref is not None:
            F.cross_entropy(ref(xtr[idx]), ytr[idx]).backward()
            ref_opt.step()
            ref_opt.zero_grad()
        policy.append([k, sync.mode, sync.staleness])
        trace[-1] += [sync.mode, sync.staleness]
        if RANK == 0:  # run_stale.sh watches this to change the policy mid-run
            with open(go_file + ".tmp", "w") as f:
                f.write(f"{k}\n")
            os.replace(go_file + ".tmp", go_file)
    sync.sync()
    with torch.no_grad():
        loss = F.cross_entropy(model.eval()(xte), yte).item()
    # The bound, clock by clock: before clock c + 1 (nxt), every clock
    # <= c - s(c) is in the model: applied >= c - s + 1 = nxt - s.
    ahead = 0
    for nxt, applied, mode, s in trace:
        check(applied >= nxt - s, f"computed clock {nxt} holding {applied} clocks under s={s}")
        ahead = max(ahead, nxt - applied)
    if not a.expect_switch:
        want = "bsp" if a.staleness == 0 else "ssp"
        check(all(m == want and s == a.staleness for _, m, s in policy),
              f"policy {policy[:3]}... is not {want}:{a.staleness}")
    if a.staleness > 0 or a.expect_switch:
        check(ahead > 0, "never ran ahead of its sums (no overlap)")
    log(f"{a.steps} clocks: at most {ahead} in flight before computing the next; "
        f"test loss {loss0:.3f} -> {loss:.3f}")
    check(loss < 0.8 * loss0, "the test loss did not fall")
    if ref is not None:
        off = sum(float((p - q).pow(2).sum()) for p, q in zip(model.parameters(), ref.parameters()))
        went = sum(float((q - w).pow(2).sum()) for q, w in zip(ref.parameters(), w0))
        rel = (off / went) ** 0.5
        log(f"same data: the model is {rel:.2e} of the distance travelled from a local SGD's")
        check(rel < 0.01, f"the stream mode's model is {rel:.2e} off a local SGD on the same "
              "batches (the lookahead does not follow the optimizer)")
    state = {"params": [p.detach().clone() for p in model.parameters()],
             "buffers": [b.detach().clone() for b in model.buffers()],
             "momentum": [opt.state[p]["momentum_buffer"].clone() for p in model.parameters()]}
    torch.save(state, os.path.join(a.dir, f"rank{RANK}.pt"))
    with open(os.path.join(a.dir, f"policy{RANK}.json"), "w") as f:
        json.dump(policy, f)
    with open(os.path.join(a.dir, f"trace{RANK}.json"), "w") as f:
        json.dump(trace, f)
    barrier()
    if RANK == 0:
        for r in range(1, WORLD):
            other = torch.load(os.path.join(a.dir, f"rank{r}.pt"))
            for key in state:
                for x, y in zip(state[key], other[key]):
                    d = float((x - y).abs().max()) if x.is_floating_point() else int((x != y).sum())
                    check(d == 0, f"rank {r}'s {key} differ from rank 0's by {d}")
            pol = json.load(open(os.path.join(a.dir, f"policy{r}.json")))
            check(pol == json.loads(json.dumps(policy)), f"rank {r} saw another policy per clock")
        changes = [(k, m, s) for (k, m, s), prev in zip(policy[1:], policy) if (m, s) != tuple(prev[1:])]
        log(f"replicas identical after sync (parameters, buffers, momentum) on {WORLD} ranks; "
            f"policy changes at clocks {changes}")
        if a.expect_switch:
            check(len(changes) == 2 and changes[0][1:] == ("ssp", 4) and changes[1][1:] == ("bsp", 0),
                  f"the policy did not go BSP -> SSP(4) -> BSP: {changes}")
    barrier()
    log("PASS")


if __name__ == "__main__":
    main()
