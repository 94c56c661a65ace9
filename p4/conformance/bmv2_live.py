#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bmv2_live.py - replay a conformance scenario with control steps on a
running simple_switch (bmv2_replay.sh's live mode; simple_switch's
--use-files mode reads every input at once, so no command could come
between two frames).

    bmv2_live.py DIR CTL OUT_PCAP CLI... -- PORT=IFACE...

DIR holds the scenario's split inputs (PORT_in.pcap, sr-conform split) and
gets the outputs (PORT_out.pcap, for sr-conform compare); OUT_PCAP is the
scenario's expected output (NAME.out.pcap), whose frames carry the
timestamp of the input they answer. The inputs are
sent one at a time in timestamp order, each on its port's interface (the
host side of a veth pair whose other side is the switch's port); before
each, the BMv2 commands of CTL's steps due by then (NAME.ctl: "TS SW BMV2"
lines) go to the switch through the CLI command (its stdin). After each
input the frames the switch sends are collected on every interface until
as many as the trace expects for that input have come, at most 5 s, and
for 50 ms after an input that expects none.
Exit status: 0 replayed (compare decides), 1 a CLI command failed, 2 bad
usage or I/O.
"""
import os
import select
import socket
import struct
import subprocess
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def read_pcap(path):
    """The frames of a classic pcap file: [(ts_us, bytes)]."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    nano = magic in (0xa1b23c4d, 0x4d3cb2a1)
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(end + 'IIII', data[off:off + 16])
        off += 16
        out.append((sec * 1000000 + (frac // 1000 if nano else frac), data[off:off + incl]))
        off += incl
    return out


def write_pcap(path, frames):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for ts, fr in frames:
            f.write(struct.pack('<IIII', ts // 1000000, ts % 1000000, len(fr), len(fr)))
            f.write(fr)


def main(argv):
    if '--' not in argv or argv.index('--') < 5:
        sys.stderr.write(__doc__)
        return 2
    sep = argv.index('--')
    wdir, ctl, out_pcap, cli = argv[1], argv[2], argv[3], argv[4:sep]
    ports = dict(a.split('=', 1) for a in argv[sep + 1:])
    inputs = []
    for port in ports:
        path = os.path.join(wdir, port + '_in.pcap')
        if os.path.exists(path):
            inputs += [(ts, port, fr) for ts, fr in read_pcap(path)]
    inputs.sort(key=lambda x: x[0])
    expect = {}
    for ts, _ in read_pcap(out_pcap):
        expect[ts] = expect.get(ts, 0) + 1
    steps = []
    with open(ctl) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            ts, _, bmv2 = line.rstrip('\n').split('\t')
            steps.append((int(ts), bmv2))
    socks = {}
    for port, ifc in ports.items():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((ifc, 0))
        s.setblocking(False)
        socks[port] = s
    got = {port: [] for port in ports}

    def drain(until, want):
        n = 0
        while True:
            left = until - time.monotonic()
            if left <= 0 or (want and n >= want):
                return n
            ready, _, _ = select.select(list(socks.values()), [], [], left)
            for port, s in socks.items():
                if s not in ready:
                    continue
                while True:
                    try:
                        fr, addr = s.recvfrom(65535)
                    except BlockingIOError:
                        break
                    if addr[2] == PACKET_OUTGOING:
                        continue
                    got[port].append((ts_now[0], fr))
                    n += 1

    ts_now = [0]
    for ts, port, fr in inputs:
        while steps and steps[0][0] <= ts:
            cmd = steps.pop(0)[1]
            if cmd != '-':
                r = subprocess.run(cli, input=cmd + '\n', capture_output=True, text=True)
                if r.returncode or 'rror' in r.stdout or 'nvalid' in r.stdout:
                    sys.stderr.write('bmv2_live: %r failed: %s%s\n' % (cmd, r.stdout, r.stderr))
                    return 1
        ts_now[0] = ts
        socks[port].send(fr)
        want = expect.get(ts, 0)
        n = drain(time.monotonic() + (5.0 if want else 0.05), want)
        if want and n < want:
            sys.stderr.write('bmv2_live: input at %d: %d of %d frames out\n' % (ts, n, want))
    drain(time.monotonic() + 0.3, 0)
    for port in ports:
        write_pcap(os.path.join(wdir, port + '_out.pcap'), got[port])
    print('bmv2_live: %d inputs, %d control steps, %d frames out'
          % (len(inputs), sum(1 for _ in open(ctl) if not _.startswith('#')),
             sum(len(v) for v in got.values())))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
