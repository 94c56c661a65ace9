# SPDX-License-Identifier: Apache-2.0
"""The custom ops called from TorchScript (scripted, saved, loaded, run).

Run as every rank under serene-run:
    serene-run -n 2 -- python3 test_torchscript.py

A scripted function and a scripted module call torch.ops.serene.allreduce_,
push, pull and clock; the module is saved to a file and loaded back
(torch.jit.load), and the loaded module runs against the switch too. The
results are checked against the exact sums (small integers: exact in the
fixed point too).
"""
import os
import tempfile

import torch

import serene_torch
from torch_common import RANK, WORLD, check, expect_refused, log


@torch.jit.script
def scripted_avg(t: torch.Tensor) -> torch.Tensor:
    # The op works in place and returns its argument (Tensor(a!)).
    return torch.ops.serene.allreduce_(t, "avg")


class Step(torch.nn.Module):
    """One SSP-style step inside TorchScript: push, clock, pull delta."""

    def __init__(self, n: int):
        super().__init__()
        self.buf = torch.zeros(n)

    def forward(self, update: torch.Tensor, offset: int) -> torch.Tensor:
        torch.ops.serene.push(update, offset)
        torch.ops.serene.clock()
        return torch.ops.serene.pull(self.buf, offset, True)


def main():
    serene_torch.init()
    graph = str(scripted_avg.graph)
    check("serene::allreduce_" in graph, "the scripted graph does not call serene::allreduce_")
    log("scripted graph calls serene::allreduce_")

    t = torch.full((1000,), float(RANK + 1))
    r = scripted_avg(t)
    want = sum(range(1, WORLD + 1)) / WORLD
    check(r.data_ptr() == t.data_ptr(), "scripted allreduce_ not in place")
    check(torch.allclose(t, torch.full_like(t, want), rtol=0, atol=1e-6),
          f"scripted avg: got {t[:4].tolist()}, want {want}")
    log(f"ok scripted function: avg = {t[0].item()}")

    step = torch.jit.script(Step(64))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "step.pt")
        step.save(path)
        loaded = torch.jit.load(path)
    want = float(sum(range(1, WORLD + 1)))  # all ranks' pushes of one step
    total = torch.zeros(64)
    for it in range(3):
        fn = step if it == 0 else loaded
        total += fn(torch.full((64,), float(RANK + 1)), 100)
        # BSP (the launcher's default policy): after clock `it`, the pull
        # holds every push of clocks <= it, and maybe some of the next one.
        lo, hi = want * (it + 1), want * (it + 2)
        check(bool((total >= lo).all() and (total <= hi).all()),
              f"step {it}: pulled {total[:4].tolist()} in all, want {lo}..{hi}")
    torch.ops.serene.clock()
    total += torch.ops.serene.pull(torch.zeros(64), 100, True)
    check(torch.equal(total, torch.full((64,), 3 * want)),
          f"after 3 steps and a clock: pulled {total[:4].tolist()} in all, want {3 * want}")
    log(f"ok scripted module (and saved+loaded copy): 3 push/clock/pull steps, clock now "
        f"{serene_torch.clock_info()['clock']}")
    # Store offsets: refused before anything is sent; the context stays usable.
    cap = serene_torch.store_capacity()
    for what, fn, needle in [
            ("push beyond the store", lambda: serene_torch.push(torch.ones(64), cap - 1),
             "SERENE_ERR_RANGE"),
            ("pull beyond the store", lambda: serene_torch.pull(torch.ones(64), cap - 1),
             "SERENE_ERR_RANGE"),
            ("negative offset", lambda: serene_torch.push(torch.ones(4), -1), "offset"),
            ("pull into float64", lambda: serene_torch.pull(torch.ones(4, dtype=torch.float64), 0),
             "float32")]:
        expect_refused(what, fn, needle)
    t = torch.ones(8)
    check(scripted_avg(t).eq(1).all().item(), "allreduce after the refusals")
    serene_torch.finalize()
    log("PASS")


if __name__ == "__main__":
    main()
