/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c - the SSP parameter store: PUSH and PULL, the Store control of
 * p4/include/store.p4.
 *
 * State per job, laid out as the P4 program holds it in registers:
 * - store[store_words]: uint32_t accumulators, added modulo 2^32 (the int32
 *   values of the wire, two's complement). Row r is the words
 *   [r * E, (r + 1) * E) with E = elems_per_pkt, so a request, which stays
 *   within one row, touches one index of E per-lane registers, as an
 *   allreduce slot does.
 * - push_last[row * N + w]: the last push number of worker w applied to the
 *   row (0: none). The library sends a push to a row only after its previous
 *   one to that row was acknowledged, so per (row, worker) push numbers
 *   arrive in order, except for late retransmissions, which carry a number
 *   <= push_last and are acknowledged without being added again. Numbers
 *   compare in serial arithmetic, so they may wrap.
 *
 * Invariants: every request is checked completely (binding, count, range)
 * before any state changes, so a refused request leaves no trace but the
 * counters; requests from workers that are not bound at their own address
 * get no answer at all (as AR_DATA).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controls.h"

_Static_assert(SR_PIPE_STORE_MAX <= UINT32_MAX - SR_WIRE_MAX_ELEMS,
               "store offsets plus a row length fit a uint32_t");

/* ---- the store and its push table ----------------------------------------- */

int sr_store_alloc(sr_pipe_job *j)
{
    j->store_words = j->params.store_words;
    /* Checked at job add: rows * n <= SR_PIPE_PUSH_TABLE_MAX, no overflow. */
    j->rows = (uint32_t)(((uint64_t)j->store_words + j->elems - 1) / j->elems);
    if (j->store_words) {
        j->store = calloc(j->store_words, sizeof *j->store);
        j->push_last = calloc((size_t)j->rows * j->n, sizeof *j->push_last);
        if (!j->store || !j->push_last)
            return -ENOMEM;
    }
    return 0;
}

void sr_store_free(sr_pipe_job *j)
{
    free(j->store);
    free(j->push_last);
    j->store = NULL;
    j->push_last = NULL;
}

void sr_store_clear(sr_pipe_job *j)
{
    if (j->store_words) {
        memset(j->store, 0, (size_t)j->store_words * sizeof *j->store);
        memset(j->push_last, 0, (size_t)j->rows * j->n * sizeof *j->push_last);
    }
}

/* ---- requests --------------------------------------------------------------- */

/* Is [off, off + n) (n >= 1) inside the store and inside one row? */
static int in_one_row(const sr_pipe_job *j, uint32_t off, uint32_t n)
{
    uint64_t end = (uint64_t)off + n;

    return end <= j->store_words && off / j->elems == (uint32_t)((end - 1) / j->elems);
}

/* Count 0 or above a row is BAD_COUNT (as for AR_DATA: wire.h's "count above
 * the job's elements per packet"); a fitting count in the wrong place is
 * RANGE. Returns the status, SR_ST_OK when the access is fine. */
static unsigned check_access(sr_pipe_job *j, uint32_t off, uint32_t n)
{
    if (n < 1 || n > j->elems || (j->params.whole_rows && n != j->elems))
        return SR_ST_BAD_COUNT;
    if (!in_one_row(j, off, n) || (j->params.whole_rows && off % j->elems)) {
        j->c.range_errors++;
        return SR_ST_RANGE;
    }
    return SR_ST_OK;
}

void sr_store_push(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   const uint8_t *payload, sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint32_t *last, *v;
    unsigned st;
    int apply;
    sr_pipe_action *a;

    if (!sr_svc_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    if (j->params.tna_model) {
        sr_tna_run(p, j, src, h, payload, out);
        return;
    }
    st = check_access(j, h->offset, h->count);
    if (st != SR_ST_OK) {
        sr_svc_reply_error(p, j, src, h, st, out);
        return;
    }
    last = &j->push_last[(size_t)(h->offset / j->elems) * j->n + w];
    apply = (int32_t)(h->seq - *last) > 0;
    if (apply) {
        v = j->store + h->offset;
        /* uint32_t: the int32 sums wrap modulo 2^32, as in the switch ALU. */
        for (unsigned i = 0; i < h->count; i++)
            v[i] += sr_get_be32(payload + 4u * i);
        *last = h->seq;
        j->c.pushes++;
    } else {
        j->c.push_dups++;
    }
    /* Acknowledged either way: a duplicate means the first ACK was lost. */
    a = sr_svc_action_new(out);
    if (!a)
        return;
    a->hdr.op = SR_OP_PUSH_ACK;
    a->hdr.job = j->id;
    a->hdr.worker = w;
    a->hdr.seq = h->seq;
    a->hdr.offset = h->offset;
    a->hdr.aux = (uint32_t)apply;
    sr_svc_unicast(a, src, w);
    sr_svc_count_tx(p, j, a);
}

/* A PULL's count is 0 on the wire (its length rides in aux); a payload, if
 * any, is ignored. */
void sr_store_pull(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   sr_pipe_out *out)
{
    uint16_t w = h->worker;
    const uint32_t *v;
    unsigned st;
    sr_pipe_action *a;

    if (!sr_svc_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    if (j->params.tna_model) {
        sr_tna_run(p, j, src, h, NULL, out);
        return;
    }
    st = check_access(j, h->offset, h->aux);
    if (st != SR_ST_OK) {
        sr_svc_reply_error(p, j, src, h, st, out);
        return;
    }
    a = sr_svc_action_new(out);
    if (!a)
        return;
    a->hdr.op = SR_OP_PULL_RESP;
    a->hdr.job = j->id;
    a->hdr.worker = w;
    a->hdr.seq = h->seq;
    a->hdr.offset = h->offset;
    a->hdr.count = (uint16_t)h->aux; /* <= elems <= SR_WIRE_MAX_ELEMS */
    v = j->store + h->offset;
    for (unsigned i = 0; i < h->aux; i++)
        sr_put_be32(a->payload + 4u * i, v[i]);
    a->payload_len = 4u * (size_t)h->aux;
    sr_svc_unicast(a, src, w);
    sr_svc_count_tx(p, j, a);
    j->c.pulls++;
}
