/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fallback.c - a shared job's fallback aggregator: where its rounds go
 * when its slot has no block of the pool (pool.c), as ATP sends what
 * finds no aggregator to an end host.
 *
 * The fallback is a serene-switch on a host that holds the same job id
 * with the same workers, packets and at least the same slots, and is
 * exact like any switch. This switch relays to it, unchanged, the
 * workers' JOIN and LEAVE (so it binds every worker, at this switch's
 * address) and every AR_DATA and AR_PROBE of a round that went there
 * (allreduce.c decides per round, when the round starts, so all of a
 * round's packets go to one place); its answers come back here and go on
 * to the worker they name, marked SR_FLAG_FALLBACK. The workers' engines
 * drive recovery on that path as on any other: this switch keeps no timer.
 */
#include "controls.h"

static void relay(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                  size_t len, sr_pipe_out *out)
{
    if (sr_svc_forward(p, j, &j->params.fb_peer, h, payload, len, out))
        j->c.fb_relayed++;
}

/* Worker w's JOIN as it bound here: its context token and the job's
 * nonce and admission token. */
static void rejoin(sr_pipe *p, sr_pipe_job *j, uint16_t w, sr_pipe_out *out)
{
    sr_hdr h = {0};
    sr_join_req rq = {.token = j->params.token, .cookie = 0};
    uint8_t buf[SR_JOIN_REQ_WORDS * 4];

    h.version = SR_WIRE_VERSION;
    h.op = SR_OP_JOIN;
    h.job = j->id;
    h.worker = w;
    h.seq = j->token[w];
    h.aux = j->nonce;
    h.count = SR_JOIN_REQ_WORDS;
    sr_join_req_pack(buf, &rq);
    relay(p, j, &h, buf, sizeof buf, out);
}

void sr_fb_relay(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                 sr_pipe_out *out)
{
    if ((h->op == SR_OP_AR_DATA || h->op == SR_OP_AR_PROBE) &&
        !(j->fb_bound & (UINT64_C(1) << h->worker)))
        rejoin(p, j, h->worker, out);
    relay(p, j, h, payload, 4u * (size_t)h->count, out);
}

/* The fallback's JOIN_ACK: it binds the worker if it holds the job as
 * this switch does (workers, packets, at least the slots); otherwise its
 * rounds could not be the workers' rounds, and it stays unbound (counted). */
static void join_acked(sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload)
{
    sr_join_params jp;
    uint64_t bit = UINT64_C(1) << h->worker;

    if (h->count == SR_JOIN_PARAMS_WORDS && (j->bound & ~j->left & bit) &&
        h->seq == j->token[h->worker]) {
        sr_join_params_unpack(payload, &jp);
        if (jp.n_workers == j->n && jp.elems_per_pkt == j->elems && jp.pool_slots >= j->slots) {
            j->fb_bound |= bit;
            return;
        }
    }
    j->c.fb_dropped++;
}

int sr_fb_answer(sr_pipe *p, const sr_peer *src, const sr_hdr *h, const uint8_t *payload,
                 sr_pipe_out *out)
{
    sr_pipe_job *j = p->jobs[h->job];
    sr_pipe_action *a;
    uint16_t w = h->worker;
    size_t cell;
    int stamp = -1;

    if (!j || !j->params.fallback || !sr_svc_peer_eq(&j->params.fb_peer, src))
        return 0;
    j->c.rx++;
    if (w >= j->n || !(j->bound & ~j->left & (UINT64_C(1) << w))) {
        j->c.fb_dropped++;
        return 1;
    }
    switch (h->op) {
    case SR_OP_JOIN_ACK:
        join_acked(j, h, payload);
        return 1;
    case SR_OP_ERROR:
        if (h->aux != SR_OP_AR_DATA && h->aux != SR_OP_AR_PROBE) {
            /* A refused JOIN (no such job there, another token, ...):
             * the worker stays unbound there, and its next request that
             * goes there sends the JOIN again. */
            j->c.fb_dropped++;
            return 1;
        }
        break;
    case SR_OP_AR_RESULT:
        cell = 2u * (size_t)h->slot + h->shadow;
        if (h->slot < j->slots && j->relay[cell] == SR_CELL_AWAY && h->seq == j->m_seq[cell] &&
            h->offset == j->m_off[cell]) {
            /* The window its next call may use, fixed by the first copy
             * so that every worker reads the same; and a round that handed
             * its slot's block over is complete. */
            if (j->stamp[cell] == SR_STAMP_UNSET)
                j->stamp[cell] = sr_pool_result(p, j);
            stamp = (int)j->stamp[cell];
            sr_pool_away_done(p, j, h->slot, h->shadow);
            sr_pool_call_done(p, j, h->seq);
        }
        break;
    case SR_OP_AR_HELD:
    case SR_OP_AR_NAK:
        break;
    default:
        j->c.fb_dropped++;
        return 1;
    }
    a = sr_svc_forward(p, j, &j->peer[w], h, payload, 4u * (size_t)h->count, out);
    if (!a)
        return 1;
    a->hdr.flags |= SR_FLAG_FALLBACK;
    if (stamp >= 0)
        a->hdr.status = (uint8_t)stamp;
    j->c.fb_answers++;
    return 1;
}
