#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""csum.py - derive and check the checksums of the frame vectors.

Independent of lib/proto/wire.c on purpose: it shares no code with it and
computes RFC 1071 sums its own way (Python integers, a whole-buffer sum),
so a bug in the C code cannot hide in the golden vectors.

  csum.py FILE.hex...          print, for every kind=frame vector, the IPv4
                               and UDP checksums it should carry and what it
                               does carry; exit 1 if a declared ip_csum= or
                               udp_csum= key disagrees with the computation
  csum.py --pcap OUT FILE...   also write the frames to a pcap file, for a
                               third opinion: tcpdump -vv -r OUT

See README.md for the vector format.
"""
import struct
import sys


def load(path):
    """Return (keys, bytes) of a vector file."""
    keys, data = {}, bytearray()
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" in line:
                k, v = line.split("=", 1)
                keys[k.strip()] = v.strip()
                continue
            for tok in line.split():
                if len(tok) % 2:
                    raise ValueError(f"{path}: odd hex group {tok!r}")
                data += bytes.fromhex(tok)
    return keys, bytes(data)


def ones_sum(data):
    """Ones'-complement sum of big-endian 16-bit words, odd byte padded."""
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def ip_csum(ip):
    """Checksum the IPv4 header should carry (its checksum field taken as 0)."""
    hdr = ip[:10] + b"\0\0" + ip[12:20]
    return ~ones_sum(hdr) & 0xFFFF


def udp_csum(ip, udp):
    """Checksum the UDP header should carry; a computed 0 is sent as 0xffff."""
    pseudo = ip[12:20] + bytes([0, 17]) + struct.pack(">H", len(udp))
    c = ~ones_sum(pseudo + udp[:6] + b"\0\0" + udp[8:]) & 0xFFFF
    return c or 0xFFFF


def check(path):
    keys, b = load(path)
    if keys.get("kind") != "frame":
        return True
    ok = True
    print(f"{path}: {len(b)} bytes, expect={keys.get('expect')}")
    if len(b) < 34:
        print("  shorter than Ethernet + IPv4 headers: no checksums")
        return True
    ip = b[14:34]
    ip_len = int.from_bytes(ip[2:4], "big")
    have_ip = int.from_bytes(ip[10:12], "big")
    want_ip = ip_csum(ip)
    print(f"  ipv4 csum: carries 0x{have_ip:04x}, correct 0x{want_ip:04x}")
    if "ip_csum" in keys and int(keys["ip_csum"], 0) != want_ip:
        print(f"  MISMATCH: ip_csum={keys['ip_csum']}")
        ok = False
    udp = b[34:14 + ip_len] if 28 <= ip_len <= len(b) - 14 else b""
    if udp:
        have_udp = int.from_bytes(udp[6:8], "big")
        want_udp = udp_csum(ip, udp)
        print(f"  udp  csum: carries 0x{have_udp:04x}, correct 0x{want_udp:04x}"
              f" (over {len(udp)} UDP bytes)")
        if "udp_csum" in keys and int(keys["udp_csum"], 0) != want_udp:
            print(f"  MISMATCH: udp_csum={keys['udp_csum']}")
            ok = False
    return ok


def write_pcap(out, paths):
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(paths):
            keys, b = load(p)
            if keys.get("kind") == "frame":
                f.write(struct.pack("<IIII", i, 0, len(b), len(b)) + b)


def main(argv):
    pcap = None
    if len(argv) > 2 and argv[1] == "--pcap":
        pcap, argv = argv[2], argv[2:]
    paths = argv[1:]
    ok = all([check(p) for p in paths])
    if pcap:
        write_pcap(pcap, paths)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
