/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_parde.p4 - parsers and deparsers of the Tofino proof of concept.
 * Serene packets are IPv4/UDP to SR_WIRE_UDP_PORT with the magic and
 * version; their payload is parsed only when it is one whole row
 * (count == SR_TNA_ELEMS) or empty, the two shapes the reduced store takes.
 */
#ifndef SERENE_TNA_PARDE_P4_
#define SERENE_TNA_PARDE_P4_

#include <core.p4>
#include <tna.p4>

#include "tna_headers.p4"

parser IngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t md,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        md.serene = false;
        pkt.extract(ig_intr_md);
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resubmit;
            default: parse_port_metadata;
        }
    }

    state parse_resubmit {
        pkt.extract(md.resub);
        transition parse_ethernet;
    }

    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            SR_ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol, hdr.ipv4.frag_offset) {
            (5, SR_IPPROTO_UDP, 0): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            SR_WIRE_UDP_PORT: parse_serene;
            default: accept;
        }
    }

    // Magic and version, then count: Tofino's parser matches at most 32 bits
    // at a time (one 16-bit and two 8-bit match registers).
    state parse_serene {
        pkt.extract(hdr.serene);
        transition select(hdr.serene.magic, hdr.serene.version) {
            (SR_WIRE_MAGIC, SR_WIRE_VERSION): parse_serene_count;
            default: accept;
        }
    }

    state parse_serene_count {
        transition select(hdr.serene.count) {
            0: serene_ok;
            SR_TNA_ELEMS: parse_row;
            default: accept;
        }
    }

    state parse_row {
        pkt.extract(hdr.vals[0]);
        pkt.extract(hdr.vals[1]);
        pkt.extract(hdr.vals[2]);
        pkt.extract(hdr.vals[3]);
        pkt.extract(hdr.vals[4]);
        pkt.extract(hdr.vals[5]);
        pkt.extract(hdr.vals[6]);
        pkt.extract(hdr.vals[7]);
        transition serene_ok;
    }

    state serene_ok {
        md.serene = true;
        transition accept;
    }
}

control IngressDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t md,
                        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Resubmit() resubmit;
    Checksum() ipv4_csum;

    apply {
        if (ig_dprsr_md.resubmit_type == SR_TNA_RESUBMIT_ADVANCE) {
            resubmit.emit(md.resub);
        }
        hdr.ipv4.hdr_checksum = ipv4_csum.update({
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
            hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        pkt.emit(hdr);
    }
}

parser EgressParser(packet_in pkt, out headers_t hdr, out eg_meta_t md,
                    out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.serene) {
            1: parse_serene;
            default: accept;
        }
    }

    state parse_serene {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.serene);
        transition select(hdr.serene.count) {
            SR_TNA_ELEMS: parse_row;
            default: accept;
        }
    }

    state parse_row {
        pkt.extract(hdr.vals[0]);
        pkt.extract(hdr.vals[1]);
        pkt.extract(hdr.vals[2]);
        pkt.extract(hdr.vals[3]);
        pkt.extract(hdr.vals[4]);
        pkt.extract(hdr.vals[5]);
        pkt.extract(hdr.vals[6]);
        pkt.extract(hdr.vals[7]);
        transition accept;
    }
}

control EgressDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t md,
                       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;

    apply {
        hdr.ipv4.hdr_checksum = ipv4_csum.update({
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
            hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.serene);
        pkt.emit(hdr.vals);
    }
}

#endif /* SERENE_TNA_PARDE_P4_ */
