#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tna_exec_diff.py - the Tofino program executed (p4/tna/exec) against its
C model (p4/tna/model), packet by packet.

The same requests go as frames through the program's IR, executed with TNA's
pipeline (parser, ingress, deparser, replication, egress), and as headers
through the C model that serene-switch's model=tna jobs run (tna_model_cli).
Every answer must agree (dropped, multicast to each rank, unicast back, or
ERROR, with every header field and word), and after every packet the
registers it can touch (the cell's three round copies, nexp_reg and the 32
lanes; the store row and its push number) and the event counters. Then
directed cases on the executed program alone: the CRC-collision pair, a
failed round replaced by the next, two jobs' barriers in separate blocks.

    tna_exec_diff.py TNA_MODEL_CLI IR_JSON [PACKETS] [SEED]

Prints a line per 1000 packets and a summary (what ran, which tables,
actions and branches of the program the packets took).
"""
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'p4', 'tna', 'exec'))
import tna_exec  # noqa: E402

OP = {'ERROR': 3, 'JOIN': 1, 'JOIN_ACK': 2, 'LEAVE': 4, 'AR_DATA': 16, 'AR_RESULT': 17,
      'AR_PROBE': 19, 'PUSH': 32, 'PUSH_ACK': 33, 'PULL': 34, 'PULL_RESP': 35, 'CLOCK': 36,
      'PROCEED': 37, 'RELEASE': 38, 'HOLD': 39}
ELEMS, SLOTS, ROWS, ROW0 = 32, 256, 512, 2048
VERDICT = {0: 'drop', 1: 'multicast', 2: 'unicast', 3: 'error'}
HDR = struct.Struct('>HBBHHIHHbbBBII')


def ip_of(job, rank):
    return 0x0a000000 | (job << 8) | (rank + 1)


def frame(job, rank, op, seq=0, shadow=0, slot=0, count=0, exp=0, next_exp=0, flags=0,
          status=0, offset=0, aux=0, vals=(), src=None):
    """A request as a worker sends it: from src (address, UDP port), by
    default ip_of(job, rank) and 40000 + rank."""
    addr, sport = src or (ip_of(job, rank), 40000 + rank)
    ser = HDR.pack(0x5345, 2, op, job, rank, seq, (shadow << 15) | slot, count, exp, next_exp,
                   flags, status, offset, aux)
    pay = b''.join(struct.pack('>I', v & 0xffffffff) for v in vals)
    return tna_exec.udp_frame(addr, sport, ser + pay)


def decode(fr):
    h = HDR.unpack(fr[42:42 + HDR.size])
    (_, _, op, job, worker, seq, ss, count, exp, nexp, flags, status, offset, aux) = h
    vals = [struct.unpack('>I', fr[70 + 4 * i:74 + 4 * i])[0] for i in range(min(count, ELEMS))]
    return [op, job, worker, seq, ss >> 15, ss & 0x7fff, count, exp, nexp, flags, status,
            offset, aux], vals


class Jobs:
    """Jobs with their workers, in the program's tables and in the model."""

    def __init__(self, sw, specs):
        self.sw, self.jobs = sw, {}
        for job, n, store_words in specs:
            full = (1 << n) - 1
            self.jobs[job] = (n, full, store_words)
            sw.table_add('Ingress.job_table', {'job': job}, 'Ingress.set_job',
                         {'n_workers': n, 'full_mask': full, 'ring_mask': 7,
                          'store_words': store_words, 'mgrp': job})
            nodes = []
            for r in range(n):
                sw.table_add('Ingress.worker_table', {'src_addr': ip_of(job, r),
                                                      'src_port': 40000 + r},
                             'Ingress.set_worker', {'job': job, 'rank': r})
                sw.table_add('Egress.rank_table', {'job': job, 'rank': r},
                             'Egress.set_rank_addr', {'addr': ip_of(job, r), 'port': 40000 + r})
                nodes.append((r, self.port(job, r)))
            sw.mcast_group(job, nodes)

    @staticmethod
    def port(job, rank):
        return 16 * (job % 16) + rank


class Diff:
    def __init__(self, cli, ir, specs):
        self.sw = tna_exec.Switch(tna_exec.Program.load(ir))
        self.jobs = Jobs(self.sw, specs)
        self.cli = subprocess.Popen([cli], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True)
        self.nonzero = {'cell': 0, 'row': 0}  # compared lanes that held data
        self.cur_job = None
        self.packets = 0
        self.verdicts = {}

    def model(self, line):
        self.cli.stdin.write(line + '\n')
        self.cli.stdin.flush()
        out = self.cli.stdout.readline()
        if not out:
            raise SystemExit('FAIL: tna_model_cli ended at: %s' % line)
        return out.split()

    def fail(self, what, req):
        raise SystemExit('FAIL: packet %d %s: %s' % (self.packets, req, what))

    def send(self, job, rank, op, **kw):
        """The request through both; returns the executed program's outputs."""
        n, full, sw_ = self.jobs.jobs[job]
        if self.cur_job != job:
            self.cli.stdin.write('J %d %d %d\n' % (job, full, sw_))
            self.cur_job = job
        vals = list(kw.get('vals', ())) + [0] * (ELEMS - len(kw.get('vals', ())))
        f = [op, rank, kw.get('seq', 0), kw.get('shadow', 0), kw.get('slot', 0),
             kw.get('count', 0), kw.get('exp', 0), kw.get('next_exp', 0), kw.get('flags', 0),
             kw.get('status', 0), kw.get('offset', 0), kw.get('aux', 0)]
        m = self.model('P ' + ' '.join(str(x) for x in f + vals))
        outs = self.sw.packet(self.jobs.port(job, rank), frame(job, rank, op, **kw))
        self.packets += 1
        self.compare(job, rank, op, kw, m, outs)
        self.compare_state(job, rank, op, kw)
        return outs

    def compare(self, job, rank, op, kw, m, outs):
        req = 'job %d rank %d op %d %s' % (job, rank, op, {k: v for k, v in kw.items()
                                                           if k != 'vals'})
        verdict, err = int(m[1]), int(m[2])
        mh = [int(x) for x in m[3:16]]
        mh[1] = job
        mh[7] &= 0xff
        mh[8] &= 0xff
        mvals = [int(x) for x in m[16:]]
        self.verdicts[VERDICT[verdict]] = self.verdicts.get(VERDICT[verdict], 0) + 1
        n = self.jobs.jobs[job][0]
        if verdict == 0:
            if outs:
                self.fail('model drops, program sends %d' % len(outs), req)
            return
        if verdict == 1:
            want = {(self.jobs.port(job, r), r) for r in range(n)}
            got = {(p, rid) for p, _, rid in outs}
            if got != want or len(outs) != n:
                self.fail('model multicasts to %s, program sends %s' % (sorted(want),
                                                                       sorted(got)), req)
        elif len(outs) != 1 or outs[0][0] != self.jobs.port(job, rank):
            self.fail('model answers the sender (%s), program sends %s' %
                      (VERDICT[verdict], [(p, rid) for p, _, rid in outs]), req)
        for p, fr, rid in outs:
            h, vals = decode(fr)
            h[7] &= 0xff
            h[8] &= 0xff
            want = list(mh)
            if verdict == 1:
                want[2] = rid
            if verdict == 3 and (h[0] != OP['ERROR'] or h[10] != err):
                self.fail('model ERROR %d, program op %d status %d' % (err, h[0], h[10]), req)
            if h != want:
                self.fail('header %s, model %s' % (h, want), req)
            if verdict != 3 and vals != mvals:
                self.fail('words %s, model %s' % (vals, mvals), req)

    def compare_state(self, job, rank, op, kw):
        blk = job % 4
        sw = self.sw
        if op in (OP['AR_DATA'], OP['AR_PROBE']):
            cell = (blk * SLOTS + kw.get('slot', 0) % SLOTS) * 2 + kw.get('shadow', 0)
            r = self.model('R %d' % cell)
            lo, hi, nexp = int(r[1]), int(r[2]), int(r[3])
            for reg in ('Ingress.round_a', 'Ingress.round_b', 'Ingress.round_c'):
                v = sw.reg_read(reg, cell)
                if (v['lo'], v['hi']) != (lo, hi):
                    self.fail('%s[%d] = %s, model %s' % (reg, cell, (v['lo'], v['hi']),
                                                         (lo, hi)), 'state')
            if sw.reg_read('Ingress.nexp_reg', cell) != nexp:
                self.fail('nexp_reg[%d] = %d, model %d' %
                          (cell, sw.reg_read('Ingress.nexp_reg', cell), nexp), 'state')
            idx = cell
        else:
            row = (kw.get('offset', 0) // ELEMS) % ROWS
            idx = ROW0 + blk * ROWS + row
            pidx = (blk * ROWS + row) * 32 + (rank & 31)
            u = int(self.model('U %d' % pidx)[1])
            if sw.reg_read('Ingress.push_last_reg', pidx) != u:
                self.fail('push_last_reg[%d] = %d, model %d' %
                          (pidx, sw.reg_read('Ingress.push_last_reg', pidx), u), 'state')
        lanes = [int(x) for x in self.model('L %d' % idx)[1:]]
        got = [sw.reg_read('Ingress.lane_reg_%d' % i, idx) for i in range(ELEMS)]
        if any(lanes):
            self.nonzero['row' if idx >= ROW0 else 'cell'] += 1
        if got != lanes:
            self.fail('lanes[%d] = %s, model %s' % (idx, got, lanes), 'state')
        ev = [int(x) for x in self.model('E %d' % blk)[1:]]
        ctr = sw.counters.get('Ingress.ar_ctr', {})
        got = [ctr.get(blk * 4 + e, 0) for e in range(4)]
        if got[1:] != ev[1:]:
            self.fail('ar_ctr[%d] = %s, model %s' % (blk, got, ev), 'state')


# Metadata the program reads before writing (the executor gives 0; Tofino
# an unspecified value), and why that value cannot change an answer.
UNINIT_OK = {
    ('ig_meta_t', 'full_mask'): 'an unknown job: fx unused, UNKNOWN_JOB answered',
    ('ig_meta_t', 'store_words'): 'an unknown job: ox unused, UNKNOWN_JOB answered',
    ('ig_meta_t', 'r_fp'): 'store requests: k_same, k_new are _ in their entries',
    ('ig_meta_t', 'r_new'): 'probes, store requests: k_dup, k_done are _ in theirs',
    ('ig_meta_t', 'r_old'): 'store requests: k_dup, k_free, p_hw are _ in theirs',
}


def random_request(rng, d, rounds):
    """A request of a known job and worker, as the library could send or a
    network could deliver late or twice, biased to meet in few cells."""
    job = rng.choice(list(d.jobs.jobs))
    n, _, store_words = d.jobs.jobs[job]
    rank = rng.randrange(n)
    kind = rng.random()
    if kind < 0.6:
        # jobs 5 and 9 share block 1: their rounds meet in slot 0 only
        slot = rng.choice((0, 2, 3) if job == 9 else (0, 1, 255))
        shadow = rng.randrange(2)
        key = (job, slot, shadow)
        if key not in rounds or rng.random() < 0.04:  # the slot's next round
            n_ = rounds[key]['status'] + 1 if key in rounds else 1
            count = rng.choice((ELEMS, ELEMS, 7, 1))
            rounds[key] = dict(status=n_ % 256, seq=rng.randrange(1 << 32), count=count,
                               exp=rng.choice((0, 0, -3)), offset=rng.choice((0, 32 * slot)),
                               aux=rng.choice((count, 1000)))
        kw = dict(rounds[key], shadow=shadow, slot=slot)
        pick = rng.random()
        if pick < 0.03:  # a late copy of an older round
            kw['status'] = (kw['status'] - rng.choice((1, 2, 100))) % 256
        elif pick < 0.05:  # a piece that disagrees with the round (it fails)
            field = rng.choice(('seq', 'offset', 'exp', 'aux', 'status'))
            kw[field] = (kw[field] + 1) % 256 if field in ('status',) else \
                (kw[field] - 1 if field == 'exp' else kw[field] + 1)
        kw['next_exp'] = rng.randrange(-8, 8)
        if rng.random() < 0.2:
            del kw['count']
            return job, rank, OP['AR_PROBE'], kw
        kw['vals'] = [rng.randrange(1 << 32) for _ in range(kw['count'])]
        kw['flags'] = rng.choice((0, 1))
        return job, rank, OP['AR_DATA'], kw
    rows = max(store_words // ELEMS, 1)
    off = rng.choice((0, ELEMS * rng.randrange(rows), ELEMS * rng.randrange(rows),
                      ELEMS * rows, ELEMS * rng.randrange(600), rng.randrange(1 << 16),
                      rng.randrange(1 << 32)))
    if kind < 0.8:
        count = rng.choice((ELEMS, ELEMS, ELEMS, 5, 0))
        vals = [rng.randrange(1 << 32) for _ in range(min(count, ELEMS))]
        return job, rank, OP['PUSH'], dict(seq=rng.randrange(1, 6), offset=off, count=count,
                                           aux=rng.randrange(100), vals=vals)
    count = rng.choice((0, 0, 0, 2))
    return job, rank, OP['PULL'], dict(seq=rng.randrange(100), offset=off,
                                       aux=rng.choice((ELEMS, ELEMS, 3)), count=count,
                                       vals=[rng.randrange(9) for _ in range(count)])


def directed(d):
    """What the issue asks of the executed program, checked on its outputs."""
    job = 5
    n = d.jobs.jobs[job][0]
    # The CRC-collision pair (tests/unit/test_tna_model.c): rounds 1 and 3
    # of one cell whose old 31-bit fingerprints were equal.
    for rnd, seq in ((1, 1000), (3, 2925269479)):
        outs = []
        for r in range(n):
            outs = d.send(job, r, OP['AR_DATA'], seq=seq, slot=7, count=4, status=rnd,
                          offset=0, aux=4, vals=[rnd * 100 + r, 1, 2, 3])
        want = [sum(rnd * 100 + r for r in range(n)), n, 2 * n, 3 * n]
        if len(outs) != n or any(decode(fr)[1] != want or decode(fr)[0][3] != seq
                                 for _, fr, _ in outs):
            raise SystemExit('FAIL: collision pair, round %d: %s' %
                             (rnd, [decode(fr) for _, fr, _ in outs]))
    # A failed round (a disagreeing piece) replaced by the slot's next one.
    d.send(job, 0, OP['AR_DATA'], seq=50, slot=8, count=2, status=1, aux=2, vals=[1, 1])
    bad = d.send(job, 1, OP['AR_DATA'], seq=50, slot=8, count=2, status=1, aux=3, vals=[1, 1])
    if not bad or decode(bad[0][1])[0][10] != 4:
        raise SystemExit('FAIL: a disagreeing piece is not answered MISMATCH')
    for r in range(n):
        outs = d.send(job, r, OP['AR_DATA'], seq=51, slot=8, count=2, status=2, aux=2,
                      vals=[r, 1])
    if len(outs) != n or decode(outs[0][1])[1] != [sum(range(n)), n]:
        raise SystemExit('FAIL: the round after a failed one')
    print('directed: collision pair exact in rounds 1 and 3 (seq 1000, 2925269479); '
          'a failed round replaced by the next, exact', flush=True)


def protocol(d):
    """The paths the C model leaves to serene-switch (the checks before a
    request reaches a cell or a row), as wire.h says: JOIN's answer,
    unknown jobs and senders, malformed requests, a CLOCK past the ring."""
    sw, job = d.sw, 6
    port = Jobs.port(job, 0)

    def one(op, want, **kw):
        src = kw.pop('src', (ip_of(job, 0), 40000))  # rank 0 of job 6
        outs = sw.packet(port, frame(kw.pop('job', job), kw.pop('rank', 0), op, src=src, **kw))
        got = [(p, decode(fr)) for p, fr, _ in outs]
        if want is None:
            if got:
                raise SystemExit('FAIL: op %d %s: answered %s, want a drop' % (op, kw, got))
            return None
        if len(got) != 1 or got[0][0] != port:
            raise SystemExit('FAIL: op %d %s: %s, want one answer to port %d' %
                             (op, kw, got, port))
        h, vals = got[0][1]
        for i, v in want.items():
            if (vals if i == 'vals' else h[i]) != v:
                raise SystemExit('FAIL: op %d %s: answer %s %s, want [%s] = %s' %
                                 (op, kw, h, vals, i, v))
        return h
    st = {'UNKNOWN_JOB': 1, 'BAD_COUNT': 5, 'BAD_SLOT': 6, 'CLOCK_AHEAD': 9}
    # JOIN: stateless JOIN_ACK, whole rows, the job's parameters
    one(OP['JOIN'], {0: OP['JOIN_ACK'], 9: 4, 12: 0x1234, 6: 4,
                     'vals': [4, ELEMS, 256, 16384]},
        aux=0x1234)
    one(OP['AR_DATA'], {0: OP['ERROR'], 10: st['UNKNOWN_JOB'], 12: OP['AR_DATA']}, job=77)
    one(OP['AR_DATA'], None, src=(0x0a0000aa, 40000))  # a sender no job file has
    one(OP['AR_DATA'], None, job=5)  # the address is job 6's
    one(OP['AR_DATA'], None, rank=1)  # the address is rank 0's
    one(OP['AR_DATA'], {0: OP['ERROR'], 10: st['BAD_SLOT']}, slot=300, count=1, vals=[1])
    one(OP['AR_DATA'], {0: OP['ERROR'], 10: st['BAD_COUNT']}, count=ELEMS + 1,
        vals=[1] * (ELEMS + 1))
    one(OP['AR_PROBE'], {0: OP['ERROR'], 10: st['BAD_COUNT']}, count=3, vals=[1] * 3)
    one(OP['CLOCK'], {0: OP['ERROR'], 10: st['CLOCK_AHEAD']}, seq=100)
    for op in (OP['LEAVE'], OP['AR_RESULT'], OP['PROCEED']):
        one(op, None)
    bad = frame(job, 0, OP['AR_DATA'], count=1, vals=[1])
    for b in (bad[:36] + b'\x27\x0f' + bad[38:], bad[:42] + b'\x53\x46' + bad[44:]):
        if sw.packet(port, b):  # another UDP port, another magic
            raise SystemExit('FAIL: a frame that is not Serene was answered')
    print('protocol: JOIN_ACK, UNKNOWN_JOB, BAD_SLOT, BAD_COUNT, CLOCK_AHEAD as wire.h '
          'says; unknown senders, wrong job or rank, LEAVE, answers and other '
          'traffic dropped', flush=True)


def barrier(d):
    """Two jobs' CLOCKs under BSP (policy_table's default; the barrier is not
    in the C model): the workers before the last HOLD, the last one's CLOCK
    fills the ring entry, is resubmitted, moves low and is answered PROCEED
    while the others get RELEASE; each job in its own block."""
    for job in (5, 6):
        n = d.jobs.jobs[job][0]
        for c in (0, 1):
            for r in range(n):
                outs = d.sw.packet(Jobs.port(job, r), frame(job, r, OP['CLOCK'], seq=c))
                got = sorted((decode(fr)[0][0], rid if p != Jobs.port(job, r) else -1)
                             for p, fr, rid in outs)
                if r < n - 1:
                    want = [(OP['HOLD'], -1)]
                else:
                    want = sorted([(OP['RELEASE'], q) for q in range(n - 1)] +
                                  [(OP['PROCEED'], -1)])
                if got != want:
                    raise SystemExit('FAIL: job %d CLOCK %d rank %d: %s, want %s' %
                                     (job, c, r, got, want))
        low = d.sw.reg_read('Ingress.low_reg', job % 4)
        if low != 1:
            raise SystemExit('FAIL: job %d low %d after clock 1' % (job, low))
    print('barrier: jobs 5 and 6 (BSP) released clocks 0 and 1, each in its own block')


def main(argv):
    if len(argv) < 3:
        sys.stderr.write('usage: tna_exec_diff.py TNA_MODEL_CLI IR_JSON [PACKETS] [SEED]\n')
        return 2
    packets = int(argv[3]) if len(argv) > 3 else 3000
    seed = int(argv[4]) if len(argv) > 4 else 1
    # Jobs 5 and 9 share register block 1 (as on the switch), 6 has block 2.
    d = Diff(argv[1], argv[2], [(5, 3, 64), (6, 4, 16384), (9, 2, 32 * 512)])
    directed(d)
    rng = random.Random(seed)
    rounds = {}
    for i in range(packets):
        job, rank, op, kw = random_request(rng, d, rounds)
        d.send(job, rank, op, **kw)
        if (i + 1) % 1000 == 0:
            print('%d packets agree' % (i + 1), flush=True)
    barrier(d)
    protocol(d)
    if not d.nonzero['cell'] or not d.nonzero['row']:
        raise SystemExit('FAIL: the lanes compared never held data (%s): a wrong index?' %
                         d.nonzero)
    extra = d.sw.uninit_reads - set(UNINIT_OK)
    if extra:
        raise SystemExit('FAIL: metadata read before any write: %s' % sorted(extra))
    print('metadata read before any write: %s (each unable to change an answer: '
          'UNINIT_OK)' % ', '.join('%s.%s' % f for f in sorted(d.sw.uninit_reads)))
    cov = tna_exec.coverage(d.sw)
    print('coverage: %s' % '; '.join('%s %d of %d' % (k, len(v[0]), len(v[1]))
                                     for k, v in sorted(cov.items())))
    print('not taken: actions %s; register actions %s' %
          (' '.join(sorted(cov['actions'][1] - cov['actions'][0])),
           ' '.join(sorted(cov['register actions'][1] - cov['register actions'][0]))))
    print('PASS: %d packets agree (seed %d): %s; lanes compared holding data: %d cells, '
          '%d rows' %
          (d.packets, seed, ', '.join('%s %d' % kv for kv in sorted(d.verdicts.items())),
           d.nonzero['cell'], d.nonzero['row']))
    d.cli.stdin.close()
    d.cli.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
