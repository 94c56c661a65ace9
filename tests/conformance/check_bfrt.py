#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The bfrt_python script serene-ctl compiles for Tofino and the Tofino
program must agree: every table, action and register the script names is
in the bfrt.json p4c's Tofino back end wrote for p4/tna (CI keeps a copy,
p4/tna/bfrt.json, so this runs without the compiler). For each
add_with_ACTION call: the table exists, ACTION is one of its actions, the
call's arguments are exactly the table's key fields in their bfrt names
(exact: NAME; ternary: NAME and NAME_mask; range: NAME_start and
NAME_end; a priority: MATCH_PRIORITY) plus the action's parameters, and
every value fits its field. For each REGISTER.mod: the register exists, the
index is below its size and the value names its one data field. The
script's clear(REGISTER, FIRST, COUNT, FIELD=0...) lines must zero, for
the job's register block (job id mod low_reg's size), exactly the entries
block_ranges derives from the program's register sizes, of every register
but low_reg and high_reg: a register the script leaves dirty for the next
job in the block fails here. The
policy_table entries are checked as clock ranges: each mask is a prefix
mask, no value bit under the mask, and per job the blocks tile the clocks
from the first rule's start to 4294967295 without gap or overlap, with
priorities that never decrease. Then serene-ctl's store limit for Tofino
against the program's registers: a job's store is lanes (lane_reg_*)
words times rows, rows = push_last_reg's size / (register blocks, low_reg's
size, times the workers of a bitmap word, ring_reg's width); serene-ctl
must take the job with that store and refuse one word more.

  check_bfrt.py SERENE_CTL JOB POLICY BFRT_JSON
  check_bfrt.py --extract BFRT_JSON   the control-plane part of a bfrt.json
                                      (tables, keys, actions, data) as JSON
"""
import ipaddress
import json
import re
import subprocess
import sys
import tempfile

CALL = re.compile(r"^(?:p|bfrt\.serene\.pipe)\.(Ingress|Egress)\.(\w+)\.(add_with_(\w+)|mod)\((.*)\)$")
# The script's register clearing: its helper, then one line per range.
CLEAR_DEF = ["def clear(reg, first, count, **zero):",
             "    for i in range(first, first + count):",
             "        reg.mod(REGISTER_INDEX=i, **zero)"]
CLEAR = re.compile(r"^clear\(p\.(Ingress|Egress)\.(\w+), (\d+), (\d+), (.*)\)$")


def block_ranges(prog, blk):
    """What a job's register block must have cleared, from the program's
    register sizes: blocks = low_reg's size; a lane register (lane_reg_*)
    holds the block's cells (round_a's size / blocks of them, from blk
    times that) and, from half its size, the block's store rows
    (push_last_reg's size / blocks / 32 workers); every other register but
    low_reg and high_reg (set to first_clock - 1) its size / blocks
    entries from blk times that."""
    blocks = prog["pipe.Ingress.low_reg"]["size"]
    cells = prog["pipe.Ingress.round_a"]["size"] // blocks
    rows = prog["pipe.Ingress.push_last_reg"]["size"] // blocks // 32
    want = {}
    for name, t in prog.items():
        if t["type"] != "Register" or name in ("pipe.Ingress.low_reg", "pipe.Ingress.high_reg"):
            continue
        if re.match(r"pipe\.Ingress\.lane_reg_\d+$", name):
            want[name] = {(blk * cells, cells), (t["size"] // 2 + blk * rows, rows)}
        else:
            per = t["size"] // blocks
            want[name] = {(blk * per, per)}
    return want


def extract(bfrt):
    """The control plane's view of the program: P4 tables and registers."""
    out = {}
    for t in bfrt["tables"]:
        name = t["name"]
        if not (name.startswith("pipe.Ingress.") or name.startswith("pipe.Egress.")):
            continue
        if t["table_type"] not in ("MatchAction_Direct", "Register"):
            continue
        keys = [(k["name"], k["match_type"], k["type"].get("width", 32)) for k in t.get("key", [])]
        actions = {a["name"]: [(d["name"], d["type"].get("width", 32)) for d in a.get("data", [])]
                   for a in t.get("action_specs", [])}
        data = [(d["singleton"]["name"], d["singleton"]["type"].get("width", 32))
                for d in t.get("data", []) if "singleton" in d]
        out[name] = {"type": t["table_type"], "size": t["size"], "keys": keys,
                     "actions": actions, "data": data}
    return out


def parse_args(s):
    args = {}
    for part in re.findall(r"(\w+)=('[^']*'|\[[^\]]*\]|[^,]+)", s):
        args[part[0]] = part[1].strip()
    return args


def value_of(v):
    if v.startswith("'"):
        return int(ipaddress.IPv4Address(v.strip("'")))
    return int(v, 0)


def store_limit(ctl, job, policy, prog):
    """serene-ctl takes the store the program's registers hold, no more."""
    try:
        lanes = sum(1 for n in prog if re.fullmatch(r"pipe\.Ingress\.lane_reg_\d+", n))
        blocks = prog["pipe.Ingress.low_reg"]["size"]
        bitmap = prog["pipe.Ingress.ring_reg"]["data"][0][1]
        rows = prog["pipe.Ingress.push_last_reg"]["size"] // (blocks * bitmap)
    except (KeyError, IndexError, ZeroDivisionError) as e:
        return [f"store limit: the program lacks a register it needs ({e})"]
    limit = lanes * rows
    with open(job) as f:
        text = re.sub(r"(?m)^store\s*=.*\n?", "", f.read())
    errors = []
    with tempfile.TemporaryDirectory() as d:
        for words, ok in ((limit, True), (limit + 1, False)):
            path = f"{d}/store.job"
            with open(path, "w") as f:
                f.write(f"{text.rstrip()}\nstore = {words}\n")
            run = subprocess.run([ctl, "compile", "--target", "tofino", "--job-file", path, policy],
                                 capture_output=True, text=True)
            if (run.returncode == 0) != ok:
                errors.append(f"store limit: a store of {words} words "
                              f"{'refused' if ok else 'taken'} (the program holds {lanes} lanes x "
                              f"{rows} rows = {limit}): {run.stderr.strip()}")
    return errors


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--extract":
        with open(sys.argv[2]) as f:
            json.dump(extract(json.load(f)), sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    ctl, job, policy, bfrt_path = sys.argv[1:]
    with open(bfrt_path) as f:
        prog = extract(json.load(f))
    run = subprocess.run([ctl, "compile", "--target", "tofino", "--job-file", job, policy],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"contract: serene-ctl failed: {run.stderr.strip()}", file=sys.stderr)
        return 1
    errors = []
    n = 0
    ranges = {}  # job -> [(lo, hi, priority)]
    cleared = {}  # register -> {(first, count)}
    jobs = []  # the job_table entries' job ids
    lines = run.stdout.splitlines()
    if any(line.startswith("def clear") for line in lines):
        at = lines.index(CLEAR_DEF[0])
        if lines[at:at + 3] != CLEAR_DEF:
            errors.append("the clear() helper is not the expected one")
        del lines[at:at + 3]
    for line in lines:
        if not line or line.startswith("#") or line.startswith("p = ") or line.startswith("bfrt.pre.") \
                or line == "bfrt.complete_operations()":
            continue
        m = CLEAR.match(line)
        if m:
            gress, rname, first, count, argstr = m.groups()
            full = f"pipe.{gress}.{rname}"
            t = prog.get(full)
            n += 1
            if t is None or t["type"] != "Register":
                errors.append(f"clear: no register {full}")
                continue
            first, count = int(first), int(count)
            if count < 1 or first + count > t["size"]:
                errors.append(f"clear {full}: entries {first}..{first + count - 1} past its size {t['size']}")
            args = parse_args(argstr)
            fields = {name.split(".")[-1] for name, _ in t["data"]}
            if set(args) != fields or any(value_of(v) != 0 for v in args.values()):
                errors.append(f"clear {full}: {sorted(args)} = 0 wanted for its fields {sorted(fields)}")
            cleared.setdefault(full, set()).add((first, count))
            continue
        m = CALL.match(line)
        if not m:
            errors.append(f"unknown line: {line}")
            continue
        gress, tname, call, action, argstr = m.groups()
        full = f"pipe.{gress}.{tname}"
        t = prog.get(full)
        if t is None:
            errors.append(f"no table or register {full}")
            continue
        args = parse_args(argstr)
        n += 1
        if call == "mod":
            if t["type"] != "Register":
                errors.append(f"{full}: mod on a {t['type']}")
                continue
            fields = {name.split(".")[-1]: w for name, w in t["data"]}
            want = {"REGISTER_INDEX"} | set(fields)
            if set(args) != want:
                errors.append(f"{full}.mod: arguments {sorted(args)}, the program wants {sorted(want)}")
                continue
            if value_of(args["REGISTER_INDEX"]) >= t["size"]:
                errors.append(f"{full}: index {args['REGISTER_INDEX']} >= size {t['size']}")
            for name, w in fields.items():
                if value_of(args[name]) >= 1 << w:
                    errors.append(f"{full}: {name}={args[name]} wider than {w} bits")
            continue
        aname = f"{gress}.{action}"
        if aname not in t["actions"]:
            errors.append(f"{full}: no action {aname} (has {sorted(t['actions'])})")
            continue
        want = {}
        for kname, mtype, w in t["keys"]:
            if kname == "$MATCH_PRIORITY":
                want["MATCH_PRIORITY"] = 32
            elif mtype == "Ternary":
                want[kname] = w
                want[kname + "_mask"] = w
            elif mtype == "Range":
                want[kname + "_start"] = w
                want[kname + "_end"] = w
            elif mtype == "LPM":
                want[kname] = w
                want[kname + "_p_length"] = 8
            else:
                want[kname] = w
        for pname, w in t["actions"][aname]:
            want[pname] = w
        if set(args) != set(want):
            errors.append(f"{full}.add_with_{action}: arguments {sorted(args)}, "
                          f"the program wants {sorted(want)}")
            continue
        for k, w in want.items():
            try:
                v = value_of(args[k])
            except ValueError:
                errors.append(f"{full}: {k}={args[k]} is not a number or an IPv4 address")
                continue
            if v < 0 or v >= 1 << w:
                errors.append(f"{full}: {k}={args[k]} wider than {w} bits")
        if tname == "job_table":
            jobs.append(value_of(args["job"]))
        if tname == "policy_table":
            v, mask = value_of(args["clock"]), value_of(args["clock_mask"])
            size = (~mask & 0xFFFFFFFF) + 1
            if size & (size - 1) or v & ~mask & 0xFFFFFFFF:
                errors.append(f"policy_table: clock=0x{v:08x} mask=0x{mask:08x} is not a prefix")
            ranges.setdefault(args["job"], []).append((v, v + size - 1, value_of(args["MATCH_PRIORITY"])))
    for job_id, blocks in ranges.items():
        nxt, prio = blocks[0][0], 0
        for lo, hi, p in blocks:
            if lo != nxt:
                errors.append(f"policy_table job {job_id}: block at 0x{lo:08x}, expected 0x{nxt:08x}")
            if p < prio:
                errors.append(f"policy_table job {job_id}: priority {p} after {prio}")
            nxt, prio = hi + 1, p
        if nxt != 1 << 32:
            errors.append(f"policy_table job {job_id}: the clocks end at 0x{nxt - 1:08x}, not 0xffffffff")
    if len(jobs) == 1:
        # Every register's entries of the job's block cleared, exactly.
        want = block_ranges(prog, jobs[0] % prog["pipe.Ingress.low_reg"]["size"])
        for name in sorted(set(want) | set(cleared)):
            if cleared.get(name, set()) != want.get(name, set()):
                errors.append(f"job {jobs[0]}: {name} cleared at {sorted(cleared.get(name, set()))}, "
                              f"its block is {sorted(want.get(name, set()))} (first, count)")
    else:
        errors.append(f"{len(jobs)} job_table entries, expected 1")
    errors += store_limit(ctl, job, policy, prog)
    for e in errors:
        print(f"contract: {e}", file=sys.stderr)
    if not errors:
        print(f"contract: {n} table and register calls match {bfrt_path}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
