#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tna_exec_block.py - a job after another in the same register block, on
the executed Tofino program (p4/tna/exec), set up by the scripts serene-ctl
writes.

Job A (id 3, 3 workers) is set up by its script and leaves its block dirty:
store rows pushed (push numbers up to 3), a CLOCK of its worker 2 in ring
entry 1, an allreduce round open in slot 2 (round number 1). Job B (id 7:
7 mod 4 = 3, the same block) is refused while A's job_table entry is there,
before any write. Once A's entry is deleted, B's script runs and B must
find a clean block: its pulls read zeros, its first push is applied, its
CLOCKs 0 and 1 are released when its 2 workers are in, its round 1 in slot 2
sums exactly. The same with B's script stripped of its clear lines must
fail, so the checks can tell. Then job A run again after ending mid-run (a
new context, its round numbers from 1 again): after the script `serene-ctl
reset` writes, the same checks pass; without it they fail.

    tna_exec_block.py SERENE_CTL IR_JSON POLICY
"""
import copy
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'p4', 'tna', 'exec'))
sys.path.insert(0, HERE)
import tna_bfrt  # noqa: E402
import tna_exec  # noqa: E402
from tna_exec_diff import OP, decode, frame  # noqa: E402

A = dict(job=3, workers=3, store=256, net=(10, 0, 0), port=47000)
B = dict(job=7, workers=2, store=512, net=(10, 0, 1), port=48000)


def job_file(j, d):
    path = os.path.join(d, 'job%d.conf' % j['job'])
    with open(path, 'w') as f:
        f.write('job = %d\nworkers = %d\nstore = %d\nring = 8\n' %
                (j['job'], j['workers'], j['store']))
        for r in range(j['workers']):
            f.write('worker.%d = %d.%d.%d.%d:%d\n' % ((r,) + j['net'] + (r + 1, j['port'] + r)))
    return path


def script(ctl, job_path, policy):
    run = subprocess.run([ctl, 'compile', '--target', 'tofino', '--job-file', job_path, policy],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit('FAIL: serene-ctl: %s' % run.stderr.strip())
    return run.stdout


def send(sw, j, rank, op, **kw):
    """A request of j's worker rank, in at its switch port (rank + 1, as
    serene-ctl's job file defaults it); the answers' (op, header, words)."""
    addr = (j['net'][0] << 24) | (j['net'][1] << 16) | (j['net'][2] << 8) | (rank + 1)
    outs = sw.packet(rank + 1, frame(j['job'], rank, op, src=(addr, j['port'] + rank), **kw))
    return [decode(fr) for _, fr, _ in outs]


def dirty(sw):
    """Job A's traffic, leaving its block as a job that ended mid-run."""
    for r in range(A['workers']):
        for row, push in ((0, 1), (0, 2), (3, 3)):
            send(sw, A, r, OP['PUSH'], seq=push, offset=32 * row, count=32, aux=0,
                 vals=[100 + r] * 32)
    for r in range(A['workers']):
        send(sw, A, r, OP['CLOCK'], seq=0)
    send(sw, A, 2, OP['CLOCK'], seq=1)
    for r in range(2):
        send(sw, A, r, OP['AR_DATA'], seq=1, slot=2, count=4, status=1, aux=4, vals=[9, 9, 9, 9])


def clean(sw, j=B):
    """Job j's view of its block; the problems found."""
    bad = []
    n = j['workers']
    for row in (0, 3):
        ans = send(sw, j, 0, OP['PULL'], seq=1, offset=32 * row, aux=32)
        if len(ans) != 1 or ans[0][0][0] != OP['PULL_RESP'] or ans[0][1] != [0] * 32:
            bad.append('row %d is not clean: %s' % (row, ans))
    ans = send(sw, j, 0, OP['PUSH'], seq=1, offset=0, count=32, vals=[5] * 32)
    if len(ans) != 1 or ans[0][0][0] != OP['PUSH_ACK'] or ans[0][0][12] != 1:
        bad.append('push number 1 not applied: %s' % ans)
    for c in (0, 1):
        for r in range(n - 1):
            send(sw, j, r, OP['CLOCK'], seq=c)
        ans = send(sw, j, n - 1, OP['CLOCK'], seq=c)
        ops = sorted(h[0] for h, _ in ans)
        if ops != sorted([OP['PROCEED']] + [OP['RELEASE']] * (n - 1)):
            bad.append('clock %d not released by the %d workers: ops %s' % (c, n, ops))
    outs = []
    for r in range(n):
        outs = send(sw, j, r, OP['AR_DATA'], seq=1, slot=2, count=4, status=1, aux=4,
                    vals=[r + 1, 2, 3, 4])
    want = [n * (n + 1) // 2, 2 * n, 3 * n, 4 * n]
    if len(outs) != n or any(v != want for _, v in outs):
        bad.append('round 1 of slot 2: %s, want %s' % (outs, want))
    return bad


def restart(prog, ctl, policy, d, reset):
    """Job A ends mid-run and runs again (a new context: round numbers from
    1) with or without `serene-ctl reset`'s script first; the problems."""
    sw = tna_exec.Switch(prog)
    bf = tna_bfrt.Bfrt(sw)
    path = job_file(A, d)
    tna_bfrt.run_script(sw, script(ctl, path, policy), bf)
    dirty(sw)
    if reset:
        run = subprocess.run([ctl, 'reset', '--target', 'tofino', '--job-file', path],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return ['serene-ctl reset: %s' % run.stderr.strip()]
        tna_bfrt.run_script(sw, run.stdout, bf)
    return clean(sw, A)


def scenario(prog, ctl, policy, d, strip=False):
    sw = tna_exec.Switch(prog)
    bf = tna_bfrt.Bfrt(sw)
    tna_bfrt.run_script(sw, script(ctl, job_file(A, d), policy), bf)
    dirty(sw)
    b_text = script(ctl, job_file(B, d), policy)
    before = (copy.deepcopy(sw.regs), copy.deepcopy(sw.entries))
    try:
        tna_bfrt.run_script(sw, b_text, bf)
        return ['job B set up beside job A in block 3']
    except SystemExit as e:
        if 'share register block 3 with job 3' not in str(e):
            return ['job B refused for another reason: %s' % e]
    if (sw.regs, sw.entries) != before:
        return ['the refused script wrote before it stopped']
    bf.serene.pipe.Ingress.job_table.delete(job=A['job'])  # the operator removes job A
    if strip:
        b_text = '\n'.join(l for l in b_text.splitlines()
                           if not l.startswith('clear(') and 'COUNTER_INDEX' not in l)
    tna_bfrt.run_script(sw, b_text, bf)
    return clean(sw)


def main(argv):
    if len(argv) != 4:
        sys.stderr.write('usage: tna_exec_block.py SERENE_CTL IR_JSON POLICY\n')
        return 2
    prog = tna_exec.Program.load(argv[2])
    with tempfile.TemporaryDirectory() as d:
        bad = scenario(prog, argv[1], argv[3], d)
        if bad:
            print('FAIL: %s' % '; '.join(bad))
            return 1
        unclean = scenario(prog, argv[1], argv[3], d, strip=True)
        again = restart(prog, argv[1], argv[3], d, reset=True)
        stale = restart(prog, argv[1], argv[3], d, reset=False)
    if not unclean:
        print('FAIL: without the clear lines job B still found a clean block: '
              'the checks cannot tell')
        return 1
    if again:
        print('FAIL: job A again after serene-ctl reset: %s' % '; '.join(again))
        return 1
    if not stale:
        print('FAIL: job A again without the reset found a clean block: the checks cannot tell')
        return 1
    print('job B refused beside job A (block 3) before any write; after A left, '
          'B found its block clean: rows read 0, push 1 applied, clocks 0 and 1 released, '
          'round 1 exact')
    print('without the script\'s clear lines: %s' % '; '.join(unclean))
    print('job A run again after serene-ctl reset: its block clean (rows 0, push 1 applied, '
          'clocks released, round 1 exact)')
    print('job A run again without the reset: %s' % '; '.join(stale))
    print('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
