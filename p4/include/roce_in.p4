/* SPDX-License-Identifier: Apache-2.0 */
/*
 * roce_in.p4 - the checks of a RoCEv2 request before the pipeline sees it
 * (the software switch's sr_roce_frame_parse and sr_roce_to_msg,
 * lib/proto/roce.c): the ICRC, a WRITE's DMA length against its count and
 * its DestQP against the switch's QP numbering, a SEND's Serene header
 * against the binding its DestQP names. ok is false when the request must
 * be dropped (SR_P4_DROP_ROCE).
 *
 * The ICRC is CRC-32 over 8 bytes of ones (RoCEv2 has no LRH), the IPv4
 * header with TOS, TTL and checksum as ones, the UDP header with its
 * checksum as ones, the BTH with its FECN/BECN/reserved byte as ones, and
 * the rest of the packet up to the ICRC, which holds the CRC least
 * significant byte first (IBTA A17.8). BMv2's crc32 is that CRC-32; the
 * packet's bytes are listed here field by field, the values one vals
 * header per lane (SR_ROCE_VALS: BMv2 takes no header stack in a hash; an
 * invalid header adds nothing, and the parser extracted every value:
 * count <= SR_P4_ELEMS, or the request is refused with BAD_COUNT before
 * this check matters). A WRITE's serene_h is not on the wire (the parser
 * made it) and is not covered.
 */
#ifndef SERENE_P4_ROCE_IN_P4_
#define SERENE_P4_ROCE_IN_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "lanes.p4"
#include "types.p4"

// The values in a hash's field list: ", hdr.vals[0], ..., hdr.vals[31]".
#define SR_ROCE_VAL(i) , hdr.vals[i]
#define SR_ROCE_VALS SR_LANES(SR_ROCE_VAL)

// The ICRC as it sits in the packet: CRC-32 least significant byte first.
#define SR_ROCE_ICRC_WIRE(c) ((c)[7:0] ++ (c)[15:8] ++ (c)[23:16] ++ (c)[31:24])

// The masked headers in front of the transport headers, as the ICRC sees them.
#define SR_ROCE_ICRC_HEAD                                                                   \
    64w0xffffffffffffffff,                                                                  \
    hdr.ipv4.version, hdr.ipv4.ihl, 8w0xff, hdr.ipv4.total_len, hdr.ipv4.identification,   \
    hdr.ipv4.flags, hdr.ipv4.frag_offset, 8w0xff, hdr.ipv4.protocol, 16w0xffff,            \
    hdr.ipv4.src_addr, hdr.ipv4.dst_addr,                                                   \
    hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0xffff,                          \
    hdr.bth.opcode, hdr.bth.se, hdr.bth.migreq, hdr.bth.pad, hdr.bth.tver, hdr.bth.pkey,    \
    8w0xff, hdr.bth.dst_qp, hdr.bth.ack_req, hdr.bth.psn

control RoceIn(inout headers_t hdr, inout meta_t meta, out bool ok) {
    apply {
        ok = true;
        if (meta.too_many) {
            return; // refused with BAD_COUNT: the values and ICRC were not parsed
        }
        if (meta.roce_opcode == SR_ROCE_WRITE_ONLY_IMM) {
            hash(meta.roce_icrc, HashAlgorithm.crc32, 32w0,
                 { SR_ROCE_ICRC_HEAD, hdr.reth.va, hdr.reth.rkey, hdr.reth.dma_len,
                   hdr.immdt.data SR_ROCE_VALS },
                 64w4294967296);
            // sr_roce_to_msg: a whole number of words, to a switch QP.
            if (hdr.reth.dma_len != 4 * (bit<32>)hdr.serene.count ||
                hdr.bth.dst_qp[23:22] != SR_ROCE_QPN_TAG[23:22]) {
                ok = false;
            }
        } else {
            hash(meta.roce_icrc, HashAlgorithm.crc32, 32w0,
                 { SR_ROCE_ICRC_HEAD, hdr.immdt.data, hdr.serene SR_ROCE_VALS },
                 64w4294967296);
            // A SEND to a switch QP speaks for that binding only.
            if (hdr.bth.dst_qp[23:22] == SR_ROCE_QPN_TAG[23:22] &&
                (hdr.bth.dst_qp[21:6] != hdr.serene.job ||
                 (bit<16>)hdr.bth.dst_qp[5:0] != hdr.serene.worker ||
                 hdr.serene.worker >= SR_WIRE_MAX_WORKERS)) {
                ok = false;
            }
        }
        if (!hdr.icrc.isValid() || hdr.icrc.icrc != SR_ROCE_ICRC_WIRE(meta.roce_icrc)) {
            ok = false;
        }
    }
}

#endif /* SERENE_P4_ROCE_IN_P4_ */
