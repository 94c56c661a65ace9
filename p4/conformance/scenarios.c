/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scenarios.c - the scripted conformance scenarios. Each one starts from a
 * fresh switch holding the job of the job file (n >= 3 workers, a store of
 * at least 2 rows, ring R) and sends frames in a fixed order; what the
 * software switch answers becomes the expected trace. Per worker, clocks
 * go up one at a time, as the library sends them (the P4 program relies on
 * it, see p4/README.md), and each case names the pipeline rule it covers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "scenarios.h"

#define STRANGER_IP 0x0a000063u      /* 10.0.0.99: in no worker_table entry */


/* The frame of h and its payload bytes (pl, len) from worker rank (or
 * src_ip, or the fallback for FB_RANK) to dst_port, through the switch. */
static int send_bytes(cf_ctx *c, unsigned rank, uint32_t src_ip, uint16_t dst_port, const sr_hdr *h,
                      const uint8_t *pl, size_t plen)
{
    static uint8_t frame[SR_FRAME_HLEN + SR_WIRE_MAX_MSG];
    sr_frame_addr a;
    size_t len;
    int rc;

    if (plen > SR_WIRE_MAX_PAYLOAD || (rank >= c->job.n_workers && rank != FB_RANK) ||
        (rank == FB_RANK && !c->job.fb_addr))
        return -EINVAL;
    memset(&a, 0, sizeof a);
    a.src_mac[0] = 0x02, a.src_mac[1] = 0x53, a.src_mac[2] = 0x45;
    a.src_mac[5] = src_ip ? 0x63 : rank == FB_RANK ? 0x09 : (uint8_t)(rank + 1);
    a.dst_mac[0] = 0x02, a.dst_mac[1] = 0x53, a.dst_mac[2] = 0x45, a.dst_mac[5] = 0xfe;
    if (rank == FB_RANK) {
        a.src_ip = c->job.fb_addr;
        a.src_port = c->job.fb_udp_port;
    } else {
        a.src_ip = src_ip ? src_ip : c->job.workers[rank].addr;
        a.src_port = c->job.workers[rank].udp_port;
    }
    a.dst_ip = CF_SWITCH_IP;
    a.dst_port = dst_port;
    sr_hdr_pack(frame + SR_FRAME_HLEN, h);
    if (plen)
        memcpy(frame + SR_FRAME_HLEN + SR_WIRE_HDR_LEN, pl, plen);
    len = sr_frame_pack(frame, sizeof frame, &a, SR_WIRE_HDR_LEN + plen);
    if (!len)
        return -EINVAL;
    rc = cf_step(c, frame, len, c->ts, 1);
    c->ts += CF_STEP_US;
    return rc;
}

int cf_send(cf_ctx *c, unsigned rank, uint32_t src_ip, uint16_t dst_port, const sr_hdr *h,
            const uint32_t *vals, unsigned nvals)
{
    static uint8_t pl[SR_WIRE_MAX_PAYLOAD];

    if (nvals > SR_WIRE_MAX_ELEMS)
        return -EINVAL;
    for (unsigned i = 0; i < nvals; i++)
        sr_put_be32(pl + 4u * i, vals[i]);
    return send_bytes(c, rank, src_ip, dst_port, h, pl, 4u * (size_t)nvals);
}

sr_hdr cf_req(const cf_ctx *c, unsigned op, unsigned w, uint32_t seq)
{
    sr_hdr h;

    memset(&h, 0, sizeof h);
    h.version = SR_WIRE_VERSION;
    h.op = (uint8_t)op;
    h.job = c->job.id;
    h.worker = (uint16_t)w;
    h.seq = seq;
    return h;
}

int cf_send_to(cf_ctx *c, unsigned w, const sr_hdr *h, const uint32_t *v, unsigned n)
{
    return cf_send(c, w, 0, SR_WIRE_UDP_PORT, h, v, n);
}

/* JOIN of worker w with context token seq, nonce and admission token adm
 * (sr_join_req's 4 words). */
int cf_join(cf_ctx *c, unsigned w, uint32_t seq, uint32_t nonce, uint64_t adm)
{
    sr_hdr h = cf_req(c, SR_OP_JOIN, w, seq);
    uint32_t v[SR_JOIN_REQ_WORDS] = {(uint32_t)(adm >> 32), (uint32_t)adm, 0, 0};

    h.aux = nonce;
    h.count = SR_JOIN_REQ_WORDS;
    return cf_send_to(c, w, &h, v, SR_JOIN_REQ_WORDS);
}

int cf_join_all(cf_ctx *c)
{
    int rc = 0;

    for (unsigned w = 0; w < c->job.n_workers && !rc; w++)
        rc = cf_join(c, w, TOKEN(w), NONCE, c->job.token);
    return rc;
}

/* Admission: JOINs without the job's token, before and after the real
 * workers bound, each answered ERROR DENIED and nothing else, whatever the
 * nonce: no payload, a wrong token, the right token in a payload of the
 * wrong length. */
static int forged_joins(cf_ctx *c)
{
    sr_hdr h = cf_req(c, SR_OP_JOIN, 0, 0x0bad0001u);
    uint32_t v[2] = {(uint32_t)(c->job.token >> 32), (uint32_t)c->job.token};
    int rc;

    h.aux = NONCE + 7;
    rc = cf_send_to(c, 0, &h, NULL, 0);
    if (!rc)
        rc = cf_join(c, 1, 0x0bad0002u, NONCE, c->job.token ^ 1);
    if (!rc)
        rc = cf_join(c, 2, 0x0bad0003u, NONCE + 7, c->job.token ^ (1ull << 63));
    h.aux = NONCE;
    h.count = 2;
    return rc ? rc : cf_send_to(c, 0, &h, v, 2);
}


/* AR_DATA of worker w: slot, shadow bit, call seq, the call's total count,
 * offset, exponents and n values base + i * step (uint32_t: negative steps
 * wrap as int32). */
sr_hdr cf_round_req(const cf_ctx *c, unsigned op, unsigned w, unsigned slot, unsigned shadow,
                    uint32_t seq, uint32_t off, int exp)
{
    sr_hdr h = cf_req(c, op, w, seq);

    h.slot = (uint16_t)slot;
    h.shadow = (uint8_t)shadow;
    h.offset = off;
    h.exp = (int8_t)exp;
    return h;
}

static int ar_total(cf_ctx *c, unsigned w, unsigned slot, unsigned shadow, uint32_t seq,
                    uint32_t total, uint32_t off, int exp, int next_exp, unsigned n,
                    uint32_t base, uint32_t step)
{
    uint32_t v[SR_WIRE_MAX_ELEMS];
    sr_hdr h = cf_round_req(c, SR_OP_AR_DATA, w, slot, shadow, seq, off, exp);

    h.count = (uint16_t)n;
    h.next_exp = (int8_t)next_exp;
    h.aux = total;
    for (unsigned i = 0; i < n; i++)
        v[i] = base + i * step;
    return cf_send_to(c, w, &h, v, n);
}

/* AR_DATA of a call whose workers agree on its total count. */
int cf_ar(cf_ctx *c, unsigned w, unsigned slot, unsigned shadow, uint32_t seq, uint32_t off,
          int exp, int next_exp, unsigned n, uint32_t base, uint32_t step)
{
    return ar_total(c, w, slot, shadow, seq, CALL_TOTAL(seq), off, exp, next_exp, n, base, step);
}

/* Workers that disagree on a round poison it: the one that differs and
 * every one that came before or after it are answered MISMATCH, the first
 * contributors by their retransmissions. Slot 3: the call's total count
 * differs (the first round of a call is a hint with no values); slot 4:
 * the offset differs in a round with values. */
static int ar_mismatches(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;

    TRY(ar_total(c, 0, 3, 0, 5, 1000u, 0, 0, 2, 0, 0u, 0u));
    TRY(ar_total(c, 1, 3, 0, 5, 1001u, 0, 0, 2, 0, 0u, 0u)); /* poisons the round */
    for (unsigned w = 0; w < n; w++) /* retransmissions and late workers */
        TRY(ar_total(c, w, 3, 0, 5, 1000u, 0, 0, 2, 0, 0u, 0u));
    TRY(cf_ar(c, 0, 4, 0, 6, 8 * E, 1, 1, E, 3u, 1u));
    TRY(cf_ar(c, 2, 4, 0, 6, 9 * E, 1, 1, E, 3u, 1u)); /* poisons the round */
    TRY(cf_ar(c, 0, 4, 0, 6, 8 * E, 1, 1, E, 3u, 1u));
    TRY(cf_ar(c, 1, 4, 0, 6, 8 * E, 1, 1, E, 3u, 1u));
    return 0;
}

/* AR_PROBE of worker w for its contribution to (slot, shadow) in call seq
 * at offset with exponents exp and next_exp, as the library sends it: the
 * contribution's header, op AR_PROBE, count 0, the RETRANSMIT flag set
 * (the answer clears it). */
int cf_probe(cf_ctx *c, unsigned w, unsigned slot, unsigned shadow, uint32_t seq, uint32_t off,
             int exp, int next_exp)
{
    sr_hdr h = cf_round_req(c, SR_OP_AR_PROBE, w, slot, shadow, seq, off, exp);

    h.next_exp = (int8_t)next_exp;
    h.flags = SR_FLAG_RETRANSMIT;
    h.aux = CALL_TOTAL(seq);
    return cf_send_to(c, w, &h, NULL, 0);
}

/* Waiting is not loss (slot 5): a probe and a resend of a contribution the
 * open round holds get AR_HELD; a probe of a contribution the switch lacks,
 * and one of a round already complete, get AR_NAK, and the full resend
 * that follows is added or answered with the shadow copy. A poisoned round
 * (slot 4) answers probes MISMATCH; a probe with a payload, or beyond the
 * pool, is refused; AR_HELD and AR_NAK sent to the switch are dropped. */
static int ar_probes(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;
    sr_hdr h;

    TRY(cf_ar(c, 0, 5, 1, 7, 10 * E, 2, 3, E, 9u, 1u));
    TRY(cf_probe(c, 0, 5, 1, 7, 10 * E, 2, 3));         /* held */
    TRY(cf_ar(c, 0, 5, 1, 7, 10 * E, 2, 3, E, 9u, 1u)); /* resent in full: held */
    TRY(cf_probe(c, 1, 5, 1, 7, 10 * E, 2, 1));         /* lost: not held */
    for (unsigned w = 1; w < n; w++) /* the resend, then the last one */
        TRY(cf_ar(c, w, 5, 1, 7, 10 * E, 2, (int)w, E, 100u * w, 3u));
    TRY(cf_probe(c, 2, 5, 1, 7, 10 * E, 2, 2));         /* complete: not held */
    TRY(cf_ar(c, 2, 5, 1, 7, 10 * E, 2, 2, E, 200u, 3u)); /* the shadow copy */
    TRY(cf_probe(c, 1, 4, 0, 6, 8 * E, 1, 1));          /* poisoned: MISMATCH */
    h = cf_req(c, SR_OP_AR_PROBE, 0, 7);
    h.slot = 5;
    h.shadow = 1;
    h.count = 1; /* a payload: BAD_COUNT */
    TRY(cf_send_to(c, 0, &h, (const uint32_t[]){1u}, 1));
    h.count = 0;
    h.slot = (uint16_t)c->slots; /* BAD_SLOT */
    TRY(cf_send_to(c, 0, &h, NULL, 0));
    h = cf_req(c, SR_OP_AR_HELD, 0, 7);
    TRY(cf_send_to(c, 0, &h, NULL, 0));
    h = cf_req(c, SR_OP_AR_NAK, 0, 7);
    return cf_send_to(c, 0, &h, NULL, 0);
}

/* 16-bit values (SR_WIRE_AUX_V16), slots 6 and 7: words that pack two
 * values each, added as any words (one lane's low half carries into its
 * high half, one goes negative: the packing's borrow), a duplicate
 * (AR_HELD), a lost result (the shadow copy), a probe, a worker that sends
 * the round's values in 32 bits (its aux differs: MISMATCH), and a 16-bit
 * header over 2 bytes a value (a bad length: dropped unanswered). */
static int ar16(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;
    const uint32_t total = SR_WIRE_AUX_V16 | CALL_TOTAL(8);
    sr_hdr h;

    for (unsigned w = 0; w < n; w++) {
        /* Lane 0: 0x7fff + 1 + 1000 * w... carries past 16 bits; the step
         * -5 on worker 1 takes later lanes below zero. */
        uint32_t base = w == 0 ? 0x7fffu : w == 1 ? 1u : 1000u * w;
        TRY(ar_total(c, w, 6, 0, 8, total, 12 * E, -7, (int)w, E, base, w == 1 ? (uint32_t)-5 : 3u));
        if (w == 0) /* duplicate while the round is open: AR_HELD */
            TRY(ar_total(c, w, 6, 0, 8, total, 12 * E, -7, 0, E, base, 3u));
    }
    TRY(ar_total(c, 1, 6, 0, 8, total, 12 * E, -7, 1, E, 1u, (uint32_t)-5)); /* shadow copy */
    h = cf_req(c, SR_OP_AR_PROBE, 2, 8);                                     /* complete: NAK */
    h.slot = 6;
    h.offset = 12 * E;
    h.exp = -7;
    h.next_exp = 2;
    h.flags = SR_FLAG_RETRANSMIT;
    h.aux = total;
    TRY(cf_send_to(c, 2, &h, NULL, 0));
    /* Slot 7: worker n - 1 sends 32-bit values to the round. */
    for (unsigned w = 0; w < n - 1; w++)
        TRY(ar_total(c, w, 7, 0, 8, total, 13 * E, -2, -2, E / 4 + 3, 20u * w, 1u));
    TRY(ar_total(c, n - 1, 7, 0, 8, CALL_TOTAL(8), 13 * E, -2, -2, E / 4 + 3, 7u, 1u));
    TRY(ar_total(c, 0, 7, 0, 8, total, 13 * E, -2, -2, E / 4 + 3, 0u, 1u)); /* MISMATCH */
    /* Count 4 over 2 bytes a value: the parser drops it. */
    static const uint8_t halves[8] = {0, 1, 0, 2, 0, 3, 0, 4};
    h = cf_req(c, SR_OP_AR_DATA, 0, 8);
    h.slot = 6;
    h.shadow = 1;
    h.count = 4;
    h.aux = total;
    TRY(send_bytes(c, 0, 0, SR_WIRE_UDP_PORT, &h, halves, sizeof halves));
    return 0;
}

/* Streaming allreduce: completion and multicast, duplicates, the shadow
 * copy, the stale-copy rule, mismatches, probes, exponent max,
 * wrap-around, partial packets, and every refusal the P4 program shares. */
static int run_allreduce(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;
    sr_hdr h;

    TRY(forged_joins(c)); /* before the job's first incarnation */
    TRY(cf_join_all(c));
    TRY(cf_join(c, 1, TOKEN(1), NONCE, c->job.token)); /* retransmitted: same ACK again */
    TRY(forged_joins(c)); /* while bound: still DENIED, not STALE or JOB_IN_USE */

    /* Round 1, slot 0 version 0: every worker, a duplicate while it is open. */
    for (unsigned w = 0; w < n; w++) {
        /* Worker 0 puts INT32_MAX in lane 0 and worker 1 adds 1 there: the
         * sum wraps modulo 2^32 as in the switch ALU. */
        uint32_t base = w == 0 ? 0x7fffffffu : w == 1 ? 1u : 1000u * w;
        TRY(cf_ar(c, w, 0, 0, 1, 0, 5, (int)w - 1, E, base, w == 1 ? (uint32_t)-3 : 7u));
        if (w == 0) /* duplicate while the round is open: AR_HELD */
            TRY(cf_ar(c, w, 0, 0, 1, 0, 5, -1, E, base, 7u));
    }
    /* Worker 1 lost its result: the shadow copy answers it alone. */
    TRY(cf_ar(c, 1, 0, 0, 1, 0, 5, 0, E, 1u, (uint32_t)-3));

    /* Slot 1: a partial packet (the tail of a tensor), next_exp max-reduced
     * with negative exponents. */
    for (unsigned w = 0; w < n; w++)
        TRY(cf_ar(c, w, 1, 0, 1, E, -3, w == 1 ? 9 : -(int)w, E / 4 + 3, (uint32_t)-50, 11u));

    /* Round 2 of slot 0 uses version 1. */
    TRY(cf_ar(c, 0, 0, 1, 2, 2 * E, 4, 4, E, 5u, 1u));
    for (unsigned w = 1; w < n; w++)
        TRY(cf_ar(c, w, 0, 1, 2, 2 * E, 4, 4, E, 6u + w, 1u));
    /* Worker 0's late copy of round 1 (version 0) after it moved on: stale. */
    TRY(cf_ar(c, 0, 0, 0, 1, 0, 5, -1, E, 0x7fffffffu, 7u));
    /* A retransmission of round 2 after it completed: the shadow copy. */
    TRY(cf_ar(c, 2, 0, 1, 2, 2 * E, 4, 4, E, 8u, 1u));
    /* Round 3 of slot 0 (version 0 again) opened without worker 0; worker
     * 0's copy of round 1, two rounds late in the same cell, is older than
     * the open round: stale, not a mismatch. Then worker 0 completes it. */
    for (unsigned w = 1; w < n; w++)
        TRY(cf_ar(c, w, 0, 0, 3, 3 * E, 2, 2, E, 40u * w, 1u));
    TRY(cf_ar(c, 0, 0, 0, 1, 0, 5, -1, E, 0x7fffffffu, 7u));
    TRY(cf_ar(c, 0, 0, 0, 3, 3 * E, 2, 2, E, 40u, 1u));
    TRY(ar_mismatches(c));
    TRY(ar_probes(c));
    TRY(ar16(c));

    /* Refusals answered with ERROR: slot beyond the pool, count above the
     * job's elements per packet, a job the switch does not hold. */
    TRY(cf_ar(c, 0, c->slots, 0, 3, 0, 0, 0, E, 1u, 0u));
    TRY(cf_ar(c, 0, 2, 0, 3, 0, 0, 0, E + 1, 1u, 0u));
    h = cf_req(c, SR_OP_AR_DATA, 0, 3);
    h.job = (uint16_t)(c->job.id + 1);
    TRY(cf_send_to(c, 0, &h, NULL, 0));

    /* Dropped without an answer: an address outside the job, an answer op
     * sent to the switch, a datagram that is not Serene's (bad magic is not
     * representable through sr_hdr_pack, so another UDP port stands for a
     * foreign datagram), another wire version. */
    h = cf_req(c, SR_OP_AR_DATA, 0, 3);
    TRY(cf_send(c, 0, STRANGER_IP, SR_WIRE_UDP_PORT, &h, NULL, 0));
    h = cf_req(c, SR_OP_AR_RESULT, 0, 3);
    TRY(cf_send_to(c, 0, &h, NULL, 0));
    h = cf_req(c, SR_OP_AR_DATA, 0, 3);
    TRY(cf_send(c, 0, 0, 53, &h, NULL, 0));
    h.version = SR_WIRE_VERSION + 1;
    TRY(cf_send_to(c, 0, &h, NULL, 0));

    /* Round 3 of slot 1 (version 1), then LEAVE of worker 2 (no answer);
     * its later contribution is dropped. */
    for (unsigned w = 0; w < n; w++)
        TRY(cf_ar(c, w, 1, 1, 2, 4 * E, 0, SR_WIRE_EXP_NONE, E, 100u * w, 2u));
    h = cf_req(c, SR_OP_LEAVE, 2, TOKEN(2));
    TRY(cf_send_to(c, 2, &h, NULL, 0));
    TRY(cf_ar(c, 2, 2, 0, 3, 5 * E, 0, 0, E, 1u, 1u));
    return 0;
}

static int push(cf_ctx *c, unsigned w, uint32_t seq, uint32_t off, unsigned n, uint32_t base,
                uint32_t step)
{
    uint32_t v[SR_WIRE_MAX_ELEMS];
    sr_hdr h = cf_req(c, SR_OP_PUSH, w, seq);

    h.offset = off;
    h.count = (uint16_t)n;
    h.aux = 0;
    for (unsigned i = 0; i < n; i++)
        v[i] = base + i * step;
    return cf_send_to(c, w, &h, v, n);
}

static int pull(cf_ctx *c, unsigned w, uint32_t seq, uint32_t off, uint32_t words)
{
    sr_hdr h = cf_req(c, SR_OP_PULL, w, seq);

    h.offset = off;
    h.aux = words;
    return cf_send_to(c, w, &h, NULL, 0);
}

static int clk(cf_ctx *c, unsigned w, uint32_t clock)
{
    sr_hdr h = cf_req(c, SR_OP_CLOCK, w, clock);

    return cf_send_to(c, w, &h, NULL, 0);
}

/* The SSP store (push once per row, worker and push number; pull) and the
 * barrier (holds, releases, the policy switch at a clock, a CLOCK beyond
 * the ring). The policy file must give SSP 1 before clock 3 and BSP from
 * clock 3 on. */
static int run_ssp(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;

    TRY(cf_join_all(c));
    /* Pushes: applied, applied by another worker, a retransmission (acked,
     * not added again), a second row, a partial row. */
    TRY(push(c, 0, 1, 0, E, 10u, 1u));
    TRY(push(c, 1, 1, 0, E, (uint32_t)-20, 3u));
    TRY(push(c, 0, 1, 0, E, 10u, 1u));
    TRY(push(c, 0, 2, E, 4, 0x80000000u, 1u));
    TRY(push(c, 2, 1, E + 4, E - 4, 7u, 0u));
    /* An older push number than the last applied: a late duplicate. */
    TRY(push(c, 1, 0, 0, E, 1u, 1u));
    /* Refusals: beyond the store (RANGE), across a row (RANGE), count 0
     * (BAD_COUNT). */
    TRY(push(c, 2, 2, c->job.store_words - 2, 4, 1u, 1u));
    TRY(push(c, 2, 2, E - 2, 4, 1u, 1u));
    TRY(pull(c, 2, 1, 0, 0));
    /* Pulls of a full row and of part of one. */
    TRY(pull(c, 2, 2, 0, E));
    TRY(pull(c, 1, 1, E, E));
    TRY(pull(c, 0, 1, E + 2, 5));
    TRY(pull(c, 0, 2, c->job.store_words - 1, 2)); /* RANGE */

    /* Barrier under SSP(1) until clock 3: */
    TRY(clk(c, 0, 0)); /* 0 - (-1) = 1 <= 1: PROCEED */
    TRY(clk(c, 0, 1)); /* 1 - (-1) = 2 > 1: HOLD */
    TRY(clk(c, 1, 0)); /* PROCEED */
    TRY(clk(c, 2, 0)); /* clock 0 complete: low 0, PROCEED + RELEASE(0) */
    TRY(clk(c, 0, 1)); /* retransmitted while held: a duplicate, now PROCEED */
    TRY(clk(c, 0, 2)); /* 2 - 0 = 2 > 1: HOLD */
    for (unsigned w = 1; w < n; w++)
        TRY(clk(c, w, 1)); /* the last one moves low to 1: RELEASE(1) */
    /* BSP from clock 3: */
    TRY(clk(c, 0, 3)); /* 3 - 1 = 2 > 0: HOLD */
    for (unsigned w = 1; w < n; w++)
        TRY(clk(c, w, 2)); /* low 2: RELEASE(2) */
    for (unsigned w = 1; w < n; w++)
        TRY(clk(c, w, 3)); /* low 3: RELEASE(3); the last answer PROCEED */
    TRY(clk(c, 0, 3));     /* duplicate: PROCEED */
    /* Beyond the ring: refused with CLOCK_AHEAD, nothing changes. */
    TRY(clk(c, 2, 3 + c->job.ring + 1));
    TRY(clk(c, 2, 4)); /* HOLD under BSP */
    return 0;
}


/* LEAVE of every worker, with context tokens TOKEN(w) + delta. */
static int leave_all(cf_ctx *c, uint32_t delta)
{
    for (unsigned w = 0; w < c->job.n_workers; w++) {
        sr_hdr h = cf_req(c, SR_OP_LEAVE, w, TOKEN(w) + delta);
        TRY(cf_send_to(c, w, &h, NULL, 0));
    }
    return 0;
}

/* A new incarnation finds nothing of the last one (the software switch's
 * epoch.c, the P4 program's incarnation tags). Run 1 leaves state in every
 * register class: slot 2 version 0 complete, its version 1 open with
 * worker 0's contribution, slot 6 open with worker 1's, store rows 0 and 1
 * pushed (push number 1), worker 0's CLOCK 0 in the ring. Every worker
 * leaves, and run 2 (another nonce and tokens) sends what would show the
 * old state if it were still there. The policy file must give SSP 1
 * before clock 3. */
static int run_incarnation(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;

    TRY(cf_join_all(c));
    for (unsigned w = 0; w < n; w++)
        TRY(cf_ar(c, w, 2, 0, 1, 0, 3, 3, E, 10u * (w + 1), 1u));
    TRY(cf_ar(c, 0, 2, 1, 2, E, 3, 3, E, 5u, 2u));
    TRY(cf_ar(c, 1, 6, 0, 1, 2 * E, 1, 1, E, 7u, 1u));
    TRY(push(c, 0, 1, 0, E, 100u, 1u));
    TRY(push(c, 1, 1, E, E, 3u, 0u));
    TRY(clk(c, 0, 0)); /* PROCEED; worker 0's bit in the ring entry of clock 0 */
    TRY(leave_all(c, 0));

    for (unsigned w = 0; w < n; w++)
        TRY(cf_join(c, w, TOKEN(w) + RUN2, NONCE + 1, c->job.token));
    /* Slot 2 version 0 again, round 1 of the new run: worker 0's copy opens
     * it (no shadow copy of run 1 answers), the others complete it with
     * run 2's values alone. */
    TRY(cf_ar(c, 0, 2, 0, 1, 0, 3, 3, E, 10u, 1u));
    for (unsigned w = 1; w < n; w++)
        TRY(cf_ar(c, w, 2, 0, 1, 0, 3, 3, E, 500u * w, 2u));
    /* Slot 6: worker 1's probe finds nothing held (AR_NAK, not AR_HELD). */
    TRY(cf_probe(c, 1, 6, 0, 1, 2 * E, 1, 1));
    /* Slot 2 version 1: run 1's open round (worker 0) is gone, so the round
     * completes with all three of run 2, not early. */
    for (unsigned w = n; w-- > 0;)
        TRY(cf_ar(c, w, 2, 1, 2, E, 3, 3, E, 20u + w, 1u));
    /* The store: rows read as zeros; push number 1 applies again (acked
     * with aux 1, not as a duplicate), and only its lanes are non-zero. */
    TRY(pull(c, 2, 1, 0, E));
    TRY(push(c, 0, 1, 4, 8, 9u, 1u));
    TRY(pull(c, 2, 2, 0, E));
    TRY(pull(c, 1, 1, E, E));
    /* The barrier: clock 0 is complete only with worker 0's CLOCK of this
     * run (RELEASE(0) then, not at worker 2's). */
    for (unsigned w = 1; w < n; w++)
        TRY(clk(c, w, 0));
    TRY(clk(c, 0, 0));
    return leave_all(c, RUN2);
}

/* STEP piece of worker w at clock `clock`: n words at store word off,
 * values base + i, the step's pieces in aux. */
static int step(cf_ctx *c, unsigned w, uint32_t clock, uint32_t off, unsigned n, uint32_t pieces)
{
    uint32_t v[SR_WIRE_MAX_ELEMS];
    sr_hdr h = cf_req(c, SR_OP_STEP, w, clock);

    h.offset = off;
    h.count = (uint16_t)n;
    h.aux = pieces;
    for (unsigned i = 0; i < n; i++)
        v[i] = 1000u * (w + 1) + 10u * clock + i;
    return cf_send_to(c, w, &h, v, n);
}

/* STEP_PROBE as the library sends it: the piece's header, op STEP_PROBE,
 * count 0, the RETRANSMIT flag set (the answer clears it). */
static int step_probe(cf_ctx *c, unsigned w, uint32_t clock, uint32_t off, uint32_t pieces)
{
    sr_hdr h = cf_req(c, SR_OP_STEP_PROBE, w, clock);

    h.offset = off;
    h.aux = pieces;
    h.flags = SR_FLAG_RETRANSMIT;
    return cf_send_to(c, w, &h, NULL, 0);
}

/* Clocks 0 and 1 of every worker's step (2 pieces: the whole of row 0 at
 * r0 and w1 words of row 1 at r1) in order, each answered at once under
 * SSP(1); the last piece of each clock brings RELEASE. */
static int step_clocks_0_1(cf_ctx *c, uint32_t r0, uint32_t r1, unsigned w1)
{
    for (uint32_t clock = 0; clock < 2; clock++)
        for (unsigned w = 0; w < c->job.n_workers; w++) {
            TRY(step(c, w, clock, r0, c->elems, 2));
            TRY(step(c, w, clock, r1, w1, 2));
        }
    return 0;
}

/* The SSP step (the software switch's step.c, the P4 program's step.p4):
 * every worker's step is 2 pieces, the whole of row 0 and 8 words of row 1
 * (offset E + 4), so each worker's second applied piece of a clock records
 * that clock in the barrier. The policy file must give SSP 1 before clock
 * 3 and BSP from clock 3 on. Rows answer with their words, each copy with
 * its receiver's clock and policy and the row's low; waiting is held, not
 * answered; probes are HELD (applied, waits) or NAK (lost, or ready); a
 * duplicate is not added again; the step that completes the barrier's
 * clock brings RELEASE after its row. Run 1 stays below clock 3 (the
 * software switch forgets rules that ended before low, and a new run
 * would meet BSP at clock 0 there, SSP(1) on BMv2: p4/README.md). */
static int run_step(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems, R0 = 0, R1 = E + 4, W1 = 8, R2 = 2 * E;

    TRY(cf_join_all(c));
    /* Clock 0 under SSP(1): rows 0 and 1 start (low -1), worker 0 gets
     * both at once (0 - (-1) <= 1); its step is complete: CLOCK(0). */
    TRY(step(c, 0, 0, R0, E, 2));
    TRY(step(c, 0, 0, R1, W1, 2));
    /* Worker 0 goes on: 1 - (-1) > 1, its piece of row 0 at clock 1 waits
     * (no answer); its probe and a duplicate are STEP_HELD, not added. */
    TRY(step(c, 0, 1, R0, E, 2));
    TRY(step_probe(c, 0, 1, R0, 2));
    TRY(step(c, 0, 1, R0, E, 2));
    /* Worker 1 gets row 0 at once; worker 2, the slowest, completes clock
     * 0 of row 0 (low 0): the row goes to it and to waiting worker 0, each
     * with its own clock. */
    TRY(step(c, 1, 0, R0, E, 2));
    TRY(step(c, 2, 0, R0, E, 2));
    /* Row 1 at clock 0; worker 2's piece completes everyone's step 0: its
     * row, then RELEASE(0) (high 1: worker 0's piece of clock 1). */
    TRY(step(c, 1, 0, R1, W1, 2));
    TRY(step(c, 2, 0, R1, W1, 2));

    /* Clock 1: worker 0 completes its step. Worker 1's row is lost: its
     * probe gets STEP_NAK (applied, but ready) and the resend the row alone,
     * not added again. Worker 2's piece of row 1 is lost: its probe gets
     * STEP_NAK (not applied) and the resend is applied. */
    TRY(step(c, 0, 1, R1, W1, 2));
    TRY(step(c, 1, 1, R0, E, 2));
    TRY(step_probe(c, 1, 1, R0, 2));
    TRY(step(c, 1, 1, R0, E, 2));
    TRY(step_probe(c, 2, 1, R1, 2));
    TRY(step(c, 2, 1, R1, W1, 2));
    /* Row 0's low moves to 1: worker 0, answered at low 0, is not sent it
     * again. Worker 1's piece of row 1 completes clock 1: RELEASE(1). */
    TRY(step(c, 2, 1, R0, E, 2));
    TRY(step(c, 1, 1, R1, W1, 2));

    /* Refusals: a skipped clock (MISMATCH); a late copy (dropped). Worker 1
     * alone steps row 2 from clock 2 (low 1; answered at 2, then waiting)
     * up to 8, and at 9 its piece is more than R - 1 above the row's low
     * (CLOCK_AHEAD); worker 0 starts row 2 at another clock than worker 1
     * did (MISMATCH); a new row more than R above the barrier's low
     * (CLOCK_AHEAD); count 0 and a step of 0 pieces (BAD_COUNT); a piece
     * across a row or beyond the store, and a probe beyond it (RANGE). */
    TRY(step(c, 2, 3, R0, E, 2));
    TRY(step(c, 2, 0, R0, E, 2));
    for (uint32_t clock = 2; clock <= 1 + c->job.ring; clock++)
        TRY(step(c, 1, clock, R2, 4, 1));
    TRY(step(c, 0, 3, R2, 4, 1));
    TRY(step(c, 0, 1 + c->job.ring + 1, 3 * E, 4, 1));
    TRY(step(c, 0, 2, R0, 0, 2));
    TRY(step(c, 0, 2, R0, E, 0));
    TRY(step(c, 0, 2, E - 2, 4, 2));
    TRY(step(c, 0, 2, c->job.store_words - 2, 4, 2));
    TRY(step_probe(c, 0, 2, c->job.store_words, 2));

    /* A new incarnation: rows and their step state read as cleared. Row 0
     * starts again at clock 0 (low -1) with only this run's values, and
     * worker 1's probe of its old piece gets STEP_NAK. */
    TRY(leave_all(c, 0));
    for (unsigned w = 0; w < n; w++)
        TRY(cf_join(c, w, TOKEN(w) + RUN2, NONCE + 1, c->job.token));
    TRY(step_probe(c, 1, 1, R1, 2));
    TRY(step_clocks_0_1(c, R0, R1, W1));
    /* Clocks 2 (SSP(1)) and 3 (BSP): worker 0 runs ahead; at clock 3 its
     * pieces wait (3 - 1 > 0) and its step 3 is recorded. Row 0's low 2
     * does not release it (BSP at 3). */
    TRY(step(c, 0, 2, R0, E, 2));
    TRY(step(c, 0, 2, R1, W1, 2));
    TRY(step(c, 0, 3, R0, E, 2));
    TRY(step(c, 0, 3, R1, W1, 2));
    for (unsigned w = 1; w < n; w++)
        TRY(step(c, w, 2, R0, E, 2));
    for (unsigned w = 1; w < n; w++)
        TRY(step(c, w, 2, R1, W1, 2)); /* the last one: RELEASE(2) */
    /* Clock 3 under BSP: worker 1 waits too, and the slowest releases the
     * row to all three; row 1's last piece also brings RELEASE(3). */
    TRY(step(c, 1, 3, R0, E, 2));
    TRY(step_probe(c, 0, 3, R0, 2));
    TRY(step(c, 2, 3, R0, E, 2));
    TRY(step(c, 1, 3, R1, W1, 2));
    TRY(step(c, 2, 3, R1, W1, 2));
    return leave_all(c, RUN2);
}

const cf_scenario cf_scenarios[] = {
    {"allreduce", run_allreduce, NULL},
    {"ssp", run_ssp, NULL},
    {"incarnation", run_incarnation, NULL},
    {"roce", cf_run_roce, NULL},
    {"step", run_step, NULL},
    {"share", cf_run_share, "share.job"},
    {"share-take", cf_run_share_take, "share.job"},
};
const unsigned cf_n_scenarios = sizeof cf_scenarios / sizeof cf_scenarios[0];
