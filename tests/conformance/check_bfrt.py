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

The script's first act, block_free(BLK, JOB), must stop it when another
job's job_table entry is in the block: the script is run (exec) against a
stand-in for bfrt_python's objects (bf_switchd cannot run here) with an
empty job_table, another job in another block (it runs to its end) and
another job in the same block (it stops with SystemExit naming both, before
any write). The initial values the clear lines must write are the P4
declarations' in p4/tna (Register<...>(SIZE, INIT) NAME, constants from
tna_headers.p4: a cell's round starts at SR_TNA_ROUND_IDLE); ar_ctr's
entries of the block are zeroed. `serene-ctl counters` is run against the
stand-in too: it must read the job's job_table entry and the block's
ar_ctr entries, tables of those types, and print their counts.

  check_bfrt.py SERENE_CTL JOB POLICY BFRT_JSON
  check_bfrt.py --extract BFRT_JSON   the control-plane part of a bfrt.json
                                      (tables, keys, actions, data) as JSON
"""
import contextlib
import io
import ipaddress
import json
import os
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
COUNTER_MOD = re.compile(r"^p\.Ingress\.(\w+)\.mod\(COUNTER_INDEX=(\d+), "
                         r"\*\*\{'\$COUNTER_SPEC_PKTS': (\d+)\}\)$")
GUARD_CALL = re.compile(r"^block_free\((\d+), (\d+)\)$")


def p4_initial_values(p4dir):
    """Each register's initial value as the program declares it:
    {name: {field: value}}, for the registers declared with one."""
    src = ""
    for name in sorted(os.listdir(p4dir)):
        if name.endswith(".p4"):
            with open(os.path.join(p4dir, name)) as f:
                src += f.read() + "\n"
    consts = {m.group(1): int(m.group(2), 0)
              for m in re.finditer(r"(?m)^#define (\w+) (0x[0-9a-fA-F]+|\d+)\b", src)}
    val = lambda t: consts.get(t.strip(), None) if not re.fullmatch(r"0x[0-9a-fA-F]+|\d+", t.strip()) \
        else int(t.strip(), 0)
    out = {}
    for m in re.finditer(r"Register<\s*(\w+)(?:<[^<>]*>|[^<>])*>\s*\(([^;]*?)\)\s*(\w+)\s*;", src):
        vtype, args, name = m.groups()
        parts = args.split(",", 1)
        if len(parts) < 2:
            continue
        init = parts[1].strip()
        if init.startswith("{"):
            lo, hi = [val(x) for x in init.strip("{} ").split(",")]
            out[name] = {"lo": lo, "hi": hi}
        else:
            out[name] = {"f1": val(init)}
    return out


class Stand:
    """bfrt_python's objects as far as serene-ctl's scripts use them: any
    attribute path, calls recorded; job_table.get gives the entries set."""

    class Ent:
        def __init__(self, key, data):
            self.key, self.data = key, data

    def __init__(self, jobs=(), counts=None, path="bfrt", root=None):
        self.path, self.root = path, root or self
        if root is None:
            self.calls, self.jobs, self.counts = [], list(jobs), counts or {}

    def __getattr__(self, name):
        return Stand(path=f"{self.path}.{name}", root=self.root)

    def __call__(self, *args, **kw):
        r = self.root
        r.calls.append((self.path, kw))
        if self.path.endswith("job_table.get") and kw.get("regex"):
            return [Stand.Ent({b"job": j}, {}) for j in r.jobs]
        if self.path.endswith(".get"):
            k = (self.path.rsplit(".", 2)[1], kw.get("COUNTER_INDEX", kw.get("job")))
            return Stand.Ent({}, {b"$COUNTER_SPEC_PKTS": r.counts.get(k, 0)})
        return None


def run_script(text, jobs=(), counts=None):
    """Exec a script against the stand-in: (calls, SystemExit message or
    None, what it printed)."""
    stand = Stand(jobs, counts)
    out = io.StringIO()
    stop = None
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(text, "<serene-ctl script>", "exec"), {"bfrt": stand})
    except SystemExit as e:
        stop = str(e)
    return stand.calls, stop, out.getvalue()


def check_guard(text, job, blocks):
    """The script against job tables that do and do not share the block."""
    errors = []
    blk = job % blocks
    writes = lambda calls: [c for c in calls if not c[0].endswith(".get")]
    calls, stop, _ = run_script(text)
    if stop is not None or not writes(calls):
        errors.append(f"guard: with an empty job_table the script stopped ({stop})")
    other = job + 1 if (job + 1) % blocks != blk else job + 2
    calls, stop, _ = run_script(text, jobs=[other])
    if stop is not None:
        errors.append(f"guard: job {other} (block {other % blocks}) stopped job {job}'s script: {stop}")
    other = job + blocks
    calls, stop, _ = run_script(text, jobs=[other])
    if stop is None or f"job {job}" not in stop or f"job {other}" not in stop:
        errors.append(f"guard: job {other} in block {blk} did not stop job {job}'s script ({stop})")
    elif writes(calls):
        errors.append(f"guard: the script wrote before it stopped: {writes(calls)[0]}")
    return errors


def check_counters(ctl, job_file, job, prog):
    """serene-ctl counters: the right tables and entries, their counts printed."""
    run = subprocess.run([ctl, "counters", "--target", "tofino", "--job-file", job_file],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return [f"counters: serene-ctl failed: {run.stderr.strip()}"]
    errors = []
    blocks = prog["pipe.Ingress.low_reg"]["size"]
    ctr = prog.get("pipe.Ingress.ar_ctr")
    if ctr is None or ctr["type"] != "Counter" or ctr["size"] < blocks * 4:
        errors.append(f"counters: no Counter pipe.Ingress.ar_ctr of {blocks * 4} entries ({ctr})")
    jt = prog.get("pipe.Ingress.job_table", {})
    if "$COUNTER_SPEC_PKTS" not in [n for n, _ in jt.get("data", [])]:
        errors.append("counters: job_table has no direct packet counter")
    blk = job % blocks
    counts = {("job_table", job): 1000, ("ar_ctr", blk * 4 + 1): 11, ("ar_ctr", blk * 4 + 2): 22,
              ("ar_ctr", blk * 4 + 3): 33}
    calls, stop, out = run_script(run.stdout, counts=counts)
    want = f"serene job {job}: packets 1000, rounds completed 11, duplicates 22, mismatches 33"
    if stop is not None or out.strip() != want:
        errors.append(f"counters: printed {out.strip()!r} ({stop}), expected {want!r}")
    for path, kw in calls:
        if path.endswith("ar_ctr.get") and not blk * 4 <= kw.get("COUNTER_INDEX", -1) < blk * 4 + 4:
            errors.append(f"counters: ar_ctr index {kw.get('COUNTER_INDEX')} outside block {blk}")
    return errors


def block_ranges(prog, blk):
    """What a job's register block must have cleared, from the program's
    register sizes: blocks = low_reg's size; a lane register (lane_reg_*)
    holds the block's cells (round_a's size / blocks of them, from blk
    times that) and the block's store rows (push_last_reg's size / blocks /
    32 workers) at {1, blk, row} as store_row concatenates them: from
    blocks * rows, blk times rows on; every other register but
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
            want[name] = {(blk * cells, cells), (blocks * rows + blk * rows, rows)}
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
        if t["table_type"] not in ("MatchAction_Direct", "Register", "Counter"):
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
    inits = p4_initial_values(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                           "p4", "tna"))
    run = subprocess.run([ctl, "compile", "--target", "tofino", "--job-file", job, policy],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f"contract: serene-ctl failed: {run.stderr.strip()}", file=sys.stderr)
        return 1
    errors = []
    n = 0
    ranges = {}  # job -> [(lo, hi, priority)]
    cleared = {}  # register -> {(first, count)}
    counters = set()  # ar_ctr indices zeroed
    guard = None  # block_free's (block, job), and whether a write came before it
    wrote = False
    jobs = []  # the job_table entries' job ids
    lines = run.stdout.splitlines()
    if lines and lines[2:3] == ["def block_free(blk, job):"]:
        del lines[2:7]
    if any(line.startswith("def clear") for line in lines):
        at = lines.index(CLEAR_DEF[0])
        if lines[at:at + 3] != CLEAR_DEF:
            errors.append("the clear() helper is not the expected one")
        del lines[at:at + 3]
    for line in lines:
        if not line or line.startswith("#") or line.startswith("p = ") or line.startswith("bfrt.pre.") \
                or line == "bfrt.complete_operations()":
            continue
        m = GUARD_CALL.match(line)
        if m:
            guard = (int(m.group(1)), int(m.group(2)), wrote)
            continue
        m = COUNTER_MOD.match(line)
        if m:
            wrote = True
            t = prog.get(f"pipe.Ingress.{m.group(1)}")
            if t is None or t["type"] != "Counter":
                errors.append(f"no counter pipe.Ingress.{m.group(1)}")
            elif int(m.group(2)) >= t["size"] or int(m.group(3)) != 0:
                errors.append(f"{m.group(1)}: entry {m.group(2)} (size {t['size']}) set to {m.group(3)}")
            else:
                counters.add(int(m.group(2)))
            continue
        wrote = wrote or not line.startswith("bfrt.complete")
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
            init = inits.get(rname, {})
            want_v = {f: init.get(f, 0) for f in fields}
            if set(args) != fields or any(value_of(v) != want_v[k] for k, v in args.items()):
                errors.append(f"clear {full}: {argstr}, the program's initial values are {want_v}")
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
    blocks = prog["pipe.Ingress.low_reg"]["size"]
    if len(jobs) == 1:
        blk = jobs[0] % blocks
        if guard is None or guard[:2] != (blk, jobs[0]) or guard[2]:
            errors.append(f"job {jobs[0]}: block_free({blk}, {jobs[0]}) must come first, got {guard}")
        if counters != set(range(blk * 4, blk * 4 + 4)):
            errors.append(f"job {jobs[0]}: ar_ctr zeroed at {sorted(counters)}, its block is "
                          f"{blk * 4}..{blk * 4 + 3}")
        errors += check_guard(run.stdout, jobs[0], blocks)
        errors += check_counters(ctl, job, jobs[0], prog)
        # Every register's entries of the job's block cleared, exactly.
        want = block_ranges(prog, blk)
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
