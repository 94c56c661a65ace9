#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""expected_jct.py - the JCT that the straggler model alone predicts.

  expected_jct.py [--workers N] [--iters I] [--p P] [--min A] [--max B]
                  [--trials K] [--staleness S,...]

Every iteration of every worker takes T (= 1) plus, with probability P, a
delay U(A, B) x T (the slow_worker model of straggler.h); a worker that
finished clock c goes on once every worker finished clock c - s (the
switch's SSP rule; s = 0 is BSP, s = 62 what ASP gets from a ring of 64).
Prints the mean JCT per iteration (in T) per staleness over K simulated
jobs, and the cut against the first staleness listed. No communication or CPU contention is
modelled: the difference between this and a measurement is what the
barrier itself costs. Standard library only.
"""
import argparse
import random


def jct(rng, n, iters, p, lo, hi, s):
    fin = []  # fin[c][w]: when worker w finished clock c
    for c in range(iters):
        row = []
        gate = max(fin[c - 1 - s]) if c - 1 - s >= 0 else 0.0
        for w in range(n):
            start = max(fin[c - 1][w] if c else 0.0, gate)
            d = rng.uniform(lo, hi) if rng.random() < p else 0.0
            row.append(start + 1.0 + d)
        fin.append(row)
    return max(fin[-1]) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--p", type=float, default=0.15)
    ap.add_argument("--min", type=float, default=0.5)
    ap.add_argument("--max", type=float, default=2.0)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--staleness", default="0,10,62")
    a = ap.parse_args()
    if a.workers < 1 or a.iters < 1 or a.trials < 1 or not 0 <= a.p <= 1 or a.min > a.max:
        ap.error("need workers, iters, trials >= 1, 0 <= p <= 1, min <= max")
    base = None
    svals = [int(x) for x in a.staleness.split(",")]
    for s in svals:
        rng = random.Random(1)  # the same delays for every staleness
        t = sum(jct(rng, a.workers, a.iters, a.p, a.min, a.max, s) for _ in range(a.trials)) / a.trials
        base = t if base is None else base
        print("s=%-3d JCT/iteration %.4f T   cut vs s=%d: %5.1f%%" % (s, t, svals[0], 100 * (1 - t / base)))


if __name__ == "__main__":
    main()
