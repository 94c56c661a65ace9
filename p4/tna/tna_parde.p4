/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_parde.p4 - parsers and deparsers of the Tofino proof of concept.
 * Serene packets are IPv4/UDP to SR_WIRE_UDP_PORT with the magic and
 * version; their payload, count words up to SR_TNA_ELEMS, into the lanes
 * (a larger count is parsed as header only, and refused: BAD_COUNT). The
 * egress parses the headers only (eg_headers_t).
 */
#ifndef SERENE_TNA_PARDE_P4_
#define SERENE_TNA_PARDE_P4_

#include <core.p4>
#include "tna_arch.p4"

#include "tna_headers.p4"

parser IngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t md,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        md.serene = false;
        md.too_many = false;
        md.w_hit = 0;
        md.j_hit = 0;
        md.fp = 1; // bit 0 of a fingerprint (tna_ingress.p4): never 0
        md.nexp_in = 0; // the round number in 31:24, next_exp in 7:0
        md.ev = 0;
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

    // Lane i is extracted while count > i: a chain of states, one per lane
    // (Tofino's parser has no run-time stack index).
    state parse_serene_count {
        transition select(hdr.serene.count, hdr.serene.op) {
            (0, SR_OP_PULL): pull_words;
            (0, _): serene_ok;
            (1 .. SR_TNA_ELEMS, _): parse_lane0;
            default: parse_too_many;
        }
    }

    // A PULL (count 0) gets its answer's words here: the lanes read a row
    // into them. In the parser, not in an action: the 32 validity bits
    // written by the lane tables would chain them stage after stage.
    state pull_words {
        hdr.vals[0].setValid();
        hdr.vals[1].setValid();
        hdr.vals[2].setValid();
        hdr.vals[3].setValid();
        hdr.vals[4].setValid();
        hdr.vals[5].setValid();
        hdr.vals[6].setValid();
        hdr.vals[7].setValid();
        hdr.vals[8].setValid();
        hdr.vals[9].setValid();
        hdr.vals[10].setValid();
        hdr.vals[11].setValid();
        hdr.vals[12].setValid();
        hdr.vals[13].setValid();
        hdr.vals[14].setValid();
        hdr.vals[15].setValid();
        hdr.vals[16].setValid();
        hdr.vals[17].setValid();
        hdr.vals[18].setValid();
        hdr.vals[19].setValid();
        hdr.vals[20].setValid();
        hdr.vals[21].setValid();
        hdr.vals[22].setValid();
        hdr.vals[23].setValid();
        hdr.vals[24].setValid();
        hdr.vals[25].setValid();
        hdr.vals[26].setValid();
        hdr.vals[27].setValid();
        hdr.vals[28].setValid();
        hdr.vals[29].setValid();
        hdr.vals[30].setValid();
        hdr.vals[31].setValid();
        transition serene_ok;
    }

    state parse_too_many {
        md.too_many = true;
        transition serene_ok;
    }

    state parse_lane0 {
        pkt.extract(hdr.vals[0]);
        transition select(hdr.serene.count) {
            1: serene_ok;
            default: parse_lane1;
        }
    }

    state parse_lane1 {
        pkt.extract(hdr.vals[1]);
        transition select(hdr.serene.count) {
            2: serene_ok;
            default: parse_lane2;
        }
    }

    state parse_lane2 {
        pkt.extract(hdr.vals[2]);
        transition select(hdr.serene.count) {
            3: serene_ok;
            default: parse_lane3;
        }
    }

    state parse_lane3 {
        pkt.extract(hdr.vals[3]);
        transition select(hdr.serene.count) {
            4: serene_ok;
            default: parse_lane4;
        }
    }

    state parse_lane4 {
        pkt.extract(hdr.vals[4]);
        transition select(hdr.serene.count) {
            5: serene_ok;
            default: parse_lane5;
        }
    }

    state parse_lane5 {
        pkt.extract(hdr.vals[5]);
        transition select(hdr.serene.count) {
            6: serene_ok;
            default: parse_lane6;
        }
    }

    state parse_lane6 {
        pkt.extract(hdr.vals[6]);
        transition select(hdr.serene.count) {
            7: serene_ok;
            default: parse_lane7;
        }
    }

    state parse_lane7 {
        pkt.extract(hdr.vals[7]);
        transition select(hdr.serene.count) {
            8: serene_ok;
            default: parse_lane8;
        }
    }

    state parse_lane8 {
        pkt.extract(hdr.vals[8]);
        transition select(hdr.serene.count) {
            9: serene_ok;
            default: parse_lane9;
        }
    }

    state parse_lane9 {
        pkt.extract(hdr.vals[9]);
        transition select(hdr.serene.count) {
            10: serene_ok;
            default: parse_lane10;
        }
    }

    state parse_lane10 {
        pkt.extract(hdr.vals[10]);
        transition select(hdr.serene.count) {
            11: serene_ok;
            default: parse_lane11;
        }
    }

    state parse_lane11 {
        pkt.extract(hdr.vals[11]);
        transition select(hdr.serene.count) {
            12: serene_ok;
            default: parse_lane12;
        }
    }

    state parse_lane12 {
        pkt.extract(hdr.vals[12]);
        transition select(hdr.serene.count) {
            13: serene_ok;
            default: parse_lane13;
        }
    }

    state parse_lane13 {
        pkt.extract(hdr.vals[13]);
        transition select(hdr.serene.count) {
            14: serene_ok;
            default: parse_lane14;
        }
    }

    state parse_lane14 {
        pkt.extract(hdr.vals[14]);
        transition select(hdr.serene.count) {
            15: serene_ok;
            default: parse_lane15;
        }
    }

    state parse_lane15 {
        pkt.extract(hdr.vals[15]);
        transition select(hdr.serene.count) {
            16: serene_ok;
            default: parse_lane16;
        }
    }

    state parse_lane16 {
        pkt.extract(hdr.vals[16]);
        transition select(hdr.serene.count) {
            17: serene_ok;
            default: parse_lane17;
        }
    }

    state parse_lane17 {
        pkt.extract(hdr.vals[17]);
        transition select(hdr.serene.count) {
            18: serene_ok;
            default: parse_lane18;
        }
    }

    state parse_lane18 {
        pkt.extract(hdr.vals[18]);
        transition select(hdr.serene.count) {
            19: serene_ok;
            default: parse_lane19;
        }
    }

    state parse_lane19 {
        pkt.extract(hdr.vals[19]);
        transition select(hdr.serene.count) {
            20: serene_ok;
            default: parse_lane20;
        }
    }

    state parse_lane20 {
        pkt.extract(hdr.vals[20]);
        transition select(hdr.serene.count) {
            21: serene_ok;
            default: parse_lane21;
        }
    }

    state parse_lane21 {
        pkt.extract(hdr.vals[21]);
        transition select(hdr.serene.count) {
            22: serene_ok;
            default: parse_lane22;
        }
    }

    state parse_lane22 {
        pkt.extract(hdr.vals[22]);
        transition select(hdr.serene.count) {
            23: serene_ok;
            default: parse_lane23;
        }
    }

    state parse_lane23 {
        pkt.extract(hdr.vals[23]);
        transition select(hdr.serene.count) {
            24: serene_ok;
            default: parse_lane24;
        }
    }

    state parse_lane24 {
        pkt.extract(hdr.vals[24]);
        transition select(hdr.serene.count) {
            25: serene_ok;
            default: parse_lane25;
        }
    }

    state parse_lane25 {
        pkt.extract(hdr.vals[25]);
        transition select(hdr.serene.count) {
            26: serene_ok;
            default: parse_lane26;
        }
    }

    state parse_lane26 {
        pkt.extract(hdr.vals[26]);
        transition select(hdr.serene.count) {
            27: serene_ok;
            default: parse_lane27;
        }
    }

    state parse_lane27 {
        pkt.extract(hdr.vals[27]);
        transition select(hdr.serene.count) {
            28: serene_ok;
            default: parse_lane28;
        }
    }

    state parse_lane28 {
        pkt.extract(hdr.vals[28]);
        transition select(hdr.serene.count) {
            29: serene_ok;
            default: parse_lane29;
        }
    }

    state parse_lane29 {
        pkt.extract(hdr.vals[29]);
        transition select(hdr.serene.count) {
            30: serene_ok;
            default: parse_lane30;
        }
    }

    state parse_lane30 {
        pkt.extract(hdr.vals[30]);
        transition select(hdr.serene.count) {
            31: serene_ok;
            default: parse_lane31;
        }
    }

    state parse_lane31 {
        pkt.extract(hdr.vals[31]);
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

parser EgressParser(packet_in pkt, out eg_headers_t hdr, out eg_meta_t md,
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
        transition accept;
    }
}

control EgressDeparser(packet_out pkt, inout eg_headers_t hdr, in eg_meta_t md,
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
