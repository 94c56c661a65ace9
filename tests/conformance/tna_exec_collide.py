#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tna_exec_collide.py - the CRC-collision pair through an executed Tofino
program (p4/tna/exec): two calls whose pieces had the same 31-bit
fingerprint before the round number (seq 1000 and 2925269479, offset 0,
exp 0, aux 4; tests/unit/test_tna_model.c), as rounds 1 and 3 of one cell
of a job of 3 workers. Each round's AR_RESULT must carry that round's
sums. Any IR from tna_ir.py runs: the kept one passes; the program before
the round number (e15a425) answers round 3 with round 1's sums and fails
(p4/tna/README.md shows how to make its IR).

    tna_exec_collide.py IR_JSON
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'p4', 'tna', 'exec'))
sys.path.insert(0, HERE)
import tna_exec  # noqa: E402
from tna_exec_diff import OP, Jobs, decode, frame  # noqa: E402


def main(argv):
    if len(argv) != 2:
        sys.stderr.write('usage: tna_exec_collide.py IR_JSON\n')
        return 2
    sw = tna_exec.Switch(tna_exec.Program.load(argv[1]))
    job, n = 5, 3
    Jobs(sw, [(job, n, 64)])
    bad = []
    for rnd, seq in ((1, 1000), (3, 2925269479)):
        want = [sum(rnd * 100 + r for r in range(n)), n, 2 * n, 3 * n]
        results = []
        for r in range(n):
            outs = sw.packet(Jobs.port(job, r),
                             frame(job, r, OP['AR_DATA'], seq=seq, slot=7, count=4, status=rnd,
                                   aux=4, vals=[rnd * 100 + r, 1, 2, 3]))
            results += [decode(fr) for _, fr, _ in outs if decode(fr)[0][0] == OP['AR_RESULT']]
        got = sorted({(h[3], tuple(v)) for h, v in results})
        print('round %d (seq %d): AR_RESULT %s, want %s' % (rnd, seq, got, [(seq, tuple(want))]))
        if got != [(seq, tuple(want))]:
            bad.append(rnd)
    if bad:
        print('FAIL: round(s) %s answered with sums not their own' % bad)
        return 1
    print('PASS: both rounds of the colliding pair summed exactly')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
