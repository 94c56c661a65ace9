/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_egress.p4 - egress of the Tofino program: a multicast copy
 * (AR_RESULT, RELEASE) gets its rank's worker id and address (rank_table;
 * RID = rank as serene-ctl creates the nodes); the CLOCK sender's own copy
 * of a RELEASE becomes its
 * PROCEED or HOLD answer instead, so it gets the answer but not the RELEASE
 * (the software switch sends it both; the answer carries the same low).
 * An answer to the sender swaps the addresses. Lengths, IPv4 id 0, DF,
 * TTL 64 and UDP checksum 0 as in the v1model program.
 */
#ifndef SERENE_TNA_EGRESS_P4_
#define SERENE_TNA_EGRESS_P4_

#include <core.p4>
#include "tna_arch.p4"

#include "tna_headers.p4"

control Egress(inout eg_headers_t hdr, inout eg_meta_t md,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    action set_rank_addr(bit<32> addr, bit<16> port) {
        hdr.ipv4.dst_addr = addr;
        hdr.udp.dst_port = port;
    }

    action drop_copy() {
        eg_dprsr_md.drop_ctl = 1;
    }

    table rank_table {
        key = {
            hdr.serene.job: exact @name("job");
            eg_intr_md.egress_rid: exact @name("rank");
        }
        actions = { set_rank_addr; drop_copy; }
        default_action = drop_copy();
        size = 4096;
    }

    // Lengths from count, in two steps (one ALU operation per field and
    // stage): udp.length = count * 4 first, then these.
    action finish_lengths() {
        hdr.ipv4.total_len = hdr.udp.length + (SR_IPV4_HLEN + SR_UDP_HLEN + SR_WIRE_HDR_LEN);
        hdr.udp.length = hdr.udp.length + (SR_UDP_HLEN + SR_WIRE_HDR_LEN);
    }

    apply {
        bit<48> mac;
        bit<32> ip;
        bit<16> port;

        if (hdr.bridge.serene == 0) {
            return;
        }
        if (hdr.bridge.err != 0) {
            // ERROR: status err, aux the refused op, header only.
            hdr.serene.aux = (bit<32>)hdr.serene.op;
            hdr.serene.op = SR_OP_ERROR;
            hdr.serene.status = hdr.bridge.err;
            hdr.serene.count = 0;
        }
        if (hdr.bridge.mc == 1 &&
            (hdr.serene.op != SR_OP_RELEASE || eg_intr_md.egress_rid != hdr.bridge.sender)) {
            hdr.serene.worker = eg_intr_md.egress_rid;
            hdr.eth.src_addr = hdr.eth.dst_addr;
            hdr.eth.dst_addr = 0xffffffffffff;
            hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
            hdr.udp.src_port = hdr.udp.dst_port;
            rank_table.apply();
        } else {
            if (hdr.bridge.ans_op != 0) {
                hdr.serene.op = hdr.bridge.ans_op;
                hdr.serene.seq = hdr.bridge.clock;
                hdr.serene.count = SR_SYNC_WORDS;
                hdr.vals[0].setValid();
                hdr.vals[0].v = hdr.bridge.mode;
                hdr.vals[1].setValid();
                hdr.vals[1].v = hdr.bridge.s;
            }
            mac = hdr.eth.src_addr;
            hdr.eth.src_addr = hdr.eth.dst_addr;
            hdr.eth.dst_addr = mac;
            ip = hdr.ipv4.src_addr;
            hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
            hdr.ipv4.dst_addr = ip;
            port = hdr.udp.src_port;
            hdr.udp.src_port = hdr.udp.dst_port;
            hdr.udp.dst_port = port;
        }
        hdr.udp.length = hdr.serene.count << 2;
        hdr.udp.checksum = 0;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 2;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.bridge.setInvalid(); // ingress-to-egress only (not emitted anyway)
        finish_lengths(); // udp.length = 36 + count * 4, total_len = 20 + udp.length
    }
}

#endif /* SERENE_TNA_EGRESS_P4_ */
