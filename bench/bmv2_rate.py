#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bmv2_rate.py - the packet rate a switch serves, and its round trip.

One worker joins its job (JOIN, with the cookie's round trip when the
switch asks for one, under a nonce of its own: a new incarnation, as each
run's ranks start one), times 31 probes one at a time (the median is the
switch's round trip with an empty queue), then for SECONDS after a
warm-up of 0.2 s keeps WINDOW packets in flight:
  --kind data   (default) allreduce rounds of one endless call, 32 zeros
                each, on slots 0..WINDOW-1: every worker runs the same
                rounds, and a slot's next round goes when its result came
                (a timeout of 50 ms sends the rounds in flight again);
  --kind probe  AR_PROBE headers (slot 0, call 0), which the switch
                answers at once without changing state.
Run one per worker of the job, all at once: the sum of their rates is
what the switch serves of that traffic under a full queue
(bench/fabric_bmv2.sh runs it before the checks through BMv2). At the end
it leaves the job (LEAVE, thrice against a loss), so that the job's next
run may join.

  bmv2_rate.py --bind IP:PORT --to IP:PORT --job J --worker R --nonce N
               [--seconds S] [--window W] [--kind data|probe]

Prints one line: "rtt R us; KIND: answers A in T s: P packets/s" (P
counts each packet and its answer: two packets through the switch per
answer). Exit status: 0; 1 no answer at all; 2 bad usage.
"""
import argparse
import os
import re
import socket
import struct
import sys
import time


def wire_constants():
    """The magic, the version and the ops, read from lib/proto/wire.h (the one
    source of the wire format), not copied here."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "proto", "wire.h")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    c = {m[0]: int(m[1], 0) for m in re.findall(r"#define (SR_WIRE_MAGIC|SR_WIRE_VERSION) (0x[0-9a-fA-F]+|\d+)u", text)}
    c.update({m[0]: int(m[1]) for m in re.findall(r"X\((\w+), (\d+), \"", text)})
    return c


_W = wire_constants()
MAGIC, VERSION = _W["SR_WIRE_MAGIC"], _W["SR_WIRE_VERSION"]
OP_JOIN, OP_JOIN_ACK, OP_LEAVE = _W["JOIN"], _W["JOIN_ACK"], _W["LEAVE"]
OP_AR_DATA, OP_AR_RESULT, OP_AR_PROBE = _W["AR_DATA"], _W["AR_RESULT"], _W["AR_PROBE"]
ELEMS, TOTAL = 32, 0x7FFFFFE0  # values per packet (the P4 job's); a call that never ends
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


def data(job, worker, slot, rnd, window):
    """Round rnd of slot slot of one endless call: 32 zeros, exponent 0."""
    shadow = 0x8000 if rnd & 1 else 0  # each round flips the slot's shadow bit (wire.h)
    return struct.pack(HDR, MAGIC, VERSION, OP_AR_DATA, job, worker, 1, slot | shadow, ELEMS, 0,
                       0, 0, 0, (rnd * window + slot) * ELEMS, TOTAL) + bytes(4 * ELEMS)


def rounds(s, a, start, end):
    """Every worker runs the same rounds, window slots at a time; a slot's
    next round goes when its result came. Results counted from start."""
    rnd = [0] * a.window
    for slot in range(a.window):
        s.send(data(a.job, a.worker, slot, 0, a.window))
    results, idle = 0, 0
    while True:
        now = time.monotonic()
        if now >= end:
            return results, idle
        try:
            m = s.recv(4096)
        except socket.timeout:
            idle += 1  # a loss, or a peer behind: the rounds in flight again
            for slot in range(a.window):
                s.send(data(a.job, a.worker, slot, rnd[slot], a.window))
            continue
        h = struct.unpack(HDR, m[:28]) if len(m) >= 28 else None
        if not h or h[2] != OP_AR_RESULT or h[6] & 0x7FFF >= a.window:
            continue
        slot = h[6] & 0x7FFF
        if h[12] != (rnd[slot] * a.window + slot) * ELEMS:
            continue  # a shadow copy of an older round
        if now >= start:
            results += 1
        rnd[slot] += 1
        s.send(data(a.job, a.worker, slot, rnd[slot], a.window))


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
    ap.add_argument("--kind", choices=("data", "probe"), default="data")
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
    t0 = time.monotonic()
    start, end = t0 + 0.2, t0 + 0.2 + a.seconds
    if a.kind == "data":
        answers, idle = rounds(s, a, start, end)
    else:
        answers, idle = probes(s, a, k, start, end)
    leave = struct.pack(HDR, MAGIC, VERSION, OP_LEAVE, a.job, a.worker, token_of(a.worker), 0, 0,
                        0, 0, 0, 0, 0, 0)
    for _ in range(3):  # unbound, so that the job's next run may join (best effort)
        s.send(leave)
    print(f"rtt {rtt_us:.0f} us; {a.kind}: answers {answers} in {a.seconds:.2f} s: "
          f"{2 * answers / a.seconds:.0f} packets/s ({idle} refills)")
    return 0 if answers else 1


def probes(s, a, k, start, end):
    """A closed loop of window probes; answers counted from start."""
    for _ in range(a.window):
        s.send(probe(a.job, a.worker, k))
        k += 1
    answers, idle = 0, 0
    while True:
        now = time.monotonic()
        if now >= end:
            return answers, idle
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
    return answers, idle


if __name__ == "__main__":
    sys.exit(main())
