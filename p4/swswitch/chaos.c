/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chaos.c - seeded fault injection: loss, duplication, reordering (see
 * chaos.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chaos.h"

struct sr_chaos_held {
    sr_peer dst;
    uint8_t copies; /* 2 when the copy was also duplicated */
    size_t len;
    uint64_t due_ns;
    uint8_t buf[SR_WIRE_MAX_MSG];
};

/* splitmix64: tiny, full-period over 2^64, and good enough to decide
 * faults; one state word keeps a run reproducible from its seed. */
static uint64_t next_u64(sr_chaos *c)
{
    uint64_t z = (c->rng += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* True with probability p. p == 0 draws nothing (see chaos.h); p == 1 is
 * always true since the uniform draw is < 1. */
static int chance(sr_chaos *c, double p)
{
    if (p <= 0.0)
        return 0;
    return (double)(next_u64(c) >> 11) * 0x1.0p-53 < p;
}

static int valid_p(double p)
{
    return p >= 0.0 && p <= 1.0; /* false for NaN too */
}

int sr_chaos_init(sr_chaos *c, double p_loss, double p_dup, double p_reorder, uint64_t seed,
                  sr_chaos_send_fn send, void *cookie)
{
    if (!c || !send || !valid_p(p_loss) || !valid_p(p_dup) || !valid_p(p_reorder))
        return -EINVAL;
    memset(c, 0, sizeof *c);
    c->p_loss = p_loss;
    c->p_dup = p_dup;
    c->p_reorder = p_reorder;
    c->rng = seed;
    c->send = send;
    c->cookie = cookie;
    if (p_reorder > 0.0) {
        c->held = calloc(SR_CHAOS_HOLD_MAX, sizeof *c->held);
        if (!c->held)
            return -ENOMEM;
    }
    return 0;
}

void sr_chaos_fini(sr_chaos *c)
{
    if (!c)
        return;
    free(c->held);
    c->held = NULL;
    c->n_held = 0;
}

int sr_chaos_drop_rx(sr_chaos *c)
{
    if (chance(c, c->p_loss)) {
        c->c.rx_dropped++;
        return 1;
    }
    return 0;
}

static void send_held(sr_chaos *c, const sr_chaos_held *h)
{
    for (unsigned i = 0; i < h->copies; i++)
        c->send(c->cookie, &h->dst, h->buf, h->len, NULL, 0);
}

void sr_chaos_tx(sr_chaos *c, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                 const uint8_t *payload, size_t plen, uint64_t now_ns)
{
    unsigned copies = 1;

    if (chance(c, c->p_loss)) {
        c->c.tx_dropped++;
        return;
    }
    if (chance(c, c->p_dup)) {
        c->c.tx_duplicated++;
        copies = 2;
    }
    if (chance(c, c->p_reorder) && hlen + plen <= SR_WIRE_MAX_MSG) {
        if (c->n_held < SR_CHAOS_HOLD_MAX) {
            sr_chaos_held *h = &c->held[c->n_held++];

            h->dst = *dst;
            h->copies = (uint8_t)copies;
            h->len = hlen + plen;
            h->due_ns = now_ns + SR_CHAOS_HOLD_NS;
            memcpy(h->buf, hdr, hlen);
            if (plen)
                memcpy(h->buf + hlen, payload, plen);
            c->c.tx_delayed++;
            return;
        }
        c->c.hold_full++;
    }
    for (unsigned i = 0; i < copies; i++)
        c->send(c->cookie, dst, hdr, hlen, payload, plen);
    /* The held copies go right after this one: that is the reordering. */
    sr_chaos_release(c, now_ns, 1);
}

void sr_chaos_release(sr_chaos *c, uint64_t now_ns, int all)
{
    unsigned keep = 0;

    /* Held copies keep their order; due times grow with it, so "due" is a
     * prefix, but a filter is as cheap and does not rely on that. */
    for (unsigned i = 0; i < c->n_held; i++) {
        if (all || c->held[i].due_ns <= now_ns)
            send_held(c, &c->held[i]);
        else if (keep != i)
            c->held[keep++] = c->held[i];
        else
            keep++;
    }
    c->n_held = keep;
}

uint64_t sr_chaos_next_due(const sr_chaos *c)
{
    uint64_t due = UINT64_MAX;

    for (unsigned i = 0; i < c->n_held; i++)
        if (c->held[i].due_ns < due)
            due = c->held[i].due_ns;
    return due;
}
