/* SPDX-License-Identifier: Apache-2.0 */
/*
 * barrier.h - the in-switch SSP barrier of one job and its clock-indexed
 * policy rules, shared by serene-switch and (as the reference it mirrors)
 * the P4 program. See DESIGN.md, "Synchronization in the switch".
 *
 * A worker ends its iteration c (c = first_clock, first_clock + 1, ...) by
 * sending CLOCK(c, w). The barrier keeps:
 * - low: the largest clock that every worker has finished (first_clock - 1
 *   until all have finished first_clock);
 * - high: the largest clock any worker has reported;
 * - a ring of R = 2^k bitmaps (one uint64_t each, bit w = worker w), entry
 *   c mod R for the clocks low+1 .. low+R. A worker's bits in the ring always
 *   form a prefix low+1 .. (its last clock), and entries above high are 0.
 * - the policy rules: (start clock, mode, s), ordered by start; the rule in
 *   force at clock c is the last one whose start <= c.
 *
 * The answer to CLOCK(c, w) is PROCEED iff c - low <= s(c), with low taken
 * after the CLOCK was recorded, else HOLD. When low moves the switch
 * multicasts RELEASE(low); a worker held at c goes on once c - low <= s, with
 * the s of its HOLD answer (sr_barrier_released).
 *
 * Clocks are uint32_t compared in serial-number arithmetic
 * ((int32_t)(a - b)), so a job may run past 2^32 clocks.
 *
 * Invariants:
 * - Pure: no I/O, no clock, no globals, no randomness; the ring is allocated
 *   at init only. Memory is R words per job (O(R*N) bits), never O(clock).
 * - Every clock's policy is fixed once any worker may have been answered for
 *   it: a change takes effect at a clock E > high (the consistent hot swap).
 * - Idempotent: a CLOCK that was already recorded changes nothing and gets
 *   the answer the current state gives (PROCEED once released).
 * - Not thread-safe: one thread owns a barrier.
 */
#ifndef SERENE_SWSWITCH_BARRIER_H
#define SERENE_SWSWITCH_BARRIER_H

#include <stdint.h>

#include "proto/wire.h"

/* One bitmap word per ring entry holds every worker of a job. */
#define SR_BARRIER_MAX_WORKERS 64u
/* Ring entries when sr_barrier_params.ring is 0: room for s up to 62. */
#define SR_BARRIER_RING_DEFAULT 64u
/* Largest ring: keeps the worst-case work of one CLOCK (the loops over the
 * ring) and the memory of a job small. */
#define SR_BARRIER_RING_MAX 4096u
/* Policy rules kept per job: the one in force at low plus the changes asked
 * for since. A P4 range-match table of this size per job stays cheap. */
#define SR_BARRIER_MAX_RULES 32u
/* A change may be asked for at most this far past low. Keeping every rule
 * start within 2^30 of low leaves the serial comparisons between rule starts
 * and live clocks (all within R of low) far from the 2^31 ambiguity. */
#define SR_BARRIER_MAX_AHEAD (1u << 30)

/* enum sr_sync_mode (BSP: s = 0; SSP: at most s clocks ahead of low; ASP:
 * never held in principle, but the ring bounds any lead, so ASP behaves as
 * SSP(R - 2)) comes from the wire format, proto/wire.h. */

enum sr_barrier_decision {
    SR_BARRIER_PROCEED = 0,
    SR_BARRIER_HOLD = 1,
};

typedef struct sr_barrier_params {
    uint32_t n_workers;       /* 1..64; no default (0 is refused) */
    uint32_t ring;            /* R, a power of 2 in [2, SR_BARRIER_RING_MAX],
                                 >= s + 2; default SR_BARRIER_RING_DEFAULT */
    uint32_t first_clock;     /* the clock of the first iteration; default 0 */
    enum sr_sync_mode mode;   /* initial policy, from first_clock; default BSP */
    uint32_t s;               /* for SSP, <= R - 2; ignored otherwise; default 0 */
} sr_barrier_params;

/* The answer to one CLOCK, and what the switch must do besides. */
typedef struct sr_barrier_result {
    enum sr_barrier_decision decision;
    enum sr_sync_mode mode; /* the policy in force at the CLOCK's clock c ... */
    uint32_t s;             /* ... with its s (R - 2 for ASP, 0 for BSP) */
    uint32_t low, high;     /* after the CLOCK */
    uint8_t advanced;       /* low moved: multicast RELEASE(low) to the job */
    uint8_t duplicate;      /* already recorded (or older than low): no change */
} sr_barrier_result;

/* One policy rule as a clock range [from, to), for the control plane and for
 * generating the P4 range-match table. Ranges are in serial arithmetic: when
 * to < from numerically the range wraps past 2^32 and a range-match table
 * needs two entries for it. */
typedef struct sr_barrier_range {
    uint32_t from;
    uint32_t to;            /* the next rule's start; meaningless when open */
    uint8_t open;           /* 1 for the last rule: [from, forever) */
    enum sr_sync_mode mode;
    uint32_t s;             /* as applied: 0 for BSP, R - 2 for ASP */
} sr_barrier_range;

/* Counters, in the order they are printed. The X-macro keeps the struct
 * fields and their printed names in one list. clocks = proceeds + holds +
 * violations. */
#define SR_BARRIER_COUNTERS(X)                                                                    \
    X(clocks)         /* CLOCKs from a valid worker, violations included */                      \
    X(duplicates)     /* CLOCKs already recorded or older than low (no change) */                \
    X(holds)          /* HOLD answers */                                                          \
    X(proceeds)       /* PROCEED answers */                                                       \
    X(advances)       /* CLOCKs that moved low: one RELEASE multicast each */                    \
    X(violations)     /* CLOCKs beyond the ring (c > low + R), refused */                        \
    X(policy_changes) /* successful sr_barrier_set_policy calls */

typedef struct sr_barrier_counters {
#define SR_BARRIER_X_FIELD(name) uint64_t name;
    SR_BARRIER_COUNTERS(SR_BARRIER_X_FIELD)
#undef SR_BARRIER_X_FIELD
} sr_barrier_counters;

typedef struct sr_barrier_rule {
    uint32_t start;
    uint32_t s;
    enum sr_sync_mode mode;
} sr_barrier_rule;

/* A job's barrier. Callers own the struct (embed it anywhere); its fields
 * are private to barrier.c: use the functions. */
typedef struct sr_barrier {
    uint64_t *ring;    /* R bitmaps, allocated by sr_barrier_init */
    uint64_t full;     /* the bitmap with all N workers */
    uint32_t mask;     /* R - 1 */
    uint32_t n_workers;
    uint32_t low, high;
    unsigned n_rules;  /* >= 1 once initialised */
    sr_barrier_rule rules[SR_BARRIER_MAX_RULES];
    sr_barrier_counters cnt;
} sr_barrier;

/* Fill p with the defaults above; the caller then sets n_workers. */
void sr_barrier_params_init(sr_barrier_params *p);

/* Set up b (any previous contents are overwritten, not freed) from p, which
 * is only read during the call. Allocates the ring.
 * Returns 0, -EINVAL (b or p NULL, n_workers outside 1..64, ring not a power
 * of 2 or outside [2, SR_BARRIER_RING_MAX], unknown mode), -ERANGE (SSP with
 * s > R - 2) or -ENOMEM. On error b holds no allocation (fini is safe). */
int sr_barrier_init(sr_barrier *b, const sr_barrier_params *p);

/* Free the ring. Accepts NULL; safe to call twice and after a failed init
 * of a zeroed struct. */
void sr_barrier_fini(sr_barrier *b);

/* Record CLOCK(c, w) and fill *r (owned by the caller).
 * - c <= low, or w already recorded at c: a duplicate; nothing changes.
 * - low < c <= low + R: w is recorded at c and at every clock in (low, c)
 *   it had not reported (a CLOCK implies the earlier iterations ended), high
 *   becomes max(high, c), and low advances over every entry now full.
 * - c > low + R: a protocol violation (a worker that obeys its answers never
 *   gets there): nothing changes but the counters, *r reports the current
 *   low and high with decision HOLD, and the call returns -ERANGE.
 * Returns 0, -ERANGE (above) or -EINVAL (b or r NULL, w >= n_workers; *r
 * untouched, nothing counted). */
int sr_barrier_clock(sr_barrier *b, uint32_t w, uint32_t c, sr_barrier_result *r);

/* A clock c about to be decided elsewhere (a step's row, step.c): high
 * becomes max(high, c), so that no policy change can take effect at c any
 * more. The caller checked c - low <= R. */
void sr_barrier_note(sr_barrier *b, uint32_t c);

/* Change the policy while the job runs: the new (mode, s) is in force from
 * E = max(want_from, high + 1) (serial) on; rules starting at or after E are
 * dropped. want_from is compared with high + 1 in serial arithmetic: one
 * not after it (up to 2^31 behind) means "as soon as possible" (passing the
 * current low does that); a later one must lie at most SR_BARRIER_MAX_AHEAD
 * past low. E is written to *effective when effective is not NULL. When
 * the rule left in force before E already has this (mode, s), no rule is
 * added (so such a request succeeds even with the list full).
 * Returns 0, -EINVAL (b NULL, unknown mode), -ERANGE (SSP with s > R - 2, or
 * want_from more than SR_BARRIER_MAX_AHEAD past low) or -ENOSPC (already
 * SR_BARRIER_MAX_RULES rules that cannot be dropped; retry after low
 * advances). Nothing changes on error. */
int sr_barrier_set_policy(sr_barrier *b, enum sr_sync_mode mode, uint32_t s, uint32_t want_from,
                          uint32_t *effective);

/* The policy in force at clock c. Exact for every c >= low (every clock a
 * live worker can send); older clocks, whose rules may have been dropped,
 * get the oldest rule kept. mode and s may be NULL. */
void sr_barrier_policy_at(const sr_barrier *b, uint32_t c, enum sr_sync_mode *mode, uint32_t *s);

/* Write up to cap rules, oldest first, as [from, to) ranges to out (may be
 * NULL when cap is 0). The oldest is the rule in force at low. Returns the
 * number of rules, which may exceed cap. */
unsigned sr_barrier_rules(const sr_barrier *b, sr_barrier_range *out, unsigned cap);

/* Current low and high clocks, and a copy of the counters. */
uint32_t sr_barrier_low(const sr_barrier *b);
uint32_t sr_barrier_high(const sr_barrier *b);
void sr_barrier_counters_get(const sr_barrier *b, sr_barrier_counters *c);

/* "BSP", "SSP", "ASP", or "?" for an unknown value. */
const char *sr_sync_mode_name(enum sr_sync_mode mode);

/* Whether a worker held at clock c with the s of its HOLD answer may go on
 * once the barrier's low clock is low (from a RELEASE or a later answer). */
static inline int sr_barrier_released(uint32_t c, uint32_t s, uint32_t low)
{
    return (int32_t)(c - low) <= (int32_t)s;
}

#endif /* SERENE_SWSWITCH_BARRIER_H */
