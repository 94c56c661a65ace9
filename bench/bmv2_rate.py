#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bmv2_rate.py - the packet rate a switch serves, measured with probes.

One worker joins its job (JOIN, with the cookie's round trip when the
switch asks for one, under a nonce of its own: a new incarnation, as
each run's ranks start one), then runs a closed loop of AR_PROBE headers (slot 0, call 0: a
probe changes no state, and the switch answers each at once with AR_NAK,
AR_HELD or an ERROR echoing it): WINDOW probes in flight, each answer
sends the next, for SECONDS after a warm-up of 0.2 s. Run one per worker,
all at once, and the sum of their rates is what the switch serves under a
full queue (bench/fabric_bmv2.sh runs it before the checks through BMv2).

  bmv2_rate.py --bind IP:PORT --to IP:PORT --job J --worker R --nonce N
               [--seconds S] [--window W]

It leaves the job at the end (LEAVE, thrice against a loss), so that the
job's next run may join. Before the loop it times 31 probes one at a time: the median is the
switch's round trip with an empty queue. Prints one line:
"rtt R us; answers A in T s: P packets/s" (P counts each probe and its
answer: two packets through the switch). Exit status: 0; 1 no answer
at all; 2 bad usage.
"""
import argparse
import socket
import struct
import sys
import time

MAGIC, VERSION, OP_JOIN, OP_JOIN_ACK, OP_LEAVE, OP_AR_PROBE = 0x5345, 1, 1, 2, 4, 19  # wire.h
HDR = ">HBBHHIHHbbBBII"  # magic, version, op, job, worker, seq, slot, count, exp,
# next_exp, flags, status, offset, aux: 28 bytes, big-endian (wire.h)


def hostport(s):
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{s!r} is not IP:PORT")
    return host, int(port)


def probe(job, worker, k):
    return struct.pack(HDR, MAGIC, VERSION, OP_AR_PROBE, job, worker, 0, 0, 0, 0, 0, 0, 0,
                       0x10000000 | (k & 0xFFFFFFF), 0)


def token_of(worker):
    return 0x5EED0000 + worker


def join(s, job, worker, nonce):
    """JOIN until the JOIN_ACK says this address is proven (bounded)."""
    cookie, token = 0, token_of(worker)
    for _ in range(50):
        s.send(struct.pack(HDR, MAGIC, VERSION, OP_JOIN, job, worker, token, 0, 4, 0, 0, 0, 0, 0,
                           nonce) + struct.pack(">IIII", 0, 0, cookie, 0))
        try:
            while True:
                m = s.recv(2048)
                h = struct.unpack(HDR, m[:28]) if len(m) >= 28 else None
                if h and h[2] == OP_JOIN_ACK and h[5] == token:
                    break
        except socket.timeout:
            continue
        if h[12] == 0:
            return True
        cookie = h[12]
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bind", type=hostport, required=True)
    ap.add_argument("--to", type=hostport, required=True)
    ap.add_argument("--job", type=int, required=True)
    ap.add_argument("--worker", type=int, required=True)
    ap.add_argument("--nonce", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--window", type=int, default=16)
    a = ap.parse_args()
    if not 0 < a.seconds <= 60 or not 0 < a.window <= 256:
        ap.error("--seconds in (0, 60], --window in 1..256")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(a.bind)
    s.connect(a.to)
    s.settimeout(0.05)
    if not join(s, a.job, a.worker, a.nonce):
        print("no JOIN_ACK: not joined")
        return 1
    k, rtts = 0, []
    for _ in range(31):
        t = time.monotonic()
        s.send(probe(a.job, a.worker, k))
        k += 1
        try:
            s.recv(2048)
            rtts.append(time.monotonic() - t)
        except socket.timeout:
            pass
    rtt_us = sorted(rtts)[len(rtts) // 2] * 1e6 if rtts else 0
    for _ in range(a.window):
        s.send(probe(a.job, a.worker, k))
        k += 1
    t0 = time.monotonic()
    start, end = t0 + 0.2, t0 + 0.2 + a.seconds
    answers, idle = 0, 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        try:
            s.recv(2048)
        except socket.timeout:
            # answers lost to a full queue: refill the window, bounded
            idle += 1
            for _ in range(a.window):
                s.send(probe(a.job, a.worker, k))
                k += 1
            continue
        if now >= start:
            answers += 1
        s.send(probe(a.job, a.worker, k))
        k += 1
    leave = struct.pack(HDR, MAGIC, VERSION, OP_LEAVE, a.job, a.worker, token_of(a.worker), 0, 0,
                        0, 0, 0, 0, 0, 0)
    for _ in range(3):  # unbound, so that the job's next run may join (best effort)
        s.send(leave)
    print(f"rtt {rtt_us:.0f} us; answers {answers} in {a.seconds:.2f} s: {2 * answers / a.seconds:.0f} packets/s"
          f" ({idle} refills)")
    return 0 if answers else 1


if __name__ == "__main__":
    sys.exit(main())
