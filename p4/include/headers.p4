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
 *
 * RoCEv2 (the rdma transport; lib/proto/roce.h maps the fields), to UDP
 * port SR_ROCE_UDP_PORT:
 *
 *  UC RDMA WRITE Only with Immediate (AR_DATA, worker -> switch):
 *   ... UDP | BTH (12) | RETH (16) | ImmDt (4) | count x int32 | ICRC (4)
 *   serene_h is made by the parser from them: job, worker = BTH.DestQP;
 *   seq, offset = RETH.VA; aux = RETH.R_Key; count = RETH.DMALen / 4;
 *   shadow, slot, exp, next_exp = ImmDt.
 *  UC SEND Only with Immediate (every other message, both ways):
 *   ... UDP | BTH (12) | ImmDt (4) = source QP | Serene header | vals | ICRC (4)
 *
 *  BTH:
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------+-+-+---+-------+-------------------------------+
 * |    opcode     |S|M|Pad| TVer  |        P_Key 0xffff           |
 * +-+-+-----------+---------------+-------------------------------+
 * |F|B|  resv6    |              DestQP (24 bits)                 |
 * +-+-------------+-----------------------------------------------+
 * |A|  resv7      |               PSN (24 bits)                   |
 * +-+-------------+-----------------------------------------------+
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

// RoCEv2 Base Transport Header (IBTA vol. 1, 9.2).
header roce_bth_h {
    bit<8> opcode;
    bit<1> se;        // solicited event
    bit<1> migreq;
    bit<2> pad;       // pad bytes before the ICRC (0: whole words)
    bit<4> tver;      // transport header version 0
    bit<16> pkey;
    bit<8> fecn_becn; // FECN, BECN, 6 reserved bits: masked in the ICRC
    bit<24> dst_qp;
    bit<8> ack_req;   // AckReq and 7 reserved bits
    bit<24> psn;
}

// RDMA Extended Transport Header (WRITE).
header roce_reth_h {
    bit<64> va;
    bit<32> rkey;
    bit<32> dma_len;
}

header roce_immdt_h {
    bit<32> data;
}

// Invariant CRC: CRC-32 stored least significant byte first.
header roce_icrc_h {
    bit<32> icrc;
}

// One payload word: a lane of the aggregation.
header val_h {
    bit<32> v;
}

struct headers_t {
    ethernet_h eth;
    ipv4_h ipv4;
    udp_h udp;
    roce_bth_h bth;
    roce_reth_h reth;
    roce_immdt_h immdt;
    serene_h serene;
    val_h[SR_P4_ELEMS] vals;
    roce_icrc_h icrc;
}

#endif /* SERENE_P4_HEADERS_P4_ */
