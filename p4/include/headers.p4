/* SPDX-License-Identifier: Apache-2.0 */
/*
 * headers.p4 - the headers the program parses and emits: Ethernet, IPv4
 * (no options), UDP, the Serene header (serene_h, generated from
 * lib/proto/wire.h into wire_constants.p4) and its payload as a stack of
 * SR_P4_ELEMS 32-bit values.
 *
 *  Ethernet (14) | IPv4 (20) | UDP (8) | Serene header (28) | count x int32
 *
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-------------------------------+---------------+---------------+
 * |        magic 0x5345 "SE"      |    version    |      op       |
 * +-------------------------------+---------------+---------------+
 * |            job id             |           worker id           |
 * +-------------------------------+-------------------------------+
 * |           seq (allreduce: call number; SSP: clock)            |
 * +-+-----------------------------+-------------------------------+
 * |S|   slot index (15 bits)      |   count (int32 payload words) |
 * +-+-------------+---------------+---------------+---------------+
 * |   exp (s8)    | next_exp (s8) |     flags     |    status     |
 * +---------------+---------------+---------------+---------------+
 * |             offset (element offset in tensor / store)         |
 * +---------------------------------------------------------------+
 * |                     aux (op-specific)                         |
 * +---------------------------------------------------------------+
 * |            vals[0 .. count): int32, big-endian ...            |
 */
#ifndef SERENE_P4_HEADERS_P4_
#define SERENE_P4_HEADERS_P4_

#include "constants.p4"
#include "wire_constants.p4"

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// One payload word: a lane of the aggregation.
header val_h {
    bit<32> v;
}

struct headers_t {
    ethernet_h eth;
    ipv4_h ipv4;
    udp_h udp;
    serene_h serene;
    val_h[SR_P4_ELEMS] vals;
}

#endif /* SERENE_P4_HEADERS_P4_ */
