/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upstream.c - a leaf of an aggregation tree: the controls of
 * p4/include/upstream.p4, rule for rule where one packet in, one out
 * allows (p4/README.md, "Trees", lists where the P4 leaf differs).
 *
 * A leaf job (params.up) is an ordinary job of the tree's N workers that
 * serves a range of their ids (local_first, local_n), with a parent at
 * up_peer that holds two ordinary jobs:
 * - job `up_job`, whose members are the leaves: a leaf's complete round
 *   goes there as one contribution of member up_member, and the parent's
 *   AR_RESULT comes down (the cells' side is in allreduce.c);
 * - job `j->id` itself, of the N workers: the SSP store and barrier. The
 *   leaf relays its workers' JOIN, LEAVE, PUSH, PULL, CLOCK and STEP there
 *   unchanged, and the answers back to the worker they name. So the root
 *   binds every worker (at its leaf's address), answers every JOIN with the
 *   tree's parameters, applies each push once and holds each clock as a
 *   single switch would: one store, one barrier, one source of truth.
 * The leaf keeps no timer: what a packet lost on the leaf-parent link
 * needs again is sent when a worker's own engine resends or probes
 * (allreduce.c's up_pending, and the JOINs below).
 *
 * State per leaf job: up_bound and up_nonce (the parent acknowledged the
 * leaf's JOIN in this incarnation), up_err (it refused it), and
 * per cell up_wait and up_ms (services.h). Every answer from the parent is
 * matched against it; what matches nothing is counted (up_dropped) and
 * dropped.
 */
#include "controls.h"

int sr_up_bound(const sr_pipe_job *j)
{
    return j->up_bound && j->up_nonce == j->nonce;
}

unsigned sr_up_refused(const sr_pipe_job *j)
{
    return !sr_up_bound(j) && j->up_err_nonce == j->nonce ? j->up_err : 0;
}

/* A copy of request h (and its 4 * h->count payload bytes) to the parent,
 * unchanged: the root sees the worker's own header. */
static void relay_up(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                     sr_pipe_out *out)
{
    if (sr_svc_forward(p, j, &j->params.up_peer, h, payload, 4u * (size_t)h->count, out))
        j->c.up_relayed++;
}

/* The leaf's JOIN or LEAVE in its parent's job: member up_member, its
 * context token and nonce those of the leaf's incarnation (so a JOIN
 * retransmitted within it is the same JOIN), the job's admission token. */
static void self_msg(sr_pipe *p, sr_pipe_job *j, uint8_t op, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);
    sr_join_req rq = {.token = j->params.token, .cookie = 0};

    if (!a)
        return;
    a->hdr.op = op;
    a->hdr.job = j->params.up_job;
    a->hdr.worker = j->params.up_member;
    a->hdr.seq = j->nonce;
    a->hdr.aux = j->nonce;
    if (op == SR_OP_JOIN) {
        a->hdr.count = SR_JOIN_REQ_WORDS;
        sr_join_req_pack(a->payload, &rq);
        a->payload_len = SR_JOIN_REQ_WORDS * 4u;
    }
    sr_svc_unicast(a, &j->params.up_peer, j->params.up_member);
    sr_svc_count_tx(p, j, a);
}

void sr_up_join_self(sr_pipe *p, sr_pipe_job *j, sr_pipe_out *out)
{
    self_msg(p, j, SR_OP_JOIN, out);
}

void sr_up_join(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                sr_pipe_out *out)
{
    relay_up(p, j, h, payload, out);
    if (!sr_up_bound(j))
        self_msg(p, j, SR_OP_JOIN, out);
}

int sr_up_request(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                  const uint8_t *payload, sr_pipe_out *out)
{
    switch (h->op) {
    case SR_OP_PUSH:
    case SR_OP_PULL:
    case SR_OP_CLOCK:
    case SR_OP_STEP:
    case SR_OP_STEP_PROBE:
        /* Isolation as for every request: only a bound worker at its own
         * address is heard, and the root checks again (its binding of the
         * worker is at this leaf's address). */
        if (!sr_svc_worker_ok(j, h->worker, src)) {
            j->c.dropped_unbound++;
            return 1;
        }
        relay_up(p, j, h, payload, out);
        return 1;
    case SR_OP_LEAVE:
        /* Relayed only if it matches the binding (a repeat too: the root
         * may have lost the first), never one with another token. */
        if (!sr_membership_leave(j, src, h))
            return 1;
        relay_up(p, j, h, payload, out);
        /* The last local worker gone: the leaf leaves its parent's job
         * too, so a new incarnation can start there (best effort, as a
         * worker's LEAVE; the parent's lease covers a lost one). */
        if (j->bound && !(j->bound & ~j->left) && sr_up_bound(j)) {
            self_msg(p, j, SR_OP_LEAVE, out);
            j->up_bound = 0;
        }
        return 1;
    default:
        return 0;
    }
}

/* The root's JOIN_ACK to a worker must announce this leaf's job: the
 * tree's workers and the same packets and pool, or the worker and the
 * leaf would disagree on every round. Returns 0 when it does, else the
 * status the worker is refused with: NOT_MEMBER (another number of
 * workers: another id space), BAD_COUNT (packets), BAD_SLOT (pool). */
static unsigned ack_misfit(const sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload)
{
    sr_join_params jp;

    if (h->count != SR_JOIN_PARAMS_WORDS)
        return SR_ST_BAD_COUNT;
    sr_join_params_unpack(payload, &jp);
    return jp.n_workers != j->n        ? SR_ST_NOT_MEMBER
           : jp.elems_per_pkt != j->elems ? SR_ST_BAD_COUNT
           : jp.pool_slots != j->slots    ? SR_ST_BAD_SLOT
                                          : 0;
}

/* An answer of the root's job j->id to one of j's workers: to that worker,
 * at its address, unchanged. */
static void relay_down(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                       sr_pipe_out *out)
{
    uint16_t w = h->worker;
    unsigned misfit = h->op == SR_OP_JOIN_ACK ? ack_misfit(j, h, payload) : 0;
    sr_pipe_action *a;

    if (w >= j->n || !(j->bound & ~j->left & (UINT64_C(1) << w)) ||
        !(a = sr_svc_forward(p, j, &j->peer[w], h, payload, misfit ? 0 : 4u * (size_t)h->count,
                             out))) {
        j->c.up_dropped++;
        return;
    }
    if (misfit) {
        /* The tree is configured wrong: the worker is told at once (its
         * library logs the refused JOIN and its status), and counted. */
        a->hdr.op = SR_OP_ERROR;
        a->hdr.status = (uint8_t)misfit;
        a->hdr.aux = SR_OP_JOIN;
        a->hdr.count = 0;
        a->hdr.offset = 0;
        j->c.up_dropped++;
        j->c.errors_sent++;
    }
    j->c.down_relayed++;
}

/* An answer of the parent's job up_job to the leaf itself. */
static void self_answer(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                        sr_pipe_out *out)
{
    sr_join_params jp;

    switch (h->op) {
    case SR_OP_JOIN_ACK:
        /* The parent's job must take this leaf's packets and slots. One
         * that comes after every local worker left (the leaf has left the
         * parent's job too, or is about to) binds nothing: late. */
        if (h->worker == j->params.up_member && h->seq == j->nonce && h->aux == j->nonce &&
            h->count == SR_JOIN_PARAMS_WORDS && (j->bound & ~j->left)) {
            sr_join_params_unpack(payload, &jp);
            if (jp.elems_per_pkt == j->elems && jp.pool_slots >= j->slots) {
                j->up_bound = 1;
                j->up_nonce = j->nonce;
                j->up_err = 0;
                return;
            }
            /* The parent's job cannot take this leaf's rounds. */
            j->up_err = jp.elems_per_pkt != j->elems ? SR_ST_BAD_COUNT : SR_ST_BAD_SLOT;
            j->up_err_nonce = j->nonce;
        }
        j->c.up_dropped++;
        return;
    case SR_OP_AR_HELD: /* the parent's round waits for other leaves */
        return;
    case SR_OP_ERROR:
        if (h->aux == SR_OP_LEAVE)
            break;
        if (h->aux == SR_OP_JOIN) {
            /* Refused (no such job there, not a member, not its token, or
             * a previous run still bound there, as a single switch would
             * refuse the workers' own JOIN): the workers learn it from
             * their next resend or probe (allreduce.c) instead of waiting
             * for their deadline. The JOIN goes again with each of them
             * all the same, for a parent that frees up or is fixed. */
            if (h->worker == j->params.up_member &&
                (h->status == SR_ST_UNKNOWN_JOB || h->status == SR_ST_NOT_MEMBER ||
                 h->status == SR_ST_DENIED || h->status == SR_ST_JOB_IN_USE)) {
                j->up_err = h->status;
                j->up_err_nonce = j->nonce;
            }
            break;
        }
        /* fall through */
    case SR_OP_AR_RESULT:
    case SR_OP_AR_NAK:
        sr_allreduce_up_answer(p, j, h, payload, out);
        return;
    default:
        break;
    }
    j->c.up_dropped++;
}

int sr_up_answer(sr_pipe *p, const sr_peer *src, const sr_hdr *h, const uint8_t *payload,
                 sr_pipe_out *out)
{
    sr_pipe_job *j = p->jobs[h->job];

    if (j && j->params.up && sr_svc_peer_eq(&j->params.up_peer, src)) {
        j->c.rx++;
        relay_down(p, j, h, payload, out);
        return 1;
    }
    for (unsigned i = 0; i < p->n_leaves; i++) {
        j = p->jobs[p->leaves[i]];
        if (j->params.up_job == h->job && j->params.up_member == h->worker &&
            sr_svc_peer_eq(&j->params.up_peer, src)) {
            j->c.rx++;
            self_answer(p, j, h, payload, out);
            return 1;
        }
    }
    return 0;
}
