/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ingress.p4 - the ingress pipeline: frame checks, the sender (worker_table)
 * and its job (job_table), then the op's control, then the way out (back
 * to the sender, to the job's multicast group, or dropped). The dispatch of
 * the software switch's sr_pipe_process (p4/swswitch/ingress.c).
 *
 * A leaf of a tree (upstream.p4) sends its partials, and relays the
 * requests the root serves, to its parent (route SR_P4_OUT_UP), and takes
 * its parent's answers about its cells; every other answer is dropped.
 *
 * Incarnation tags (the software switch's epoch.c): epoch_reg counts a job
 * id's incarnations; a JOIN that starts a new one (membership.p4) adds
 * one. Each slot, store row (and its step state), push entry and ring
 * entry carries the epoch it was last written in, and one whose tag
 * differs reads as cleared (its control writes the tag with the state):
 * so a new incarnation clears everything in O(1), as one packet must, and
 * what a control reads is what an eager clear would have left. After 2^32
 * incarnations of one job id a tag could pass for current (the software
 * switch then clears eagerly; p4/README.md).
 *
 * Frames that are not Serene's go to forward_table, an ordinary IPv4
 * forwarding table (empty: dropped). Serene packets from a source in no
 * worker_table entry are dropped and counted, never answered.
 */
#ifndef SERENE_P4_INGRESS_P4_
#define SERENE_P4_INGRESS_P4_

#include <core.p4>
#include <v1model.p4>

#include "allreduce.p4"
#include "barrier.p4"
#include "headers.p4"
#include "lanes.p4"
#include "membership.p4"
#include "policy.p4"
#include "roce_in.p4"
#include "share.p4"
#include "step.p4"
#include "store.p4"
#include "types.p4"
#include "upstream.p4"

#define SR_INVALIDATE_VAL(i) hdr.vals[i].setInvalid();

control SereneIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name(".drop_ctr") counter(SR_P4_DROP_REASONS, CounterType.packets) drop_ctr;
    @name(".error_ctr") counter(16, CounterType.packets) error_ctr; // by SR_ST_*
    @name(".epoch_reg") register<bit<32>>(SR_P4_JOB_IDS) epoch_reg; // by job id

    Membership() membership;
    Allreduce() allreduce;
    Store() store;
    Policy() policy;
    Step() step;
    Barrier() barrier;
    RoceIn() roce_in;
    UpstreamJob() upstream_job;
    ParentAnswer() parent_answer;
    RelayDown() relay_back;
    ShareJob() share_job;
    FallbackAnswer() fallback_answer;
    RankDown() rank_down;

    action drop(bit<32> reason) {
        mark_to_drop(sm);
        drop_ctr.count(reason);
        meta.route = SR_P4_OUT_DROP;
    }

    @name(".set_worker") action set_worker(bit<16> job, bit<16> rank) {
        meta.src_job = job;
        meta.src_rank = rank;
    }

    // The job file's worker addresses: (IPv4 source, UDP source port) ->
    // (job, rank).
    @name(".worker_table") table worker_table {
        key = {
            hdr.ipv4.src_addr: exact @name("src_addr");
            hdr.udp.src_port: exact @name("src_port");
        }
        actions = { set_worker; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    @name(".set_job") action set_job(bit<32> n_workers, bit<64> full_mask, bit<32> ring_mask,
                                     bit<32> store_words, bit<16> mgrp, bit<64> token) {
        meta.n_workers = n_workers;
        meta.full_mask = full_mask;
        meta.ring_mask = ring_mask;
        meta.store_words = store_words > SR_P4_STORE_WORDS ? SR_P4_STORE_WORDS : store_words;
        meta.mgrp = mgrp;
        meta.job_token = token;
    }

    // The jobs: job id -> (N, all-workers bitmap, R - 1, store words,
    // multicast group, admission token). Membership compares a JOIN's token
    // with the entry's for exact equality: no MAC, only a secret that the
    // sender must know.
    @name(".job_table") table job_table {
        key = { hdr.serene.job: exact @name("job"); }
        actions = { set_job; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    @name(".set_port") action set_port(bit<9> port) {
        sm.egress_spec = port;
        meta.route = SR_P4_OUT_FORWARD;
    }

    @name(".drop_foreign") action drop_foreign() {
        drop(SR_P4_DROP_FOREIGN);
    }

    // Everything that is not Serene's: ordinary forwarding.
    @name(".forward_table") table forward_table {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_port; drop_foreign; }
        default_action = drop_foreign();
        size = 256;
    }

    apply {
        bool reset_clocks = false;
        bool roce_ok = true;
        bit<8> op = hdr.serene.op;
        // UDP bytes in front of the values, and behind them (ICRC).
        bit<32> udp_fixed = SR_UDP_HLEN + SR_WIRE_HDR_LEN;
        bool request;
        bool ssp_op = op == SR_OP_PUSH || op == SR_OP_PULL || op == SR_OP_CLOCK ||
                      op == SR_OP_STEP || op == SR_OP_STEP_PROBE;
        bool step_op = op == SR_OP_STEP || op == SR_OP_STEP_PROBE;

        meta.err = 0;
        meta.route = SR_P4_OUT_DROP;
        meta.worker_ok = false;
        meta.ans_op = 0;
        meta.step_apply = false;
        meta.step_row = false;
        meta.step_note = false;
        meta.step_record = false;
        meta.step_self = false;
        meta.step_cand = 0;
        meta.roce_learn = SR_P4_ROCE_KEEP;
        meta.leaf = false;
        meta.relay = false;
        meta.from_parent = false;
        meta.shared = false;
        meta.stamp = 0;
        meta.from_fallback = false;
        meta.fb_bound = false;
        meta.fb_clone = false;
        meta.fb_rejoin = false;
        if (sm.parser_error != error.NoError || sm.checksum_error == 1) {
            drop(SR_P4_DROP_PARSE);
            return;
        }
        if (!meta.serene) {
            if (hdr.ipv4.isValid()) {
                // A root's answer to a request this leaf relayed, else
                // ordinary forwarding.
                relay_back.apply(hdr, meta, sm);
                if (meta.route != SR_P4_OUT_FORWARD) {
                    forward_table.apply();
                }
            } else {
                drop_foreign();
            }
            return;
        }
        if (meta.roce) {
            // RoCEv2 (roce_in.p4): ICRC, DMA length, the binding its QP names.
            roce_in.apply(hdr, meta, roce_ok);
            if (!roce_ok) {
                drop(SR_P4_DROP_ROCE);
                return;
            }
            udp_fixed = meta.roce_opcode == SR_ROCE_WRITE_ONLY_IMM ?
                (bit<32>)(SR_UDP_HLEN + SR_ROCE_BTH_LEN + SR_ROCE_RETH_LEN + SR_ROCE_IMM_LEN +
                          SR_ROCE_ICRC_LEN) :
                (bit<32>)(SR_UDP_HLEN + SR_ROCE_BTH_LEN + SR_ROCE_IMM_LEN + SR_WIRE_HDR_LEN +
                          SR_ROCE_ICRC_LEN);
        }
        // sr_msg_parse: count within the wire's limit and lengths that agree.
        if ((bit<32>)hdr.serene.count > SR_WIRE_MAX_ELEMS ||
            (bit<32>)hdr.udp.length != udp_fixed + 4 * (bit<32>)hdr.serene.count ||
            hdr.ipv4.total_len != SR_IPV4_HLEN + hdr.udp.length) {
            drop(SR_P4_DROP_LENGTH);
            return;
        }
        request = op == SR_OP_JOIN || op == SR_OP_LEAVE || op == SR_OP_AR_DATA ||
                  op == SR_OP_AR_PROBE || ssp_op;
        if (!request) {
            // Answers: only a leaf's parent's, about the leaf's cells
            // (upstream.p4), or a shared job's fallback's (share.p4); any
            // other is a loop or a confused peer.
            if (op == SR_OP_AR_RESULT || op == SR_OP_AR_NAK || op == SR_OP_AR_HELD ||
                op == SR_OP_ERROR) {
                parent_answer.apply(hdr, meta);
            }
            if (!meta.from_parent && (op == SR_OP_AR_RESULT || op == SR_OP_AR_NAK ||
                                      op == SR_OP_AR_HELD || op == SR_OP_ERROR ||
                                      op == SR_OP_JOIN_ACK)) {
                fallback_answer.apply(hdr, meta);
            }
            if (!meta.from_parent && !meta.from_fallback) {
                drop(SR_P4_DROP_ANSWER);
                return;
            }
        } else if (!worker_table.apply().hit) {
            drop(SR_P4_DROP_UNREG);
            return;
        }
        if (!job_table.apply().hit) {
            if (!request) {
                drop(SR_P4_DROP_ANSWER); // the leaf job's entry is missing
                return;
            }
            meta.err = SR_ST_UNKNOWN_JOB;
        } else {
            meta.blk = (index_t)(hdr.serene.job & (SR_P4_MAX_JOBS - 1));
            epoch_reg.read(meta.epoch, (bit<32>)hdr.serene.job);
            upstream_job.apply(hdr, meta);
            share_job.apply(hdr, meta);
            if (request || meta.from_fallback) {
                membership.apply(hdr, meta, sm, reset_clocks);
            }
            if (reset_clocks) {
                // A new incarnation: every tag of the job is stale from now on.
                meta.epoch = meta.epoch + 1;
                epoch_reg.write((bit<32>)hdr.serene.job, meta.epoch);
            }
            if (op == SR_OP_JOIN && hdr.serene.op == SR_OP_JOIN_ACK) {
                // What the answer teaches the RoCE QP table (roce_out.p4).
                meta.roce_learn = meta.roce ? SR_P4_ROCE_BIND : SR_P4_ROCE_UNBIND;
            }
            if (meta.err == 0) {
                if (meta.from_fallback && op == SR_OP_JOIN_ACK) {
                    // membership took it
                } else if (!request || op == SR_OP_AR_DATA || op == SR_OP_AR_PROBE) {
                    // from_parent, from_fallback: their answers
                    allreduce.apply(hdr, meta, sm);
                } else if (meta.leaf && ssp_op) {
                    // The store and the barrier live at the root.
                    meta.relay = meta.worker_ok;
                } else {
                    if (op == SR_OP_CLOCK || step_op) {
                        policy.apply(hdr, meta); // the policy at the request's clock
                    }
                    if (step_op) {
                        step.apply(hdr, meta); // decides; the Store and the Barrier act
                    }
                    if (op == SR_OP_PUSH || op == SR_OP_PULL ||
                        (op == SR_OP_STEP && (meta.step_apply || meta.step_row))) {
                        store.apply(hdr, meta, sm);
                    }
                }
                if (request && !(meta.leaf && ssp_op)) {
                    // CLOCK, a STEP's high and clock, and a new incarnation.
                    barrier.apply(hdr, meta, sm, reset_clocks);
                }
                if (meta.relay) {
                    relay_up(hdr, meta);
                }
            }
        }

        if (meta.err != 0) {
            // ERROR: the request echoed, status = why, aux = the refused op,
            // no payload.
            error_ctr.count((bit<32>)meta.err);
            hdr.serene.aux = (bit<32>)op;
            hdr.serene.op = SR_OP_ERROR;
            hdr.serene.status = meta.err;
            hdr.serene.count = 0;
            SR_LANES(SR_INVALIDATE_VAL)
            meta.route = SR_P4_OUT_UNICAST;
        }
        if (meta.too_many) {
            // The payload was not parsed: cut it off the answer (a RoCE one
            // is a SEND with its ICRC: roce_out.p4).
            truncate((bit<32>)(SR_FRAME_HLEN + SR_WIRE_HDR_LEN) + 4 * (bit<32>)hdr.serene.count +
                     (meta.roce ? (bit<32>)(SR_ROCE_BTH_LEN + SR_ROCE_IMM_LEN + SR_ROCE_ICRC_LEN)
                                : 32w0));
        }
        if (meta.route == SR_P4_OUT_UNICAST) {
            sm.egress_spec = sm.ingress_port;
        } else if (meta.route == SR_P4_OUT_MULTICAST) {
            sm.mcast_grp = meta.mgrp;
        } else if (meta.route == SR_P4_OUT_UP) {
            sm.egress_spec = meta.up_port;
        } else if (meta.route == SR_P4_OUT_FALLBACK) {
            sm.egress_spec = meta.fb_port;
        } else if (meta.route != SR_P4_OUT_RANK) {
            mark_to_drop(sm);
        }
        if (meta.route == SR_P4_OUT_RANK) {
            // The fallback's answer: on to its worker's port, if it has one.
            rank_down.apply(hdr, meta);
            if (meta.route == SR_P4_OUT_RANK) {
                sm.egress_spec = meta.rank_port;
            } else {
                mark_to_drop(sm);
            }
        }
        if (meta.fb_clone) {
            // A JOIN's copy, or the JOIN before a relayed request (egress).
            clone_preserving_field_list(CloneType.I2E, (bit<32>)SR_P4_FB_SESSION0 + meta.blk,
                                        SR_P4_CPU_CLONE_FL);
        }
    }
}

#endif /* SERENE_P4_INGRESS_P4_ */
