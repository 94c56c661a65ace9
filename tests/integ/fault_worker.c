/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_worker.c - one rank of the fault tests (tests/integ/test_faults.sh),
 * configured from SERENE_* like any worker (the script, or serene-run, sets
 * them). Every value is checked exactly: inputs are small integers, so an
 * allreduce sum is exact in fixed point, and the store is exact anyway.
 *
 *   fault_worker exact [--rounds R] [--sizes N,N,...] [--words W] [--progress]
 *       R rounds of: an allreduce of each size, then push W int32 words,
 *       clock, pull them back (absolute: the sum of every rank's pushes so
 *       far), clock. Fails on any wrong value, any error, and any call that
 *       outlives its deadline (timeout_ms + DEADLINE_SLACK_MS). With
 *       --progress, prints "rank R: round K ok" after each round (the
 *       churn tests kill a run once every rank is in it).
 *
 *   fault_worker ar-loop [--count N] [--max-calls M]
 *       Allreduces N values until a call fails (the test kills a rank).
 *       Prints "rank R: call K ok" for K = 1..READY_CALLS, then for the
 *       failed call "rank R: allreduce call K returned NAME at T ns after D
 *       ms in the call (deadline MS ms)" (T: CLOCK_MONOTONIC, as
 *       `ssp_check kill` prints the kill). Then checks that the next call
 *       returns SERENE_ERR_BROKEN at once. Exit 3 when the failure was
 *       SERENE_ERR_TIMEOUT within the deadline and the next call BROKEN.
 *
 *   fault_worker asp --before K --ring R --go-file PATH [--victim V]
 *       For a job under ASP with barrier ring R (the switch does not tell
 *       workers R, hence --ring): push 1 to word `rank` and clock, K times.
 *       The victim then prints "rank V: K clocks done, waiting to be killed" and
 *       sleeps (bounded); the others print "rank R: K clocks done", wait for
 *       PATH to exist (the test creates it once the victim is dead), then go
 *       on: push, clock, pull. ASP never holds them until the ring bound:
 *       with low stuck at K - 1 (the victim's last clock), clocks K ..
 *       K + R - 3 must proceed at once, and clock K + R - 2 is held until
 *       its deadline (SERENE_ERR_TIMEOUT). Checked: R - 2 clocks after the
 *       kill, none held, each pull showing the victim's word stuck at K and
 *       its own word exact; then the held clock at the bound. Exit 0.
 *
 *   fault_worker restart --go-file PATH --new-nonce X [--nonblocking]
 *                        [--sizes N] [--words W]
 *       Phase 1: rounds of allreduce (checked exactly), push, clock, pull,
 *       clock until a call fails (the test kills the switch and starts a
 *       new one on the same port). Prints "rank R: OP returned NAME at T ns
 *       after D ms in the call (deadline MS ms)" for each op of the failed
 *       round, then "rank R: phase 1 ended". With --nonblocking the five
 *       ops of a round are all started (the *_start forms) before any is
 *       waited for. Phase 2, once PATH exists: a new context with job nonce
 *       X (a new incarnation) runs 3 rounds of `exact`. Exit 0 when every
 *       op of the failed round ended with an error within its deadline and
 *       phase 2 passed.
 *
 * Every loop is bounded. Exit status: 0 ok; 1 a check failed; 2 bad usage;
 * 3 ar-loop's expected timeout.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serene/serene.h"
#include "timing.h"
#include "worker.h"

#define MAX_RANKS 64
#define MAX_SIZES 8
#define READY_CALLS 3
#define DEADLINE_SLACK_MS 1000 /* slack past a call's deadline (a busy host) */
#define WAIT_GO_MS 30000      /* the go file comes within this, or the test is broken */
#define VICTIM_WAIT_MS 60000  /* a victim nobody kills gives up */
#define LOOP_MAX 1000000      /* bound of the until-it-fails loops */

typedef struct opts {
    const char *mode, *go_file;
    int rounds, words, count, max_calls, before, victim, ring, nonblocking, progress;
    size_t sizes[MAX_SIZES];
    int nsizes;
    uint32_t new_nonce;
    int have_nonce;
} opts;

static int rank_ = -1;

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "rank %d: FAIL: ", rank_);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* ---- exact values -------------------------------------------------------- */

/* Allreduce input of rank r in round it at index i: an integer in
 * [-1000, 1000], exact in any quantization of up to 64 workers. */
static float ar_in(int r, int it, size_t i)
{
    return (float)((int)((i * 7 + (size_t)it * 13 + (size_t)r * 31) % 2001) - 1000);
}

static int32_t push_in(int r, int it, int k)
{
    return (int32_t)(r * 1000003 + it * 7919 + k * 31 - 50000);
}

typedef struct run {
    serene_ctx *ctx;
    serene_config cfg; /* effective */
    float *send, *recv;
    int32_t *words, *back;
    float *fwords, *fback; /* restart's phase 1 */
    size_t maxn;
    double worst_ms;
    int calls;
} run;

/* Time one call; complain if it outlived its deadline. */
static int timed(run *r, const char *what, int rc, uint64_t t0)
{
    double ms = (double)(tc_now_ns() - t0) / 1e6;

    r->calls++;
    if (ms > r->worst_ms)
        r->worst_ms = ms;
    if (ms > r->cfg.timeout_ms + DEADLINE_SLACK_MS)
        return fail("%s took %.0f ms, past its deadline of %d ms", what, ms, r->cfg.timeout_ms);
    if (rc)
        return fail("%s: %s (%s)", what, serene_err_name(rc), serene_strerror(rc));
    return 0;
}

/* One round: allreduces, push, clock, pull, clock. Returns failures. */
static int exact_round(run *r, const opts *o, int it)
{
    const int n = r->cfg.world_size;
    char what[64];
    int failures = 0;
    uint64_t t0;

    for (int s = 0; s < o->nsizes; s++) {
        size_t cnt = o->sizes[s], bad = 0;

        for (size_t i = 0; i < cnt; i++)
            r->send[i] = ar_in(rank_, it, i);
        snprintf(what, sizeof what, "round %d: allreduce of %zu", it, cnt);
        t0 = tc_now_ns();
        if (timed(r, what, serene_allreduce(r->ctx, r->send, r->recv, cnt, SERENE_SUM), t0))
            return failures + 1;
        for (size_t i = 0; i < cnt; i++) {
            double want = 0;

            for (int q = 0; q < n; q++)
                want += ar_in(q, it, i);
            if ((double)r->recv[i] != want && bad++ < 3)
                fail("%s: [%zu] = %.9g, want exactly %.0f", what, i, (double)r->recv[i], want);
        }
        failures += bad > 0;
    }
    for (int k = 0; k < o->words; k++)
        r->words[k] = push_in(rank_, it, k);
    t0 = tc_now_ns();
    snprintf(what, sizeof what, "round %d: push", it);
    if (timed(r, what, serene_push_i32(r->ctx, 0, r->words, (size_t)o->words), t0))
        return failures + 1;
    t0 = tc_now_ns();
    snprintf(what, sizeof what, "round %d: clock after the push", it);
    if (timed(r, what, serene_clock(r->ctx), t0))
        return failures + 1;
    t0 = tc_now_ns();
    snprintf(what, sizeof what, "round %d: pull", it);
    if (timed(r, what, serene_pull_i32(r->ctx, 0, r->back, (size_t)o->words, 0), t0))
        return failures + 1;
    for (int k = 0, bad = 0; k < o->words; k++) {
        uint32_t want = 0;

        for (int q = 0; q < n; q++)
            for (int j = 0; j <= it; j++)
                want += (uint32_t)push_in(q, j, k);
        if ((uint32_t)r->back[k] != want && bad++ < 3) {
            fail("round %d: pulled word %d = %" PRId32 ", want exactly %" PRId32, it, k,
                 r->back[k], (int32_t)want);
            failures++;
        }
    }
    /* Nobody pushes round it + 1 before every rank has pulled round it. */
    t0 = tc_now_ns();
    snprintf(what, sizeof what, "round %d: clock after the pull", it);
    if (timed(r, what, serene_clock(r->ctx), t0))
        return failures + 1;
    return failures;
}

static int run_open(run *r, serene_config *cfg, const opts *o)
{
    int rc;

    memset(r, 0, sizeof *r);
    r->maxn = 1;
    for (int s = 0; s < o->nsizes; s++)
        r->maxn = o->sizes[s] > r->maxn ? o->sizes[s] : r->maxn;
    r->send = malloc(r->maxn * sizeof *r->send);
    r->recv = malloc(r->maxn * sizeof *r->recv);
    r->words = malloc((size_t)(o->words > 0 ? o->words : 1) * sizeof *r->words);
    r->back = malloc((size_t)(o->words > 0 ? o->words : 1) * sizeof *r->back);
    r->fwords = malloc((size_t)(o->words > 0 ? o->words : 1) * sizeof *r->fwords);
    r->fback = malloc((size_t)(o->words > 0 ? o->words : 1) * sizeof *r->fback);
    if (!r->send || !r->recv || !r->words || !r->back || !r->fwords || !r->fback)
        return fail("out of memory");
    rc = serene_ctx_create(&r->ctx, cfg);
    if (rc)
        return fail("serene_ctx_create (job %d, nonce %#x): %s", cfg->job_id, cfg->job_nonce,
                    serene_err_name(rc));
    serene_ctx_config(r->ctx, &r->cfg);
    return 0;
}

static void run_close(run *r)
{
    serene_ctx_destroy(&r->ctx);
    free(r->send);
    free(r->recv);
    free(r->words);
    free(r->back);
    free(r->fwords);
    free(r->fback);
    memset(r, 0, sizeof *r);
}

static void print_stats(const run *r, const char *what)
{
    serene_stats st;

    if (!r->ctx)
        return;
    serene_get_stats(r->ctx, &st);
    printf("rank %d: %s: %d calls, worst %.1f ms (deadline %d ms); sent %" PRIu64 " recv %" PRIu64
           " retrans %" PRIu64 " dup %" PRIu64 " rejected %" PRIu64 " timeouts %" PRIu64 "\n",
           rank_, what, r->calls, r->worst_ms, r->cfg.timeout_ms, st.pkts_sent, st.pkts_recv,
           st.retransmissions, st.duplicates, st.rejected, st.timeouts);
}

static int mode_exact(serene_config *cfg, const opts *o)
{
    run r;
    int failures = 0;

    if (run_open(&r, cfg, o)) {
        run_close(&r);
        return 1;
    }
    for (int it = 0; it < o->rounds && !failures; it++) {
        failures += exact_round(&r, o, it);
        if (!failures && o->progress)
            printf("rank %d: round %d ok\n", rank_, it);
    }
    if (!failures)
        printf("rank %d: exact: %d rounds, every allreduce and pull exact\n", rank_, o->rounds);
    print_stats(&r, "exact");
    run_close(&r);
    return failures ? 1 : 0;
}

/* ---- ar-loop: a rank is killed mid-allreduce ------------------------------ */

static int mode_ar_loop(serene_config *cfg, const opts *o)
{
    size_t n = (size_t)o->count;
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    serene_ctx *ctx = NULL;
    int rc, status = 1;

    if (!in || !out) {
        free(in);
        free(out);
        return fail("out of memory");
    }
    rc = serene_ctx_create(&ctx, cfg);
    if (rc) {
        free(in);
        free(out);
        return fail("serene_ctx_create: %s", serene_err_name(rc));
    }
    for (int call = 1; call <= o->max_calls; call++) {
        uint64_t t0;
        double ms;
        size_t bad = 0;

        for (size_t i = 0; i < n; i++)
            in[i] = ar_in(rank_, call, i);
        t0 = tc_now_ns();
        rc = serene_allreduce(ctx, in, out, n, SERENE_SUM);
        ms = (double)(tc_now_ns() - t0) / 1e6;
        if (rc) {
            uint64_t t1 = tc_now_ns();
            int rc2;
            double ms2;

            printf("rank %d: allreduce call %d returned %s at %" PRIu64 " ns after %.0f ms in "
                   "the call (deadline %d ms)\n",
                   rank_, call, serene_err_name(rc), t1, ms, cfg->timeout_ms);
            fflush(stdout);
            t0 = tc_now_ns();
            rc2 = serene_allreduce(ctx, in, out, n, SERENE_SUM);
            ms2 = (double)(tc_now_ns() - t0) / 1e6;
            printf("rank %d: the next call returned %s after %.1f ms\n", rank_,
                   serene_err_name(rc2), ms2);
            status = 3;
            if (rc != SERENE_ERR_TIMEOUT)
                status = fail("the pending call failed with %s, want SERENE_ERR_TIMEOUT",
                              serene_err_name(rc));
            if (ms > cfg->timeout_ms + DEADLINE_SLACK_MS)
                status = fail("the pending call returned %.0f ms after it started, past its "
                              "%d ms deadline",
                              ms, cfg->timeout_ms);
            if (call <= READY_CALLS)
                status = fail("call %d failed before the test could kill anyone", call);
            if (rc2 != SERENE_ERR_BROKEN || ms2 > 100)
                status = fail("after a timed-out allreduce the next one returned %s after "
                              "%.1f ms, want SERENE_ERR_BROKEN at once",
                              serene_err_name(rc2), ms2);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            double want = 0;

            for (int q = 0; q < cfg->world_size; q++)
                want += ar_in(q, call, i);
            if ((double)out[i] != want && bad++ < 3)
                fail("call %d: [%zu] = %.9g, want exactly %.0f", call, i, (double)out[i], want);
        }
        if (bad)
            break;
        if (call <= READY_CALLS) {
            printf("rank %d: call %d ok\n", rank_, call);
            fflush(stdout);
        }
        if (call == o->max_calls)
            fail("no call failed in %d calls: was a rank killed?", call);
    }
    serene_ctx_destroy(&ctx);
    free(in);
    free(out);
    return status;
}

/* ---- asp: a rank is killed, the others go on up to the ring bound -------- */

static int mode_asp(serene_config *cfg, const opts *o)
{
    const int n = cfg->world_size, k = o->before, r_ring = o->ring;
    serene_ctx *ctx = NULL;
    int32_t one = 1, words[MAX_RANKS];
    int rc, failures = 0, after = 0;
    serene_stats st;
    serene_clock_info ci;

    rc = serene_ctx_create(&ctx, cfg);
    if (rc)
        return fail("serene_ctx_create: %s", serene_err_name(rc));
    for (int c = 0; c < k; c++) {
        if ((rc = serene_push_i32(ctx, (size_t)rank_, &one, 1)) || (rc = serene_clock(ctx))) {
            failures += fail("clock %d before the kill: %s", c, serene_err_name(rc));
            goto out;
        }
    }
    if (rank_ == o->victim) {
        printf("rank %d: %d clocks done, waiting to be killed\n", rank_, k);
        fflush(stdout);
        tc_sleep_ms(VICTIM_WAIT_MS);
        failures += fail("the victim was not killed within %d ms", VICTIM_WAIT_MS);
        goto out;
    }
    printf("rank %d: %d clocks done\n", rank_, k);
    fflush(stdout);
    if (tc_wait_file(o->go_file, WAIT_GO_MS)) {
        failures += fail("no %s within %d ms", o->go_file, WAIT_GO_MS);
        goto out;
    }
    printf("rank %d: go at %" PRIu64 " ns\n", rank_, tc_now_ns());
    /* Clocks K .. K + R - 3 proceed at once; K + R - 2 meets the ring. */
    for (int c = k; c < k + r_ring && failures < 5; c++) {
        uint64_t t0;
        double ms;

        if ((rc = serene_push_i32(ctx, (size_t)rank_, &one, 1))) {
            failures += fail("push in clock %d: %s", c, serene_err_name(rc));
            break;
        }
        t0 = tc_now_ns();
        rc = serene_clock(ctx);
        ms = (double)(tc_now_ns() - t0) / 1e6;
        serene_get_stats(ctx, &st);
        serene_get_clock_info(ctx, &ci);
        if (c <= k + r_ring - 3) {
            if (rc) {
                failures += fail("clock %d (%d after the kill) returned %s after %.0f ms: ASP "
                                 "should not hold it before the ring bound (low %u, ring %d)",
                                 c, c - k + 1, serene_err_name(rc), ms, ci.low, r_ring);
                break;
            }
            after++;
            if (st.holds != 0)
                failures += fail("clock %d was held (holds %" PRIu64 ") under ASP", c,
                                 st.holds);
            if (ci.mode != SERENE_SYNC_ASP || ci.low != (uint32_t)(k - 1))
                failures += fail("clock %d: mode %d low %u, want ASP and low %d (the dead "
                                 "rank's last clock)",
                                 c, (int)ci.mode, ci.low, k - 1);
            if ((rc = serene_pull_i32(ctx, 0, words, (size_t)n, 0))) {
                failures += fail("pull after clock %d: %s", c, serene_err_name(rc));
                break;
            }
            if (words[o->victim] != k || words[rank_] != c + 1)
                failures += fail("after clock %d: the dead rank's word %d = %d (want %d), "
                                 "mine %d = %d (want %d)",
                                 c, o->victim, words[o->victim], k, rank_, words[rank_], c + 1);
            continue;
        }
        /* At the ring bound: held until the deadline. */
        printf("rank %d: %d clocks after the kill, none held; clock %d at the ring bound "
               "returned %s after %.0f ms (deadline %d ms, holds %" PRIu64 ")\n",
               rank_, after, c, serene_err_name(rc), ms, cfg->timeout_ms, st.holds);
        if (rc != SERENE_ERR_TIMEOUT || st.holds != 1)
            failures += fail("clock %d, beyond low %d + ring %d - 2, returned %s with holds "
                             "%" PRIu64 ", want SERENE_ERR_TIMEOUT after a hold",
                             c, k - 1, r_ring, serene_err_name(rc), st.holds);
        if (ms < cfg->timeout_ms - 50 || ms > cfg->timeout_ms + DEADLINE_SLACK_MS)
            failures += fail("the held clock returned after %.0f ms, not at its %d ms deadline",
                             ms, cfg->timeout_ms);
        break;
    }
    if (after != r_ring - 2)
        failures += fail("%d clocks after the kill, want %d (ring %d - 2)", after, r_ring - 2,
                         r_ring);
out:
    serene_ctx_destroy(&ctx);
    if (!failures)
        printf("rank %d: asp: went on for %d clocks without the dead rank, stopped at the ring "
               "bound, ended cleanly\n",
               rank_, after);
    return failures ? 1 : 0;
}

/* ---- restart: the switch is killed and started again ---------------------- */

/* One phase-1 round of restart: allreduce, push, clock, pull, clock, either
 * each called in turn (stopping at the first error) or all started before
 * any is waited for. Fills the ops' names, results and times; returns how
 * many ran. The allreduce is checked exactly (the other ranks may run the
 * other form, whose float pushes this rank cannot predict: the store is
 * checked in phase 2). */
#define RESTART_OPS 5

static int restart_round(run *r, const opts *o, int it, int *rcs, uint64_t *t_start,
                         uint64_t *t_done, int *bad)
{
    serene_op *ops[RESTART_OPS] = {NULL, NULL, NULL, NULL, NULL};
    size_t cnt = o->sizes[0], words = (size_t)o->words;
    int n = 0;

    for (size_t i = 0; i < cnt; i++)
        r->send[i] = ar_in(rank_, it, i);
    for (size_t q = 0; q < words; q++)
        r->fwords[q] = (float)(rank_ + 1);
    for (int k = 0; k < RESTART_OPS; k++) {
        t_start[k] = tc_now_ns();
        if (o->nonblocking) {
            rcs[k] = k == 0   ? serene_allreduce_start(r->ctx, r->send, r->recv, cnt, SERENE_SUM,
                                                       &ops[k])
                     : k == 1 ? serene_push_start(r->ctx, 0, r->fwords, words, &ops[k])
                     : k == 3 ? serene_pull_start(r->ctx, 0, r->fback, words, 0, &ops[k])
                              : serene_clock_start(r->ctx, &ops[k]);
        } else {
            rcs[k] = k == 0   ? serene_allreduce(r->ctx, r->send, r->recv, cnt, SERENE_SUM)
                     : k == 1 ? serene_push(r->ctx, 0, r->fwords, words)
                     : k == 3 ? serene_pull(r->ctx, 0, r->fback, words, 0)
                              : serene_clock(r->ctx);
            t_done[k] = tc_now_ns();
        }
        n = k + 1;
        if (rcs[k])
            break;
    }
    for (int k = 0; o->nonblocking && k < n; k++) {
        if (ops[k])
            rcs[k] = serene_op_wait(&ops[k]);
        t_done[k] = tc_now_ns();
    }
    for (int k = 0; k < n; k++) {
        double ms = (double)(t_done[k] - t_start[k]) / 1e6;

        r->calls++;
        r->worst_ms = ms > r->worst_ms ? ms : r->worst_ms;
    }
    *bad = 0;
    for (size_t i = 0; !rcs[0] && i < cnt; i++) {
        double want = 0;

        for (int q = 0; q < r->cfg.world_size; q++)
            want += ar_in(q, it, i);
        if ((double)r->recv[i] != want && (*bad)++ < 3)
            fail("phase 1 round %d: allreduce [%zu] = %.9g, want exactly %.0f", it, i,
                 (double)r->recv[i], want);
    }
    return n;
}

static int mode_restart(serene_config *cfg, const opts *o)
{
    static const char *const names[RESTART_OPS] = {"allreduce", "push", "clock", "pull",
                                                   "clock"};
    run r;
    int failures = 0, ended = 0;
    long it;

    if (run_open(&r, cfg, o)) {
        run_close(&r);
        return 1;
    }
    for (it = 0; it < LOOP_MAX && !ended && !failures; it++) {
        int rcs[RESTART_OPS] = {0, 0, 0, 0, 0}, bad = 0;
        uint64_t t_start[RESTART_OPS] = {0}, t_done[RESTART_OPS] = {0};
        int n = restart_round(&r, o, (int)it, rcs, t_start, t_done, &bad);

        failures += bad > 0;
        for (int k = 0; k < n; k++) {
            double ms = (double)(t_done[k] - t_start[k]) / 1e6;

            if (!rcs[k] && !ended)
                continue;
            if (!ended)
                printf("rank %d: phase 1 (nonce %#x) round %ld, %s:\n", rank_, cfg->job_nonce,
                       it, o->nonblocking ? "all ops started, then waited for" : "blocking");
            ended = 1;
            printf("rank %d: %s returned %s at %" PRIu64 " ns after %.0f ms in the call "
                   "(deadline %d ms)\n",
                   rank_, names[k], serene_err_name(rcs[k]), t_done[k], ms, cfg->timeout_ms);
            if (ms > cfg->timeout_ms + DEADLINE_SLACK_MS)
                failures += fail("%s returned %.0f ms after it started, past its %d ms "
                                 "deadline",
                                 names[k], ms, cfg->timeout_ms);
            if (rcs[k] == 0)
                failures += fail("%s succeeded after an earlier op of its round failed",
                                 names[k]);
        }
        if (!ended && it + 1 == READY_CALLS) {
            printf("rank %d: round %d ok\n", rank_, READY_CALLS);
            fflush(stdout);
        }
    }
    if (!ended)
        failures += fail("phase 1 never failed in %ld rounds: was the switch killed?", it);
    else if (it <= READY_CALLS)
        failures += fail("phase 1 failed in round %ld, before the switch was killed", it - 1);
    print_stats(&r, "phase 1");
    run_close(&r);
    printf("rank %d: phase 1 ended\n", rank_);
    fflush(stdout);
    if (failures)
        return 1;
    if (tc_wait_file(o->go_file, WAIT_GO_MS))
        return fail("no %s within %d ms", o->go_file, WAIT_GO_MS);
    cfg->job_nonce = o->new_nonce;
    if (run_open(&r, cfg, o)) {
        run_close(&r);
        return 1;
    }
    printf("rank %d: phase 2: joined the restarted switch as a new incarnation (nonce %#x)\n",
           rank_, cfg->job_nonce);
    for (int i = 0; i < 3 && !failures; i++)
        failures += exact_round(&r, o, i);
    print_stats(&r, "phase 2");
    run_close(&r);
    if (!failures)
        printf("rank %d: restart: every pending call failed by its deadline; the new "
               "incarnation's allreduces and pulls are exact\n",
               rank_);
    return failures ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: fault_worker exact [--rounds R] [--sizes N,N,...] [--words W] [--progress]\n"
            "       fault_worker ar-loop [--count N] [--max-calls M]\n"
            "       fault_worker asp --before K --ring R --go-file PATH [--victim V]\n"
            "       fault_worker restart --go-file PATH --new-nonce X [--nonblocking]\n"
            "                            [--sizes N] [--words W]\n");
}

static int parse(int argc, char **argv, opts *o)
{
    const tc_opt table[] = {
        {"--rounds", TC_OPT_INT, &o->rounds, NULL, 0, NULL},
        {"--words", TC_OPT_INT, &o->words, NULL, 0, NULL},
        {"--count", TC_OPT_INT, &o->count, NULL, 0, NULL},
        {"--max-calls", TC_OPT_INT, &o->max_calls, NULL, 0, NULL},
        {"--before", TC_OPT_INT, &o->before, NULL, 0, NULL},
        {"--victim", TC_OPT_INT, &o->victim, NULL, 0, NULL},
        {"--ring", TC_OPT_INT, &o->ring, NULL, 0, NULL},
        {"--sizes", TC_OPT_SIZES, o->sizes, &o->nsizes, MAX_SIZES, NULL},
        {"--go-file", TC_OPT_STR, &o->go_file, NULL, 0, NULL},
        {"--new-nonce", TC_OPT_U32, &o->new_nonce, NULL, 0, &o->have_nonce},
        {"--nonblocking", TC_OPT_FLAG, &o->nonblocking, NULL, 0, NULL},
        {"--progress", TC_OPT_FLAG, &o->progress, NULL, 0, NULL},
        {NULL, TC_OPT_FLAG, NULL, NULL, 0, NULL},
    };

    memset(o, 0, sizeof *o);
    o->rounds = 3;
    o->words = 300;
    o->count = 20000;
    o->max_calls = LOOP_MAX;
    o->victim = -1;
    o->ring = 0;
    if (argc < 2)
        return -1;
    o->mode = argv[1];
    if (tc_parse_opts(argc, argv, 2, table))
        return -1;
    if (o->nsizes == 0) {
        static const size_t def[] = {1, 255, 257, 20000};

        o->nsizes = 4;
        memcpy(o->sizes, def, sizeof def);
    }
    if (o->rounds < 1 || o->words < 1 || o->count < 1 || o->max_calls < 1)
        return -1;
    for (int s = 0; s < o->nsizes; s++)
        if (o->sizes[s] == 0 || o->sizes[s] > (1u << 26))
            return -1;
    if (!strcmp(o->mode, "exact") || !strcmp(o->mode, "ar-loop"))
        return 0;
    if (!strcmp(o->mode, "asp"))
        return o->before > 0 && o->ring >= 4 && o->go_file ? 0 : -1;
    if (!strcmp(o->mode, "restart"))
        return o->go_file && o->have_nonce ? 0 : -1;
    return -1;
}

int main(int argc, char **argv)
{
    serene_config cfg;
    opts o;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse(argc, argv, &o)) {
        usage();
        return 2;
    }
    if (tc_config_from_env(&cfg) || cfg.world_size > MAX_RANKS)
        return 2;
    rank_ = cfg.rank;
    if (!strcmp(o.mode, "exact"))
        return mode_exact(&cfg, &o);
    if (!strcmp(o.mode, "ar-loop"))
        return mode_ar_loop(&cfg, &o);
    if (!strcmp(o.mode, "asp"))
        return mode_asp(&cfg, &o);
    return mode_restart(&cfg, &o);
}
