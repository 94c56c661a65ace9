#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""share_table.py OUT - the table of bench/share.sh from OUT/results.csv
and OUT/runs.csv: one row per policy, each figure the median over the
seeds with its min-max; "mean JCT / static" and "worst job / static"
compare each seed's run with static's run of the same seed (a job's own
JCT under the policy over its JCT under static; the worst job of the
seed, then the median over seeds). Exit status: 0; 1 missing data."""
import csv
import statistics
import sys


def spread(xs, fmt):
    if not xs:
        return '-'
    m = statistics.median(xs)
    if len(xs) == 1:
        return fmt % m
    return (fmt + ' (' + fmt + '-' + fmt + ')') % (m, min(xs), max(xs))


def main(out):
    jct = {}  # (seed, policy) -> {job: ms}
    with open(out + '/results.csv') as f:
        for r in csv.DictReader(f):
            jct.setdefault((r['seed'], r['policy']), {})[r['job']] = int(r['jct_ms'])
    runs = {}
    with open(out + '/runs.csv') as f:
        for r in csv.DictReader(f):
            runs[(r['seed'], r['policy'])] = r
    if not jct:
        print('share_table: no results in %s' % out, file=sys.stderr)
        return 1
    policies = []
    for _, p in sorted(jct):
        if p not in policies:
            policies.append(p)
    order = ['static', 'first', 'fair', 'priority']
    policies.sort(key=lambda p: order.index(p) if p in order else 9)
    seeds = sorted({s for s, _ in jct}, key=int)
    loads = [float(r['load1']) for r in runs.values()]
    print('Job mix on one shared switch (`bench/share.sh`): %d seeds (%s), load average %s.\n'
          % (len(seeds), ','.join(seeds), spread(loads, '%.2f')))
    print('| policy | mean JCT (s) | max JCT (s) | mean JCT / static | worst job / static '
          '| pool utilisation | rounds at the fallback | MB through the fallback '
          '| switch CPU (cores) | machine CPU busy | time CPU-saturated | failed jobs |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for p in policies:
        mean, mx, rel, worst, util, away, mb, swc, cpu, sat, failed = [], [], [], [], [], [], [], [], [], [], 0
        for s in seeds:
            j = jct.get((s, p))
            if not j:
                continue
            mean.append(statistics.mean(j.values()) / 1e3)
            mx.append(max(j.values()) / 1e3)
            base = jct.get((s, 'static'))
            if base and p != 'static':
                rel.append(statistics.mean(j.values()) / statistics.mean(base.values()))
                worst.append(max(j[k] / base[k] for k in j if k in base))
            r = runs.get((s, p))
            if r:
                util.append(float(r['utilisation']))
                away.append(int(r['fallback_rounds']))
                mb.append(int(r['fallback_bytes']) / 1e6)
                if r.get('switch_cpu'):
                    swc.append(float(r['switch_cpu']))
                    cpu.append(float(r['machine_cpu']))
                    sat.append(float(r['saturated']))
                failed += int(r['failed_jobs'])
        print('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |' % (
            p, spread(mean, '%.2f'), spread(mx, '%.2f'), spread(rel, '%.2fx'),
            spread(worst, '%.2fx'), spread(util, '%.2f'), spread(away, '%d'),
            spread(mb, '%.1f'), spread(swc, '%.2f'), spread(cpu, '%.2f'), spread(sat, '%.2f'), failed))
    return 0


if __name__ == '__main__':
    if len(sys.argv) != 2 or sys.argv[1] in ('-h', '--help'):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    sys.exit(main(sys.argv[1]))
