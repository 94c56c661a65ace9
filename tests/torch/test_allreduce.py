# SPDX-License-Identifier: Apache-2.0
"""torch.ops.serene.allreduce_ against torch.distributed's gloo allreduce.

Run as every rank under serene-run (the real software switch):
    serene-run -n 2 --elems E -- python3 test_allreduce.py --elems E

For each case every rank draws its own values (mixed magnitudes across
packets, so per-packet exponents differ), then checks element by element:
  |serene - exact| <= N * 2^(E-B) + 1/2 ulp(serene)   (README's bound)
  |serene - gloo|  <= N * 2^(E-B) + ulp(serene)       (gloo adds its own 1/2 ulp)
where exact is the float64 sum of all ranks' inputs, 2^E bounds the largest
|x| of the element's packet on any worker (E = floor(log2 max|x|)), and
B = 30 - ceil(log2 N); "avg" divides the bound by N. It also checks that the
op works in place (same storage, no copy) and refuses bad tensors clearly.
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.distributed as dist

import serene_torch
from torch_common import RANK, WORLD, check, expect_refused, gloo_done, gloo_init, log


def packet_bound(inputs, elems):
    """Per-element N * 2^(E-B), E from each packet's max |x| over workers."""
    n = inputs.shape[1]
    amax = inputs.abs().max(dim=0).values  # over workers
    pad = (-n) % elems
    chunks = torch.nn.functional.pad(amax, (0, pad)).view(-1, elems).max(dim=1).values
    b = 30 - math.ceil(math.log2(WORLD)) if WORLD > 1 else 30
    e = torch.where(chunks > 0, torch.floor(torch.log2(chunks)), torch.full_like(chunks, -1e9))
    q = WORLD * torch.pow(2.0, e - b)
    return q.repeat_interleave(elems)[:n]


def run_case(name, x, op, elems):
    # Reference: every rank's input, exactly, in float64.
    gathered = [torch.empty_like(x, dtype=torch.float64) for _ in range(WORLD)]
    dist.all_gather(gathered, x.double())
    inputs = torch.stack(gathered)
    exact = inputs.sum(dim=0)
    g = x.clone()
    dist.all_reduce(g)  # gloo, float32
    s = x.clone()
    ptr = s.data_ptr()
    r = serene_torch.allreduce_(s, op)
    check(s.data_ptr() == ptr and r.data_ptr() == ptr, f"{name}: allreduce_ did not work in place")
    q = packet_bound(inputs, elems)
    if op == "avg":
        exact, g, q = exact / WORLD, g / WORLD, q / WORLD
    ulp = torch.from_numpy(np.spacing(np.abs(s.numpy()))).double()
    err_exact = (s.double() - exact).abs()
    err_gloo = (s.double() - g.double()).abs()
    bad = (err_exact > q + 0.5 * ulp) | (err_gloo > q + ulp)
    if bad.any():
        i = int(bad.nonzero()[0])
        log(f"FAIL {name}: element {i}: serene {s[i].item()!r} gloo {g[i].item()!r} "
            f"exact {exact[i].item()!r} bound {q[i].item()!r} ulp {ulp[i].item()!r}; "
            f"{int(bad.sum())} of {s.numel()} outside the bound")
        raise SystemExit(1)
    worst = float((err_exact / (q + 0.5 * ulp)).max()) if s.numel() else 0.0
    log(f"ok {name}: {s.numel()} elements, op {op}, max error {float(err_exact.max()):.3g} "
        f"= {worst:.2f} of the bound")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elems", type=int, default=256, help="the job's elements per packet")
    args = ap.parse_args()
    serene_torch.init()
    check(serene_torch.rank() == RANK and serene_torch.world_size() == WORLD,
          "rank/world size differ from the environment")
    gloo_init()
    gen = torch.Generator().manual_seed(1000 + RANK)
    for n in [1, args.elems - 1, args.elems + 1, 3 * args.elems, 100_000]:
        # Magnitudes from 1e-6 to 1e3 by packet: each packet gets its own E.
        scale = torch.pow(10.0, torch.arange(n, dtype=torch.float32).div(args.elems).floor()
                          .remainder(10) - 6)
        x = torch.randn(n, generator=gen) * scale
        for op in ["sum", "avg"]:
            run_case(f"n={n}", x, op, args.elems)
    run_case("zeros", torch.zeros(1000), "sum", args.elems)
    run_case("one-big-value", torch.cat([torch.full((1,), 1e4), torch.randn(999, generator=gen)]),
             "sum", args.elems)
    # A 2-D contiguous tensor is fine; its memory is used as is.
    run_case("2-D", torch.randn(64, 300, generator=gen).view(-1), "sum", args.elems)
    m = torch.randn(64, 300, generator=gen)
    ref = m.clone()
    dist.all_reduce(ref)
    serene_torch.allreduce_(m)
    check(m.shape == (64, 300) and torch.allclose(m, ref, rtol=1e-5, atol=1e-5), "2-D shape/value")

    expect_refused("float64", lambda: serene_torch.allreduce_(torch.ones(8, dtype=torch.float64)),
                   "float32")
    expect_refused("int32", lambda: serene_torch.allreduce_(torch.ones(8, dtype=torch.int32)),
                   "float32")
    expect_refused("non-contiguous", lambda: serene_torch.allreduce_(torch.ones(8, 8).t()),
                   "contiguous")
    expect_refused("meta device", lambda: serene_torch.allreduce_(torch.ones(8, device="meta")),
                   "CPU")
    expect_refused("bad op", lambda: serene_torch.allreduce_(torch.ones(8), "max"), "\"sum\"")
    nan = torch.ones(300)
    nan[7] = float("nan")
    expect_refused("NaN", lambda: serene_torch.allreduce_(nan), "SERENE_ERR_NONFINITE")
    # Nothing was sent for the NaN tensor: the context still works.
    run_case("after-NaN", torch.randn(500, generator=gen), "sum", args.elems)

    # Informative timing (not asserted): 4M floats, serene vs gloo.
    big = torch.randn(1 << 22, generator=gen)
    for name, fn in [("serene", lambda t: serene_torch.allreduce_(t)),
                     ("gloo", lambda t: dist.all_reduce(t))]:
        times = []
        for _ in range(3):
            t = big.clone()
            dist.barrier()
            t0 = time.perf_counter()
            fn(t)
            times.append(time.perf_counter() - t0)
        log(f"timing {name}: 4M floats (16 MiB), best of 3 {min(times) * 1e3:.1f} ms "
            f"({(1 << 24) * 8 / min(times) / 1e9:.2f} Gbit/s of tensor)")
    st = serene_torch.stats()
    check(st["saturations"] == 0, f"saturations {st['saturations']}")
    for k in ("probes", "held", "window_cuts"):  # every counter of serene_stats
        check(k in st and st[k] >= 0, f"stats() lacks {k}: {sorted(st)}")
    gloo_done()
    serene_torch.finalize()
    check(not serene_torch.is_initialized(), "finalize left the context")
    log("PASS")


if __name__ == "__main__":
    main()
