/* SPDX-License-Identifier: Apache-2.0 */
/*
 * window.h - the congestion window of the worker's data packets: how many
 * units a worker may have in flight, adapted to congestion (AIMD), and
 * which ready unit goes next. The allreduce's units are its rounds, the
 * step's its pieces (one per store row).
 *
 * The units of a call are numbered in the order every worker sends them
 * (allreduce.c, ssp/step.c). A unit is ready once its slot's previous
 * unit is answered; ready units go out lowest first, while fewer than
 * cwnd are in flight. The lowest unit not yet answered (the base) may
 * always go: so no worker waits for another forever. For the allreduce,
 * the unit no worker has the answer of yet is, on every worker, the base
 * or below it (answers below it come back without the others, as shadow
 * copies), so every worker sends it. Below, "round" reads "unit".
 *
 * cwnd starts at SR_ARW_INIT rounds (or the slots, if fewer), grows by
 * one per answer (slow start: it doubles per round trip) up to the slots,
 * to where it was last cut or to where the path begins to queue, and from
 * there by one per cwnd answers, up to the slots; it halves, at most once per window of
 * rounds sent, on a loss seen while the path is queueing: the smoothed
 * answer delay at least twice the smallest seen plus SR_ARW_QUEUE_NS. A
 * loss on a path without a queue (a lossy link, a drop by a busy host) is
 * not congestion: halving would only slow the job.
 */
#ifndef SERENE_RELIAB_WINDOW_H
#define SERENE_RELIAB_WINDOW_H

#include <stdint.h>

/* The window never falls below slots / SR_ARW_FLOOR_DIV (nor 2): in-network
 * aggregation loses a round when any of N workers loses a packet, so loss
 * is N times noisier a signal than for one TCP flow, and each loss costs a
 * timeout; a window cut to a few rounds would make random loss (which
 * the delay test cannot always tell from a queue, e.g. on a host whose
 * cores are all busy) cost more than the congestion it avoids. */
#define SR_ARW_FLOOR_DIV 4
/* The first window: what 3 workers can send at once into a queue of 64
 * packets (a software switch's), and reached from it in two or three
 * round trips where the path takes the whole pool (on a fast path, well
 * under a millisecond, once per context). */
#define SR_ARW_INIT 16
/* The base delay is the smallest of the last 5 to 10 s: long enough that a
 * standing queue does not become the base, short enough to follow a path
 * that changed. */
#define SR_ARW_MIN_PERIOD_NS 5000000000ull
/* Queueing delay above twice the base delay that counts as congestion. */
#define SR_ARW_QUEUE_NS 200000ull

typedef struct sr_arw {
    uint64_t *heap;      /* ready rounds: unit << 32 | slot, a min-heap */
    uint32_t n, cap;
    uint32_t inflight;   /* rounds sent and not yet answered */
    uint32_t cwnd, cwnd_min, cwnd_max, cwnd_acc;
    uint32_t ssthresh;   /* slow start below it */
    uint32_t base;       /* lowest unit not yet answered */
    uint32_t units, slots; /* the call's (sr_arw_call); unit u is in slot u % slots */
    uint32_t *ndone;     /* per slot: its units answered this call */
    uint32_t sent_hi;    /* units below it were sent */
    uint32_t recover;    /* a loss of a unit below it does not halve again */
    uint64_t min_rtt_ns;   /* smallest answer delay of the last one or two periods; 0 = none */
    uint64_t min_cur_ns;   /* ... of this period (0 = none yet) */
    uint64_t min_prev_ns;  /* ... of the period before (0 = none) */
    uint64_t period_ns;    /* when this period began */
    uint64_t srtt_ns;      /* smoothed answer delay of those rounds (queue and waits
                            * included: the delay the queueing test reads); 0 = none */
} sr_arw;

/* A window over slots slots (>= 1). Returns 0 or -ENOMEM / -EINVAL. */
int sr_arw_init(sr_arw *w, uint32_t slots);
void sr_arw_fini(sr_arw *w);
/* A new call: nothing ready or in flight; cwnd and the delays stay. */
void sr_arw_begin(sr_arw *w);
/* A new call of units units over slots slots (1 <= slots <= the window's,
 * slots <= units): sr_arw_begin, and the first unit of every slot ready.
 * Unit u goes in slot u % slots, once unit u - slots is answered. */
void sr_arw_call(sr_arw *w, uint32_t units, uint32_t slots);
/* Unit unit of the call was answered (once per unit): sr_arw_answered
 * with the new base and the smoothed delay, and its slot's next unit, if
 * any, ready. */
void sr_arw_done(sr_arw *w, uint32_t unit);
/* Slot slot's round of unit unit is ready. At most one per slot. */
void sr_arw_ready(sr_arw *w, uint32_t unit, uint32_t slot);
/* The next ready round the window admits: 1 with *unit and *slot (it now
 * counts as in flight), or 0. */
int sr_arw_next(sr_arw *w, uint32_t *unit, uint32_t *slot);
/* A round in flight was answered; base = the new lowest unanswered unit;
 * srtt_ns = the current smoothed answer delay: once it shows a queue,
 * slow start ends (a window that already fills one would double into the
 * switch's drops). */
void sr_arw_answered(sr_arw *w, uint32_t base, uint64_t srtt_ns);
/* An answer delay of a round answered at its first try (no probe), at
 * now_ns (monotonic): the base delay and the smoothed delay (srtt_ns)
 * learn it. The caller passes srtt_ns to the calls below. */
void sr_arw_rtt(sr_arw *w, uint64_t rtt_ns, uint64_t now_ns);
/* Unit unit was lost; srtt_ns = the current smoothed answer delay.
 * Returns 1 if that halved the window. */
int sr_arw_loss(sr_arw *w, uint32_t unit, uint64_t srtt_ns);
/* Unit unit's timer fired while answers to other rounds kept coming, on
 * a path that queues (srtt_ns, which probe answers teach, at least twice
 * the base delay plus SR_ARW_QUEUE_NS): the switch is slower than the
 * window assumes (a software switch that serves a few thousand packets a
 * second, its queue full of this worker's rounds), a delay and not a
 * loss. A timer on a path without a queue is a loss or a late peer, and
 * changes nothing here. Halves cwnd, at most once per window of rounds
 * sent as for a loss, down to 2 rather than the loss floor: a slow
 * switch's short queue can need that, and answers that come promptly
 * again grow it back. Returns 1 if it halved. */
int sr_arw_delay(sr_arw *w, uint32_t unit, uint64_t srtt_ns);

#endif /* SERENE_RELIAB_WINDOW_H */
