#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fabric_train_table.py - bench/fabric_train.sh's aggregation of its
results.csv (one row per run), the standard library only:

    fabric_train_table.py base CSV SYSTEM
        the straggle base: the median over the seeds of SYSTEM's step_ms
        without stragglers (p = 0), "%.1f"; nothing when SYSTEM has no such run
    fabric_train_table.py table CSV --systems A,B,.. --baseline SYSTEM --target PCT
        table.md's table (markdown, to stdout): one row per (system, p), p
        ascending, the systems in --systems order; each measure the median
        over the seeds and, with several seeds, its min-max; the ratios
        against the baseline system of the same p are of the medians.

A time to target of "never" counts as longer than any time: a median that
falls on it is "never".
"""
import argparse
import csv
import math
import statistics
import sys


def num(v):
    return math.inf if v == "never" else float(v)


def fmt(x, nd):
    return "never" if math.isinf(x) else f"{x:.{nd}f}"


def cell(vals, nd):
    """median (min-max) of the seeds' values; the median alone for one."""
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt(m, nd)
    return f"{fmt(m, nd)} ({fmt(min(vals), nd)}-{fmt(max(vals), nd)})"


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def base(rows, system):
    v = [float(r["step_ms"]) for r in rows if r["system"] == system and float(r["straggle_p"]) == 0]
    if v:
        print(f"{statistics.median(v):.1f}")


# (results.csv column, table heading, decimals)
MEASURES = [("steps_per_s", "steps/s", 3), ("step_ms", "step ms", 1), ("comm_ms", "comm ms", 1),
            ("time_to_target_s", "time to {t}% (s)", 2), ("final_acc", "final acc %", 2),
            ("link_mb_per_step", "MB per link per step", 2)]


def table(rows, systems, baseline, target):
    groups = {}  # (p, system) -> rows
    for r in rows:
        groups.setdefault((float(r["straggle_p"]), r["system"]), []).append(r)
    order = {s: i for i, s in enumerate(systems)}
    keys = sorted(groups, key=lambda k: (k[0], order.get(k[1], len(order)), k[1]))
    med = {k: {c: statistics.median([num(r[c]) for r in groups[k]]) for c, _, _ in MEASURES}
           for k in keys}
    t = f"{target:g}"
    vs = baseline or "baseline"
    head = (["system", "stragglers p", "seeds"] + [h.format(t=t) for _, h, _ in MEASURES]
            + [f"steps/s vs {vs}", f"MB per link vs {vs}", f"% sooner to {t}% than {vs}"])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for k in keys:
        p, system = k
        runs = groups[k]
        out = [system, f"{p:g}", str(len(runs))]
        out += [cell([num(r[c]) for r in runs], nd) for c, _, nd in MEASURES]
        b = med.get((p, baseline)) if baseline else None
        m = med[k]
        if b is None:
            out += ["-", "-", "-"]
        else:
            out.append(f"{m['steps_per_s'] / b['steps_per_s']:.2f}x" if b["steps_per_s"] else "-")
            out.append(f"{m['link_mb_per_step'] / b['link_mb_per_step']:.2f}x"
                       if b["link_mb_per_step"] else "-")
            bt, st = b["time_to_target_s"], m["time_to_target_s"]
            ok = p > 0 and not math.isinf(bt) and not math.isinf(st) and bt > 0
            out.append(f"{100 * (bt - st) / bt:.1f}%" if ok else "-")
        print("| " + " | ".join(out) + " |")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("base")
    b.add_argument("csv")
    b.add_argument("system")
    t = sub.add_parser("table")
    t.add_argument("csv")
    t.add_argument("--systems", default="")
    t.add_argument("--baseline", default="")
    t.add_argument("--target", type=float, required=True)
    a = ap.parse_args(argv)
    rows = load(a.csv)
    if a.cmd == "base":
        base(rows, a.system)
    else:
        table(rows, [s for s in a.systems.split(",") if s], a.baseline, a.target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
