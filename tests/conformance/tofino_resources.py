#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Tofino compiler's resource report for p4/tna, per feature, as a
markdown table: p4c's Tofino back end writes OUT/pipe/logs/resources.json
(every SRAM, TCAM, map RAM, stateful ALU and hash-distribution unit of
every MAU stage, with the table or register using it). Each user is
assigned to a feature by its name (the registers and tables of the
allreduce's rounds, the lanes the allreduce and the store share, the
store, the request checks and answers, the barrier and policy, the sender
lookup, egress's rewrite); the rest (the compiler's gateway and action
tables, named after source lines) is "other". PHV is counted for the
whole program (the containers are shared).

  tofino_resources.py OUT   (OUT: the compiler's -o directory)
"""
import glob
import json
import re
import sys

FEATURES = [
    ("allreduce rounds", re.compile(r"(^|\.)(ar_|round_[abc]|nexp_reg|cell_hash|fp_hash)")),
    ("lanes (allreduce sums, store rows)", re.compile(r"lane_reg_|lane_tbl_")),
    ("store (PUSH, PULL)", re.compile(r"push_last|push_idx|row_lane_hash|store_row")),
    ("checks and answers (classify, answer_tbl)", re.compile(r"classify|answer_tbl")),
    ("barrier and policy", re.compile(r"low_reg|high_reg|ring_reg|ring_idx|policy_table")),
    ("sender lookup", re.compile(r"worker_table|job_table|wbit_table")),
    ("egress rewrite", re.compile(r"rank_table")),
]


def feature(name):
    for f, pat in FEATURES:
        if pat.search(name):
            return f
    return "other"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(f"{sys.argv[1]}/pipe/logs/resources.json") as f:
        res = json.load(f)["resources"]
    names = [f for f, _ in FEATURES] + ["other"]
    use = {f: {"stages": set(), "sram": 0, "tcam": 0, "mapram": 0, "salu": 0, "hash": 0} for f in names}

    def add(user, kind, stage):
        f = feature(user.split("$")[0])
        use[f][kind] += 1
        use[f]["stages"].add(stage)

    stages = res["mau"]["mau_stages"]
    for st in stages:
        n = st["stage_number"]
        for kind, group, blocks in (("sram", "rams", "srams"), ("tcam", "tcams", "tcams"),
                                    ("mapram", "map_rams", "maprams"),
                                    ("salu", "meter_alus", "meters")):
            for r in st[group][blocks]:
                for u in r["usages"]:
                    add(u["used_by"], kind, n)
        for r in st["hash_distribution_units"]["units"]:
            users = {u["used_by"] for u in r["usages"]}
            for u in sorted(users)[:1]:  # a unit counts once, for its first user
                add(u, "hash", n)
    nst = len(stages)
    cap = {"sram": 80 * nst, "tcam": 24 * nst, "mapram": 48 * nst, "salu": 4 * nst, "hash": 6 * nst}
    print(f"Tofino 1, {nst} MAU stages (ingress and egress share them): blocks used per feature, "
          f"of the {cap['sram']} SRAM, {cap['tcam']} TCAM, {cap['mapram']} map RAM, {cap['salu']} "
          f"stateful ALU and {cap['hash']} hash-distribution units of {nst} stages.\n")
    print("| feature | stages | SRAM | TCAM | map RAM | stateful ALUs | hash dist. units |")
    print("|---|---|---|---|---|---|---|")
    total = {k: 0 for k in cap}
    for f in names:
        u = use[f]
        if not u["stages"]:
            continue
        s = sorted(u["stages"])
        print(f"| {f} | {s[0]}-{s[-1]} ({len(s)}) | {u['sram']} | {u['tcam']} | {u['mapram']} | "
              f"{u['salu']} | {u['hash']} |")
        for k in total:
            total[k] += u[k]
    print(f"| all | | {total['sram']} | {total['tcam']} | {total['mapram']} | {total['salu']} | "
          f"{total['hash']} |")
    # The last PHV allocation round's summary: the program's.
    logs = sorted(glob.glob(f"{sys.argv[1]}/pipe/logs/phv_allocation_summary_*.log"),
                  key=lambda p: int(re.search(r"_(\d+)\.log$", p).group(1)))
    for line in open(logs[-1]) if logs else []:
        if line.startswith("| Overall PHV Usage"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            print(f"\nPHV: {cells[1]} containers, {cells[2]} bits used (ingress {cells[3]}, "
                  f"egress {cells[4]}) of {cells[-1]}.")
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
