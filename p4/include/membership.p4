/* SPDX-License-Identifier: Apache-2.0 */
/*
 * membership.p4 - JOIN, LEAVE and the binding check of every other request
 * (the software switch's sr_membership_join and sr_membership_leave in
 * p4/swswitch/membership.c, and sr_svc_worker_ok in services.c).
 *
 * A JOIN must carry the job's admission token (job_table's entry; 0 admits
 * any) or it is answered ERROR DENIED and changes nothing. Per job id: the
 * incarnation nonce and the bound and left bitmaps; per
 * (job block, worker): the context token of its binding. The address a
 * worker may use is fixed by worker_table (the job file), so where the
 * software switch remembers the address a worker joined from, this program
 * requires the worker id of a request to be the rank worker_table gives its
 * source: a JOIN naming another rank is refused with NOT_MEMBER.
 *
 * A JOIN with a new nonce, with no worker bound, starts a new incarnation:
 * bindings, low and high are reset here, and the job's epoch goes up by
 * one (ingress.p4), so its slots, store rows and ring entries read as
 * cleared until they are next written (their incarnation tags).
 *
 * A leaf of a tree (upstream.p4) binds its workers here too, but the JOIN
 * it accepted, and a LEAVE that matched, go on to the root (meta.relay)
 * instead of being answered here.
 *
 * A shared job (share.p4): a JOIN it answers also goes to the fallback
 * (meta.fb_clone), and a LEAVE that matched goes there (the fallback binds
 * and unbinds the workers too). Per job id, fb_bound_reg: the workers the
 * fallback bound, by its JOIN_ACK, checked here as serene-switch's
 * join_acked does; a new incarnation clears it.
 */
#ifndef SERENE_P4_MEMBERSHIP_P4_
#define SERENE_P4_MEMBERSHIP_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "types.p4"

control Membership(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm,
                   out bool reset_clocks) {
    @name(".nonce_reg") register<bit<32>>(SR_P4_JOB_IDS) nonce_reg;
    @name(".bound_reg") register<bitmap_t>(SR_P4_JOB_IDS) bound_reg;
    @name(".left_reg") register<bitmap_t>(SR_P4_JOB_IDS) left_reg;
    @name(".token_reg") register<bit<32>>(SR_P4_WORKER_ENTRIES) token_reg;
    @name(".fb_bound_reg") register<bitmap_t>(SR_P4_JOB_IDS) fb_bound_reg;

    // JOIN_ACK: the job's parameters as the 4-word payload.
    action join_ack(bit<32> nonce) {
        hdr.serene.op = SR_OP_JOIN_ACK;
        hdr.serene.aux = nonce;
        hdr.serene.shadow = 0;
        hdr.serene.slot = 0;
        hdr.serene.exp = 0;
        hdr.serene.next_exp = 0;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        hdr.serene.offset = 0;
        hdr.serene.count = SR_JOIN_PARAMS_WORDS;
        hdr.vals[0].setValid();
        hdr.vals[0].v = meta.n_workers;
        hdr.vals[1].setValid();
        hdr.vals[1].v = SR_P4_ELEMS;
        hdr.vals[2].setValid();
        hdr.vals[2].v = SR_P4_SLOTS;
        hdr.vals[3].setValid();
        hdr.vals[3].v = meta.store_words;
        meta.route = SR_P4_OUT_UNICAST;
    }

    apply {
        bit<32> jid = (bit<32>)hdr.serene.job;
        bool rank_ok = meta.src_job == hdr.serene.job && meta.src_rank == hdr.serene.worker &&
                       (bit<32>)hdr.serene.worker < meta.n_workers;
        bitmap_t bound;
        bitmap_t left;
        bit<32> nonce;
        bit<32> token;
        bitmap_t fb_bound;
        bitmap_t fbit;
        index_t tidx = meta.blk * SR_P4_MAX_WORKERS +
                       (index_t)(hdr.serene.worker & (SR_P4_MAX_WORKERS - 1));

        reset_clocks = false;
        meta.wbit = rank_ok ? (bitmap_t)1 << (bit<8>)hdr.serene.worker : 0;
        bound_reg.read(bound, jid);
        left_reg.read(left, jid);
        token_reg.read(token, tidx);
        nonce_reg.read(nonce, jid);
        fb_bound_reg.read(fb_bound, jid);
        meta.w_token = token;
        meta.nonce = nonce;
        meta.fb_worker = hdr.serene.worker;

        if (meta.from_fallback) {
            // The fallback about worker `worker`: bound here and not left
            // (sr_fb_answer), and its JOIN_ACK binds it there when the
            // fallback holds the job as this switch does.
            fbit = (bit<32>)hdr.serene.worker < meta.n_workers ?
                   (bitmap_t)1 << (bit<8>)hdr.serene.worker : 0;
            meta.worker_ok = (bound & ~left & fbit) != 0;
            if (hdr.serene.op == SR_OP_JOIN_ACK) {
                if (meta.worker_ok && hdr.serene.count == SR_JOIN_PARAMS_WORDS &&
                    hdr.serene.seq == token && hdr.vals[0].v == meta.n_workers &&
                    hdr.vals[1].v == SR_P4_ELEMS && hdr.vals[2].v >= SR_P4_SLOTS) {
                    fb_bound_reg.write(jid, fb_bound | fbit);
                }
                meta.route = SR_P4_OUT_DROP;
            }
            return;
        }
        meta.fb_bound = (fb_bound & meta.wbit) != 0;

        if (hdr.serene.op == SR_OP_JOIN) {
            // The admission token first: one answer (ERROR DENIED, header
            // only) whatever the nonce, rank or bindings. A JOIN carries no
            // payload (token 0) or SR_JOIN_REQ_WORDS words, token in 0 and 1.
            bit<64> jtok = 0;
            if (hdr.serene.count == SR_JOIN_REQ_WORDS) {
                jtok = hdr.vals[0].v ++ hdr.vals[1].v;
            }
            if ((hdr.serene.count != 0 && hdr.serene.count != SR_JOIN_REQ_WORDS) ||
                (meta.job_token != 0 && jtok != meta.job_token)) {
                meta.err = SR_ST_DENIED;
            } else if (!rank_ok) {
                meta.err = SR_ST_NOT_MEMBER;
            } else if (meta.shared && meta.roce) {
                meta.err = SR_ST_UNSUPPORTED; // share.p4 relays UDP only
            } else if (hdr.serene.aux != nonce && (bound & ~left) != 0) {
                meta.err = SR_ST_JOB_IN_USE;
            } else {
                if (hdr.serene.aux != nonce) {
                    // New incarnation (see the top of this file).
                    nonce = hdr.serene.aux;
                    nonce_reg.write(jid, nonce);
                    bound = 0;
                    left = 0;
                    left_reg.write(jid, 0);
                    fb_bound_reg.write(jid, 0);
                    reset_clocks = true;
                }
                if ((bound & meta.wbit) == 0) {
                    bound = bound | meta.wbit;
                    bound_reg.write(jid, bound);
                    token_reg.write(tidx, hdr.serene.seq);
                    if (meta.leaf) {
                        meta.relay = true; // a leaf's JOIN_ACK comes from the root
                    } else {
                        join_ack(nonce);
                        meta.fb_clone = meta.shared;
                    }
                } else if (token != hdr.serene.seq || (left & meta.wbit) != 0) {
                    meta.err = SR_ST_STALE;
                } else if (meta.leaf) {
                    meta.relay = true;
                } else {
                    join_ack(nonce); // the same JOIN again: its ACK was lost
                    meta.fb_clone = meta.shared;
                }
            }
        } else if (hdr.serene.op == SR_OP_LEAVE) {
            // No answer either way; a LEAVE that does not match the binding
            // changes nothing.
            if (rank_ok && (bound & meta.wbit) != 0 && token == hdr.serene.seq) {
                left_reg.write(jid, left | meta.wbit);
                meta.relay = meta.leaf; // and the root unbinds it too
                if (meta.shared) {
                    meta.route = SR_P4_OUT_FALLBACK; // and the fallback
                }
            }
        } else {
            meta.worker_ok = rank_ok && (bound & ~left & meta.wbit) != 0;
        }
    }
}

#endif /* SERENE_P4_MEMBERSHIP_P4_ */
