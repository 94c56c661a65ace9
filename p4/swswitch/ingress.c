/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ingress.c - the dispatch of every message: parse it (lib/proto, as
 * parser.p4 does), drop what is not a request, look its job up, and hand
 * it to the op's control (controls.h), as the apply block of
 * p4/include/ingress.p4 does. Every outcome, drops included, is counted.
 *
 * Where the P4 program differs: its worker_table drops a source that is
 * not in the job file before the job lookup; here every source gets that
 * far, and the controls check the binding (sr_svc_worker_ok).
 */
#include "controls.h"

/* Only requests go on; answers (JOIN_ACK, ERROR, AR_RESULT, ...) only flow
 * switch to worker. */
static int is_request(uint8_t op)
{
    switch (op) {
    case SR_OP_JOIN:
    case SR_OP_LEAVE:
    case SR_OP_AR_DATA:
    case SR_OP_AR_PROBE:
    case SR_OP_PUSH:
    case SR_OP_PULL:
    case SR_OP_CLOCK:
    case SR_OP_STEP:
    case SR_OP_STEP_PROBE:
        return 1;
    default:
        return 0;
    }
}

void sr_pipe_process(sr_pipe *p, const sr_peer *src, const uint8_t *msg, size_t len,
                     sr_pipe_out *out)
{
    sr_hdr h;
    const uint8_t *payload = NULL;
    sr_pipe_job *j;
    int r;

    out->n = 0;
    p->c.rx_total++;
    r = sr_msg_parse(msg, len, &h, &payload);
    if (r != SR_PARSE_OK) {
        /* Index 0 collects results outside enum sr_parse_result. */
        p->c.rejected[r < 0 && r > -SR_PARSE_NREASONS ? -r : 0]++;
        return;
    }
    if (!is_request(h.op)) {
        /* From a leaf's parent, an answer goes down (upstream.c). Any
         * other is a loop or a confused peer, and answering it could
         * start a ping-pong. */
        if (p->n_leaves && sr_up_answer(p, src, &h, payload, out))
            return;
        /* From a shared job's fallback, an answer goes on (fallback.c). */
        if (p->pool.n_jobs && sr_fb_answer(p, src, &h, payload, out))
            return;
        p->c.answers_dropped++;
        return;
    }

    j = p->jobs[h.job];
    if (!j) {
        p->c.unknown_job++;
        sr_svc_reply_error(p, NULL, src, &h, SR_ST_UNKNOWN_JOB, out);
        return;
    }
    j->c.rx++;
    /* A leaf relays what the root serves: LEAVE, PUSH, PULL, CLOCK, STEP. */
    if (j->params.up && sr_up_request(p, j, src, &h, payload, out)) {
        sr_membership_seen(p, j, &h, src);
        return;
    }
    /* Incarnation tags: what the request names reads as cleared if the
     * job started a new incarnation since it was last touched. */
    if (h.op == SR_OP_AR_DATA || h.op == SR_OP_AR_PROBE)
        sr_epoch_touch_slot(j, h.slot);
    else if (h.op == SR_OP_PUSH || h.op == SR_OP_PULL || h.op == SR_OP_STEP ||
             h.op == SR_OP_STEP_PROBE)
        sr_epoch_touch_row(j, h.offset);
    if ((h.op == SR_OP_PULL || h.op == SR_OP_CLOCK || h.op == SR_OP_STEP ||
         h.op == SR_OP_STEP_PROBE) &&
        sr_membership_unproven(p, j, &h, src)) {
        sr_svc_reply_error(p, j, src, &h, SR_ST_UNPROVEN, out);
        return;
    }
    switch (h.op) {
    case SR_OP_JOIN: sr_membership_join(p, j, src, &h, payload, out); break;
    case SR_OP_LEAVE:
        /* A shared job's LEAVE that matched its binding goes to the
         * fallback too; with the last worker gone, its blocks go back. */
        if (sr_membership_leave(j, src, &h) && j->params.fallback) {
            sr_fb_relay(p, j, &h, payload, out);
            if (!(j->bound & ~j->left))
                sr_pool_job_release(p, j);
        }
        break;
    case SR_OP_AR_DATA: sr_allreduce_data(p, j, src, &h, payload, out); break;
    case SR_OP_AR_PROBE: sr_allreduce_probe(p, j, src, &h, out); break;
    case SR_OP_PUSH: sr_store_push(p, j, src, &h, payload, out); break;
    case SR_OP_PULL: sr_store_pull(p, j, src, &h, out); break;
    case SR_OP_STEP: sr_step_piece(p, j, src, &h, payload, out); break;
    case SR_OP_STEP_PROBE: sr_step_probe(p, j, src, &h, out); break;
    default: sr_barrier_job_clock(p, j, src, &h, out); break;
    }
    sr_membership_seen(p, j, &h, src);
}
