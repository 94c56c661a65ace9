/* SPDX-License-Identifier: Apache-2.0 */
/* reliab.c - timers, backoff, retry limit and deadline (see reliab.h). */
#include <errno.h>
#include <stdlib.h>

#include "reliab/reliab.h"

int sr_rel_init(sr_rel *r, uint32_t n, const sr_rel_params *p)
{
    if (!r || !p || n == 0 || p->rto_ns == 0 || p->rto_max_ns < p->rto_ns)
        return -EINVAL;
    r->e = calloc(n, sizeof *r->e);
    if (!r->e)
        return -ENOMEM;
    r->p = *p;
    r->n = n;
    r->retransmits = 0;
    r->srtt_ns = 0;
    r->rttvar_ns = 0;
    r->rto_cur_ns = p->rto_ns;
    r->stall_ns[0] = r->stall_ns[1] = 0;
    r->stall_from_ns = 0;
    r->answer_ns = r->acked_xmit_ns = 0;
    r->probe_tokens = SR_REL_PROBE_BURST;
    r->free_probe_ns = 0;
    r->rack_scan_ns = 0;
    sr_rel_reset(r);
    return 0;
}

void sr_rel_fini(sr_rel *r)
{
    if (!r)
        return;
    free(r->e);
    r->e = NULL;
    r->n = 0;
}

void sr_rel_reset(sr_rel *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        r->e[i].due_ns = SR_REL_NEVER;
    r->armed = 0;
    r->min_due_ns = SR_REL_NEVER;
    r->deadline_ns = SR_REL_NEVER;
}

void sr_rel_arm(sr_rel *r, uint32_t i, uint64_t now_ns)
{
    sr_rel_entry *e = &r->e[i];
    if (e->due_ns == SR_REL_NEVER)
        r->armed++;
    e->rto_ns = r->rto_cur_ns;
    e->retries = 0;
    e->expired = 0;
    e->sent_ns = e->xmit_ns = now_ns;
    e->rack = e->queued = 0;
    e->due_ns = now_ns + e->rto_ns;
    if (e->due_ns < r->min_due_ns)
        r->min_due_ns = e->due_ns;
}

void sr_rel_disarm(sr_rel *r, uint32_t i)
{
    sr_rel_entry *e = &r->e[i];
    if (e->due_ns == SR_REL_NEVER)
        return;
    e->due_ns = SR_REL_NEVER;
    if (--r->armed == 0)
        r->min_due_ns = SR_REL_NEVER;
}

/* The longest stall of the last one to two periods, as of now_ns. */
static uint64_t stall_floor(sr_rel *r, uint64_t now_ns)
{
    if (now_ns - r->stall_from_ns >= SR_REL_STALL_PERIOD_NS) {
        int two = now_ns - r->stall_from_ns >= 2 * SR_REL_STALL_PERIOD_NS;
        r->stall_ns[1] = two ? 0 : r->stall_ns[0];
        r->stall_ns[0] = 0;
        r->stall_from_ns = now_ns;
    }
    return r->stall_ns[0] > r->stall_ns[1] ? r->stall_ns[0] : r->stall_ns[1];
}

static uint64_t clamp_rto(const sr_rel *r, uint64_t rto)
{
    return rto < r->p.rto_ns ? r->p.rto_ns : rto > r->p.rto_max_ns ? r->p.rto_max_ns : rto;
}

void sr_rel_stall(sr_rel *r, uint64_t delay_ns, uint64_t now_ns)
{
    stall_floor(r, now_ns);
    if (delay_ns > r->stall_ns[0])
        r->stall_ns[0] = delay_ns;
    delay_ns = clamp_rto(r, delay_ns);
    if (delay_ns > r->rto_cur_ns)
        r->rto_cur_ns = delay_ns;
}

void sr_rel_sample(sr_rel *r, uint64_t rtt, uint64_t now_ns)
{
    if (r->srtt_ns == 0) {
        r->srtt_ns = rtt ? rtt : 1;
        r->rttvar_ns = rtt / 2;
    } else {
        uint64_t d = rtt > r->srtt_ns ? rtt - r->srtt_ns : r->srtt_ns - rtt;
        r->rttvar_ns = (3 * r->rttvar_ns + d) / 4;
        r->srtt_ns = (7 * r->srtt_ns + rtt) / 8;
    }
    uint64_t rto = r->srtt_ns + 4 * r->rttvar_ns, floor = stall_floor(r, now_ns);
    r->rto_cur_ns = clamp_rto(r, rto > floor ? rto : floor);
}

/* A round trip: the smoothed one, or before any sample the first timeout. */
static uint64_t round_trip(const sr_rel *r)
{
    return r->srtt_ns ? r->srtt_ns : r->p.rto_ns;
}

int sr_rel_probe_due(const sr_rel *r, uint64_t last_ns, uint64_t now_ns)
{
    return !last_ns || now_ns - last_ns >= round_trip(r);
}

void sr_rel_ack(sr_rel *r, uint32_t i, uint64_t now_ns)
{
    sr_rel_entry *e = &r->e[i];
    if (e->due_ns == SR_REL_NEVER)
        return;
    if (!e->expired && now_ns >= e->sent_ns)
        sr_rel_sample(r, now_ns - e->sent_ns, now_ns);
    r->answer_ns = now_ns ? now_ns : 1;
    sr_rel_answer(r);
    if (e->xmit_ns > r->acked_xmit_ns) {
        r->acked_xmit_ns = e->xmit_ns;
        /* Packets sent before it may be lost: a scan soon (at most one
         * per SR_REL_REO_MIN_NS) looks. */
        uint64_t t = now_ns > r->rack_scan_ns ? now_ns : r->rack_scan_ns;
        if (t < r->min_due_ns)
            r->min_due_ns = t;
    }
    sr_rel_disarm(r, i);
}

void sr_rel_held(sr_rel *r, uint32_t i)
{
    sr_rel_entry *e = &r->e[i];
    if (e->due_ns != SR_REL_NEVER)
        e->retries = 0;
}

void sr_rel_resent(sr_rel *r, uint32_t i, uint64_t now_ns)
{
    r->e[i].xmit_ns = now_ns;
    r->e[i].rack = 0;
    r->e[i].expired = 1; /* its answer may be the resend's: no sample (Karn) */
}

void sr_rel_answer(sr_rel *r)
{
    if (r->probe_tokens < SR_REL_PROBE_BURST)
        r->probe_tokens++;
}

/* A probe is due: an answer pays for it, or it is the one unpaid probe of
 * this round trip; else the entry is due again in a round trip, and this
 * expiry counts no retry. */
static int probe_paid(sr_rel *r, sr_rel_entry *e, uint64_t now_ns)
{
    if (r->probe_tokens) {
        r->probe_tokens--;
        return SR_REL_PROBE;
    }
    uint64_t rtt = round_trip(r);
    if (!r->free_probe_ns || now_ns - r->free_probe_ns >= rtt) {
        r->free_probe_ns = now_ns ? now_ns : 1;
        return SR_REL_PROBE;
    }
    e->due_ns = now_ns + rtt;
    if (e->due_ns < r->min_due_ns)
        r->min_due_ns = e->due_ns;
    if (e->retries)
        e->retries--;
    return SR_REL_WAIT;
}

int sr_rel_verdict(sr_rel *r, uint32_t i, uint64_t probe_out_ns, uint64_t now_ns)
{
    sr_rel_entry *e = &r->e[i];
    if (e->queued) {
        e->queued = 0;
        return SR_REL_QUEUED;
    }
    if (!sr_rel_probe_due(r, probe_out_ns, now_ns))
        return SR_REL_WAIT;
    return probe_paid(r, e, now_ns);
}

void sr_rel_set_deadline(sr_rel *r, uint64_t deadline_ns)
{
    r->deadline_ns = deadline_ns;
}

/* How long after its last transmission a packet overtaken by an answer to
 * a later one is deemed lost: a round trip and a reordering window. */
static uint64_t rack_wait(const sr_rel *r)
{
    uint64_t reo = r->srtt_ns / 4 > SR_REL_REO_MIN_NS ? r->srtt_ns / 4 : SR_REL_REO_MIN_NS;
    return r->srtt_ns + reo;
}

/* Entry e's timer expired while answers to packets sent before it keep
 * coming (one within the current timeout, after it was sent) and none to
 * a packet sent after it: it is queued behind them. */
static int queued(const sr_rel *r, const sr_rel_entry *e, uint64_t now_ns)
{
    return r->acked_xmit_ns <= e->xmit_ns && r->answer_ns > e->xmit_ns &&
           now_ns - r->answer_ns < r->rto_cur_ns;
}

/* Entry e's timer expired: count it, back it off. */
static void expire(sr_rel *r, sr_rel_entry *e, uint64_t now_ns)
{
    e->retries++;
    e->expired = 1;
    e->rto_ns = e->rto_ns * 2 > r->p.rto_max_ns ? r->p.rto_max_ns : e->rto_ns * 2;
    e->due_ns = now_ns + e->rto_ns;
    /* RFC 6298 5.5: new packets keep the backed-off timeout until a clean
     * answer is sampled again. */
    if (e->rto_ns > r->rto_cur_ns)
        r->rto_cur_ns = e->rto_ns;
    r->retransmits++;
}

int sr_rel_poll(sr_rel *r, uint64_t now_ns, uint32_t *out, uint32_t max, uint32_t *n_out)
{
    *n_out = 0;
    if (now_ns >= r->deadline_ns)
        return SR_REL_DEADLINE;
    if (now_ns < r->min_due_ns)
        return SR_REL_OK;
    uint64_t min_due = SR_REL_NEVER, wait = rack_wait(r);
    uint32_t k = 0;
    int status = SR_REL_OK;
    r->rack_scan_ns = now_ns + SR_REL_REO_MIN_NS;
    for (uint32_t i = 0; i < r->n; i++) {
        sr_rel_entry *e = &r->e[i];
        if (e->due_ns == SR_REL_NEVER)
            continue;
        int overtaken = !e->rack && e->xmit_ns < r->acked_xmit_ns;
        uint64_t rack_ns = overtaken ? e->xmit_ns + wait : SR_REL_NEVER;
        if ((e->due_ns <= now_ns || rack_ns <= now_ns) && k < max && status == SR_REL_OK) {
            if (e->due_ns > now_ns) {
                e->rack = 1; /* overtaken: reported once, its timer untouched */
                out[k++] = i;
            } else if (queued(r, e, now_ns)) {
                /* Not an expiry: no backoff, no retry counted, and no RTT
                 * sample from its answer (a round may wait for a peer's
                 * recovery, which the timeout must not learn). */
                e->queued = 1;
                e->retries = 0;
                e->expired = 1;
                e->due_ns = now_ns + e->rto_ns;
                out[k++] = i;
            } else if (r->p.retry_limit && e->retries >= r->p.retry_limit) {
                status = SR_REL_RETRY_LIMIT;
            } else {
                e->rack |= overtaken;
                expire(r, e, now_ns);
                out[k++] = i;
            }
            rack_ns = SR_REL_NEVER;
        }
        if (e->due_ns < min_due)
            min_due = e->due_ns;
        if (!e->rack && rack_ns != SR_REL_NEVER) {
            uint64_t t = rack_ns < r->rack_scan_ns ? r->rack_scan_ns : rack_ns;
            if (t < min_due)
                min_due = t;
        }
    }
    r->min_due_ns = min_due;
    *n_out = k;
    return status;
}

uint64_t sr_rel_next_due(const sr_rel *r)
{
    return r->min_due_ns < r->deadline_ns ? r->min_due_ns : r->deadline_ns;
}
