/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scenarios_share.c - the conformance scenarios of a shared job (share.job:
 * slots leased blocks of the switch's memory, the rest of its rounds at a
 * fallback aggregator; pool.c and fallback.c in the software switch,
 * share.p4 in the P4 program). The fallback's frames are inputs on its
 * port (FB_RANK); each case names the rule it covers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "scenarios.h"

/* The fallback's answer h (payload n words v) about worker h.worker. */
static int fb_send(cf_ctx *c, const sr_hdr *h, const uint32_t *v, unsigned n)
{
    return cf_send(c, FB_RANK, 0, SR_WIRE_UDP_PORT, h, v, n);
}

/* The fallback's JOIN_ACK to worker w's relayed JOIN (context token seq):
 * the job as it holds it, its pool of slots. */
static int fb_join_ack(cf_ctx *c, unsigned w, uint32_t seq, uint32_t slots)
{
    sr_hdr h = cf_req(c, SR_OP_JOIN_ACK, w, seq);
    uint32_t v[SR_JOIN_PARAMS_WORDS] = {c->job.n_workers, c->elems, slots, c->job.store_words};

    h.aux = NONCE;
    h.count = SR_JOIN_PARAMS_WORDS;
    return fb_send(c, &h, v, SR_JOIN_PARAMS_WORDS);
}

/* The fallback's answer op (status st, payload n words from base) about
 * worker w's round (slot, shadow, call seq, offset, exponent exp). */
static int fb_answer(cf_ctx *c, unsigned op, unsigned st, unsigned w, unsigned slot,
                     unsigned shadow, uint32_t seq, uint32_t off, int exp, unsigned n,
                     uint32_t base)
{
    uint32_t v[SR_WIRE_MAX_ELEMS];
    sr_hdr h = cf_round_req(c, op, w, slot, shadow, seq, off, exp);

    h.status = (uint8_t)st;
    h.aux = op == SR_OP_ERROR ? SR_OP_AR_DATA : CALL_TOTAL(seq);
    h.count = (uint16_t)n;
    for (unsigned i = 0; i < n; i++)
        v[i] = base + i;
    return fb_send(c, &h, v, n);
}

/* A shared job (share.job: lease L >= 2 of the slots, a fallback): the
 * rounds of slots 0 and 1 are summed in their leased blocks, those of
 * slot 2 at the fallback (pool.c, fallback.c; share.p4). Slots 0..L-1 are
 * the first the scenario uses, so serene-switch's first-come pool of L
 * blocks gives them blocks as BMv2's lease_reg does.
 * - JOINs (one retransmitted) answered here and relayed to the fallback;
 *   its JOIN_ACKs bind workers 0 and 1 there, one for a pool smaller than
 *   the job's slots binds nobody (worker 2 stays unbound there).
 * - Slots 0 and 1: rounds here, results with the window L (status), a
 *   duplicate (AR_HELD), the shadow copy, a probe (AR_NAK).
 * - Slot 2 version 0: every copy relayed (a duplicate too); worker 2's
 *   first one after its JOIN again, as the fallback never bound it; a
 *   probe of the away round relayed, one of another round answered here.
 *   The fallback's AR_HELD, AR_NAK, ERROR MISMATCH and AR_RESULTs go on
 *   to each worker, marked SR_FLAG_FALLBACK; the away round's results
 *   carry the window, another round's result the fallback's status.
 * - Slot 2 version 1: a round away too, and a copy older than it (stale:
 *   dropped).
 * - Dropped from the fallback: an answer about an unknown worker, an
 *   ERROR about a JOIN, a request op, and after worker 0's LEAVE (relayed)
 *   an answer about it.
 * - A new incarnation (every worker left): bindings at the fallback,
 *   away rounds and sums of the last run gone. */
int cf_run_share(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems, L = c->job.lease;
    sr_hdr h;

    if (!c->job.fb_addr || L < 2 || L >= c->slots || n < 3)
        return -EINVAL;
    TRY(cf_join_all(c));
    TRY(cf_join(c, 1, TOKEN(1), NONCE, c->job.token)); /* retransmitted: relayed again */
    TRY(fb_join_ack(c, 0, TOKEN(0), c->slots));
    TRY(fb_join_ack(c, 1, TOKEN(1), c->slots));
    TRY(fb_join_ack(c, 2, TOKEN(2), c->slots / 2)); /* a smaller pool: not bound */
    TRY(fb_join_ack(c, 2, TOKEN(2) + 1, c->slots)); /* another context: not bound */

    /* Slots 0 and 1, call 1: here. */
    for (unsigned slot = 0; slot < 2; slot++)
        for (unsigned w = 0; w < n; w++) {
            TRY(cf_ar(c, w, slot, 0, 1, slot * E, 2, (int)w, E, 100u * (w + 1) + slot, 3u));
            if (w == 0 && slot == 0) /* duplicate while the round is open */
                TRY(cf_ar(c, w, slot, 0, 1, slot * E, 2, 0, E, 100u, 3u));
        }
    TRY(cf_ar(c, 1, 0, 0, 1, 0, 2, 1, E, 200u, 3u)); /* the shadow copy, with the window */
    TRY(cf_probe(c, 2, 1, 0, 1, E, 2, 2));           /* complete: AR_NAK */

    /* Slot 2 version 0, call 1: at the fallback. */
    TRY(cf_ar(c, 0, 2, 0, 1, 2 * E, 4, 0, E, 7u, 1u));
    TRY(cf_ar(c, 0, 2, 0, 1, 2 * E, 4, 0, E, 7u, 1u)); /* its copy follows it */
    TRY(cf_probe(c, 0, 2, 0, 1, 2 * E, 4, 0));         /* relayed */
    TRY(fb_answer(c, SR_OP_AR_HELD, 0, 0, 2, 0, 1, 2 * E, 4, 0, 0u));
    TRY(cf_ar(c, 1, 2, 0, 1, 2 * E, 4, 1, E, 9u, 2u));
    TRY(cf_ar(c, 2, 2, 0, 1, 2 * E, 4, 2, E, 11u, 3u)); /* JOIN again first */
    TRY(cf_probe(c, 1, 2, 1, 1, 3 * E, 4, 1));          /* another round: answered here */
    TRY(fb_answer(c, SR_OP_AR_NAK, 0, 1, 2, 0, 1, 2 * E, 4, 0, 0u));
    for (unsigned w = 0; w < n; w++)
        TRY(fb_answer(c, SR_OP_AR_RESULT, 0, w, 2, 0, 1, 2 * E, 4, E, 27u + 6u * w));
    /* Another round's result: the fallback's status stays. */
    TRY(fb_answer(c, SR_OP_AR_RESULT, 5, 1, 2, 0, 9, 2 * E, 4, 2, 1u));
    TRY(fb_answer(c, SR_OP_ERROR, SR_ST_MISMATCH, 2, 2, 0, 1, 2 * E, 4, 0, 0u));

    /* Slot 2 version 1, call 2: away too; a copy older than it is stale. */
    TRY(cf_ar(c, 1, 2, 1, 2, 2 * E, 4, 1, E, 5u, 1u));
    TRY(cf_ar(c, 2, 2, 1, 1, 2 * E, 4, 2, E, 5u, 1u));

    /* Dropped: an unknown worker, an ERROR about a JOIN, a request. */
    TRY(fb_answer(c, SR_OP_AR_RESULT, 0, n, 2, 1, 2, 2 * E, 4, 0, 0u));
    h = cf_req(c, SR_OP_ERROR, 2, TOKEN(2));
    h.status = SR_ST_STALE;
    h.aux = SR_OP_JOIN;
    TRY(fb_send(c, &h, NULL, 0));
    TRY(fb_answer(c, SR_OP_AR_DATA, 0, 0, 2, 1, 2, 2 * E, 4, 2, 0u));
    /* Worker 0 leaves: relayed; the fallback's answers about it dropped. */
    h = cf_req(c, SR_OP_LEAVE, 0, TOKEN(0));
    TRY(cf_send_to(c, 0, &h, NULL, 0));
    TRY(fb_answer(c, SR_OP_AR_HELD, 0, 0, 2, 1, 2, 2 * E, 4, 0, 0u));

    /* The others leave too (relayed), and a new incarnation starts: no
     * worker is bound at the fallback until its JOIN_ACK comes again (the
     * first request there from the others is their JOIN again), no round
     * is away (a probe of the last run's is answered here), and the
     * rounds here start from their own values. Slots 0 and 1 first: the
     * blocks went back, and serene-switch's pool gives them to the slots
     * that ask first. */
    for (unsigned w = 1; w < n; w++) {
        h = cf_req(c, SR_OP_LEAVE, w, TOKEN(w));
        TRY(cf_send_to(c, w, &h, NULL, 0));
    }
    for (unsigned w = 0; w < n; w++)
        TRY(cf_join(c, w, TOKEN(w) + RUN2, NONCE + 1, c->job.token));
    TRY(fb_join_ack(c, 1, TOKEN(1) + RUN2, c->slots));
    for (unsigned slot = 0; slot < 2; slot++)
        for (unsigned w = 0; w < n; w++)
            TRY(cf_ar(c, w, slot, 0, 1, slot * E, 3, 1, E, 10u * w + slot, 1u));
    TRY(cf_probe(c, 1, 2, 1, 2, 2 * E, 4, 1)); /* the last run's away round: AR_NAK */
    for (unsigned w = 0; w < n; w++)
        TRY(cf_ar(c, w, 2, 0, 1, 2 * E, 3, 1, E, 5u * w, 1u));
    return 0;
}

/* A block taken back by the control plane (share.job; pool.c's
 * sr_pipe_pool_take, share.p4's take_reg): slots 0 and 1 hold the two
 * blocks, slot 2's round is at the fallback. The control plane takes
 * slot 1's block: its next round goes to the fallback, and the block is
 * free when that round's result comes back (the first copy; the workers'
 * copies go on with the window); a resend of the slot's last round here
 * is then dropped (its block is gone). Slot 2's next round takes the
 * block (serene-switch's first-come pool; on BMv2 the control plane
 * leases it to slot 2) and is summed here; slot 1's next is away, slot
 * 0's still here. Then slot 2's block is taken back and given to it
 * again: a resend of the round its other version held here before is
 * dropped, not answered from the block, and its next round is summed in
 * the block. */
int cf_run_share_take(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;
    uint32_t sidx = (uint32_t)(c->job.id % c->max_jobs) * c->slots;
    char bm[96], sw[64];

    if (!c->job.fb_addr || c->job.lease != 2 || c->job.lease_first == SERENE_CTL_LEASE_ALL ||
        n < 3)
        return -EINVAL;
    TRY(cf_join_all(c));
    for (unsigned w = 0; w < n; w++)
        TRY(fb_join_ack(c, w, TOKEN(w), c->slots));
    for (unsigned slot = 0; slot < 3; slot++)
        for (unsigned w = 0; w < n; w++)
            TRY(cf_ar(c, w, slot, 0, 1, slot * E, 2, 1, E, 10u * w + slot, 1u));
    for (unsigned w = 0; w < n; w++) /* slot 2's result, from the fallback */
        TRY(fb_answer(c, SR_OP_AR_RESULT, 0, w, 2, 0, 1, 2 * E, 2, E, 30u));

    snprintf(bm, sizeof bm, "register_write take_reg %" PRIu32 " 1", sidx + 1);
    snprintf(sw, sizeof sw, "pool take %u 1", (unsigned)c->job.id);
    TRY(cf_control(c, sw, bm));
    for (unsigned w = 0; w < n; w++) /* slot 1's next round: away */
        TRY(cf_ar(c, w, 1, 1, 1, 3 * E, 2, 1, E, 7u * w, 1u));
    for (unsigned w = 0; w < n; w++) /* its result: the block is free at the first copy */
        TRY(fb_answer(c, SR_OP_AR_RESULT, 0, w, 1, 1, 1, 3 * E, 2, E, 21u));
    TRY(cf_ar(c, 2, 1, 0, 1, E, 2, 1, E, 21u, 1u)); /* slot 1's last round here: gone */

    snprintf(bm, sizeof bm, "register_write lease_reg %" PRIu32 " %" PRIu32, sidx + 2,
             c->job.lease_first + 1 + 1);
    TRY(cf_control(c, "-", bm));
    for (unsigned w = 0; w < n; w++) /* slot 2: here, in slot 1's old block */
        TRY(cf_ar(c, w, 2, 1, 1, 4 * E, 2, 1, E, 100u * w, 1u));
    for (unsigned w = 0; w < n; w++) /* slot 1: away */
        TRY(cf_ar(c, w, 1, 0, 1, 5 * E, 2, 1, E, 3u * w, 1u));
    for (unsigned w = 0; w < n; w++) /* slot 0: here */
        TRY(cf_ar(c, w, 0, 1, 1, 6 * E, 2, 1, E, 5u * w, 1u));

    /* Slot 2's block taken back and given to it again: the round it held
     * in its other version (here, complete) can no longer answer, even
     * once the slot has a block again. */
    snprintf(bm, sizeof bm, "register_write take_reg %" PRIu32 " 1", sidx + 2);
    snprintf(sw, sizeof sw, "pool take %u 2", (unsigned)c->job.id);
    TRY(cf_control(c, sw, bm));
    for (unsigned w = 0; w < n; w++) /* away: hands the block over */
        TRY(cf_ar(c, w, 2, 0, 1, 7 * E, 2, 1, E, 9u * w, 1u));
    for (unsigned w = 0; w < n; w++)
        TRY(fb_answer(c, SR_OP_AR_RESULT, 0, w, 2, 0, 1, 7 * E, 2, E, 27u));
    snprintf(bm, sizeof bm, "register_write lease_reg %" PRIu32 " %" PRIu32, sidx + 2,
             c->job.lease_first + 1 + 1);
    TRY(cf_control(c, "-", bm));
    TRY(cf_ar(c, 2, 2, 1, 1, 4 * E, 2, 1, E, 200u, 1u)); /* the old round: dropped */
    for (unsigned w = 0; w < n; w++) /* slot 2's next round: in the block */
        TRY(cf_ar(c, w, 2, 1, 1, 8 * E, 2, 1, E, 4u * w, 1u));
    return 0;
}
