/* SPDX-License-Identifier: Apache-2.0 */
/*
 * join.c - the join module: the op serene_ctx_create runs to bind this
 * worker to its job at the switch, and the LEAVE that unbinds it when the
 * context is destroyed.
 *
 * JOIN carries a random token (this context's identity), the job nonce and
 * the job's admission token; it is resent on its timer until JOIN_ACK
 * echoes the token. A JOIN_ACK with a cookie (offset) asks for proof that
 * this address receives: the JOIN is sent again echoing it, and the
 * JOIN_ACK to that completes the join. JOIN_ACK
 * describes the job, and the engine sizes itself and every module for it
 * (sr_engine_join).
 */
#include <sys/random.h>
#include <unistd.h>

#include "common/now.h"
#include "core/ctx.h"
#include "proto/wire.h"
#include "reliab/reliab.h"

static uint32_t random_token(void)
{
    uint32_t t = 0;
    while (t == 0) {
        if (getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t)
            t = (uint32_t)sr_now_ns() ^ (uint32_t)getpid() << 16;
    }
    return t;
}

static int join_init(void *self, sr_engine *e)
{
    sr_join *j = self;
    j->token = random_token();
    return 0;
}

/* Tell the switch this worker is gone, so the job can be started again.
 * Best effort, twice against a loss; the engine thread is stopped, so this
 * thread owns the transport now. */
static void join_fini(void *self, sr_engine *e)
{
    sr_join *j = self;
    if (!e->tp || !atomic_load(&j->joined))
        return;
    uint8_t msg[SR_WIRE_HDR_LEN];
    sr_hdr h;
    sr_hdr_base(e, &h, SR_OP_LEAVE);
    h.seq = j->token;
    sr_hdr_pack(msg, &h);
    struct iovec iov[2] = {{msg, sizeof msg}, {msg, sizeof msg}};
    (void)e->tp->send(e->tps, iov, 2);
}

/* JOIN with the admission token and the cookie to echo (0 at first). */
static void join_send(const sr_join *j, sr_engine *e, uint32_t cookie, uint64_t now)
{
    sr_hdr h;
    sr_hdr_base(e, &h, SR_OP_JOIN);
    h.seq = j->token;
    h.aux = e->cfg.job_nonce;
    /* The payload follows the header in ctl_msg, which sr_ctl_send packs
     * the header into. */
    h.count = SR_JOIN_REQ_WORDS;
    sr_join_req_pack(e->ctl_msg + SR_WIRE_HDR_LEN,
                     &(sr_join_req){.token = j->admission, .cookie = cookie});
    sr_ctl_send(e, &h, now);
}

static void join_begin(void *self, sr_engine *e, serene_op *op, uint64_t now)
{
    sr_rel_set_deadline(&e->rel, op->deadline_ns);
    join_send(self, e, 0, now);
}

static void on_join_ack(void *self, sr_engine *e, serene_op *op, const sr_hdr *h,
                        const uint8_t *payload, uint64_t now)
{
    sr_join *j = self;
    if (h->seq != j->token || h->count != SR_JOIN_PARAMS_WORDS) {
        SR_STAT_ADD(e, duplicates, 1);
        return;
    }
    /* The switch wants proof that this address receives: JOIN again with
     * its cookie; the answer to that one (offset 0) completes the join. */
    if (h->offset != 0) {
        join_send(j, e, h->offset, now);
        return;
    }
    sr_join_params p;
    sr_join_params_unpack(payload, &p);
    atomic_store(&j->joined, 1);
    e->whole_rows = (h->flags & SR_FLAG_WHOLE_ROWS) != 0;
    e->join_window = h->status;
    int rc = sr_engine_join(e, &p);
    if (!rc)
        sr_trains_joined(e); /* trains stay off until the path passes them */
    sr_op_finish(e, op, rc);
}

static int join_on_error(void *self, sr_engine *e, serene_op *op, const sr_hdr *h)
{
    const sr_join *j = self;
    if (h->aux != SR_OP_JOIN || h->seq != j->token)
        return 0;
    sr_op_finish(e, op, sr_op_refused(e, h));
    return 1;
}

static void join_on_timeout(void *self, sr_engine *e, serene_op *op, int st)
{
    SR_ERR(&e->log, "no answer from the switch at %s to JOIN of job %d within %d ms%s",
           e->cfg.switch_addr, e->cfg.job_id, e->cfg.timeout_ms,
           st == SR_REL_RETRY_LIMIT ? " (retry limit)" : "");
    sr_op_finish(e, op, SERENE_ERR_TIMEOUT);
}

const sr_op_class sr_join_class = {
    .name = "join",
    .answers = {SR_OP_JOIN_ACK},
    /* API thread, at creation: draws the token. */
    .init = join_init,
    /* API thread, at destroy: LEAVE if the switch bound this worker. */
    .fini = join_fini,
    /* Engine thread: JOIN, resent on timer 0 until answered. */
    .begin = join_begin,
    /* Engine thread: JOIN_ACK with this context's token sizes the engine. */
    .on_message = on_join_ack,
    /* Engine thread: the switch refused this JOIN (unknown job, ...). */
    .on_error = join_on_error,
    /* Engine thread: the switch stayed silent. */
    .on_timeout = join_on_timeout,
};
