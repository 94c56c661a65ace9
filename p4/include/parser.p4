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
            default: accept;
        }
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
            (false, 0): accept;
            default: parse_val;
        }
    }

    state parse_val {
        pkt.extract(hdr.vals.next);
        meta.vals_left = meta.vals_left - 1;
        transition select(meta.vals_left) {
            0: accept;
            default: parse_val;
        }
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
        pkt.emit(hdr.serene);
        pkt.emit(hdr.vals);
    }
}

#endif /* SERENE_P4_PARSER_P4_ */
