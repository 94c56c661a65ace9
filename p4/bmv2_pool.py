#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bmv2_pool.py - the control plane that shares BMv2's memory among shared
jobs (p4/README.md, "Shared jobs"): serene-switch's pool (pool.c) run from
outside the switch, on the registers of p4/serene.p4.

    bmv2_pool.py --blocks FIRST-LAST [--policy first|fair|priority] [--idle-ms MS]
                 [--period-ms MS] [--duration S] [--log FILE] JOB[:PRIO]...
                 -- CLI...

The jobs are shared jobs already on the switch (serene-ctl compile --target
bmv2 with lease = 0: no block of their own); blocks FIRST..LAST are the
pool. CLI is the simple_switch_CLI command line (commands on its stdin).
Every period (200 ms) it reads the switch's lease_reg, take_reg, want_reg,
slot_ts_reg and cnt_reg, then:
- a block whose take completed (the slot's lease cleared by the data plane
  at the round boundary) is free, or goes to the slot that claimed it;
- a slot whose round found no block (want_reg) gets a free block, the
  higher priority first; with none free, under priority it claims one
  from the lowest-priority job below it, and under fair share (the pool
  over the jobs with a packet within --idle-ms), while its job is below
  its share, from the job furthest above it: that job's highest leased
  slot, taken at its next round (take_reg; serene-switch's fair share
  waits for the holder's next call instead);
- a leased slot with no packet for --idle-ms (500) and no open round is
  taken (take_reg: no new round can start in the block), and freed at the
  next period if it is still quiet; so is a claimed slot its holder no
  longer uses, for its claimant;
- each job's window (share_table's, the status of its results) is the
  blocks it holds or may get (free ones; under priority, those of lower
  priority; under fair share, at least its share), 0 (all its slots) from
  64 on, as serene-switch stamps it, but for fair share: serene-switch's
  announces only the blocks the job has (kept, handed over, free) up to
  its share and claims the rest as rounds complete, and gives a new job
  its share in the JOIN_ACKs. Here the claims come from rounds that find
  no block (want_reg), so the window must reach past the blocks held.
It never leases more blocks than the pool has: each period checks the
leases it reads against it, and a lease it did not make is an error (exit
1). One line per change to --log (default stderr). Runs until --duration
or SIGTERM/SIGINT; exit 0, 1 (the switch's state is not what it made, or
a CLI command failed), 2 (usage).
"""
import re
import signal
import subprocess
import sys
import time

SLOTS = 64   # p4/include/constants.p4: SR_P4_SLOTS
JOBS = 4     # SR_P4_MAX_JOBS


class Pool:
    def __init__(self, cli, blocks, policy, idle_ms, jobs, log):
        self.cli, self.policy, self.idle_us, self.log = cli, policy, idle_ms * 1000, log
        self.free = list(blocks)
        self.pool = set(blocks)
        self.jobs = jobs            # job id -> priority
        self.owner = {}             # block -> slot entry holding it
        self.claim = {}             # slot entry being taken -> claimant slot entry (or None)
        self.quiet = {}             # slot entry -> (slot_ts, since)
        self.window = {}
        self.share = {}             # job -> (handle, fb_addr, fb_udp, port)
        self.seen = {}              # job -> (its slots' latest packet time, when that changed)

    def run_cli(self, cmds):
        try:
            r = subprocess.run(self.cli, input='\n'.join(cmds) + '\n', capture_output=True,
                               text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise RuntimeError('cannot run %s: %s' % (' '.join(self.cli), e))
        if r.returncode or re.search(r'rror|nvalid', r.stdout):
            raise RuntimeError('CLI failed: %s %s' % (r.stdout[-300:], r.stderr[-300:]))
        return r.stdout

    def read(self):
        out = self.run_cli(['register_read %s' % n for n in
                            ('lease_reg', 'take_reg', 'want_reg', 'slot_ts_reg', 'cnt_reg')])
        regs = {}
        for name, vals in re.findall(r'(\w+)= ([0-9, ]+)', out):
            regs[name] = [int(v) for v in vals.split(',')]
        return regs

    def setup(self):
        for j in self.jobs:
            out = self.run_cli(['table_dump_entry_from_key share_table %d' % j])
            h = re.search(r'entry (0x[0-9a-f]+)', out)
            a = re.search(r'Action entry: set_share - ([0-9a-f]+), ([0-9a-f]+), ([0-9a-f]+)', out)
            if not h or not a:
                raise RuntimeError('job %d has no share_table entry: not a shared job' % j)
            self.share[j] = (int(h.group(1), 16), '0x' + a.group(1), '0x' + a.group(2),
                             '0x' + a.group(3))
            self.window[j] = None

    def note(self, msg):
        self.log.write('%.3f %s\n' % (time.monotonic(), msg))
        self.log.flush()

    def slots_of(self, j):
        b = (j % JOBS) * SLOTS
        return range(b, b + SLOTS)

    def job_of(self, sidx):
        return next(j for j in self.jobs if sidx in self.slots_of(j))

    def grant(self, cmds, sidx, blk):
        self.owner[blk] = sidx
        cmds += ['register_write lease_reg %d %d' % (sidx, blk + 1),
                 'register_write want_reg %d 0' % sidx]
        self.note('grant block %d to job %d slot %d' % (blk, self.job_of(sidx), sidx % SLOTS))

    def step(self):
        r = self.read()
        lease, take, want, ts, cnt = (r['lease_reg'], r['take_reg'], r['want_reg'],
                                      r['slot_ts_reg'], r['cnt_reg'])
        cmds = []
        now = time.monotonic()
        for j in self.jobs:                       # active: a packet within --idle-ms
            last = max(ts[s] for s in self.slots_of(j))
            if self.seen.get(j, (None, 0))[0] != last:
                self.seen[j] = (last, now)
        held = {}
        for j in self.jobs:
            for s in self.slots_of(j):
                if lease[s]:
                    blk = lease[s] - 1
                    if blk not in self.pool or self.owner.get(blk) != s:
                        raise RuntimeError('slot entry %d holds block %d, not leased here' % (s, blk))
                    held[blk] = s
        for blk, s in list(self.owner.items()):
            if blk not in held:                   # a take completed at a round boundary
                del self.owner[blk]
                to = self.claim.pop(s, None)
                self.quiet.pop(s, None)
                self.note('block %d back from job %d slot %d' % (blk, self.job_of(s), s % SLOTS))
                if to is not None and lease[to] == 0:
                    self.grant(cmds, to, blk)
                else:
                    self.free.append(blk)
        if len(self.owner) > len(self.pool):
            raise RuntimeError('%d blocks leased, the pool has %d' % (len(self.owner), len(self.pool)))
        # Slots that asked, higher priority first.
        asking = [s for j in self.jobs for s in self.slots_of(j)
                  if want[s] and not lease[s] and s not in self.claim.values()]
        asking.sort(key=lambda s: (-self.jobs[self.job_of(s)], s))
        for s in asking:
            if self.free:
                self.grant(cmds, s, self.free.pop())
            elif self.policy == 'priority':
                self.preempt(cmds, s, take)
            elif self.policy == 'fair':
                self.fair_take(cmds, s, take)
        self.idle(cmds, lease, take, ts, cnt)
        for j in self.jobs:
            w = self.may_hold(j)
            w = w if w < SLOTS else 0
            if w != self.window[j]:
                h, fa, fu, port = self.share[j]
                cmds.append('table_modify share_table set_share %d %s %s %s %d' % (h, fa, fu, port, w))
                self.window[j] = w
                self.note('job %d window %d' % (j, w))
        if cmds:
            self.run_cli(cmds)

    def keeps(self, j):
        return sum(1 for o in self.owner.values() if self.job_of(o) == j and o not in self.claim)

    def fair_share(self, j):
        """The pool over the jobs active now, j counted as one."""
        now = time.monotonic()
        n = sum(1 for k in self.jobs
                if k == j or (now - self.seen.get(k, (None, -1e9))[1]) * 1e6 < self.idle_us)
        return len(self.pool) // n

    def fair_take(self, cmds, s, take):
        """Fair share: a job below its share takes a block back from the job
        furthest above it (its highest leased slot, at that slot's next
        round; serene-switch waits for the holder's next call)."""
        j = self.job_of(s)
        share = self.fair_share(j)
        claims = sum(1 for to in self.claim.values() if to is not None and self.job_of(to) == j)
        if self.keeps(j) + claims >= share:
            return
        over = [(self.keeps(v), v) for v in self.jobs if v != j and self.keeps(v) > share]
        if not over:
            return
        v = max(over)[1]
        slots = [o for o in self.owner.values()
                 if self.job_of(o) == v and o not in self.claim and not take[o]]
        if slots:
            self.claim_slot(cmds, s, max(slots))

    def may_hold(self, j):
        """The blocks job j holds or may get (serene-switch's sr_pool_stamp):
        its own, the free ones, and under priority those of lower-priority
        jobs not being taken; under fair share, at least its share."""
        if self.policy == 'fair':
            return max(self.fair_share(j), self.keeps(j))
        n = len(self.free)
        for o in self.owner.values():
            oj = self.job_of(o)
            if oj == j or (self.policy == 'priority' and self.jobs[oj] < self.jobs[j] and
                           o not in self.claim):
                n += 1
        return n

    def preempt(self, cmds, s, take):
        pj = self.jobs[self.job_of(s)]
        victims = [(self.jobs[self.job_of(o)], -o, o) for b, o in self.owner.items()
                   if self.jobs[self.job_of(o)] < pj and o not in self.claim and not take[o]]
        if not victims:
            return
        self.claim_slot(cmds, s, min(victims)[2])

    def claim_slot(self, cmds, s, o):
        """Slot entry s claims o's block: taken at o's next round."""
        self.claim[o] = s
        cmds.append('register_write take_reg %d 1' % o)
        self.note('job %d slot %d takes job %d slot %d' % (self.job_of(s), s % SLOTS,
                                                          self.job_of(o), o % SLOTS))

    def idle(self, cmds, lease, take, ts, cnt):
        """Quiet slots give their blocks up: a slot with no packet for
        --idle-ms and no open round is taken (no new round can use the
        block from then on), and freed at the next period if still so. A
        claimed slot the holder no longer uses (its smaller window leaves
        it out) is freed the same way, for its claimant: no round of it
        would ever hand the block over."""
        now = time.monotonic()
        for blk, s in list(self.owner.items()):
            last, since = self.quiet.get(s, (None, now))
            if ts[s] != last:
                self.quiet[s] = (ts[s], now)
                continue
            if (now - since) * 1e6 < self.idle_us or cnt[2 * s] or cnt[2 * s + 1]:
                continue
            if not take[s]:
                if s not in self.claim:
                    self.claim[s] = None      # no new round can use it from now on
                    cmds.append('register_write take_reg %d 1' % s)
                continue
            if take[s] != 1:
                continue                      # its handover round is at the fallback
            # Still quiet with the take set: no round was open or started.
            cmds += ['register_write lease_reg %d 0' % s, 'register_write take_reg %d 0' % s]
            del self.owner[blk]
            to = self.claim.pop(s, None)
            self.quiet.pop(s, None)
            self.note('block %d back from quiet job %d slot %d'
                      % (blk, self.job_of(s), s % SLOTS))
            if to is not None and lease[to] == 0:
                self.grant(cmds, to, blk)
            else:
                self.free.append(blk)

def main(argv):
    args, cli = (argv[1:argv.index('--')], argv[argv.index('--') + 1:]) if '--' in argv else (None, None)
    if not args or not cli:
        sys.stderr.write(__doc__)
        return 2
    opts = {'--policy': 'first', '--idle-ms': '500', '--period-ms': '200', '--duration': '0',
            '--log': None, '--blocks': None}
    jobs = {}
    i = 0
    while i < len(args):
        if args[i] in opts and i + 1 < len(args):
            opts[args[i]] = args[i + 1]
            i += 2
            continue
        m = re.fullmatch(r'(\d+)(?::(\d+))?', args[i])
        if not m or int(m.group(1)) > 65535:
            sys.stderr.write('bmv2_pool: %r is not JOB[:PRIO] or an option\n' % args[i])
            return 2
        jobs[int(m.group(1))] = int(m.group(2) or 0)
        i += 1
    m = re.fullmatch(r'(\d+)-(\d+)', opts['--blocks'] or '')
    if not m or int(m.group(1)) > int(m.group(2)) or int(m.group(2)) >= JOBS * SLOTS:
        sys.stderr.write('bmv2_pool: --blocks FIRST-LAST within 0-%d\n' % (JOBS * SLOTS - 1))
        return 2
    if opts['--policy'] not in ('first', 'fair', 'priority') or not jobs or \
            len({j % JOBS for j in jobs}) != len(jobs):
        sys.stderr.write('bmv2_pool: a policy of first, fair or priority, jobs with distinct ids '
                         'mod %d\n'
                         % JOBS)
        return 2
    log = open(opts['--log'], 'a') if opts['--log'] else sys.stderr
    pool = Pool(cli, range(int(m.group(1)), int(m.group(2)) + 1), opts['--policy'],
                int(opts['--idle-ms']), jobs, log)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    end = time.monotonic() + float(opts['--duration']) if float(opts['--duration']) else None
    try:
        pool.setup()
        pool.note('pool of %d blocks, policy %s, jobs %s' % (len(pool.pool), opts['--policy'], jobs))
        while not stop and (end is None or time.monotonic() < end):
            pool.step()
            time.sleep(int(opts['--period-ms']) / 1000)
    except RuntimeError as e:
        pool.note('error: %s' % e)
        return 1
    pool.note('stopped: %d blocks leased' % len(pool.owner))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
