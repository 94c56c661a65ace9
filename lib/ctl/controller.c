/* SPDX-License-Identifier: Apache-2.0 */
/*
 * controller.c - the dynamic controller: a pure state machine fed one
 * status sample at a time (serene-ctl run polls the switch and installs
 * what it proposes), so tests drive it without a switch.
 *
 * - The first step proposes the whole static schedule, rule by rule.
 * - wait_fraction over "the last K clocks" is the fraction of the status
 *   samples taken while the job's high clock moved over those K clocks in
 *   which some worker was held: high - low > s of the policy in force (a
 *   worker at clock c is held iff c - low > s, and high is the furthest
 *   one). It is a time fraction, sampled every poll interval. The switch's
 *   holds / clocks counters cannot serve: under BSP every CLOCK but the
 *   last of each clock is a HOLD, straggler or not, so that ratio is about
 *   (N - 1) / N whether anybody really waits or not.
 * - The window must start at or after the clock the current policy took
 *   effect at (the "armed" clock): after a change, or once the schedule
 *   passes one of its boundaries, a rule needs K fresh clocks before it can
 *   fire again. A window is complete only when a sample at least K clocks
 *   older than the current one exists within the armed range.
 * - The reactive rules are tried in order; the first that fires and
 *   changes (mode, s) wins the step. Its change is proposed from high + 1,
 *   followed by every static rule that starts later: the switch drops the
 *   rules a change overtakes, so they are installed again.
 * - From the first `when clock >= N` clock on, no reactive change is made.
 * - spread OP N for K clocks holds when every one of the same samples has
 *   its high - low (how far the slowest worker trails the fastest) OP N:
 *   the smallest is compared for > and >=, the largest for < and <=. Unlike
 *   wait_fraction it does not vanish once the bound is raised above the
 *   lag, so `spread < N` tells that a straggler caught up, where
 *   `wait_fraction < X` only tells that nobody is held any more.
 * - loss_plateau counts from the sample where the signal turned on.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"

#define HISTORY 4096 /* samples kept (one per poll); the oldest are dropped */

typedef struct sample {
    uint32_t high;
    uint32_t spread; /* high - low (0 when low is ahead: a sample between updates) */
    int waiting;     /* some worker held: high - low > s */
} sample;

struct serene_ctl_controller {
    const serene_ctl_policy *p;
    int installed;
    int done;
    uint32_t armed;
    uint32_t plateau_since;
    int plateau_on;
    unsigned head, count; /* ring of samples, oldest at head */
    sample hist[HISTORY];
};

int serene_ctl_controller_create(serene_ctl_controller **out, const serene_ctl_policy *p)
{
    serene_ctl_controller *c;

    if (!out || !p)
        return -EINVAL;
    c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->p = p;
    *out = c;
    return 0;
}

void serene_ctl_controller_destroy(serene_ctl_controller **c)
{
    if (c) {
        free(*c);
        *c = NULL;
    }
}

static void set_decision(serene_ctl_decision *d, const serene_ctl_status *st, uint32_t clock,
                         serene_ctl_mode m, uint32_t s, uint32_t from, int reactive)
{
    memset(d, 0, sizeof *d);
    d->clock = clock;
    d->old_mode = st->mode;
    d->old_s = st->s;
    d->new_mode = m;
    d->new_s = m == SERENE_CTL_SSP ? s : 0;
    d->from = from;
    d->reactive = reactive;
}

/* The (mode, s) an action gives from the current one; 0 when it changes
 * nothing. */
static int apply_action(const serene_ctl_policy *p, const ctl_reactive *r, serene_ctl_mode m,
                        uint32_t s, serene_ctl_mode *nm, uint32_t *ns)
{
    uint32_t base = m == SERENE_CTL_SSP ? s : 0, v;

    if (r->act == CTL_ACT_MODE) {
        *nm = r->mode;
        *ns = r->s;
        return !(r->mode == m && (m != SERENE_CTL_SSP || r->s == s));
    }
    if (m == SERENE_CTL_ASP)
        return 0;
    if (r->act == CTL_ACT_INC) {
        v = base + r->delta < base ? UINT32_MAX : base + r->delta;
        if (r->has_bound && v > r->bound)
            v = r->bound;
        if (v > p->s_max)
            v = p->s_max;
        if (v <= base)
            return 0;
    } else {
        v = base > r->delta ? base - r->delta : 0;
        if (r->has_bound && v < r->bound)
            v = r->bound;
        if (v >= base)
            return 0;
    }
    *nm = v ? SERENE_CTL_SSP : SERENE_CTL_BSP;
    *ns = v;
    return 1;
}

static int compare(double x, enum ctl_op op, double t)
{
    switch (op) {
    case CTL_OP_GT: return x > t;
    case CTL_OP_GE: return x >= t;
    case CTL_OP_LT: return x < t;
    case CTL_OP_LE: return x <= t;
    }
    return 0;
}

/* The window of the last k clocks ending at cur (already recorded): 0 with
 * the wait fraction *wf and the smallest and largest spread, or -1 when it
 * is not complete yet. */
static int window(const serene_ctl_controller *c, const sample *cur, uint32_t k, double *wf,
                  uint32_t *spread_lo, uint32_t *spread_hi)
{
    unsigned total = 0, waiting = 0;
    uint32_t lo = UINT32_MAX, hi = 0;

    for (unsigned i = c->count; i-- > 0;) {
        const sample *h = &c->hist[(c->head + i) % HISTORY];
        if (h->high + 1 < c->armed)
            return -1; /* the window would reach under the policy before */
        if (cur->high - h->high >= k)
            break;
        total++;
        waiting += h->waiting != 0;
        if (h->spread > hi)
            hi = h->spread;
        if (h->spread < lo)
            lo = h->spread;
        if (i == 0)
            return -1; /* no sample old enough yet */
    }
    if (total == 0)
        return -1;
    *wf = (double)waiting / (double)total;
    *spread_lo = lo;
    *spread_hi = hi;
    return 0;
}

/* s as the barrier applies it. */
static uint32_t applied_s(const serene_ctl_status *st)
{
    if (st->mode == SERENE_CTL_SSP)
        return st->s;
    if (st->mode == SERENE_CTL_ASP)
        return st->ring > 2 ? st->ring - 2 : 0;
    return 0;
}

unsigned serene_ctl_controller_step(serene_ctl_controller *c, const serene_ctl_status *st,
                                    int loss_plateau, serene_ctl_decision *out, unsigned cap)
{
    const serene_ctl_policy *p;
    uint32_t next;
    unsigned n = 0;
    sample cur;

    if (!c || !st || (!out && cap))
        return 0;
    p = c->p;
    next = st->high + 1; /* 0 before any clock completes (high = UINT32_MAX) */
    if (!c->installed) {
        c->installed = 1;
        for (unsigned i = 0; i < p->n_rules && n < cap; i++, n++) {
            set_decision(&out[n], st, st->high, p->rules[i].mode, p->rules[i].s,
                         p->rules[i].from, 0);
            snprintf(out[n].why, sizeof out[n].why, "schedule rule %u", i + 1);
        }
        return n;
    }
    if (p->has_stop && st->high != UINT32_MAX && next >= p->stop)
        c->done = 1;
    /* Passing a schedule boundary restarts the windows. */
    for (unsigned i = 1; i < p->n_rules; i++)
        if (p->rules[i].from <= next && p->rules[i].from > c->armed && st->high != UINT32_MAX)
            c->armed = p->rules[i].from;
    int32_t lag = (int32_t)(st->high - st->low);
    cur = (sample){st->high, lag > 0 ? (uint32_t)lag : 0, lag > (int32_t)applied_s(st)};
    if (st->high != UINT32_MAX) {
        if (c->count == HISTORY) {
            c->head = (c->head + 1) % HISTORY;
            c->count--;
        }
        c->hist[(c->head + c->count++) % HISTORY] = cur;
    }
    if (loss_plateau == 1) {
        if (!c->plateau_on || c->plateau_since < c->armed)
            c->plateau_since = st->high;
        c->plateau_on = 1;
    } else {
        c->plateau_on = 0;
    }
    if (st->high == UINT32_MAX || c->done || next >= p->fixed_from)
        return 0;
    for (unsigned i = 0; i < p->n_reactive && n == 0; i++) {
        const ctl_reactive *r = &p->reactive[i];
        serene_ctl_mode nm;
        uint32_t ns;
        double wf = 0;
        uint32_t spread = 0, lo, hi;

        if (r->cond == CTL_COND_CLOCK)
            continue;
        if (r->cond == CTL_COND_WAIT || r->cond == CTL_COND_SPREAD) {
            if (window(c, &cur, r->clocks, &wf, &lo, &hi))
                continue;
            spread = r->op == CTL_OP_GT || r->op == CTL_OP_GE ? lo : hi;
            if (!compare(r->cond == CTL_COND_WAIT ? wf : (double)spread, r->op, r->threshold))
                continue;
        } else if (!c->plateau_on || c->plateau_since < c->armed ||
                   st->high - c->plateau_since < r->clocks) {
            continue;
        }
        if (!apply_action(p, r, st->mode, st->s, &nm, &ns) || cap == 0)
            continue;
        set_decision(&out[n], st, st->high, nm, ns, next, 1);
        if (r->cond == CTL_COND_WAIT)
            snprintf(out[n].why, sizeof out[n].why,
                     "wait_fraction %.3f %s %g over %" PRIu32 " clocks (rule at %d:%d)", wf,
                     ctl_op_name(r->op), r->threshold, r->clocks, r->line, r->col);
        else if (r->cond == CTL_COND_SPREAD)
            snprintf(out[n].why, sizeof out[n].why,
                     "spread %" PRIu32 " %s %g over %" PRIu32 " clocks (rule at %d:%d)", spread,
                     ctl_op_name(r->op), r->threshold, r->clocks, r->line, r->col);
        else
            snprintf(out[n].why, sizeof out[n].why,
                     "loss_plateau for %" PRIu32 " clocks (rule at %d:%d)",
                     st->high - c->plateau_since, r->line, r->col);
        n++;
        for (unsigned k = 0; k < p->n_rules && n < cap; k++) {
            if (p->rules[k].from <= next)
                continue;
            set_decision(&out[n], st, st->high, p->rules[k].mode, p->rules[k].s,
                         p->rules[k].from, 0);
            snprintf(out[n].why, sizeof out[n].why, "schedule rule %u again", k + 1);
            n++;
        }
    }
    return n;
}

void serene_ctl_controller_applied(serene_ctl_controller *c, const serene_ctl_decision *d,
                                   uint32_t effective)
{
    if (!c || !d || !d->reactive)
        return;
    if (effective > c->armed)
        c->armed = effective;
}

int serene_ctl_controller_done(const serene_ctl_controller *c)
{
    return c ? c->done : 0;
}
