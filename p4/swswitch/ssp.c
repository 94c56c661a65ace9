/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssp.c - the SSP parameter store and barrier of the pipeline: PUSH, PULL
 * and CLOCK, plus the policy control and the barrier state (see pipeline.h
 * for the contract, barrier.h for the barrier itself).
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
 * - the barrier: a ring of R bitmaps, low, high and the policy rules.
 *
 * Invariants: every request is checked completely (binding, count, range)
 * before any state changes, so a refused request leaves no trace but the
 * counters; requests from workers that are not bound at their own address
 * get no answer at all (as AR_DATA).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "pipeline_int.h"

_Static_assert(SR_PIPE_STORE_MAX <= UINT32_MAX - SR_WIRE_MAX_ELEMS,
               "store offsets plus a row length fit a uint32_t");
_Static_assert(SR_SYNC_WORDS * 4 <= SR_WIRE_MAX_PAYLOAD, "PROCEED/HOLD payload fits");
_Static_assert(SR_PIPE_MAX_ACTIONS >= 2, "a CLOCK answer and a RELEASE");
_Static_assert(SR_BARRIER_MAX_WORKERS >= SR_WIRE_MAX_WORKERS, "one barrier holds every worker");

/* ---- setup -------------------------------------------------------------------- */

static int barrier_new(const sr_pipe_job *j, sr_barrier *b)
{
    sr_barrier_params bp;

    sr_barrier_params_init(&bp);
    bp.n_workers = j->n;
    bp.ring = j->params.ring;
    bp.mode = j->params.mode;
    bp.s = j->params.s;
    return sr_barrier_init(b, &bp);
}

int sr_pipei_ssp_alloc(sr_pipe_job *j)
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
    return barrier_new(j, &j->bar) < 0 ? -ENOMEM : 0;
}

void sr_pipei_ssp_free(sr_pipe_job *j)
{
    free(j->store);
    free(j->push_last);
    j->store = NULL;
    j->push_last = NULL;
    sr_barrier_fini(&j->bar);
}

int sr_pipei_ssp_reset(sr_pipe_job *j)
{
    sr_barrier fresh;

    /* The parameters passed the checks when the job was added, so only
     * memory can fail here. */
    if (barrier_new(j, &fresh) < 0)
        return -ENOMEM;
    /* The policy is the job's configuration, not the incarnation's state:
     * a policy installed through the control socket (even before the first
     * JOIN) survives. The new run's clocks restart at the first clock, so
     * the rule in force until now covers them from there, and later rules
     * keep their starts. Nobody has a clock in the new barrier yet, so
     * every start is still in the future and the swap stays consistent. */
    sr_barrier_range r[SR_BARRIER_MAX_RULES];
    unsigned n = sr_barrier_rules(&j->bar, r, SR_BARRIER_MAX_RULES);
    for (unsigned i = 0; i < n && i < SR_BARRIER_MAX_RULES; i++) {
        uint32_t eff;
        /* Cannot fail for rules the old barrier accepted; if it did, the
         * job's initial policy stays in force, which is still consistent. */
        (void)sr_barrier_set_policy(&fresh, r[i].mode, r[i].s, i == 0 ? 0u : r[i].from,
                                    &eff);
    }
    sr_barrier_fini(&j->bar);
    j->bar = fresh; /* the ring moves with the struct: ownership passes */
    if (j->store_words) {
        memset(j->store, 0, (size_t)j->store_words * sizeof *j->store);
        memset(j->push_last, 0, (size_t)j->rows * j->n * sizeof *j->push_last);
    }
    return 0;
}

/* ---- store -------------------------------------------------------------------- */

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
    if (n < 1 || n > j->elems)
        return SR_ST_BAD_COUNT;
    if (!in_one_row(j, off, n)) {
        j->c.range_errors++;
        return SR_ST_RANGE;
    }
    return SR_ST_OK;
}

void sr_pipei_do_push(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                      const uint8_t *payload, sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint32_t *last, *v;
    unsigned st;
    int apply;
    sr_pipe_action *a;

    if (!sr_pipei_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    st = check_access(j, h->offset, h->count);
    if (st != SR_ST_OK) {
        sr_pipei_reply_error(p, j, src, h, st, out);
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
    a = sr_pipei_action_new(out);
    if (!a)
        return;
    a->hdr.op = SR_OP_PUSH_ACK;
    a->hdr.job = j->id;
    a->hdr.worker = w;
    a->hdr.seq = h->seq;
    a->hdr.offset = h->offset;
    a->hdr.aux = (uint32_t)apply;
    sr_pipei_action_unicast(a, src, w);
    sr_pipei_count_tx(p, j, a);
}

/* A PULL's count is 0 on the wire; a payload, if any, is ignored. */
void sr_pipei_do_pull(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                      sr_pipe_out *out)
{
    uint16_t w = h->worker;
    const uint32_t *v;
    unsigned st;
    sr_pipe_action *a;

    if (!sr_pipei_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    st = check_access(j, h->offset, h->aux);
    if (st != SR_ST_OK) {
        sr_pipei_reply_error(p, j, src, h, st, out);
        return;
    }
    a = sr_pipei_action_new(out);
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
    sr_pipei_action_unicast(a, src, w);
    sr_pipei_count_tx(p, j, a);
    j->c.pulls++;
}

/* ---- barrier ------------------------------------------------------------------ */

/*
 * CLOCK(c) from worker w: recorded in the barrier, answered with PROCEED or
 * HOLD carrying low, high and the policy in force at c; when it moved low,
 * RELEASE(low) goes to every bound worker too (those held at some clock
 * check their own c - low <= s; the others ignore it). A CLOCK beyond the
 * ring (the worker went on despite a HOLD) changes nothing and is refused.
 */
void sr_pipei_do_clock(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                       sr_pipe_out *out)
{
    uint16_t w = h->worker;
    sr_barrier_result r;
    sr_pipe_action *a;
    int rc;

    if (!sr_pipei_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    j->c.clocks++;
    rc = sr_barrier_clock(&j->bar, w, h->seq, &r);
    if (rc < 0) {
        /* -ERANGE; -EINVAL cannot happen: w < n was checked above. */
        j->c.clock_ahead++;
        sr_pipei_reply_error(p, j, src, h, SR_ST_CLOCK_AHEAD, out);
        return;
    }
    a = sr_pipei_action_new(out);
    if (!a)
        return;
    a->hdr.op = r.decision == SR_BARRIER_PROCEED ? SR_OP_PROCEED : SR_OP_HOLD;
    a->hdr.job = j->id;
    a->hdr.worker = w;
    a->hdr.seq = h->seq;
    a->hdr.aux = r.low;
    a->hdr.offset = r.high;
    a->hdr.count = SR_SYNC_WORDS;
    sr_put_be32(a->payload, (uint32_t)r.mode);
    sr_put_be32(a->payload + 4, r.s);
    a->payload_len = SR_SYNC_WORDS * 4u;
    sr_pipei_action_unicast(a, src, w);
    sr_pipei_count_tx(p, j, a);
    if (r.decision == SR_BARRIER_PROCEED)
        j->c.proceeds++;
    else
        j->c.holds++;
    if (!r.advanced)
        return;
    a = sr_pipei_action_new(out);
    if (!a)
        return;
    a->hdr.op = SR_OP_RELEASE;
    a->hdr.job = j->id;
    a->hdr.worker = w;
    a->hdr.seq = r.low;
    a->hdr.aux = r.low;
    a->hdr.offset = r.high;
    sr_pipei_action_multicast(a, j);
    sr_pipei_count_tx(p, j, a);
    j->c.releases++;
}

/* ---- control ------------------------------------------------------------------ */

int sr_pipe_set_policy(sr_pipe *p, uint16_t job_id, enum sr_sync_mode mode, uint32_t s,
                       uint32_t want_from, uint32_t *effective)
{
    if (!p || !p->jobs[job_id])
        return -ENOENT;
    return sr_barrier_set_policy(&p->jobs[job_id]->bar, mode, s, want_from, effective);
}

int sr_pipe_sync_get(const sr_pipe *p, uint16_t job_id, sr_pipe_sync_state *st)
{
    const sr_barrier *b;

    if (!st)
        return -EINVAL;
    if (!p || !p->jobs[job_id])
        return -ENOENT;
    b = &p->jobs[job_id]->bar;
    memset(st, 0, sizeof *st);
    st->low = sr_barrier_low(b);
    st->high = sr_barrier_high(b);
    sr_barrier_policy_at(b, st->high + 1, &st->mode, &st->s);
    st->ring = p->jobs[job_id]->params.ring;
    st->n_rules = sr_barrier_rules(b, st->rules, SR_BARRIER_MAX_RULES);
    if (st->n_rules > SR_BARRIER_MAX_RULES) /* cannot happen: the barrier's own bound */
        st->n_rules = SR_BARRIER_MAX_RULES;
    sr_barrier_counters_get(b, &st->cnt);
    return 0;
}
