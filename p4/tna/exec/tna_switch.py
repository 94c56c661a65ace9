#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tna_switch.py - the executed Tofino program (tna_exec.py) as a switch
real workers talk to over UDP.

serene-ctl's bfrt_python script for the job sets the program's tables and
registers (tna_bfrt.py). Each datagram becomes the frame the program would
see: Ethernet, IPv4 and UDP from the job file's address of the sending rank
(the first packet from a socket tells its rank: the header's worker id; the
program itself checks the pair, as on the switch) to SR_WIRE_UDP_PORT, in
at the rank's switch port. Each frame the program sends goes back to the
socket of the address it is sent to (a JOIN from a new socket moves the
rank's address to it: a new context). So the workers' ephemeral ports stand
for the job file's addresses, a NAT in front of the switch; nothing else is
changed. One packet at a time, a few milliseconds each.

    tna_switch.py --ir IR --ctl SERENE_CTL --job-file JOB --policy POLICY
                  [--listen 127.0.0.1:0] [--port-file F] [--duration SEC]
                  [--loss P] [--dup P] [--reorder P] [--seed S]

--loss, --dup, --reorder: each datagram, in both directions, is dropped,
sent twice, or held back until the next one passes (or 0.2 s pass), with
these probabilities (seeded), as serene-switch's --loss/--dup/--reorder.

Stops at SIGTERM, SIGINT or --duration (default 600 s) and prints its
counts: datagrams in and out, per op, and the program's ar_ctr.
"""
import argparse
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tna_bfrt  # noqa: E402
import tna_exec  # noqa: E402



def job_addresses(path):
    """rank -> (address, UDP port, switch port) from a job file."""
    out, ports = {}, {}
    with open(path) as f:
        for line in f:
            m = re.match(r'\s*worker\.(\d+)\s*=\s*([\d.]+):(\d+)', line)
            if m:
                out[int(m.group(1))] = (int.from_bytes(socket.inet_aton(m.group(2)), 'big'),
                                        int(m.group(3)))
            m = re.match(r'\s*worker\.(\d+)\.port\s*=\s*(\d+)', line)
            if m:
                ports[int(m.group(1))] = int(m.group(2))
    return {r: (a, p, ports.get(r, r + 1)) for r, (a, p) in out.items()}


class Chaos:
    """Seeded loss, duplication and reordering of a stream of items."""

    def __init__(self, loss, dup, reorder, rng):
        self.loss, self.dup, self.reorder, self.rng = loss, dup, reorder, rng
        self.held = []

    def feed(self, item):
        """The items to deliver now, item's fate drawn."""
        r = self.rng.random()
        if r < self.loss:
            return []
        if r < self.loss + self.dup:
            return [item, item] + self.flush()
        if r < self.loss + self.dup + self.reorder and not self.held:
            self.held.append(item)
            return []
        return [item] + self.flush()

    def flush(self):
        out, self.held = self.held, []
        return out


def main(argv):
    ap = argparse.ArgumentParser(prog='tna_switch.py')
    ap.add_argument('--ir', required=True)
    ap.add_argument('--ctl', required=True)
    ap.add_argument('--job-file', required=True)
    ap.add_argument('--policy', required=True)
    ap.add_argument('--listen', default='127.0.0.1:0')
    ap.add_argument('--port-file')
    ap.add_argument('--duration', type=float, default=600)
    for name in ('loss', 'dup', 'reorder'):
        ap.add_argument('--' + name, type=float, default=0.0)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv[1:])
    if any(not 0 <= p <= 1 for p in (a.loss, a.dup, a.reorder)) or \
            a.loss + a.dup + a.reorder > 1:
        ap.error('--loss, --dup and --reorder are probabilities with a sum of at most 1')
    run = subprocess.run([a.ctl, 'compile', '--target', 'tofino', '--job-file', a.job_file,
                          a.policy], capture_output=True, text=True)
    if run.returncode:
        sys.stderr.write('tna_switch: serene-ctl: %s\n' % run.stderr.strip())
        return 1
    sw = tna_exec.Switch(tna_exec.Program.load(a.ir))
    tna_bfrt.run_script(sw, run.stdout)
    ranks = job_addresses(a.job_file)
    by_addr = {(ip, p): r for r, (ip, p, _) in ranks.items()}
    host, port = a.listen.rsplit(':', 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, int(port)))
    sock.settimeout(0.2)
    if a.port_file:
        with open(a.port_file + '.tmp', 'w') as f:
            f.write('%d\n' % sock.getsockname()[1])
        os.rename(a.port_file + '.tmp', a.port_file)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    nat, back = {}, {}  # worker socket -> rank; rank -> worker socket
    n_in = n_out = 0
    ops_in, ops_out = {}, {}
    end = time.monotonic() + a.duration
    print('tna_switch: job file %s, %d ranks, listening on %s:%d' %
          (a.job_file, len(ranks), host, sock.getsockname()[1]), flush=True)
    rng = random.Random(a.seed)
    chaos_in = Chaos(a.loss, a.dup, a.reorder, rng)
    chaos_out = Chaos(a.loss, a.dup, a.reorder, rng)

    def send(items):
        nonlocal n_out
        for payload, addr in items:
            sock.sendto(payload, addr)
            n_out += 1
            ops_out[payload[3]] = ops_out.get(payload[3], 0) + 1

    def run(data, src):
        rank = nat.get(src)
        if rank is None:
            rank = struct.unpack('>H', data[6:8])[0]
            if rank not in ranks or (rank in back and data[3] != 1):
                return  # not the job file's rank, or bound and this is no JOIN
            if rank in back:  # a new context of the rank (a JOIN): it takes the address
                del nat[back[rank]]
            nat[src], back[rank] = rank, src
        ip, uport, swport = ranks[rank]
        try:
            outs = sw.packet(swport, tna_exec.udp_frame(ip, uport, data))
        except tna_exec.ExecError as e:
            print('tna_switch: a packet the executor cannot run: %s' % e, flush=True)
            return
        for _, fr, _ in outs:
            dst = struct.unpack('>I', fr[30:34])[0], struct.unpack('>H', fr[36:38])[0]
            ulen = struct.unpack('>H', fr[38:40])[0]
            r = by_addr.get(dst)
            if r is not None and r in back:
                send(chaos_out.feed((fr[42:34 + ulen], back[r])))

    while not stop and time.monotonic() < end:
        try:
            data, src = sock.recvfrom(65536)
        except socket.timeout:
            for item in chaos_in.flush():
                run(*item)
            send(chaos_out.flush())
            continue
        if len(data) < 28:
            continue
        n_in += 1
        ops_in[data[3]] = ops_in.get(data[3], 0) + 1
        for item in chaos_in.feed((data, src)):
            run(*item)
    ctr = sw.counters.get('Ingress.ar_ctr', {})
    print('tna_switch: in %d out %d; ops in %s; ops out %s; ar_ctr %s' %
          (n_in, n_out, dict(sorted(ops_in.items())), dict(sorted(ops_out.items())),
           dict(sorted(ctr.items()))), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
