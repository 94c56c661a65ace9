/* SPDX-License-Identifier: Apache-2.0 */
/*
 * straggler.h - seeded, per-worker straggler injection (the paper's
 * patterns). Each model decides, at every iteration, how long the worker
 * sleeps on top of its real work:
 *
 *   none              never
 *   slow:P:MIN:MAX    slow_worker: with probability P, U(MIN, MAX) x T
 *   fail:P:MS         failure: once, at the first iteration drawn with
 *                     probability P, a pause of MS milliseconds
 *   hetero:F          heterogeneous: always (F - 1) x T, i.e. the worker runs
 *                     F times slower than the mean iteration time T
 *   burst:F:START:LEN transient: (F - 1) x T at the delay calls START ..
 *                     START + LEN - 1 (0-based, counted from the first call:
 *                     the first iteration after the warm-up), else nothing
 *
 * T is the mean iteration time without stragglers (given, or measured by
 * the caller during a warm-up). The random stream depends only on the
 * seed and the rank, never on timing, so every policy of a comparison sees
 * the same sequence of slow iterations.
 */
#ifndef TRAIN_STRAGGLER_H
#define TRAIN_STRAGGLER_H

#include <stddef.h>
#include <stdint.h>

typedef enum straggler_kind {
    STRAG_NONE,
    STRAG_SLOW,
    STRAG_FAIL,
    STRAG_HETERO,
    STRAG_BURST
} straggler_kind;

typedef struct straggler {
    straggler_kind kind;
    double p, lo, hi; /* slow: P, MIN, MAX; fail: P, MS in lo; hetero, burst: F in lo */
    uint64_t start, len; /* burst: the calls [start, start + len) are slow */
    uint64_t calls;      /* straggler_delay calls since straggler_seed */
    uint64_t rng;
    int failed; /* fail: the pause happened */
} straggler;

/* Parse spec (the forms above). Returns -1 with a reason in why. */
int straggler_parse(straggler *s, const char *spec, char *why, size_t why_len);

/* Seed the stream of this rank. */
void straggler_seed(straggler *s, uint64_t seed, int rank);

/* Delay in seconds for the next iteration, given the mean iteration time
 * mean_s. Advances the random stream by the same amount whatever the
 * outcome. */
double straggler_delay(straggler *s, double mean_s);

/* Sleep d seconds (d <= 0: return at once). */
void straggler_sleep(double d);

#endif /* TRAIN_STRAGGLER_H */
