#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Decode the RoCEv2 conformance traces with tshark's InfiniBand dissector
and check every ICRC with an implementation of its own.

  check_roce_tshark.py TRACES_DIR

For p4/traces/roce.in.pcap and roce.out.pcap: every frame must be decoded
by tshark as IPv4/UDP/InfiniBand (its default for UDP port 4791, the
RoCEv2 dissector), with no malformed packet and no expert warning or
error, as UC SEND Only with Immediate (37) or UC RDMA WRITE Only with
Immediate (43). tshark 4.0 shows the ICRC but does not check it, so this
script computes it (zlib's CRC-32 over the fields IBTA A17.8 masks, as
lib/proto/roce.h says) and compares: every frame must match, except the
one the scenario corrupts on purpose (its index is below), which must not.
Exit status: 0 pass, 1 fail, 77 skip (no tshark).
"""
import os
import shutil
import struct
import subprocess
import sys
import zlib

# Frames of roce.in.pcap (1-based) whose ICRC the scenario flips on purpose
# (p4/conformance/scenarios_roce.c: "A frame whose ICRC is wrong").
BAD_ICRC = {"roce.in.pcap": {6}, "roce.out.pcap": set()}
OPCODES = {"37", "43"}


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise SystemExit(f"{path}: not a little-endian pcap file")
    off = 24
    while off < len(data):
        _, _, caplen, _ = struct.unpack_from("<IIII", data, off)
        off += 16
        yield data[off:off + caplen]
        off += caplen


def icrc(frame):
    """(computed, carried) ICRC of an Ethernet/IPv4/UDP/RoCEv2 frame."""
    ip = bytearray(frame[14:])
    ihl = (ip[0] & 0x0F) * 4
    total = struct.unpack_from("!H", ip, 2)[0]
    ip = ip[:total]
    body, carried = ip[:-4], struct.unpack("<I", ip[-4:])[0]
    m = bytearray(body)
    m[1] = 0xFF                          # TOS: DSCP and ECN
    m[8] = 0xFF                          # TTL
    m[10:12] = b"\xff\xff"               # IPv4 header checksum
    m[ihl + 6:ihl + 8] = b"\xff\xff"     # UDP checksum
    m[ihl + 8 + 4] = 0xFF                # BTH: FECN, BECN, reserved
    return zlib.crc32(bytes(m), zlib.crc32(b"\xff" * 8)), carried


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tshark = shutil.which("tshark")
    if not tshark:
        print("SKIP: tshark not installed (Debian: apt-get install tshark)")
        return 77
    bad = 0
    for name in ("roce.in.pcap", "roce.out.pcap"):
        path = os.path.join(sys.argv[1], name)
        out = subprocess.run(
            [tshark, "-n", "-r", path, "-T", "fields", "-E", "separator=|",
             "-e", "frame.number", "-e", "frame.protocols", "-e", "_ws.malformed",
             "-e", "_ws.expert.severity", "-e", "infiniband.bth.opcode",
             "-e", "infiniband.invariant.crc"],
            capture_output=True, text=True, check=True).stdout.splitlines()
        raw = list(frames(path))
        if len(out) != len(raw) or not raw:
            print(f"{name}: tshark shows {len(out)} frames, the file holds {len(raw)}")
            bad += 1
            continue
        n_icrc = 0
        for line, fr in zip(out, raw):
            num, protos, malformed, severity, opcode, shown = line.split("|")
            what = f"{name} frame {num}"
            if protos != "eth:ethertype:ip:udp:infiniband" and not protos.startswith(
                    "eth:ethertype:ip:udp:infiniband:data"):
                print(f"{what}: decoded as {protos}, not RoCEv2")
                bad += 1
            if malformed or severity:
                print(f"{what}: malformed={malformed!r} expert severity={severity!r}")
                bad += 1
            if opcode not in OPCODES:
                print(f"{what}: opcode {opcode!r}, not UC SEND/WRITE Only with Immediate")
                bad += 1
            want, carried = icrc(fr)
            if int(shown, 16) not in (carried, struct.unpack(">I", struct.pack("<I", carried))[0]):
                print(f"{what}: tshark shows ICRC {shown}, the frame carries {carried:#010x}")
                bad += 1
            on_purpose = int(num) in BAD_ICRC[name]
            if (want == carried) == on_purpose:
                print(f"{what}: ICRC {carried:#010x}, computed {want:#010x}"
                      f"{' (expected wrong on purpose)' if on_purpose else ''}")
                bad += 1
            n_icrc += want == carried
        print(f"{name}: {len(raw)} frames decoded as RoCEv2 by tshark, "
              f"{n_icrc} ICRCs correct, {len(raw) - n_icrc} wrong on purpose")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
