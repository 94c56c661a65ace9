/* SPDX-License-Identifier: Apache-2.0 */
/*
 * barrier.c - the SSP barrier, the Barrier control of
 * p4/include/barrier.p4: first the ring and its clock-indexed policy rules
 * (see barrier.h for the model and the invariants; the unit tests drive it
 * alone), then the control around it: CLOCK answered with PROCEED or HOLD
 * and RELEASE multicast when low advances, a job's barrier set up and
 * renewed, and the policy's control plane (sr_pipe_set_policy,
 * sr_pipe_sync_get).
 *
 * Rules invariant: rules[0].start <= low + 1 (serial), starts strictly
 * increase, and every other start lies in (low, low + SR_BARRIER_MAX_AHEAD].
 * So rules[0] governs every clock from low + 1 up to rules[1].start, lookups
 * never compare a clock with rules[0].start, and every comparison that is
 * made spans less than 2^31 whatever the wrap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "barrier.h"
#include "controls.h"

_Static_assert(SR_BARRIER_MAX_WORKERS <= 64, "a ring entry is one uint64_t bitmap");
_Static_assert((SR_BARRIER_RING_MAX & (SR_BARRIER_RING_MAX - 1)) == 0, "R is a power of 2");
_Static_assert(SR_BARRIER_RING_MAX + SR_BARRIER_MAX_AHEAD < (1u << 31),
               "live clocks and rule starts must stay within 2^31 of low");
_Static_assert(SR_SYNC_WORDS * 4 <= SR_WIRE_MAX_PAYLOAD, "PROCEED/HOLD payload fits");
_Static_assert(SR_PIPE_MAX_ACTIONS >= 2, "a CLOCK answer and a RELEASE");
_Static_assert(SR_BARRIER_MAX_WORKERS >= SR_WIRE_MAX_WORKERS, "one barrier holds every worker");

/* a - b in serial-number arithmetic: > 0 when a is after b. */
static int32_t serial_diff(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b);
}

static uint32_t ring_size(const sr_barrier *b)
{
    return b->mask + 1;
}

/* The s a policy applies on a ring of r entries. ASP cannot be unbounded:
 * a worker more than R - 1 clocks past low would need a ring entry that
 * still holds an older clock, so ASP is SSP(R - 2), the largest s the ring
 * supports (a worker that proceeds at c = low + s sends c + 1 <= low + R - 1,
 * which leaves one entry of slack). */
static int applied_s(uint32_t r, enum sr_sync_mode mode, uint32_t s, uint32_t *out)
{
    switch (mode) {
    case SR_SYNC_BSP:
        *out = 0;
        return 0;
    case SR_SYNC_SSP:
        if (s > r - 2)
            return -ERANGE;
        *out = s;
        return 0;
    case SR_SYNC_ASP:
        *out = r - 2;
        return 0;
    }
    return -EINVAL;
}

/* The rule in force at c: the last one whose start <= c; rules[0] for
 * anything earlier (see the invariant at the top). */
static const sr_barrier_rule *rule_at(const sr_barrier *b, uint32_t c)
{
    unsigned i;

    for (i = b->n_rules - 1; i > 0; i--)
        if (serial_diff(c, b->rules[i].start) >= 0)
            break;
    return &b->rules[i];
}

void sr_barrier_params_init(sr_barrier_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->ring = SR_BARRIER_RING_DEFAULT;
    p->mode = SR_SYNC_BSP;
}

int sr_barrier_init(sr_barrier *b, const sr_barrier_params *p)
{
    uint32_t r, s;
    int rc;

    if (!b || !p)
        return -EINVAL;
    memset(b, 0, sizeof *b);
    if (p->n_workers < 1 || p->n_workers > SR_BARRIER_MAX_WORKERS)
        return -EINVAL;
    r = p->ring ? p->ring : SR_BARRIER_RING_DEFAULT;
    if (r < 2 || r > SR_BARRIER_RING_MAX || (r & (r - 1)))
        return -EINVAL;
    rc = applied_s(r, p->mode, p->s, &s);
    if (rc)
        return rc;
    b->ring = calloc(r, sizeof *b->ring);
    if (!b->ring)
        return -ENOMEM;
    b->mask = r - 1;
    b->n_workers = p->n_workers;
    /* 1 << 64 is undefined, hence the special case. */
    b->full = p->n_workers == 64 ? UINT64_MAX : (UINT64_C(1) << p->n_workers) - 1;
    b->low = p->first_clock - 1;
    b->high = p->first_clock - 1;
    b->rules[0] = (sr_barrier_rule){.start = p->first_clock, .s = s, .mode = p->mode};
    b->n_rules = 1;
    return 0;
}

void sr_barrier_fini(sr_barrier *b)
{
    if (!b)
        return;
    free(b->ring);
    b->ring = NULL;
}

/* Mark worker bit at c and at every clock in (low, c) it has not reported.
 *
 * A CLOCK(c) says the worker finished every iteration up to c, so if an
 * earlier CLOCK of it was lost, the entry of that clock would otherwise never
 * fill and low would stop there for good. Since a worker's bits form a prefix
 * low+1 .. (its last clock), the walk down from c stops at the first bit
 * already set: one step for a worker that reports in order, at most R (the
 * caller checked c - low <= R) after a loss.
 *
 * The P4 program has no such loop. It relies on the library instead: a
 * worker goes on past c only after an answer to its CLOCK(c) (PROCEED, or
 * HOLD and then RELEASE), resending CLOCK(c) until it gets one, so the
 * switch has recorded c before it ever sees c + 1. The software switch keeps
 * the fill so that a misbehaving or restarted worker cannot stall the job. */
static void record(sr_barrier *b, uint64_t bit, uint32_t c)
{
    uint32_t x;

    for (x = c; serial_diff(x, b->low) > 0; x--) {
        uint64_t *e = &b->ring[x & b->mask];

        if (*e & bit)
            break;
        *e |= bit;
    }
}

/* Drop the rules that ended at or before low: keep the one in force at low
 * (not just at low + 1), so the policy of every clock a live worker can still
 * send, its current one, stays exact. */
static void gc_rules(sr_barrier *b)
{
    unsigned k = 0;

    while (k + 1 < b->n_rules && serial_diff(b->rules[k + 1].start, b->low) <= 0)
        k++;
    if (k) {
        memmove(b->rules, b->rules + k, (b->n_rules - k) * sizeof b->rules[0]);
        b->n_rules -= k;
    }
    /* A policy kept for over 2^30 clocks: move its start up to low (where
     * it is in force, and strictly before rules[1]) so that the ranges
     * listed stay meaningful in serial arithmetic. low moves at most R per
     * call, so the lag never reaches the 2^31 ambiguity first. */
    if (serial_diff(b->low, b->rules[0].start) > (int32_t)SR_BARRIER_MAX_AHEAD)
        b->rules[0].start = b->low;
}

/* Move low over every full entry, clearing each so that it can hold the
 * clock R later. Returns 1 if low moved.
 *
 * With CLOCKs in order (the P4 case) one CLOCK completes at most one entry:
 * the entry of c fills only when its last worker reports c, and the entries
 * above lack that worker. Only the software fill of lost clocks can complete
 * several at once, hence the loop, bounded by R. */
static int advance(sr_barrier *b)
{
    uint32_t moved = 0;

    while (moved <= b->mask && b->ring[(b->low + 1) & b->mask] == b->full) {
        b->ring[(b->low + 1) & b->mask] = 0;
        b->low++;
        moved++;
    }
    if (!moved)
        return 0;
    b->cnt.advances++;
    gc_rules(b);
    return 1;
}

int sr_barrier_clock(sr_barrier *b, uint32_t w, uint32_t c, sr_barrier_result *r)
{
    const sr_barrier_rule *rule;
    uint64_t bit;
    int32_t d;

    if (!b || !r || w >= b->n_workers)
        return -EINVAL;
    b->cnt.clocks++;
    bit = UINT64_C(1) << w;
    d = serial_diff(c, b->low);
    /* Looked up before a possible advance drops rules; exact for c >= low. */
    rule = rule_at(b, c);
    r->mode = rule->mode;
    r->s = rule->s;
    r->advanced = 0;
    r->duplicate = 0;
    if (d > (int32_t)ring_size(b)) {
        /* Its entry still holds the clock R earlier: refuse, touch nothing. */
        b->cnt.violations++;
        r->decision = SR_BARRIER_HOLD;
        r->low = b->low;
        r->high = b->high;
        return -ERANGE;
    }
    if (d <= 0 || (b->ring[c & b->mask] & bit)) {
        r->duplicate = 1;
        b->cnt.duplicates++;
    } else {
        record(b, bit, c);
        if (serial_diff(c, b->high) > 0)
            b->high = c;
        r->advanced = (uint8_t)advance(b);
    }
    r->low = b->low;
    r->high = b->high;
    if (sr_barrier_released(c, r->s, b->low)) {
        r->decision = SR_BARRIER_PROCEED;
        b->cnt.proceeds++;
    } else {
        r->decision = SR_BARRIER_HOLD;
        b->cnt.holds++;
    }
    return 0;
}

void sr_barrier_note(sr_barrier *b, uint32_t c)
{
    if (serial_diff(c, b->high) > 0)
        b->high = c;
}

int sr_barrier_set_policy(sr_barrier *b, enum sr_sync_mode mode, uint32_t s, uint32_t want_from,
                          uint32_t *effective)
{
    const sr_barrier_rule *last;
    uint32_t applied, e;
    unsigned n;
    int rc;

    if (!b)
        return -EINVAL;
    rc = applied_s(ring_size(b), mode, s, &applied);
    if (rc)
        return rc;
    /* Every clock up to high may have been answered already: its policy is
     * fixed. From high + 1 on nobody has been answered. */
    e = b->high + 1;
    if (serial_diff(want_from, e) > 0) {
        if (want_from - b->low > SR_BARRIER_MAX_AHEAD)
            return -ERANGE;
        e = want_from;
    }
    /* Changes asked for earlier that would start at or after E are
     * superseded. Only rules above high go, so never one already applied;
     * rules[0] goes only when it starts exactly at E = low + 1 = high + 1,
     * and the new rule then takes its place, keeping the invariant. */
    n = b->n_rules;
    while (n > 0 && serial_diff(b->rules[n - 1].start, e) >= 0)
        n--;
    last = n ? &b->rules[n - 1] : NULL;
    if (!last || last->mode != mode || last->s != applied) {
        if (n == SR_BARRIER_MAX_RULES)
            return -ENOSPC;
        b->rules[n++] = (sr_barrier_rule){.start = e, .s = applied, .mode = mode};
    }
    /* else the policy in force before E already is the one asked for: no
     * rule needed, which keeps the table small when a change is repeated. */
    b->n_rules = n;
    b->cnt.policy_changes++;
    if (effective)
        *effective = e;
    return 0;
}

void sr_barrier_policy_at(const sr_barrier *b, uint32_t c, enum sr_sync_mode *mode, uint32_t *s)
{
    const sr_barrier_rule *rule = rule_at(b, c);

    if (mode)
        *mode = rule->mode;
    if (s)
        *s = rule->s;
}

unsigned sr_barrier_rules(const sr_barrier *b, sr_barrier_range *out, unsigned cap)
{
    unsigned i;

    for (i = 0; i < b->n_rules && i < cap; i++) {
        int open = i + 1 == b->n_rules;

        out[i] = (sr_barrier_range){
            .from = b->rules[i].start,
            .to = open ? 0 : b->rules[i + 1].start,
            .open = (uint8_t)open,
            .mode = b->rules[i].mode,
            .s = b->rules[i].s,
        };
    }
    return b->n_rules;
}

uint32_t sr_barrier_low(const sr_barrier *b)
{
    return b->low;
}

uint32_t sr_barrier_high(const sr_barrier *b)
{
    return b->high;
}

void sr_barrier_counters_get(const sr_barrier *b, sr_barrier_counters *c)
{
    *c = b->cnt;
}

const char *sr_sync_mode_name(enum sr_sync_mode mode)
{
    switch (mode) {
    case SR_SYNC_BSP:
        return "BSP";
    case SR_SYNC_SSP:
        return "SSP";
    case SR_SYNC_ASP:
        return "ASP";
    }
    return "?";
}

/* ---- the control: a job's barrier ------------------------------------------ */

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

int sr_barrier_job_alloc(sr_pipe_job *j)
{
    return barrier_new(j, &j->bar) < 0 ? -ENOMEM : 0;
}

void sr_barrier_job_free(sr_pipe_job *j)
{
    sr_barrier_fini(&j->bar);
}

int sr_barrier_job_renew(sr_pipe_job *j)
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
    return 0;
}

/* ---- the control: CLOCK ------------------------------------------------------ */

/* PROCEED or HOLD to the sender: low, high and the policy in force at its
 * clock. Returns 0 if out had no room (cannot happen). */
static int clock_answer(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                        const sr_barrier_result *r, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);

    if (!a)
        return 0;
    a->hdr.op = r->decision == SR_BARRIER_PROCEED ? SR_OP_PROCEED : SR_OP_HOLD;
    a->hdr.job = j->id;
    a->hdr.worker = h->worker;
    a->hdr.seq = h->seq;
    a->hdr.aux = r->low;
    a->hdr.offset = r->high;
    a->hdr.count = SR_SYNC_WORDS;
    sr_put_be32(a->payload, (uint32_t)r->mode);
    sr_put_be32(a->payload + 4, r->s);
    a->payload_len = SR_SYNC_WORDS * 4u;
    sr_svc_unicast(a, src, h->worker);
    sr_svc_count_tx(p, j, a);
    if (r->decision == SR_BARRIER_PROCEED)
        j->c.proceeds++;
    else
        j->c.holds++;
    return 1;
}

/* RELEASE(low) to every bound worker. */
static void release(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const sr_barrier_result *r,
                    sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);

    if (!a)
        return;
    a->hdr.op = SR_OP_RELEASE;
    a->hdr.job = j->id;
    a->hdr.worker = h->worker;
    a->hdr.seq = r->low;
    a->hdr.aux = r->low;
    a->hdr.offset = r->high;
    sr_svc_multicast(a, j);
    sr_svc_count_tx(p, j, a);
    j->c.releases++;
}

/*
 * CLOCK(c) from worker w: recorded in the barrier, answered with PROCEED or
 * HOLD carrying low, high and the policy in force at c; when it moved low,
 * RELEASE(low) goes to every bound worker too (those held at some clock
 * check their own c - low <= s; the others ignore it). A CLOCK beyond the
 * ring (the worker went on despite a HOLD) changes nothing and is refused.
 */
void sr_barrier_job_clock(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                          sr_pipe_out *out)
{
    sr_barrier_result r;

    if (!sr_svc_worker_ok(j, h->worker, src)) {
        j->c.dropped_unbound++;
        return;
    }
    j->c.clocks++;
    if (sr_barrier_clock(&j->bar, h->worker, h->seq, &r) < 0) {
        /* -ERANGE; -EINVAL cannot happen: w < n was checked above. */
        j->c.clock_ahead++;
        sr_svc_reply_error(p, j, src, h, SR_ST_CLOCK_AHEAD, out);
        return;
    }
    if (clock_answer(p, j, src, h, &r, out) && r.advanced)
        release(p, j, h, &r, out);
}

void sr_barrier_job_record(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, sr_pipe_out *out)
{
    sr_barrier_result r;

    j->c.clocks++;
    if (sr_barrier_clock(&j->bar, h->worker, h->seq, &r) == 0 && r.advanced)
        release(p, j, h, &r, out);
}

/* ---- the control plane: the policy table ------------------------------------- */

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
