/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parser.p4 - parser, checksum controls and deparser.
 *
 * A frame is Serene's when it is IPv4 without options, not a fragment, UDP
 * to SR_WIRE_UDP_PORT, with the Serene magic and version: the software
 * switch's sr_frame_parse + sr_msg_parse. Its payload words are extracted
 * into the vals stack (count of them) unless count exceeds SR_P4_ELEMS;
 * then the request is refused with BAD_COUNT in ingress. Everything else
 * is handed to the ordinary forwarding table, never aggregated. A frame
 * too short for what it announces ends with a parser error and is dropped.
 *
 * RoCEv2 to SR_ROCE_UDP_PORT (lib/proto/roce.h) goes into the same
 * pipeline, as the software switch's roce.c hands it to sr_pipe_process:
 * a UC RDMA WRITE Only with Immediate becomes the AR_DATA whose header its
 * BTH, RETH and ImmDt carry (serene_h made valid here and filled in field
 * by field, sr_roce_to_msg); a UC SEND Only with Immediate carries the
 * Serene header and values as its payload. Either way the ICRC follows the
 * values; roce_in.p4 checks it. Other opcodes, header versions, pads and
 * P_Keys are not Serene's.
 */
#ifndef SERENE_P4_PARSER_P4_
#define SERENE_P4_PARSER_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "types.p4"

parser SereneParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t sm) {
    state start {
        meta.serene = false;
        meta.too_many = false;
        meta.roce = false;
        meta.roce_src_qp = 0;
        meta.roce_opcode = 0;
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            SR_ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // IPv4 without options, UDP, neither MF nor a fragment offset.
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol,
                          hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset) {
            (4, 5, SR_IPPROTO_UDP, 0, 0): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            SR_WIRE_UDP_PORT: parse_serene;
            SR_ROCE_UDP_PORT: parse_bth;
            default: accept;
        }
    }

    // sr_roce_frame_parse: one of the two opcodes, SE/MigReq/pad/TVer 0,
    // the default P_Key.
    state parse_bth {
        pkt.extract(hdr.bth);
        meta.roce_opcode = hdr.bth.opcode;
        transition select(hdr.bth.opcode, hdr.bth.se, hdr.bth.migreq, hdr.bth.pad, hdr.bth.tver,
                          hdr.bth.pkey) {
            (SR_ROCE_WRITE_ONLY_IMM, 0, 0, 0, 0, SR_ROCE_PKEY): parse_reth;
            (SR_ROCE_SEND_ONLY_IMM, 0, 0, 0, 0, SR_ROCE_PKEY): parse_send_immdt;
            default: accept;
        }
    }

    state parse_send_immdt {
        pkt.extract(hdr.immdt);
        meta.roce = true;
        meta.roce_src_qp = hdr.immdt.data[23:0];
        transition parse_serene;
    }

    // sr_roce_to_msg of a WRITE: the AR_DATA its fields carry. A DMA
    // length that is no whole number of words, or beyond the wire's
    // limit, makes a count the ingress refuses (roce_in.p4).
    state parse_reth {
        pkt.extract(hdr.reth);
        pkt.extract(hdr.immdt);
        meta.roce = true;
        hdr.serene.setValid();
        hdr.serene.magic = SR_WIRE_MAGIC;
        hdr.serene.version = SR_WIRE_VERSION;
        hdr.serene.op = SR_OP_AR_DATA;
        hdr.serene.job = hdr.bth.dst_qp[21:6];
        hdr.serene.worker = (bit<16>)hdr.bth.dst_qp[5:0];
        hdr.serene.seq = hdr.reth.va[63:32];
        hdr.serene.offset = hdr.reth.va[31:0];
        hdr.serene.aux = hdr.reth.rkey;
        hdr.serene.shadow = hdr.immdt.data[31:31];
        hdr.serene.slot = hdr.immdt.data[30:16];
        hdr.serene.exp = hdr.immdt.data[15:8];
        hdr.serene.next_exp = hdr.immdt.data[7:0];
        hdr.serene.count = hdr.reth.dma_len[17:2];
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        transition serene_payload;
    }

    state parse_serene {
        pkt.extract(hdr.serene);
        transition select(hdr.serene.magic, hdr.serene.version) {
            (SR_WIRE_MAGIC, SR_WIRE_VERSION): serene_payload;
            default: accept;
        }
    }

    state serene_payload {
        meta.serene = true;
        meta.too_many = hdr.serene.count > SR_P4_ELEMS;
        meta.vals_left = hdr.serene.count;
        transition select(meta.too_many, hdr.serene.count) {
            (true, _): accept;
            (false, 0): payload_end;
            default: parse_val;
        }
    }

    state parse_val {
        pkt.extract(hdr.vals.next);
        meta.vals_left = meta.vals_left - 1;
        transition select(meta.vals_left) {
            0: payload_end;
            default: parse_val;
        }
    }

    // After the values: a RoCEv2 packet's ICRC.
    state payload_end {
        transition select(meta.roce) {
            true: parse_icrc;
            default: accept;
        }
    }

    state parse_icrc {
        pkt.extract(hdr.icrc);
        transition accept;
    }
}

control SereneVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control SereneComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control SereneDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.reth);
        pkt.emit(hdr.immdt);
        pkt.emit(hdr.serene);
        pkt.emit(hdr.vals);
        pkt.emit(hdr.icrc);
    }
}

#endif /* SERENE_P4_PARSER_P4_ */
