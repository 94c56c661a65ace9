/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allreduce.c - SwitchML-style streaming allreduce with a shadow copy: the
 * Allreduce control of p4/include/allreduce.p4, rule for rule.
 *
 * State per job, slot and version v (a "cell", index 2 * slot + v): seen
 * bitmap, contributor count mod N, round metadata (seq, offset, count,
 * exp, and the call's total count from aux), max-reduced next exponent and
 * elems_per_pkt accumulators. Each packet touches one worker entry and at
 * most the two cells of one slot, and every decision is a compare on those
 * values. The seen bitmaps and counts of a slot's two versions are read
 * together (see sr_allreduce_data), so a target with one access per
 * register per packet keeps each pair in one register entry, as SwitchML
 * does with its bitmaps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controls.h"

_Static_assert(SR_WIRE_MAX_WORKERS <= 64, "one 64-bit seen/bound word per cell/job");
_Static_assert(SR_WIRE_MAX_WORKERS <= 255, "cnt is a uint8_t holding 0..n-1");

/* ---- the slot pool -------------------------------------------------------- */

int sr_allreduce_alloc(sr_pipe_job *j)
{
    /* At the limits: 2 * 32768 * 2048 * 4 bytes = 512 MiB; no size_t overflow.
     * A job without slots (0) gets one unused cell: calloc(0) may be NULL. */
    size_t cells = j->slots ? 2u * (size_t)j->slots : 1;

    j->seen = calloc(cells, sizeof *j->seen);
    j->cnt = calloc(cells, sizeof *j->cnt);
    j->m_seq = calloc(cells, sizeof *j->m_seq);
    j->m_off = calloc(cells, sizeof *j->m_off);
    j->m_total = calloc(cells, sizeof *j->m_total);
    j->m_count = calloc(cells, sizeof *j->m_count);
    j->m_exp = calloc(cells, sizeof *j->m_exp);
    j->nexp = calloc(cells, sizeof *j->nexp);
    /* A shared job's accumulators are the pool's blocks (pool.c). */
    j->values = calloc(j->params.fallback ? 1 : cells * j->elems, sizeof *j->values);
    j->up_wait = calloc(cells, sizeof *j->up_wait);
    j->up_ms = calloc(cells, sizeof *j->up_ms);
    if (!j->up_wait || !j->up_ms || !j->seen || !j->cnt || !j->m_seq || !j->m_off || !j->m_total || !j->m_count ||
        !j->m_exp || !j->nexp || !j->values)
        return -ENOMEM;
    return 0;
}

void sr_allreduce_free(sr_pipe_job *j)
{
    free(j->seen);
    free(j->cnt);
    free(j->m_seq);
    free(j->m_off);
    free(j->m_total);
    free(j->m_count);
    free(j->m_exp);
    free(j->nexp);
    free(j->values);
    free(j->up_wait);
    free(j->up_ms);
}

void sr_allreduce_clear(sr_pipe_job *j)
{
    size_t cells = 2u * (size_t)j->slots;

    memset(j->seen, 0, cells * sizeof *j->seen);
    memset(j->cnt, 0, cells * sizeof *j->cnt);
    memset(j->m_seq, 0, cells * sizeof *j->m_seq);
    memset(j->m_off, 0, cells * sizeof *j->m_off);
    memset(j->m_total, 0, cells * sizeof *j->m_total);
    memset(j->m_count, 0, cells * sizeof *j->m_count);
    memset(j->m_exp, 0, cells * sizeof *j->m_exp);
    memset(j->nexp, 0, cells * sizeof *j->nexp);
    memset(j->up_wait, 0, cells * sizeof *j->up_wait);
    if (!j->params.fallback)
        memset(j->values, 0, cells * j->elems * sizeof *j->values);
}

/* AR_RESULT of a cell: its metadata and sums, the sums converted into
 * payload[] now or, with lazy payloads, by the I/O into its frame (the
 * cell keeps them until its next round, which needs another packet).
 * Replicas get their worker id from the destinations. */
static void result_fill(const sr_pipe *p, sr_pipe_action *a, const sr_pipe_job *j, size_t cell,
                        uint16_t worker)
{
    const uint32_t *v = sr_pool_cell(p, j, cell);
    uint16_t count = j->m_count[cell];

    a->hdr.op = SR_OP_AR_RESULT;
    a->hdr.job = j->id;
    a->hdr.worker = worker;
    a->hdr.seq = j->m_seq[cell];
    a->hdr.slot = (uint16_t)(cell >> 1);
    a->hdr.shadow = (uint8_t)(cell & 1u);
    a->hdr.count = count;
    a->hdr.exp = j->m_exp[cell];
    a->hdr.next_exp = j->nexp[cell];
    a->hdr.offset = j->m_off[cell];
    a->hdr.aux = j->m_total[cell];
    /* A shared job's result announces the window of its next call. */
    if (j->params.fallback && j->stamp[cell] != SR_STAMP_UNSET)
        a->hdr.status = (uint8_t)j->stamp[cell];
    a->payload_len = 4u * (size_t)count;
    a->words = v;
    if (!p->lazy_payload)
        sr_pipe_payload_flatten(a);
}

/* AR_HELD or AR_NAK to w's request h (sr_svc_reply_hdr), counted. */
static void reply_hdr(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                      uint8_t op, sr_pipe_out *out)
{
    sr_svc_reply_hdr(p, j, src, h, op, out);
    if (op == SR_OP_AR_HELD)
        j->c.held++;
    else
        j->c.naks++;
}

/* Does the packet belong to the cell's round (or last completed round)? */
static int meta_eq(const sr_pipe_job *j, size_t cell, const sr_hdr *h)
{
    return h->seq == j->m_seq[cell] && h->offset == j->m_off[cell] &&
           h->count == j->m_count[cell] && h->exp == j->m_exp[cell] &&
           h->aux == j->m_total[cell];
}

/* Is the packet's piece older than the cell's round? Pieces are ordered by
 * call (seq, serial arithmetic) and then by offset within the call. Used
 * only while the round is open: its workers are then within a round of
 * each other, so the serial difference is small and exact. */
static int older(const sr_pipe_job *j, size_t cell, const sr_hdr *h)
{
    uint32_t d = h->seq - j->m_seq[cell];

    return (d >> 31) != 0 || (d == 0 && h->offset < j->m_off[cell]);
}

/* The cell's result to w alone (unicast) or to every worker (multicast).
 * Returns 0 if out had no room (cannot happen: one action per AR_DATA). */
static int send_result(sr_pipe *p, sr_pipe_job *j, size_t cell, const sr_peer *src, uint16_t w,
                       int multicast, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);

    if (!a)
        return 0;
    result_fill(p, a, j, cell, w);
    if (multicast)
        sr_svc_multicast(a, j);
    else
        sr_svc_unicast(a, src, w);
    sr_svc_count_tx(p, j, a);
    return 1;
}

/* ---- a leaf of a tree (the cells' side; upstream.c relays the rest) ------- */

/* The cell's partial sum to the parent, as member up_member of job up_job
 * (op AR_DATA), or its header alone (op AR_PROBE, count 0): the local
 * round's metadata, next_exp max-reduced over the local workers, and the
 * sums (mod 2^32: the parent's sum of the leaves' sums is the sum of every
 * worker's values, whatever the order). Before the parent has acknowledged
 * the leaf's JOIN in this incarnation, that JOIN goes instead: the workers'
 * next resend or probe brings the partial. */
static void up_send(sr_pipe *p, sr_pipe_job *j, size_t cell, uint8_t op, sr_pipe_out *out)
{
    sr_pipe_action *a;

    j->up_ms[cell] = p->now_ms;
    if (!sr_up_bound(j)) {
        sr_up_join_self(p, j, out);
        return;
    }
    a = sr_svc_action_new(out);
    if (!a)
        return;
    result_fill(p, a, j, cell, j->params.up_member);
    a->hdr.op = op;
    a->hdr.job = j->params.up_job;
    if (op == SR_OP_AR_PROBE) {
        a->hdr.count = 0;
        a->payload_len = 0;
        a->words = NULL;
    }
    sr_svc_unicast(a, &j->params.up_peer, j->params.up_member);
    sr_svc_count_tx(p, j, a);
}

static void up_partial(sr_pipe *p, sr_pipe_job *j, size_t cell, sr_pipe_out *out)
{
    j->up_wait[cell] = 1;
    up_send(p, j, cell, SR_OP_AR_DATA, out);
}

/* A worker's resend or probe of a round whose partial is up: the round
 * holds its contribution, so AR_HELD. And the leaf asks its parent as a
 * worker's engine would, header only (AR_PROBE), at most once per
 * SR_UP_RESEND_MS per cell (the local workers ask about the same cell at
 * about the same time): the parent answers AR_HELD while its round waits
 * for other leaves (nothing more is sent: waiting is not loss), AR_NAK when
 * the partial or the result was lost, and then the partial goes again in
 * full (sr_allreduce_up_answer), which the parent counts or answers with
 * its shadow copy. So the workers' own timers drive the recovery on the
 * leaf-parent link: the leaf has no timer of its own. */
static void up_pending(sr_pipe *p, sr_pipe_job *j, size_t cell, const sr_peer *src,
                       const sr_hdr *h, sr_pipe_out *out)
{
    unsigned refused = sr_up_refused(j);

    if (p->now_ms - j->up_ms[cell] >= SR_UP_RESEND_MS) {
        up_send(p, j, cell, SR_OP_AR_PROBE, out);
        j->c.up_resends++;
    }
    /* The parent refused this leaf for good: the worker learns why now,
     * not at its deadline (the JOIN above still goes, for a parent fixed
     * meanwhile). */
    if (refused)
        sr_svc_reply_error(p, j, src, h, refused, out);
    else
        reply_hdr(p, j, src, h, SR_OP_AR_HELD, out);
}

/* A leaf's round poisoned by its own workers: the parent must learn it,
 * or the other leaves' workers would wait for this leaf until their
 * deadline. The leaf sends its round's header with exp SR_WIRE_EXP_NONE
 * and count 0: no worker ever sends that exponent (quant.h clamps to
 * SR_WIRE_EXP_MIN), so it matches no real round, and the parent's round is
 * poisoned when this marker and a real partial meet there, whichever comes
 * first; the other leaves' probes then learn MISMATCH. Sent again (at most
 * once per SR_UP_RESEND_MS) whenever a local worker meets the poisoned
 * round, as the workers' resends and probes drive every upstream send. */
static void up_poison(sr_pipe *p, sr_pipe_job *j, size_t cell, sr_pipe_out *out)
{
    sr_pipe_action *a;

    if (p->now_ms - j->up_ms[cell] < SR_UP_RESEND_MS && j->up_ms[cell] != 0)
        return;
    j->up_ms[cell] = p->now_ms;
    if (!sr_up_bound(j) || !(a = sr_svc_action_new(out)))
        return;
    a->hdr.op = SR_OP_AR_DATA;
    a->hdr.job = j->params.up_job;
    a->hdr.seq = j->m_seq[cell];
    a->hdr.slot = (uint16_t)(cell >> 1);
    a->hdr.shadow = (uint8_t)(cell & 1u);
    a->hdr.exp = SR_WIRE_EXP_NONE;
    a->hdr.next_exp = SR_WIRE_EXP_NONE;
    a->hdr.offset = j->m_off[cell];
    a->hdr.aux = j->m_total[cell];
    sr_svc_unicast(a, &j->params.up_peer, j->params.up_member);
    sr_svc_count_tx(p, j, a);
    j->c.up_resends++;
}

void sr_allreduce_up_answer(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                            sr_pipe_out *out)
{
    size_t cell;
    int match;

    if (h->worker != j->params.up_member || h->slot >= j->slots) {
        j->c.up_dropped++;
        return;
    }
    sr_epoch_touch_slot(j, h->slot);
    cell = 2u * (size_t)h->slot + h->shadow;
    /* Only an answer about the round the cell awaits counts: a late or
     * duplicate one, or one about another round, changes nothing. AR_NAK
     * and ERROR echo the leaf's header with count 0 (ERROR: aux = the op). */
    match = j->up_wait[cell] && h->seq == j->m_seq[cell] && h->offset == j->m_off[cell] &&
            h->exp == j->m_exp[cell];
    if (h->op == SR_OP_AR_RESULT)
        match = match && meta_eq(j, cell, h);
    else if (h->op == SR_OP_AR_NAK)
        match = match && h->aux == j->m_total[cell];
    else
        match = match && h->op == SR_OP_ERROR && h->status == SR_ST_MISMATCH &&
                (h->aux == SR_OP_AR_DATA || h->aux == SR_OP_AR_PROBE);
    if (!match) {
        j->c.up_dropped++;
        return;
    }
    if (h->op == SR_OP_AR_NAK) {
        /* Lost on the way up, or the result lost on the way down. */
        up_send(p, j, cell, SR_OP_AR_DATA, out);
        return;
    }
    j->up_wait[cell] = 0;
    if (h->op == SR_OP_ERROR) {
        /* The leaves disagree: the round is poisoned here too, and the
         * workers' resends and probes learn it. */
        j->m_count[cell] = SR_WIRE_COUNT_POISON;
        j->c.mismatches++;
        return;
    }
    /* The parent's sums replace the partial: the cell is the shadow copy
     * of the whole tree's result, and next_exp is the max over the tree. */
    sr_svc_be32_in(j->values + cell * j->elems, payload, h->count, SR_BE32_SET);
    j->nexp[cell] = h->next_exp;
    if (send_result(p, j, cell, NULL, 0, 1, out)) {
        j->c.results++;
        j->c.up_results++;
    }
}

/* Whether a contribution of w (bit) to the cell cannot count: a copy that
 * already counted, a stale one, or one to a poisoned round or one that
 * poisons it. Answers and counts what it refuses; returns 1 then, 0 when
 * the contribution is to be added. (The cases are explained above
 * sr_allreduce_data.) */
static int refused(sr_pipe *p, sr_pipe_job *j, size_t cell, uint64_t bit, const sr_peer *src,
                   const sr_hdr *h, sr_pipe_out *out)
{
    /* A poisoned round answers everyone MISMATCH (see below), the workers
     * that contributed before the mismatch included: their resends learn it. */
    if (j->m_count[cell] == SR_WIRE_COUNT_POISON) {
        j->c.mismatches++;
        sr_svc_reply_error(p, j, src, h, SR_ST_MISMATCH, out);
        if (j->params.up)
            up_poison(p, j, cell, out);
        return 1;
    }
    /* w's bit still set in a complete cell, and a piece that is not the
     * cell's round: a copy of an older round (dropped), or, at a shared
     * job's fallback (pool.c), the slot's next round here after rounds
     * that were summed in the switch, where w never cleared its bit. That
     * one starts a new round (contribute() clears the others' bits). */
    if ((j->seen[cell] & bit) && j->cnt[cell] == 0 && !j->up_wait[cell] &&
        !meta_eq(j, cell, h)) {
        if (older(j, cell, h)) {
            j->c.stale_dropped++;
            return 1;
        }
    } else if (j->seen[cell] & bit) {
        if (j->up_wait[cell]) {
            /* A leaf's round awaiting its parent's result: this leaf has
             * no result to give, so the resend goes on up (upstream.c). */
            up_pending(p, j, cell, src, h, out);
        } else if (j->cnt[cell] == 0) {
            /* Complete: the worker lost its result; resend the shadow copy. */
            if (send_result(p, j, cell, src, h->worker, 0, out))
                j->c.shadow_replies++;
        } else {
            /* Still waiting for others: the first copy already counted.
             * Saying so stops the worker's resends (it probes instead). */
            j->c.dup_dropped++;
            reply_hdr(p, j, src, h, SR_OP_AR_HELD, out);
        }
        return 1;
    }
    /* A stale copy from a worker that moved on: it needs nothing, and
     * counting it would corrupt the slot. */
    if (j->cnt[cell ^ 1u] != 0 ||
        (j->cnt[cell] == 0 && (j->seen[cell ^ 1u] & bit) && meta_eq(j, cell, h)) ||
        (j->cnt[cell] != 0 && older(j, cell, h))) {
        j->c.stale_dropped++;
        return 1;
    }
    /* A round in progress only takes contributions to the same piece of the
     * same call (same total count), quantized with the same exponent. The
     * workers disagree, so the round can never complete: it is poisoned,
     * and every contribution to it, earlier or later, is answered MISMATCH.
     * Every worker sends to slot 0 in the first round of every call, with
     * the call's total count, so workers that disagree on the count all
     * learn it there, before any of them can finish the call. The values
     * are left as they were; a job reset clears the mark. */
    if (j->cnt[cell] != 0 && !meta_eq(j, cell, h)) {
        j->m_count[cell] = SR_WIRE_COUNT_POISON;
        j->c.mismatches++;
        sr_svc_reply_error(p, j, src, h, SR_ST_MISMATCH, out);
        if (j->params.up) {
            j->up_ms[cell] = 0;
            up_poison(p, j, cell, out);
        }
        return 1;
    }
    return 0;
}

/*
 * A shared job's contribution (pool.c, fallback.c). Each round is summed
 * in one place, chosen when it starts: here, in the block its slot holds
 * (or gets by the pool's policy), or at the job's fallback, to which
 * every copy of it is relayed; the cell keeps an away round's metadata
 * (relay = SR_CELL_AWAY) so that its copies follow it. Returns 1 when the
 * packet was relayed or dropped, 0 when the cell's round here takes it
 * (refused() and contribute() then do as for any job; a new round here
 * starts with seen cleared, as the workers cleared their bits in rounds
 * that went away). The stale tests for a new round are refused()'s: a
 * round open in the other version, or, for an away cell, a piece older
 * than its round (the argument above sr_allreduce_data holds for rounds
 * wherever they are summed: a worker's next piece for a slot follows the
 * result of its last one).
 */
static int shared_data(sr_pipe *p, sr_pipe_job *j, size_t cell, const sr_hdr *h,
                       const uint8_t *payload, sr_pipe_out *out)
{
    uint8_t r = j->relay[cell];

    j->active_ms = p->now_ms;
    j->slot_ms[h->slot] = p->now_ms;
    if (r == SR_CELL_HERE && (j->cnt[cell] != 0 || meta_eq(j, cell, h)))
        return 0;
    if (meta_eq(j, cell, h)) {
        if (r == SR_CELL_AWAY)
            sr_fb_relay(p, j, h, payload, out);
        else
            j->c.lease_lost++; /* its block went back after the job idled */
        return 1;
    }
    if (j->cnt[cell ^ 1u] != 0 || (r == SR_CELL_AWAY && older(j, cell, h))) {
        j->c.stale_dropped++;
        return 1;
    }
    if (sr_pool_round_here(p, j, h->slot, h->shadow)) {
        j->relay[cell] = SR_CELL_HERE;
        j->seen[cell] = 0;
        return 0;
    }
    j->relay[cell] = SR_CELL_AWAY;
    j->stamp[cell] = SR_STAMP_UNSET;
    j->m_seq[cell] = h->seq;
    j->m_off[cell] = h->offset;
    j->m_total[cell] = h->aux;
    j->m_count[cell] = h->count;
    j->m_exp[cell] = h->exp;
    j->c.fb_rounds++;
    sr_fb_relay(p, j, h, payload, out);
    return 1;
}

/* A shared job's probe: relayed when it names the cell's away round. */
static int shared_probe(sr_pipe *p, sr_pipe_job *j, size_t cell, const sr_hdr *h,
                        sr_pipe_out *out)
{
    j->active_ms = p->now_ms;
    j->slot_ms[h->slot] = p->now_ms;
    if (j->relay[cell] != SR_CELL_AWAY || h->seq != j->m_seq[cell] ||
        h->offset != j->m_off[cell] || h->exp != j->m_exp[cell] || h->aux != j->m_total[cell])
        return 0;
    sr_fb_relay(p, j, h, NULL, out);
    return 1;
}

/* Add the contribution of w (bit) to the cell, or start its round with it.
 * Returns 1 when it completed the round. */
static int contribute(const sr_pipe *p, sr_pipe_job *j, size_t cell, uint64_t bit,
                      const sr_hdr *h, const uint8_t *payload)
{
    uint32_t *v = sr_pool_cell(p, j, cell);

    /* A new round's first contributor: in a slot whose rounds all meet
     * here, the others cleared their bits in the rounds in between. */
    j->seen[cell] = j->cnt[cell] == 0 ? bit : j->seen[cell] | bit;
    j->seen[cell ^ 1u] &= ~bit; /* w is done with the other version */
    if (j->cnt[cell] == 0) {
        /* A new round: whatever a leaf's parent still says about the
         * cell's last one no longer applies to it (up_wait marks a round
         * complete here, its partial up). */
        j->up_wait[cell] = 0;
        j->m_seq[cell] = h->seq;
        j->m_off[cell] = h->offset;
        j->m_total[cell] = h->aux;
        j->m_count[cell] = h->count;
        j->m_exp[cell] = h->exp;
        j->nexp[cell] = h->next_exp;
        sr_svc_be32_in(v, payload, h->count, SR_BE32_SET);
    } else {
        /* uint32_t: the int32 sums wrap modulo 2^32, as in the switch ALU. */
        sr_svc_be32_in(v, payload, h->count, SR_BE32_ADD);
        if (h->next_exp > j->nexp[cell])
            j->nexp[cell] = h->next_exp;
    }
    j->cnt[cell] = (uint8_t)(j->cnt[cell] + 1u == j->n_local ? 0u : j->cnt[cell] + 1u);
    return j->cnt[cell] == 0;
}

/*
 * One contribution from worker w to slot s, version v (cell c = 2s + v).
 *
 * seen[c] records who contributed to the cell's current round, cnt[c] how
 * many (mod N, so 0 means "idle or complete"). The last contributor
 * completes the round and the sums go to every worker. The cell keeps its
 * sums until the slot's next round of the same version starts: that is the
 * shadow copy that answers retransmissions from workers whose result was
 * lost.
 *
 * Why this is correct (SwitchML's argument):
 * - A worker sends version v in slot s only after it received the result
 *   of the slot's previous round, which used version 1-v. So when w
 *   contributes to v it is done with that round of 1-v for good, and
 *   clearing its bit in seen[1-v] readies the cell for the slot's next
 *   round of 1-v; every worker clears its own bit that way before it can
 *   contribute there.
 * - The next round of v cannot start before the round of 1-v in between
 *   completes, which needs w's contribution, which w sends only after it
 *   has the result of v. So while w still lacks that result (its copy of
 *   the multicast was lost), its bit stays set in seen[v] and cnt[v] stays
 *   0: its retransmission of v finds both and is answered from the cell's
 *   sums, the shadow copy.
 *
 * Stale copies. The argument assumes a worker's packet never arrives after
 * the worker moved on, but a retransmission can be overtaken by the result
 * it asked for and by the worker's next packet (UDP does not keep order).
 * Taken as a new contribution it would open a bogus round and clear w's
 * bit in the other cell, so w's next duplicate there would count twice.
 * Three tests reject such copies; none can fire on the first arrival of a
 * real contribution of w to v with w's bit clear:
 * - cnt[1-v] != 0: a round of 1-v after the one w has the result of cannot
 *   start before w contributed to v (second point above);
 * - cnt[v] == 0, w's bit set in seen[1-v] and the packet's metadata equal
 *   to the round cell v completed: w got that round's result before it
 *   contributed to 1-v, and a real new round is another piece (another
 *   seq or offset) than the round before it in the same cell;
 * - cnt[v] != 0 and the packet's piece older (call, then offset) than the
 *   open round's: a copy of w's round two or more rounds back in this
 *   cell, arriving while the others opened a later one without w. Every
 *   worker sends the pieces of a slot in that order, and the open round
 *   cannot be newer than w's next piece for it (it needs w to finish),
 *   so a real contribution is never older; one of the same age that
 *   disagrees is a real mismatch (below).
 * A copy that arrives after three later rounds of its slot completed, at a
 * moment when no round of the slot is open, still passes for a new round:
 * as in SwitchML, the workers' retransmission timeout must exceed the
 * network's worst delay by that much.
 *
 * Waiting is not loss. A copy of w's contribution to the cell's open round
 * (w's bit set, cnt != 0) is answered AR_HELD: the round waits for others,
 * and the worker stops resending (sr_allreduce_probe says how it then
 * asks).
 */
void sr_allreduce_data(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                       const uint8_t *payload, sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint64_t bit;
    size_t cell;

    /* Isolation: no answer at all to a worker id that is not bound to this
     * address, so another tenant or a spoofer learns nothing. */
    if (!sr_svc_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    if (h->slot >= j->slots) {
        sr_svc_reply_error(p, j, src, h, SR_ST_BAD_SLOT, out);
        return;
    }
    if (h->count > j->elems) {
        sr_svc_reply_error(p, j, src, h, SR_ST_BAD_COUNT, out);
        return;
    }
    if (j->params.tna_model) {
        sr_tna_run(p, j, src, h, payload, out);
        return;
    }
    bit = UINT64_C(1) << w;
    cell = 2u * (size_t)h->slot + h->shadow;
    if (j->params.fallback && shared_data(p, j, cell, h, payload, out))
        return;
    if (refused(p, j, cell, bit, src, h, out) || !contribute(p, j, cell, bit, h, payload))
        return;
    /* A leaf's round complete: its sum goes up as one contribution, and
     * the parent's result comes down (sr_allreduce_up_answer). */
    if (j->params.up) {
        up_partial(p, j, cell, out);
        j->c.up_partials++;
        return;
    }
    /* Round complete: the sums go to every worker. All n are bound: each
     * contributed, which needs a binding, and only a reset (which also
     * clears this cell) removes bindings. */
    if (j->params.fallback) {
        j->stamp[cell] = sr_pool_result(p, j);
        sr_pool_call_done(p, j, h->seq);
    }
    if (send_result(p, j, cell, src, w, 1, out))
        j->c.results++;
}

/*
 * AR_PROBE: worker w asks, header only, whether the cell holds its
 * contribution; the worker sends it instead of its payload when the
 * packet's timer expires. It changes no state, so no stale-copy test is
 * needed: the answer echoes the probe's header, and the worker matches it
 * with the round it has in flight (seq, slot, shadow bit and offset name
 * one round of one worker) and drops the rest.
 * - A poisoned round: MISMATCH, as to a contribution.
 * - w's bit set and the round open: AR_HELD, so the worker keeps waiting.
 *   w's bit in the cell is its contribution to its round in flight: a
 *   worker's bit in one version is cleared when it contributes to the
 *   other, which it does only after the result of the round it probes.
 * - Otherwise AR_NAK: the contribution is not there (lost), or the round
 *   completed and w's copy of the result was lost. The worker resends in
 *   full, and that resend is a contribution like any other: counted, or
 *   answered with the shadow copy, or dropped as stale. The result is not
 *   sent to the probe itself, so no answer is larger than its request.
 */
void sr_allreduce_probe(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                        sr_pipe_out *out)
{
    uint64_t bit;
    size_t cell;

    if (!sr_svc_worker_ok(j, h->worker, src)) {
        j->c.dropped_unbound++;
        return;
    }
    if (h->slot >= j->slots) {
        sr_svc_reply_error(p, j, src, h, SR_ST_BAD_SLOT, out);
        return;
    }
    if (h->count != 0) { /* header only */
        sr_svc_reply_error(p, j, src, h, SR_ST_BAD_COUNT, out);
        return;
    }
    j->c.probes++;
    if (j->params.tna_model) {
        sr_tna_run(p, j, src, h, NULL, out);
        return;
    }
    bit = UINT64_C(1) << h->worker;
    cell = 2u * (size_t)h->slot + h->shadow;
    if (j->params.fallback && shared_probe(p, j, cell, h, out))
        return;
    if (j->m_count[cell] == SR_WIRE_COUNT_POISON) {
        j->c.mismatches++;
        sr_svc_reply_error(p, j, src, h, SR_ST_MISMATCH, out);
        if (j->params.up)
            up_poison(p, j, cell, out);
    } else if ((j->seen[cell] & bit) && j->cnt[cell] != 0) {
        reply_hdr(p, j, src, h, SR_OP_AR_HELD, out);
    } else if ((j->seen[cell] & bit) && j->up_wait[cell]) {
        up_pending(p, j, cell, src, h, out);
    } else {
        reply_hdr(p, j, src, h, SR_OP_AR_NAK, out);
    }
}
