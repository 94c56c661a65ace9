/* SPDX-License-Identifier: Apache-2.0 */
/*
 * step.c - the SSP step: STEP and STEP_PROBE on the store's rows, the Step
 * control of p4/include/step.p4.
 *
 * A step is push, clock and pull of one iteration as one stream of row
 * pieces: each STEP adds its payload to a row (once per row, worker and
 * clock) and is answered with the whole row as soon as the row holds every
 * worker's steps of clocks <= c - s(c). So a row is aggregated and sent
 * back as an allreduce slot is: under BSP its last worker's piece releases
 * it to every worker at once; under SSP(s) a worker within s clocks of the
 * row's slowest gets it at once, a faster one waits in the switch (its wait
 * bit) until the slowest catches up.
 *
 * State per job and store row r (fixed-size arrays, as the P4 program's
 * registers; cleared with the row by the incarnation tags, epoch.c):
 * - step_on[r]: the workers that have stepped r (0: nobody yet);
 * - step_low[r]: the row's low clock: every worker's steps of clocks
 *   <= step_low[r] are in r (valid once step_on[r] != 0);
 * - step_last[r * n + w]: the last clock worker w stepped r at;
 * - step_cnt[r * R + (c & (R - 1))]: the workers that stepped r at clock c,
 *   for the R clocks above step_low[r] (R: the job's barrier ring);
 * - step_wait[r]: the workers whose piece of r waits for the row.
 *
 * Rules (the library keeps them; a STEP that breaks one is refused):
 * - A worker steps a row at consecutive clocks, and its first step of a row
 *   is at step_low[r] + 1 (every worker starts stepping a row at the same
 *   clock): otherwise ERROR MISMATCH. So step_cnt's entry of step_low + 1
 *   is the only one that can fill, one worker's piece at a time, and the
 *   row's low moves by one at most per packet.
 * - A new piece more than R - 1 clocks above the row's low, or more than R
 *   above the barrier's, is refused with CLOCK_AHEAD (its entry is in use).
 * - Every piece moves the barrier's high to its clock, so that a policy
 *   change never takes effect at a clock some row has already decided.
 *   Each piece says how many its step has (aux); when the switch has
 *   applied that many of a worker's pieces of clock c (step_clk, step_n:
 *   per worker), it records CLOCK(c) in the barrier (barrier.c), whose
 *   RELEASE follows when its low moves. So the barrier's low means what
 *   it means for CLOCK: every worker's updates of clocks <= low are in.
 * Answers: the row (STEP_RESP, seq = the receiver's clock, exp and slot
 * the mode and s in force at it) to the sender
 * when c - step_low <= s(c), with every waiting worker that the row's new
 * low releases; STEP_HELD to a repeated piece that waits; a first piece
 * that waits gets no answer (as an allreduce contribution). A STEP_PROBE
 * gets STEP_HELD (applied, waits: its wait bit is set again) or STEP_NAK
 * (not applied, or ready: its answer would be larger than the probe).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controls.h"

_Static_assert(SR_WIRE_MAX_WORKERS <= 64, "step_on and step_wait are one uint64_t per row");
_Static_assert(SR_WIRE_MAX_WORKERS <= UINT8_MAX, "step_cnt counts workers in a uint8_t");

int sr_step_alloc(sr_pipe_job *j)
{
    j->step_ring = j->params.ring;
    if (!j->store_words)
        return 0;
    j->step_on = calloc(j->rows, sizeof *j->step_on);
    j->step_wait = calloc(j->rows, sizeof *j->step_wait);
    j->step_low = calloc(j->rows, sizeof *j->step_low);
    j->step_last = calloc((size_t)j->rows * j->n, sizeof *j->step_last);
    j->step_cnt = calloc((size_t)j->rows * j->step_ring, sizeof *j->step_cnt);
    return !j->step_on || !j->step_wait || !j->step_low || !j->step_last || !j->step_cnt
               ? -ENOMEM
               : 0;
}

void sr_step_free(sr_pipe_job *j)
{
    free(j->step_on);
    free(j->step_wait);
    free(j->step_low);
    free(j->step_last);
    free(j->step_cnt);
    j->step_on = j->step_wait = NULL;
    j->step_low = j->step_last = NULL;
    j->step_cnt = NULL;
}

uint64_t sr_step_bytes(const sr_pipe_job *j)
{
    if (!j->store_words)
        return 0;
    return (uint64_t)j->rows * (sizeof *j->step_on + sizeof *j->step_wait +
                                sizeof *j->step_low + (uint64_t)j->n * sizeof *j->step_last +
                                (uint64_t)j->step_ring * sizeof *j->step_cnt);
}

void sr_step_clear_row(sr_pipe_job *j, uint32_t row)
{
    j->step_on[row] = 0;
    j->step_wait[row] = 0;
    j->step_low[row] = 0;
    memset(j->step_last + (size_t)row * j->n, 0, j->n * sizeof *j->step_last);
    memset(j->step_cnt + (size_t)row * j->step_ring, 0, j->step_ring * sizeof *j->step_cnt);
}

void sr_step_clear(sr_pipe_job *j)
{
    for (uint32_t r = 0; r < j->rows; r++)
        sr_step_clear_row(j, r);
}

/* ---- requests --------------------------------------------------------------- */

/* a - b in serial-number arithmetic. */
static int32_t serial_diff(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b);
}

/* Does worker w's piece of row r at clock c get the row now? */
static int ready(const sr_pipe_job *j, uint32_t r, uint32_t c)
{
    uint32_t s;

    sr_barrier_policy_at(&j->bar, c, NULL, &s);
    return sr_barrier_released(c, s, j->step_low[r]);
}

_Static_assert(SR_BARRIER_RING_MAX - 2 <= SR_WIRE_SLOT_MASK, "s fits a STEP_RESP's slot field");

/* The piece's row and words: [offset, offset + count) within one row of
 * the store. Count 0 or above a row, or a step of 0 pieces (aux), is
 * BAD_COUNT; a fitting count in the wrong place RANGE (as PUSH). */
static unsigned check_piece(sr_pipe_job *j, const sr_hdr *h)
{
    uint64_t end = (uint64_t)h->offset + h->count;

    if (h->count < 1 || h->count > j->elems || h->aux == 0)
        return SR_ST_BAD_COUNT;
    if (end > j->store_words || h->offset / j->elems != (uint32_t)((end - 1) / j->elems)) {
        j->c.range_errors++;
        return SR_ST_RANGE;
    }
    return SR_ST_OK;
}

/* STEP_RESP with row r's words to the workers in `to` (sender w included
 * when its bit is set), each replica's seq its receiver's clock of r. */
static void answer_row(sr_pipe *p, sr_pipe_job *j, uint32_t r, uint64_t to, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);
    uint32_t first = r * j->elems, words = j->store_words - first;

    if (!a)
        return;
    if (words > j->elems)
        words = j->elems;
    a->hdr.op = SR_OP_STEP_RESP;
    a->hdr.job = j->id;
    a->hdr.offset = first;
    a->hdr.count = (uint16_t)words;
    a->hdr.aux = j->step_low[r];
    a->multicast = 1;
    a->dest_seq = 1;
    for (uint32_t w = 0; w < j->n; w++) {
        sr_pipe_dest *d = &a->dests[a->n_dests];
        enum sr_sync_mode mode;
        uint32_t s;

        if (!(to & (UINT64_C(1) << w)))
            continue;
        d->peer = j->peer[w];
        d->worker = (uint16_t)w;
        d->seq = j->step_last[(size_t)r * j->n + w];
        sr_barrier_policy_at(&j->bar, d->seq, &mode, &s);
        d->mode = (uint8_t)mode;
        d->s = (uint16_t)s;
        a->n_dests++;
    }
    a->payload_len = 4u * (size_t)words;
    /* With lazy payloads the I/O converts the row straight into its frames. */
    if (p->lazy_payload)
        a->words = j->store + first;
    else
        sr_svc_be32_out(a->payload, j->store + first, words);
    sr_svc_count_tx(p, j, a);
    j->c.step_answers += a->n_dests;
}

/* STEP_HELD or STEP_NAK to the sender (sr_svc_reply_hdr), aux = the
 * row's low clock. */
static void answer_short(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                         uint8_t op, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_reply_hdr(p, j, src, h, op, out);

    if (a)
        a->hdr.aux = j->step_low[h->offset / j->elems];
    if (op == SR_OP_STEP_HELD)
        j->c.step_held++;
    else
        j->c.step_naks++;
}

/* The workers waiting for row r that its low now releases. */
static uint64_t released(const sr_pipe_job *j, uint32_t r)
{
    uint64_t out = 0;

    for (uint64_t wait = j->step_wait[r]; wait; wait &= wait - 1) {
        uint32_t w = (uint32_t)__builtin_ctzll(wait);

        if (ready(j, r, j->step_last[(size_t)r * j->n + w]))
            out |= UINT64_C(1) << w;
    }
    return out;
}

/* Where w's piece of row r at clock c stands: new and in order, applied
 * already, older than the last applied (a late copy), or refused (*st says
 * why: the rules at the top). */
enum piece_state { PIECE_NEW, PIECE_DUP, PIECE_OLD, PIECE_BAD };

static enum piece_state piece_state(const sr_pipe_job *j, uint32_t r, uint16_t w, uint32_t c,
                                    unsigned *st)
{
    uint64_t bit = UINT64_C(1) << w;
    uint32_t last = j->step_last[(size_t)r * j->n + w];
    int32_t d;

    if (j->step_on[r] & bit) {
        d = serial_diff(c, last);
        if (d == 0)
            return PIECE_DUP;
        if (d < 0)
            return PIECE_OLD;
        if (d > 1) {
            *st = SR_ST_MISMATCH; /* a clock of this row skipped */
            return PIECE_BAD;
        }
    } else if (j->step_on[r] && c != j->step_low[r] + 1) {
        *st = SR_ST_MISMATCH; /* not starting where the others started */
        return PIECE_BAD;
    }
    if (j->step_on[r] && serial_diff(c, j->step_low[r]) > (int32_t)j->step_ring - 1) {
        *st = SR_ST_CLOCK_AHEAD;
        return PIECE_BAD;
    }
    if (serial_diff(c, sr_barrier_low(&j->bar)) > (int32_t)j->step_ring) {
        *st = SR_ST_CLOCK_AHEAD;
        return PIECE_BAD;
    }
    return PIECE_NEW;
}

/* w's piece of clock c was applied: is it the last of the step's aux? */
static int step_complete(sr_pipe_job *j, uint16_t w, uint32_t c, uint32_t pieces)
{
    if (j->step_n[w] == 0 || j->step_clk[w] != c) {
        j->step_clk[w] = c;
        j->step_n[w] = 0;
    }
    return ++j->step_n[w] == pieces;
}

/* Add w's piece of clock c to row r; returns 1 if the row's low moved. */
static int apply(sr_pipe_job *j, uint32_t r, uint16_t w, uint32_t c, const sr_hdr *h,
                 const uint8_t *payload)
{
    uint8_t *cnt = j->step_cnt + (size_t)r * j->step_ring;
    uint32_t mask = j->step_ring - 1;

    /* uint32_t: the int32 sums wrap modulo 2^32, as in the switch ALU. */
    sr_svc_be32_in(j->store + h->offset, payload, h->count, SR_BE32_ADD);
    if (!j->step_on[r])
        j->step_low[r] = c - 1; /* the row's first step: nothing below c */
    j->step_on[r] |= UINT64_C(1) << w;
    j->step_last[(size_t)r * j->n + w] = c;
    j->c.steps++;
    if (++cnt[c & mask] < j->n || c != j->step_low[r] + 1)
        return 0;
    cnt[c & mask] = 0; /* free for the clock R later */
    j->step_low[r] = c;
    return 1;
}

void sr_step_piece(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   const uint8_t *payload, sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint64_t bit, to;
    uint32_t r, c = h->seq;
    unsigned st = SR_ST_OK;
    int moved = 0, complete = 0;
    enum piece_state ps;

    if (!sr_svc_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    bit = UINT64_C(1) << w; /* w < n <= 64: checked just above */
    st = check_piece(j, h);
    if (st != SR_ST_OK) {
        sr_svc_reply_error(p, j, src, h, st, out);
        return;
    }
    r = h->offset / j->elems;
    /* A worker streams its rows in order: bring its next row into the
     * cache while this one is added (a switch's SRAM has no such wait). */
    if (r + 1 < j->rows) {
        size_t first = (size_t)(r + 1) * j->elems, words = j->store_words - first;
        const char *next = (const char *)(j->store + first);

        if (words > j->elems)
            words = j->elems;
        for (size_t b = 0; b < 4u * words; b += 64)
            __builtin_prefetch(next + b, 1);
    }
    ps = piece_state(j, r, w, c, &st);
    if (ps == PIECE_BAD) {
        if (st == SR_ST_CLOCK_AHEAD)
            j->c.clock_ahead++;
        else
            j->c.mismatches++;
        sr_svc_reply_error(p, j, src, h, st, out);
        return;
    }
    if (ps == PIECE_OLD) {
        j->c.stale_dropped++;
        return;
    }
    sr_barrier_note(&j->bar, c);
    if (ps == PIECE_NEW) {
        moved = apply(j, r, w, c, h, payload);
        complete = step_complete(j, w, c, h->aux);
    } else
        j->c.step_dups++;
    to = moved ? released(j, r) : 0;
    if (ready(j, r, c))
        to |= bit;
    else
        j->step_wait[r] |= bit;
    j->step_wait[r] &= ~to;
    if (to)
        answer_row(p, j, r, to, out);
    else if (ps == PIECE_DUP)
        answer_short(p, j, src, h, SR_OP_STEP_HELD, out);
    else
        j->c.step_waits++;
    if (complete)
        sr_barrier_job_record(p, j, h, out);
}

void sr_step_probe(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint32_t r;
    unsigned st;

    if (!sr_svc_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    j->c.step_probes++;
    /* The probe's own count is 0: check the row by its offset alone. */
    if (h->offset >= j->store_words) {
        j->c.range_errors++;
        sr_svc_reply_error(p, j, src, h, SR_ST_RANGE, out);
        return;
    }
    r = h->offset / j->elems;
    if (piece_state(j, r, w, h->seq, &st) != PIECE_DUP || ready(j, r, h->seq)) {
        answer_short(p, j, src, h, SR_OP_STEP_NAK, out);
        return;
    }
    j->step_wait[r] |= UINT64_C(1) << w;
    answer_short(p, j, src, h, SR_OP_STEP_HELD, out);
}
