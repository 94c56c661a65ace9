# SPDX-License-Identifier: Apache-2.0
"""serene_torch.SSP on top of the process group "serene", under torchrun.

    SERENE_SWITCH_JOB_OPTS=policy=ssp:1 torchrun --standalone \\
        --nproc_per_node 2 --redirects 1 --tee 1 test_pg_ssp.py --staleness 1

No serene-run: init_process_group("serene") joins the job (rank 0 starts
the embedded switch with the job's policy from SERENE_SWITCH_JOB_OPTS) and
SSP uses that context. Two parameters (shapes 3x4 and 5), zero at first;
rank r's gradient at step k is (r + 1) * (k + 1) everywhere, lr 1, so every
update is a small integer, exact in the store's fixed point. Checks:
- the job runs ssp:S, and SSP finds the group's context;
- after each step in clock c, the parameters hold every push of clocks
  <= c - 1 - S (the barrier's guarantee), none of this rank's beyond
  clock c - 1, and none of another rank's beyond clock c + S (it may be
  at clock c + S, and a step pushes before its clock call is held),
  exactly an integer sum;
- after sync(), both ranks hold exactly -(sum of all pushes), and the
  store (pull at the offset) says the same;
- all_reduce through the same group still works beside it.
Bounded: the group's timeout (60 s) and libserene's deadline.
"""
import argparse
import datetime

import torch
import torch.distributed as dist

import serene_torch
from torch_common import RANK, WORLD, check, log

STEPS, OFFSET = 6, 16


def pushed(ranks, upto):
    """What ranks pushed in clocks 0..upto, summed (each is -grad)."""
    return -sum((r + 1) * (k + 1) for r in ranks for k in range(max(upto + 1, 0)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--staleness", type=int, default=1, help="the job's SSP bound S")
    args = ap.parse_args()
    s = args.staleness
    dist.init_process_group("serene", timeout=datetime.timedelta(seconds=60))
    check(dist.get_backend() == "serene", f"backend {dist.get_backend()}")
    params = [torch.zeros(3, 4), torch.zeros(5)]
    ssp = serene_torch.SSP(params, lr=1.0, offset=OFFSET)
    everyone = range(WORLD)
    for k in range(STEPS):
        for p in params:
            p.grad = torch.full_like(p, float((RANK + 1) * (k + 1)))
        c = ssp.step()
        others = [r for r in everyone if r != RANK]
        lo = pushed(everyone, c - 1 - s)
        hi = pushed([RANK], c - 1) + pushed(others, min(c + s, STEPS - 1))
        for p in params:
            v = p.detach()
            check(torch.all(v == v.flatten()[0]) and float(v.flatten()[0]).is_integer(),
                  f"step {k}: parameters not one integer: {v}")
            x = float(v.flatten()[0])
            check(hi <= x <= lo, f"step {k} (clock {c}): {x} outside [{hi}, {lo}]")
        info = serene_torch.clock_info()  # the mode is known after a clock
        check(info["mode"] == "ssp" and info["staleness"] == s,
              f"the job runs {info['mode']}:{info['staleness']}, not ssp:{s}")
        log(f"step {k}: clock {c}, parameters {float(params[0].flatten()[0]):.0f}")
    extra = ssp.sync()
    want = pushed(everyone, STEPS - 1)
    store = serene_torch.pull(torch.zeros(ssp.numel), OFFSET)
    log(f"after sync (+{extra} clocks): parameters {float(params[0][0, 0]):.0f}, want {want}")
    check(extra == s, f"sync took {extra} extra clocks, want {s}")
    check(all(torch.equal(p, torch.full_like(p, float(want))) for p in params),
          f"parameters {params}, want all {want}")
    check(torch.equal(store, torch.full_like(store, float(want))), f"store holds {store}")
    flat = torch.cat([p.reshape(-1) for p in params])
    total = flat.clone()
    dist.all_reduce(total)
    check(torch.equal(total, WORLD * flat), "all_reduce beside SSP: ranks differ or wrong sum")
    dist.destroy_process_group()
    log("PASS")


if __name__ == "__main__":
    main()
