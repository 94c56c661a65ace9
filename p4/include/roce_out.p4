/* SPDX-License-Identifier: Apache-2.0 */
/*
 * roce_out.p4 - a copy leaving as RoCEv2, and the QP table (the software
 * switch's p4/swswitch/roce.c, sr_roce_sw_learn and sr_roce_sw_egress).
 *
 * Per binding (job block, worker), like token_reg: qp_reg holds the
 * worker's QP number (bits 23..0) and a live bit (24), psn_reg the PSN of
 * the next packet the switch sends on it.
 * - A JOIN_ACK answering a SEND (meta.roce_learn == BIND) binds the QP to
 *   the SEND's source QP, PSN from 0, unless it is bound to it already;
 *   one answering a UDP JOIN (UNBIND) clears the live bit.
 * - A unicast answer to a RoCE request leaves as RoCE: to a SEND's source
 *   QP (the table's PSN when that is the binding's QP, else PSN 0), or for
 *   a WRITE to the binding's QP; with no live QP it is dropped.
 * - A multicast copy leaves as RoCE when its rank's binding is live.
 * Every RoCE copy is a UC SEND Only with Immediate (roce.h): BTH to the
 * worker's QP, ImmDt = the switch's QP of the binding, the Serene header
 * and values as payload, UDP from SR_ROCE_SPORT_BASE | QP bits to port
 * SR_ROCE_UDP_PORT, and the ICRC computed here (roce_in.p4 says how).
 * The worker id of a RoCE binding is below 64 (SR_ROCE_WORKER_BITS).
 */
#ifndef SERENE_P4_ROCE_OUT_P4_
#define SERENE_P4_ROCE_OUT_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "roce_in.p4"
#include "types.p4"

control RoceOut(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm,
                in bool replica) {
    @name(".roce_qp_reg") register<bit<32>>(SR_P4_WORKER_ENTRIES) qp_reg;
    @name(".roce_psn_reg") register<bit<32>>(SR_P4_WORKER_ENTRIES) psn_reg;
    @name(".roce_ctr") counter(2, CounterType.packets) roce_ctr; // 0 sent, 1 no QP

    apply {
        index_t idx = (index_t)(hdr.serene.job & (SR_P4_MAX_JOBS - 1)) << 6 |
                      (index_t)hdr.serene.worker[5:0];
        bit<32> entry;
        bit<32> psn = 0;
        bit<24> dst = 0;
        bool live;
        bool roce_out = false;
        bool from_table = false;

        qp_reg.read(entry, idx);
        live = entry[24:24] == 1;
        if (replica) {
            if (live) {
                dst = entry[23:0];
                roce_out = true;
                from_table = true;
            }
        } else if (meta.roce) {
            roce_out = true;
            if (meta.roce_opcode == SR_ROCE_SEND_ONLY_IMM) {
                dst = meta.roce_src_qp;
                if (meta.roce_learn == SR_P4_ROCE_BIND && !(live && entry[23:0] == dst)) {
                    entry = 32w0x1000000 | (bit<32>)dst;
                    qp_reg.write(idx, entry);
                    psn_reg.write(idx, 0);
                    live = true;
                }
                from_table = live && entry[23:0] == dst;
            } else if (live) {
                dst = entry[23:0];
                from_table = true;
            } else {
                roce_ctr.count(1);
                mark_to_drop(sm);
                return;
            }
        } else if (meta.roce_learn == SR_P4_ROCE_UNBIND && live) {
            qp_reg.write(idx, 0);
        }
        if (!roce_out) {
            return; // a UDP copy, as egress.p4 built it
        }
        if (from_table) {
            psn_reg.read(psn, idx);
            psn_reg.write(idx, (psn + 1) & 32w0xffffff);
        }
        bit<24> me = SR_ROCE_QPN_TAG | (bit<24>)hdr.serene.job << 6 | (bit<24>)hdr.serene.worker[5:0];
        hdr.udp.src_port = SR_ROCE_SPORT_BASE | ((bit<16>)me & SR_ROCE_SPORT_QP_MASK);
        hdr.udp.dst_port = SR_ROCE_UDP_PORT;
        hdr.udp.length = (bit<16>)(SR_UDP_HLEN + SR_ROCE_BTH_LEN + SR_ROCE_IMM_LEN +
                                   SR_WIRE_HDR_LEN + SR_ROCE_ICRC_LEN) + 4 * hdr.serene.count;
        hdr.ipv4.total_len = SR_IPV4_HLEN + hdr.udp.length;
        hdr.bth.setValid();
        hdr.bth.opcode = SR_ROCE_SEND_ONLY_IMM;
        hdr.bth.se = 0;
        hdr.bth.migreq = 0;
        hdr.bth.pad = 0;
        hdr.bth.tver = 0;
        hdr.bth.pkey = SR_ROCE_PKEY;
        hdr.bth.fecn_becn = 0;
        hdr.bth.dst_qp = dst;
        hdr.bth.ack_req = 0;
        hdr.bth.psn = psn[23:0];
        hdr.reth.setInvalid();
        hdr.immdt.setValid();
        hdr.immdt.data = (bit<32>)me;
        hdr.icrc.setValid();
        hash(meta.roce_icrc, HashAlgorithm.crc32, 32w0,
             { SR_ROCE_ICRC_HEAD, hdr.immdt.data, hdr.serene SR_ROCE_VALS },
             64w4294967296);
        hdr.icrc.icrc = SR_ROCE_ICRC_WIRE(meta.roce_icrc);
        roce_ctr.count(0);
    }
}

#endif /* SERENE_P4_ROCE_OUT_P4_ */
