#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare what serene-switch sent over DPDK for the RoCEv2 conformance
input with the expected trace, field by field.

  roce_compare.py EXPECTED.pcap GOT.pcap

Every frame must be a UC SEND Only with Immediate to UDP port 4791 with a
correct ICRC, and agree with the expected frame of the same rank in IPv4
addresses, UDP ports, BTH (opcode, destination QP, PSN), ImmDt and the
Serene message it carries, except two things the daemon does on purpose
and the conformance pipeline does not: JOIN_ACK's offset (the address
proof's cookie, serene-switch always asks for it) and the Ethernet
addresses (learnt per peer). Exit status 0 or 1.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from check_roce_tshark import frames, icrc  # noqa: E402

OP_JOIN_ACK = 2
SEND_ONLY_IMM = 0x25


def fields(f):
    """The comparable fields of a RoCEv2 SEND frame, or a reason it is not one."""
    if len(f) < 14 + 20 + 8 + 16 + 28 + 4 or f[12:14] != b"\x08\x00" or f[23] != 17:
        return "not IPv4/UDP"
    ip = f[14:]
    src, dst = ip[12:16], ip[16:20]
    sport, dport, ulen, csum = struct.unpack_from("!HHHH", ip, 20)
    bth = ip[28:40]
    if dport != 4791 or bth[0] != SEND_ONLY_IMM:
        return f"not a UC SEND Only with Immediate to 4791 (port {dport}, opcode {bth[0]:#x})"
    want, carried = icrc(f)
    if want != carried:
        return f"ICRC {carried:#010x}, computed {want:#010x}"
    dqp = int.from_bytes(bth[5:8], "big")
    psn = int.from_bytes(bth[9:12], "big")
    imm = ip[40:44]
    msg = bytearray(ip[44:20 + ulen - 4])
    if msg[3] == OP_JOIN_ACK:
        msg[20:24] = b"\0\0\0\0"  # the address proof's cookie
    return (src, dst, sport, dport, csum, bytes(bth[:5]), dqp, psn, imm, bytes(msg))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    want, got = list(frames(sys.argv[1])), list(frames(sys.argv[2]))
    bad = 0
    for i in range(max(len(want), len(got))):
        w = fields(want[i]) if i < len(want) else "(none)"
        g = fields(got[i]) if i < len(got) else "(none)"
        if isinstance(g, str) or w != g:
            print(f"frame {i + 1}: expected {w}\n         got {g}")
            bad += 1
    print(f"{len(got)} RoCEv2 frames from serene-switch, {len(want)} expected, "
          f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
