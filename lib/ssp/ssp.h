/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssp.h - the SSP modules: the clock (clock.c: the barrier and the worker's
 * view of it) and the parameter store (store.c: push and pull). Each has
 * its state and its op class here; their public calls (serene_clock*,
 * serene_get_clock_info, serene_push*, serene_pull*, serene_store_capacity)
 * live in their files.
 */
#ifndef SERENE_SSP_SSP_H
#define SERENE_SSP_SSP_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/engine.h"
#include "proto/wire.h"
#include "reliab/window.h"

/* The worker's view of the barrier: written by the engine, read by anyone. */
typedef struct sr_sync_view {
    _Atomic uint32_t clock, low, high, mode, staleness;
} sr_sync_view;

/* The stream mode (stale.c): SSP over the streaming allreduce. Each
 * serene_stale_start ends a clock; the clocks are announced to the
 * barrier in order on the engine's side lane, one in flight, each answered
 * PROCEED or HOLD with the policy in force at it, which serene_stale_bound
 * hands out. */
#define SR_STALE_POLICIES 64u /* answered clocks whose policy is kept */
enum { SR_STALE_UNUSED, SR_STALE_STREAM, SR_STALE_CLASSIC };
typedef struct sr_stale {
    _Atomic uint32_t started;  /* clocks started: the next one's number (API thread) */
    _Atomic uint32_t answered; /* clocks answered, in order: the lane's next clock */
    /* answered clock c: (c << 32) | mode << 24 | s, at index c % SR_STALE_POLICIES */
    _Atomic uint64_t policy[SR_STALE_POLICIES];
    _Atomic int err;  /* the switch refused the lane's CLOCK: a serene error code */
    _Atomic int used; /* SR_STALE_*: the stream mode and serene_clock/step exclude each other */
    /* --- engine only ------------------------------------------------------ */
    int busy; /* CLOCK(answered) is in flight on the side lane */
} sr_stale;

typedef struct sr_clock {
    sr_sync_view sync;
    sr_stale stale;
    /* --- engine only ------------------------------------------------------ */
    int held; /* the current CLOCK was answered HOLD */
    uint32_t held_s;
} sr_clock;

/* Worker-side state of one request in flight (slot j mod window). */
typedef struct sr_req_slot {
    uint8_t busy;     /* a request is in flight */
    uint8_t resent;   /* resent: its answer delay is not the path's */
    uint16_t count;   /* words it moves */
    uint32_t offset;  /* its store word */
    uint32_t req_seq; /* its push / pull number */
    uint64_t sent_ns; /* when it went */
} sr_req_slot;

typedef struct sr_store {
    _Atomic uint32_t words; /* capacity, from JOIN_ACK; any thread reads it */
    const sr_clock *clock;  /* the clock module's state: a push carries the clock */
    /* --- engine only ------------------------------------------------------ */
    uint32_t push_seq; /* last push number used; the switch dedups on it */
    uint32_t pull_seq; /* last pull request number */
    uint32_t req_base, n_req, req_done; /* requests of the current push/pull */
    uint32_t w_eff;    /* slots the current push/pull uses */
    uint8_t *pulled;   /* per store word: its 4 wire bytes (big-endian) at this
                          worker's last read, so that keeping it is a copy */
    sr_req_slot *slots; /* the engine's window of slots */
    sr_arw win;         /* how many requests may be in flight (reliab/window.h); persists */
} sr_store;

/* The step (step.c): push, clock and pull of one iteration as one stream
 * of row pieces, each answered with its row once the barrier allows. */
typedef struct sr_step_piece {
    uint8_t busy;    /* in flight, unanswered */
    uint8_t probed;  /* probed or resent: its answer delay is not the path's */
    uint32_t start;  /* its first store word */
    uint16_t count;  /* words it moves */
    uint64_t sent_ns;      /* when it went */
    uint64_t probe_out_ns; /* when its last probe went, unanswered yet (0: none) */
    uint8_t probe[SR_WIRE_HDR_LEN]; /* its STEP_PROBE */
} sr_step_piece;

typedef struct sr_step {
    sr_clock *clock; /* the clock module's: a step ends the clock */
    sr_store *store; /* the store module's: capacity and the delta-pull view */
    /* --- engine only ------------------------------------------------------ */
    uint32_t clk;               /* the clock the current step ends */
    uint32_t n_pieces, w_eff;   /* pieces of the current step, slots it uses */
    uint32_t done;              /* pieces answered */
    uint32_t min_low;           /* the smallest row low clock among the answers */
    int held;                   /* some piece was answered STEP_HELD */
    int nonfinite;              /* some piece's update held NaN/Inf: sent as zeros */
    sr_step_piece *pieces;      /* the engine's window of slots */
    sr_arw win;                 /* how many pieces may be in flight (reliab/window.h); persists */
} sr_step;

extern const sr_op_class sr_clock_class;
/* stale.c, for clock.c: the side lane's owner (engine thread), and an
 * answer to no clock call (PROCEED or HOLD): 1 if it was the lane's. */
void sr_stale_own(sr_clock *ck, sr_engine *e);
int sr_stale_answer(sr_clock *ck, sr_engine *e, const sr_hdr *h, const uint8_t *payload,
                    uint64_t now);
/* Claim the context for serene_clock/step (SR_STALE_CLASSIC) or the
 * stream mode: 0, or SERENE_ERR_INVAL (logged) when the other one has it. */
int sr_stale_claim(sr_clock *ck, const sr_engine *e, int use);
/* Plug it after the clock: its init finds the clock's state. */
extern const sr_op_class sr_store_class;
/* Plug it after the clock and the store. */
extern const sr_op_class sr_step_class;

/* An op's range cut at the store's rows (the job's elems_per_pkt words),
 * as push, pull and step send it: piece j is words [*start, *end); there
 * are sr_store_pieces of them (count >= 1). */
void sr_store_piece(const sr_engine *e, const serene_op *op, uint32_t j, size_t *start,
                    size_t *end);
uint32_t sr_store_pieces(const sr_engine *e, const serene_op *op);
/* Store words for the wire at pl: n int32 words (src_i32) as they are, or
 * n floats (src) in the store's fixed point, saturations counted. */
void sr_store_encode(sr_engine *e, uint8_t *pl, const float *src, const int32_t *src_i32,
                     uint32_t n);
/* Store words [word, word + n) read as payload: into dst_i32 or dst (the
 * store's fixed point), absolute or, with SERENE_PULL_DELTA or
 * SERENE_STEP_OTHERS, minus this worker's view of them from its last read;
 * own (may be NULL: n words on the wire) is subtracted too. The view
 * becomes the words read. */
void sr_store_read(const sr_store *st, const sr_engine *e, uint32_t word, uint32_t n,
                   const uint8_t *payload, const uint8_t *own, unsigned flags, float *dst,
                   int32_t *dst_i32);

#endif /* SERENE_SSP_SSP_H */
