/* SPDX-License-Identifier: Apache-2.0 */
/*
 * egress.p4 - per-copy rewrite of the addresses and the answer:
 * - a multicast copy (AR_RESULT, RELEASE) gets the worker id of its rank
 *   (egress_rid = rank, as serene-ctl creates the group's nodes) and the
 *   rank's address from rank_table; Ethernet destination broadcast (the job
 *   file names no MAC; each rank has its own port);
 * - a copy of a STEP's ingress clone (the job's multicast session) becomes
 *   the STEP_RESP, for the workers the row is for only, with its
 *   receiver's clock and policy (step_out.p4), then as a multicast copy;
 * - an answer to the sender (the packet itself, or the clone of a CLOCK
 *   whose RELEASE was multicast) swaps the Ethernet, IPv4 and UDP
 *   addresses; a CLOCK answer (PROCEED or HOLD) is built here from the
 *   ans_* metadata, which the clone preserves;
 * - a leaf's packet to its parent (route SR_P4_OUT_UP, upstream.p4) keeps
 *   the addresses ingress wrote, Ethernet SR_P4_SWITCH_MAC both ways;
 * - a shared job's request to its fallback (route SR_P4_OUT_FALLBACK, or
 *   the ingress clone of a JOIN) goes from the switch's address and port
 *   as the worker addressed it, Ethernet destination broadcast; a clone
 *   marked fb_rejoin becomes the worker's JOIN, built from its binding
 *   (share.p4); the fallback's answer to a worker (SR_P4_OUT_RANK) keeps
 *   the addresses ingress wrote;
 * - every Serene copy leaves with IPv4 id 0, DF, TTL 64, lengths for its
 *   count, and UDP checksum 0 (allowed over IPv4), as sr_frame_pack builds
 *   frames but for that checksum;
 * - a copy to a worker bound over RoCEv2 then becomes a RoCEv2 SEND
 *   (roce_out.p4).
 */
#ifndef SERENE_P4_EGRESS_P4_
#define SERENE_P4_EGRESS_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "lanes.p4"
#include "roce_out.p4"
#include "step_out.p4"
#include "types.p4"

#define SR_JOIN_REQ_VAL(i)                                                  \
    if (i >= SR_JOIN_REQ_WORDS) {                                           \
        hdr.vals[i].setInvalid();                                           \
    }

#define SR_CLOCK_ANS_VAL(i)                                                 \
    if (i >= SR_SYNC_WORDS) {                                               \
        hdr.vals[i].setInvalid();                                           \
    }

control SereneEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    RoceOut() roce_out;
    StepReplica() step_replica;

    @name(".set_rank_addr") action set_rank_addr(bit<32> addr, bit<16> port) {
        hdr.ipv4.dst_addr = addr;
        hdr.udp.dst_port = port;
    }

    @name(".drop_copy") action drop_copy() {
        mark_to_drop(sm);
    }

    // (job, rank) -> the rank's address, for its multicast copy.
    @name(".rank_table") table rank_table {
        key = {
            hdr.serene.job: exact @name("job");
            sm.egress_rid: exact @name("rank");
        }
        actions = { set_rank_addr; drop_copy; }
        default_action = drop_copy();
        size = 4096;
    }

    apply {
        bit<48> mac;
        bit<32> ip;
        bit<16> port;
        bool keep;
        bool copy;
        bool cloned = sm.instance_type == SR_P4_INSTANCE_CLONE_I2E;
        bool to_fb = meta.route == SR_P4_OUT_FALLBACK || (cloned && meta.fb_clone);

        if (!meta.serene) {
            return; // forwarded as is
        }
        // A multicast copy: of the packet, or of a STEP's clone (its STEP_RESP).
        copy = sm.instance_type == SR_P4_INSTANCE_REPLICATION ||
               (sm.instance_type == SR_P4_INSTANCE_CLONE_I2E && meta.step_row);
        if (to_fb) {
            if (cloned && meta.fb_rejoin) {
                // sr_fb_relay's rejoin: the worker's JOIN as it bound here,
                // with the job's admission token.
                hdr.serene.op = SR_OP_JOIN;
                hdr.serene.worker = meta.fb_worker;
                hdr.serene.seq = meta.w_token;
                hdr.serene.aux = meta.nonce;
                hdr.serene.count = SR_JOIN_REQ_WORDS;
                hdr.serene.shadow = 0;
                hdr.serene.slot = 0;
                hdr.serene.exp = 0;
                hdr.serene.next_exp = 0;
                hdr.serene.flags = 0;
                hdr.serene.status = 0;
                hdr.serene.offset = 0;
                hdr.vals[0].setValid();
                hdr.vals[0].v = meta.job_token[63:32];
                hdr.vals[1].setValid();
                hdr.vals[1].v = meta.job_token[31:0];
                hdr.vals[2].setValid();
                hdr.vals[2].v = 0;
                hdr.vals[3].setValid();
                hdr.vals[3].v = 0;
                SR_LANES(SR_JOIN_REQ_VAL)
            }
            hdr.eth.src_addr = hdr.eth.dst_addr;
            hdr.eth.dst_addr = 0xffffffffffff;
            hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
            hdr.ipv4.dst_addr = meta.fb_ip;
            hdr.udp.src_port = hdr.udp.dst_port;
            hdr.udp.dst_port = meta.fb_udp;
        } else if (meta.route == SR_P4_OUT_RANK) {
            // ingress wrote its addresses (share.p4's RankDown)
        } else if (meta.route == SR_P4_OUT_UP) {
            // A leaf's packet to its parent: ingress set its addresses.
            hdr.eth.src_addr = SR_P4_SWITCH_MAC;
            hdr.eth.dst_addr = SR_P4_SWITCH_MAC;
        } else if (copy) {
            if (sm.instance_type == SR_P4_INSTANCE_CLONE_I2E) {
                step_replica.apply(hdr, meta, sm, keep); // built here, if for this rank
                if (!keep) {
                    mark_to_drop(sm); // the row is not for this rank (nor its PSN)
                    return;
                }
            }
            hdr.serene.worker = sm.egress_rid;
            hdr.eth.src_addr = hdr.eth.dst_addr;
            hdr.eth.dst_addr = 0xffffffffffff;
            hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
            hdr.udp.src_port = hdr.udp.dst_port;
            rank_table.apply();
        } else {
            if (meta.ans_op != 0) {
                hdr.serene.op = meta.ans_op;
                hdr.serene.aux = meta.ans_low;
                hdr.serene.offset = meta.ans_high;
                hdr.serene.count = SR_SYNC_WORDS;
                hdr.serene.shadow = 0;
                hdr.serene.slot = 0;
                hdr.serene.exp = 0;
                hdr.serene.next_exp = 0;
                hdr.serene.flags = 0;
                hdr.serene.status = 0;
                hdr.vals[0].setValid();
                hdr.vals[0].v = meta.ans_mode;
                hdr.vals[1].setValid();
                hdr.vals[1].v = meta.ans_s;
                SR_LANES(SR_CLOCK_ANS_VAL)
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
        hdr.udp.length = (bit<16>)(SR_UDP_HLEN + SR_WIRE_HDR_LEN) + 4 * hdr.serene.count;
        hdr.udp.checksum = 0;
        hdr.ipv4.total_len = SR_IPV4_HLEN + hdr.udp.length;
        hdr.ipv4.diffserv = 0;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 2; // DF
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        if (meta.route != SR_P4_OUT_UP && !to_fb) { // parents and fallbacks talk UDP
            roce_out.apply(hdr, meta, sm, copy);
        }
    }
}

#endif /* SERENE_P4_EGRESS_P4_ */
