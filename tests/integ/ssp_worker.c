/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssp_worker.c - one rank of the SSP integration tests (tests/integ/
 * test_ssp.sh), run under serene-run or with SERENE_* set by the script.
 *
 *   ssp_worker clocks  --clocks C --out DIR [--compute-ms M] [--slow-rank R
 *                      --slow-ms S] [--jitter-us J] [--seed X]
 *       Each iteration c: sleep (M ms, or S ms on rank R, plus a seeded
 *       random 0..J us), push 1 into store word `rank`, serene_clock, then
 *       pull words 0..N-1. Writes DIR/rank<R>.csv, one row per clock:
 *           clock,t_call_ns,t_return_ns,mode,s,low,high
 *       (CLOCK_MONOTONIC, comparable across processes; mode, s, low, high
 *       from serene_get_clock_info after the call) and a last line
 *           #stats holds=H releases=R clock_wait_ns=W retrans=T
 *       ssp_check verifies the barrier across ranks from these files. The
 *       worker itself checks the SSP guarantee of its pulls: after clock c
 *       returned with staleness s (not ASP), word v holds at least c - s + 1
 *       (worker v's pushes of clocks <= c - s), and its own word exactly
 *       c + 1 (its pushes are acknowledged before its CLOCK is sent).
 *
 *   ssp_worker store   --iters I --offset O --count K --capacity W [--seed X]
 *                      [--expect-retrans]
 *       Per iteration i: push_i32 v(rank, i, k) at O..O+K-1 (several rows);
 *       clock; a delta pull must equal the modular sum of every rank's
 *       iteration-i values; an absolute pull the modular sum over every rank
 *       and iteration <= i; a second delta pull must be 0; clock. The
 *       values lie in [-2^28, 2^29), so one iteration's change fits an
 *       int32 while the accumulators wrap every few iterations (checked).
 *       Then: capacity == W, accesses past it fail with SERENE_ERR_RANGE
 *       and send nothing, NaN is refused, float push/pull round-trips
 *       within N * 2^-store_frac_bits, and (--expect-retrans) the stats
 *       show retransmissions.
 *
 *   ssp_worker step    --clocks C --offset O --count K --staleness S [--others]
 *                      [--out DIR] [--compute-ms M] [--slow-rank R --slow-ms S]
 *                      [--jitter-us J] [--seed X]
 *       Each clock c: sleep as `clocks` does, then one serene_step_i32 of K
 *       words at O whose update is 1 at the words k with k % N == rank and 0
 *       elsewhere, so word k counts the clocks of rank k % N that reached
 *       it. Checks the step's guarantee at every clock: this rank's words
 *       hold exactly c + 1, every other word at least c - S + 1 (S = -1:
 *       no lower bound, ASP) and at most c + S + 2 (a rank is at most
 *       S + 1 clocks ahead; S = -1: at most C). --others reads with SERENE_STEP_OTHERS and adds its
 *       own update and the others' to a local model, which must meet the
 *       same bounds. --out: DIR/rank<R>.csv as `clocks` writes it, one
 *       row per step, for ssp_check's barrier check. Then the misuse:
 *       count 0 and partly overlapping buffers (INVAL), beyond the
 *       capacity (RANGE), none of which sends a packet or moves the clock;
 *       and (with --offset >= 8) a step of words 0-7 with a NaN:
 *       NONFINITE, zeros added, the clock ended.
 *
 *   ssp_worker killed  [--nonblocking]
 *       Loops push / clock / pull (blocking, or the three *_start forms in
 *       flight together, then waited for) until a call fails; the test
 *       kills the switch. Prints
 *           rank R: OP returned NAME at T ns after D ms in the call
 *           (deadline MS ms)
 *       for the failed call (and each later pending op), then exits 3 if
 *       the first failure is SERENE_ERR_TIMEOUT within deadline + 1 s.
 *
 * Exit status: 0 all checks passed; 1 a check failed; 2 bad usage;
 * 3 (killed) the expected timeout.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serene/serene.h"
#include "timing.h"
#include "worker.h"

#define MAX_RANKS 64
/* Bound on the killed-switch loop: the switch is killed long before. */
#define KILLED_MAX_ITERS 1000000
#define KILLED_WORDS 16

typedef struct opts {
    const char *mode;
    const char *out;
    int clocks, compute_ms, slow_rank, slow_ms, jitter_us;
    int iters, count, expect_retrans, nonblocking, staleness, others;
    size_t offset, capacity;
    uint64_t seed;
} opts;

/* Log sink: stderr, except while the store test makes refused accesses on
 * purpose (the library logs each one as an error). */
typedef struct log_sink {
    int rank;
    atomic_int quiet;
    atomic_int muted; /* messages dropped while quiet */
} log_sink;

static void log_to_stderr(void *cookie, serene_log_level level, const char *msg)
{
    log_sink *l = cookie;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (atomic_load(&l->quiet)) {
        atomic_fetch_add(&l->muted, 1);
        return;
    }
    fprintf(stderr, "serene[%d]: %s: %s\n", l->rank,
            (unsigned)level < 4 ? names[level] : "?", msg);
}

static int report(int rank, const char *what, int rc)
{
    fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, what, serene_err_name(rc),
            serene_strerror(rc));
    return 1;
}

/* ---- clocks: the barrier and hot-swap runs ------------------------------ */

static int run_clocks(serene_ctx *ctx, const serene_config *cfg, const opts *o)
{
    const int rank = cfg->rank, n = cfg->world_size;
    tc_clock_log lg;
    if (tc_clock_log_open(&lg, o->out, rank))
        return 1;

    int32_t one = 1, words[MAX_RANKS];
    uint64_t rng = tc_mix(o->seed * 1000003u + (uint64_t)rank);
    uint64_t waited = 0, worst = 0;
    int failures = 0, rc = 0;
    for (int c = 0; c < o->clocks; c++) {
        long us = 1000L * (rank == o->slow_rank ? o->slow_ms : o->compute_ms);
        if (o->jitter_us > 0) {
            rng = tc_mix(rng);
            us += (long)(rng % (uint64_t)(o->jitter_us + 1));
        }
        tc_sleep_us(us);
        if ((rc = serene_push_i32(ctx, (size_t)rank, &one, 1))) {
            failures += report(rank, "push", rc);
            break;
        }
        serene_clock_info before, after;
        serene_get_clock_info(ctx, &before);
        uint64_t t_call = tc_now_ns();
        rc = serene_clock(ctx);
        uint64_t t_ret = tc_now_ns();
        if (rc) {
            fprintf(stderr, "rank %d: clock %d: %s (%s)\n", rank, c, serene_err_name(rc),
                    serene_strerror(rc));
            failures++;
            break;
        }
        serene_get_clock_info(ctx, &after);
        waited += t_ret - t_call;
        worst = t_ret - t_call > worst ? t_ret - t_call : worst;
        tc_clock_log_row(&lg, c, t_call, t_ret, &after);
        if (before.clock != (uint32_t)c || after.clock != (uint32_t)c + 1) {
            fprintf(stderr, "rank %d: clock_info.clock went %u -> %u around clock %d\n", rank,
                    before.clock, after.clock, c);
            failures++;
        }
        if ((rc = serene_pull_i32(ctx, 0, words, (size_t)n, 0))) {
            failures += report(rank, "pull", rc);
            break;
        }
        /* The Bosen guarantee: every push from clocks <= c - s is in. */
        long need = after.mode == SERENE_SYNC_ASP ? 0 : (long)c - (long)after.staleness + 1;
        for (int v = 0; v < n; v++) {
            if (v == rank ? words[v] != c + 1 : words[v] < need) {
                fprintf(stderr,
                        "rank %d: after clock %d (%s s=%u) word %d = %d, want %s %ld\n", rank,
                        c, tc_mode_name(after.mode), after.staleness, v, words[v],
                        v == rank ? "exactly" : ">=", v == rank ? (long)c + 1 : need);
                failures++;
            }
        }
        if (failures > 10)
            break;
    }
    if (tc_clock_log_close(&lg, ctx))
        failures++;
    serene_stats st;
    serene_get_stats(ctx, &st);
    serene_clock_info last;
    serene_get_clock_info(ctx, &last);
    printf("rank %d: %d clocks, waited %.1f ms (worst call %.1f ms), holds %llu releases %llu, "
           "last policy %s s=%u\n",
           rank, o->clocks, waited / 1e6, worst / 1e6, (unsigned long long)st.holds,
           (unsigned long long)st.releases, tc_mode_name(last.mode), last.staleness);
    return failures ? 1 : 0;
}

/* ---- store: exact modular sums under loss ------------------------------- */

/* v(rank, iter, k) in [-2^28, 2^29): 4 ranks sum to [-2^30, 2^31). */
static int32_t value(uint64_t seed, int r, int i, size_t k)
{
    uint64_t h = tc_mix(seed ^ (uint64_t)r << 56 ^ (uint64_t)i << 40 ^ k);
    return (int32_t)((int64_t)(h % (3ull << 28)) - (1ll << 28));
}

static float fvalue(int r, size_t k)
{
    return (float)((r + 1) * 0.734375 - (double)k * 0.0123 + (k % 7) * 1e-4);
}

static int check_words(int rank, const char *what, int iter, const int32_t *got,
                       const uint32_t *want, size_t count, size_t offset)
{
    size_t bad = 0;
    for (size_t k = 0; k < count; k++) {
        if ((uint32_t)got[k] != want[k] && bad++ < 5)
            fprintf(stderr, "rank %d: iteration %d: %s pull word %zu = %u, want %u\n", rank,
                    iter, what, offset + k, (uint32_t)got[k], want[k]);
    }
    if (bad)
        fprintf(stderr, "rank %d: iteration %d: %s pull: %zu of %zu words wrong\n", rank, iter,
                what, bad, count);
    return bad ? 1 : 0;
}

static int store_edges(serene_ctx *ctx, const serene_config *cfg, const opts *o)
{
    log_sink *sink = cfg->log_cookie;
    const int rank = cfg->rank;
    const size_t cap = serene_store_capacity(ctx);
    int failures = 0, rc;
    if (cap != o->capacity) {
        fprintf(stderr, "rank %d: serene_store_capacity = %zu, the job has %zu\n", rank, cap,
                o->capacity);
        return 1;
    }
    int32_t w[16] = {0};
    float fw[16] = {0};
    serene_stats s0, s1;
    serene_get_stats(ctx, &s0);
    struct {
        const char *what;
        size_t off, cnt;
        int pull;
    } bad[] = {
        {"push across the end", cap - 5, 10, 0},
        {"pull across the end", cap - 5, 10, 1},
        {"push at the capacity", cap, 1, 0},
        {"pull at the capacity", cap, 1, 1},
        {"push at offset SIZE_MAX", SIZE_MAX, 2, 0},
        {"pull at offset SIZE_MAX", SIZE_MAX, 2, 1},
    };
    atomic_store(&sink->quiet, 1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = bad[i].pull ? serene_pull_i32(ctx, bad[i].off, w, bad[i].cnt, 0)
                         : serene_push_i32(ctx, bad[i].off, w, bad[i].cnt);
        if (rc != SERENE_ERR_RANGE) {
            fprintf(stderr, "rank %d: %s (offset %zu, %zu words, capacity %zu) returned %s, "
                            "want SERENE_ERR_RANGE\n",
                    rank, bad[i].what, bad[i].off, bad[i].cnt, cap, serene_err_name(rc));
            failures++;
        }
    }
    if ((rc = serene_push(ctx, cap - 4, fw, 8)) != SERENE_ERR_RANGE) {
        fprintf(stderr, "rank %d: float push across the end returned %s\n", rank,
                serene_err_name(rc));
        failures++;
    }
    fw[3] = NAN;
    if ((rc = serene_push(ctx, 0, fw, 8)) != SERENE_ERR_NONFINITE) {
        fprintf(stderr, "rank %d: push of a NaN returned %s, want SERENE_ERR_NONFINITE\n", rank,
                serene_err_name(rc));
        failures++;
    }
    atomic_store(&sink->quiet, 0);
    serene_get_stats(ctx, &s1);
    printf("rank %d: 8 refused accesses (range, NaN): %d library log lines muted\n", rank,
           atomic_load(&sink->muted));
    if (s1.pkts_sent != s0.pkts_sent) {
        fprintf(stderr, "rank %d: refused accesses sent %llu packets\n", rank,
                (unsigned long long)(s1.pkts_sent - s0.pkts_sent));
        failures++;
    }
    /* The last words are never pushed to: in range, and still 0. */
    if ((rc = serene_pull_i32(ctx, cap - 5, w, 5, 0))) {
        failures += report(rank, "pull of the last 5 words", rc);
    } else {
        for (int k = 0; k < 5; k++) {
            if (w[k]) {
                fprintf(stderr, "rank %d: word %zu = %d, never pushed to\n", rank,
                        cap - 5 + (size_t)k, w[k]);
                failures++;
            }
        }
    }
    return failures;
}

static int store_floats(serene_ctx *ctx, const serene_config *cfg, size_t off, size_t cnt)
{
    const int rank = cfg->rank, n = cfg->world_size;
    serene_config eff;
    serene_ctx_config(ctx, &eff);
    float *mine = malloc(cnt * sizeof *mine), *got = malloc(cnt * sizeof *got);
    int failures = 0, rc;
    if (!mine || !got) {
        free(mine);
        free(got);
        return 1;
    }
    for (size_t k = 0; k < cnt; k++)
        mine[k] = fvalue(rank, k);
    if ((rc = serene_push(ctx, off, mine, cnt)) || (rc = serene_clock(ctx)) ||
        (rc = serene_pull(ctx, off, got, cnt, 0))) {
        failures += report(rank, "float push/clock/pull", rc);
        goto out;
    }
    const double tol = n * ldexp(1.0, -eff.store_frac_bits);
    double worst = 0;
    size_t bad = 0;
    for (size_t k = 0; k < cnt; k++) {
        double want = 0;
        for (int r = 0; r < n; r++)
            want += fvalue(r, k);
        double err = fabs((double)got[k] - want);
        worst = err > worst ? err : worst;
        if (!(err <= tol) && bad++ < 5)
            fprintf(stderr, "rank %d: float word %zu = %.9g, want %.9g (tolerance %.3g)\n",
                    rank, off + k, (double)got[k], want, tol);
    }
    if (bad) {
        fprintf(stderr, "rank %d: %zu of %zu float words outside the tolerance\n", rank, bad,
                cnt);
        failures++;
    }
    if ((rc = serene_pull(ctx, off, got, cnt, SERENE_PULL_DELTA))) {
        failures += report(rank, "float delta pull", rc);
    } else {
        for (size_t k = 0; k < cnt; k++) {
            if (got[k] != 0.0f) {
                fprintf(stderr, "rank %d: float delta word %zu = %g, nothing was pushed\n",
                        rank, off + k, (double)got[k]);
                failures++;
                break;
            }
        }
    }
    printf("rank %d: floats: %zu words, frac bits %d, worst error %.3g (tolerance %.3g)\n", rank,
           cnt, eff.store_frac_bits, worst, tol);
out:
    free(mine);
    free(got);
    return failures;
}

static int run_store(serene_ctx *ctx, const serene_config *cfg, const opts *o)
{
    const int rank = cfg->rank, n = cfg->world_size;
    const size_t cnt = (size_t)o->count;
    int32_t *mine = malloc(cnt * sizeof *mine), *got = malloc(cnt * sizeof *got);
    uint32_t *want_abs = calloc(cnt, sizeof *want_abs), *want_delta = malloc(cnt * 4);
    uint32_t *zero = calloc(cnt, sizeof *zero);
    int64_t *exact = calloc(cnt, sizeof *exact);
    int failures = 0, rc;
    size_t wrapped = 0;
    if (!mine || !got || !want_abs || !want_delta || !zero || !exact) {
        failures = 1;
        goto out;
    }
    serene_stats st0, st;
    serene_get_stats(ctx, &st0);
    for (int i = 0; i < o->iters && failures < 5; i++) {
        for (size_t k = 0; k < cnt; k++) {
            mine[k] = value(o->seed, rank, i, k);
            want_delta[k] = 0;
            for (int r = 0; r < n; r++) {
                int32_t v = value(o->seed, r, i, k);
                want_delta[k] += (uint32_t)v;
                exact[k] += v;
            }
            want_abs[k] += want_delta[k];
        }
        if ((rc = serene_push_i32(ctx, o->offset, mine, cnt))) {
            failures += report(rank, "push", rc);
            break;
        }
        if ((rc = serene_clock(ctx))) {
            failures += report(rank, "clock after the pushes", rc);
            break;
        }
        /* Delta first: since this rank's last pull (the absolute one of the
         * previous iteration) exactly iteration i's pushes were added. */
        if ((rc = serene_pull_i32(ctx, o->offset, got, cnt, SERENE_PULL_DELTA))) {
            failures += report(rank, "delta pull", rc);
            break;
        }
        failures += check_words(rank, "delta", i, got, want_delta, cnt, o->offset);
        if ((rc = serene_pull_i32(ctx, o->offset, got, cnt, 0))) {
            failures += report(rank, "absolute pull", rc);
            break;
        }
        failures += check_words(rank, "absolute", i, got, want_abs, cnt, o->offset);
        if ((rc = serene_pull_i32(ctx, o->offset, got, cnt, SERENE_PULL_DELTA))) {
            failures += report(rank, "second delta pull", rc);
            break;
        }
        failures += check_words(rank, "second delta (nothing pushed since)", i, got, zero, cnt,
                                o->offset);
        /* Nobody pushes iteration i + 1 before everyone has pulled. */
        if ((rc = serene_clock(ctx))) {
            failures += report(rank, "clock after the pulls", rc);
            break;
        }
    }
    serene_get_stats(ctx, &st);
    /* What the iterations sent (pushes, pulls, clocks, resends): the pace
     * test bounds it against the row pieces they need. */
    printf("rank %d: store iterations sent %llu packets\n", rank,
           (unsigned long long)(st.pkts_sent - st0.pkts_sent));
    for (size_t k = 0; k < cnt; k++)
        wrapped += exact[k] > INT32_MAX || exact[k] < INT32_MIN;
    if (!failures && wrapped == 0) {
        fprintf(stderr, "rank %d: no accumulator wrapped: the test proves nothing\n", rank);
        failures++;
    }
    if (!failures) {
        failures += store_edges(ctx, cfg, o);
        failures += store_floats(ctx, cfg, o->offset + cnt + 10, 300);
    }
    serene_get_stats(ctx, &st);
    printf("rank %d: store: %d iterations of %zu words at %zu, %zu of them wrapped; sent %llu "
           "recv %llu retrans %llu dup %llu timeouts %llu\n",
           rank, o->iters, cnt, o->offset, wrapped, (unsigned long long)st.pkts_sent,
           (unsigned long long)st.pkts_recv, (unsigned long long)st.retransmissions,
           (unsigned long long)st.duplicates, (unsigned long long)st.timeouts);
    if (o->expect_retrans && st.retransmissions == 0) {
        fprintf(stderr, "rank %d: expected retransmissions under injected loss, saw none\n",
                rank);
        failures++;
    }
out:
    free(mine);
    free(got);
    free(want_abs);
    free(want_delta);
    free(zero);
    free(exact);
    return failures ? 1 : 0;
}

/* ---- killed: every pending call ends by its deadline -------------------- */

static int run_killed(serene_ctx *ctx, const serene_config *cfg, const opts *o)
{
    const int rank = cfg->rank;
    float vals[KILLED_WORDS], back[KILLED_WORDS];
    for (int k = 0; k < KILLED_WORDS; k++)
        vals[k] = 0.5f * (float)(rank + 1);
    const char *names[3] = {"push", "clock", "pull"};
    for (long it = 0; it < KILLED_MAX_ITERS; it++) {
        int rcs[3] = {0, 0, 0}, ran[3] = {0, 0, 0};
        uint64_t t0 = tc_now_ns(), t_done[3] = {0, 0, 0};
        if (o->nonblocking) {
            /* All three in flight at once: each must end by its deadline. */
            serene_op *ops[3] = {NULL, NULL, NULL};
            rcs[0] = serene_push_start(ctx, 0, vals, KILLED_WORDS, &ops[0]);
            if (!rcs[0])
                rcs[1] = serene_clock_start(ctx, &ops[1]);
            if (!rcs[0] && !rcs[1])
                rcs[2] = serene_pull_start(ctx, 0, back, KILLED_WORDS, 0, &ops[2]);
            for (int i = 0; i < 3; i++) {
                ran[i] = ops[i] != NULL || rcs[i] != 0;
                if (ops[i])
                    rcs[i] = serene_op_wait(&ops[i]);
                t_done[i] = tc_now_ns();
            }
        } else {
            for (int i = 0; i < 3 && (i == 0 || !rcs[i - 1]); i++) {
                rcs[i] = i == 0   ? serene_push(ctx, 0, vals, KILLED_WORDS)
                         : i == 1 ? serene_clock(ctx)
                                  : serene_pull(ctx, 0, back, KILLED_WORDS, 0);
                ran[i] = 1;
                t_done[i] = tc_now_ns();
            }
        }
        int first = -1;
        for (int i = 0; i < 3 && first < 0; i++)
            first = rcs[i] ? i : -1;
        if (first < 0)
            continue;
        int bad = 0;
        for (int i = first; i < 3; i++) {
            if (!ran[i])
                continue;
            double ms = (double)(t_done[i] - t0) / 1e6;
            printf("rank %d: %s%s returned %s at %llu ns after %.0f ms in the call (deadline %d "
                   "ms), iteration %ld\n",
                   rank, names[i], o->nonblocking ? " (started, then waited for)" : "",
                   serene_err_name(rcs[i]), (unsigned long long)t_done[i], ms, cfg->timeout_ms,
                   it);
            if (ms > cfg->timeout_ms + 1000.0) {
                fprintf(stderr, "rank %d: UNEXPECTED: %s returned %.0f ms after it started, "
                                "past its deadline of %d ms + 1 s\n",
                        rank, names[i], ms, cfg->timeout_ms);
                bad++;
            }
            if (i > first && !rcs[i]) {
                fprintf(stderr, "rank %d: UNEXPECTED: %s succeeded after the switch died\n",
                        rank, names[i]);
                bad++;
            }
        }
        fflush(stdout);
        if (rcs[first] != SERENE_ERR_TIMEOUT) {
            fprintf(stderr, "rank %d: UNEXPECTED: %s failed with %s, want SERENE_ERR_TIMEOUT\n",
                    rank, names[first], serene_err_name(rcs[first]));
            bad++;
        }
        return bad ? 1 : 3;
    }
    fprintf(stderr, "rank %d: no call failed in %d iterations: was the switch killed?\n", rank,
            KILLED_MAX_ITERS);
    return 1;
}

/* ---- step: the guarantee of one pipelined push, clock and pull ---------- */

/* Misuse refused before anything is sent; the clock does not move. */
static int step_misuse(serene_ctx *ctx, const serene_config *cfg, const opts *o, int32_t *buf)
{
    log_sink *sink = cfg->log_cookie;
    const int rank = cfg->rank;
    const size_t cap = serene_store_capacity(ctx);
    float fw[8] = {0}, fo[8];
    serene_stats s0, s1;
    serene_clock_info c0, c1;
    int failures = 0;
    serene_get_stats(ctx, &s0);
    serene_get_clock_info(ctx, &c0);
    atomic_store(&sink->quiet, 1);
    struct {
        const char *what;
        int rc, want;
    } cases[] = {
        {"count 0", serene_step_i32(ctx, 0, buf, buf, 0, 0), SERENE_ERR_INVAL},
        {"out overlapping update + 1", serene_step_i32(ctx, 0, buf, buf + 1, 4, 0),
         SERENE_ERR_INVAL},
        {"DELTA with OTHERS", serene_step_i32(ctx, 0, buf, buf, 4, 3), SERENE_ERR_INVAL},
        {"NULL out", serene_step_i32(ctx, 0, buf, NULL, 4, 0), SERENE_ERR_INVAL},
        {"across the end", serene_step_i32(ctx, cap - 2, buf, buf, 4, 0), SERENE_ERR_RANGE},
        {"at offset SIZE_MAX", serene_step_i32(ctx, SIZE_MAX, buf, buf, 2, 0), SERENE_ERR_RANGE},
        {"float across the end", serene_step(ctx, cap - 4, fw, fo, 8, 0), SERENE_ERR_RANGE},
    };
    atomic_store(&sink->quiet, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].rc != cases[i].want) {
            fprintf(stderr, "rank %d: step %s returned %s, want %s\n", rank, cases[i].what,
                    serene_err_name(cases[i].rc), serene_err_name(cases[i].want));
            failures++;
        }
    }
    serene_get_stats(ctx, &s1);
    serene_get_clock_info(ctx, &c1);
    if (s1.pkts_sent != s0.pkts_sent || c1.clock != c0.clock) {
        fprintf(stderr, "rank %d: refused steps sent %llu packets, clock %u -> %u\n", rank,
                (unsigned long long)(s1.pkts_sent - s0.pkts_sent), c0.clock, c1.clock);
        failures++;
    }
    /* NaN (every rank, words 0-7 of row 0, stepped since --offset's clock
     * 0 only if --offset < 8): the step completes with zeros added, ends
     * the clock and says NONFINITE; the words keep what they held. */
    if (o->offset >= 8) {
        fw[3] = NAN;
        int rc = serene_step(ctx, 0, fw, fo, 8, 0);
        serene_get_clock_info(ctx, &c1);
        if (rc != SERENE_ERR_NONFINITE || c1.clock != c0.clock + 1) {
            fprintf(stderr, "rank %d: step of a NaN returned %s, clock %u -> %u; want "
                            "SERENE_ERR_NONFINITE and the clock ended\n",
                    rank, serene_err_name(rc), c0.clock, c1.clock);
            failures++;
        }
        for (int k = 0; k < 8; k++)
            if (fo[k] != 0.0f) {
                fprintf(stderr, "rank %d: after the NaN step word %d = %g, want 0\n", rank, k,
                        fo[k]);
                failures++;
                break;
            }
    }
    return failures;
}

static int run_step(serene_ctx *ctx, const serene_config *cfg, const opts *o)
{
    const int rank = cfg->rank, n = cfg->world_size;
    const size_t k_n = (size_t)o->count;
    int32_t *upd = calloc(k_n, sizeof *upd), *out = calloc(k_n, sizeof *out);
    int64_t *model = calloc(k_n, sizeof *model);
    uint64_t rng = tc_mix(o->seed * 1000003u + (uint64_t)rank), waited = 0;
    int failures = 0, rc = 0;
    tc_clock_log lg;
    if (!upd || !out || !model) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        return 1;
    }
    if (o->out && tc_clock_log_open(&lg, o->out, rank))
        return 1;
    serene_stats s0, s1;
    serene_get_stats(ctx, &s0);
    for (int c = 0; c < o->clocks && failures <= 10; c++) {
        long us = 1000L * (rank == o->slow_rank ? o->slow_ms : o->compute_ms);
        if (o->jitter_us > 0) {
            rng = tc_mix(rng);
            us += (long)(rng % (uint64_t)(o->jitter_us + 1));
        }
        tc_sleep_us(us);
        for (size_t k = 0; k < k_n; k++)
            upd[k] = (o->offset + k) % (size_t)n == (size_t)rank;
        serene_clock_info ci;
        uint64_t t0 = tc_now_ns();
        rc = serene_step_i32(ctx, o->offset, upd, out, k_n, o->others ? SERENE_STEP_OTHERS : 0);
        uint64_t t1 = tc_now_ns();
        waited += t1 - t0;
        if (rc) {
            fprintf(stderr, "rank %d: step %d: %s (%s)\n", rank, c, serene_err_name(rc),
                    serene_strerror(rc));
            failures++;
            break;
        }
        serene_get_clock_info(ctx, &ci);
        if (o->out)
            tc_clock_log_row(&lg, c, t0, t1, &ci);
        if (ci.clock != (uint32_t)c + 1) {
            fprintf(stderr, "rank %d: after step %d the clock is %u\n", rank, c, ci.clock);
            failures++;
        }
        /* Another rank is at most s + 1 clocks ahead of this one's row:
         * its step of c + s + 1 needs its c + s answered, which needs this
         * rank's step of c. */
        long need = o->staleness < 0 ? 0 : (long)c - o->staleness + 1;
        long most = o->staleness < 0 ? o->clocks : (long)c + o->staleness + 2;
        size_t bad = 0;
        for (size_t k = 0; k < k_n; k++) {
            int64_t got = out[k];
            if (o->others)
                got = model[k] += (int64_t)upd[k] + out[k];
            int own = (o->offset + k) % (size_t)n == (size_t)rank;
            int ok = own ? got == c + 1 : got >= need && got <= most;
            if (!ok && bad++ < 3)
                fprintf(stderr,
                        "rank %d: after step %d (s=%d) word %zu (rank %zu's) = %lld, want "
                        "%ld..%ld\n",
                        rank, c, o->staleness, o->offset + k, (o->offset + k) % (size_t)n,
                        (long long)got, own ? (long)c + 1 : need, own ? (long)c + 1 : most);
        }
        failures += bad != 0;
    }
    if (o->out && tc_clock_log_close(&lg, ctx))
        failures++;
    /* Packets, probes and resends included, for test_pace.sh's bound. */
    serene_get_stats(ctx, &s1);
    printf("rank %d: steps sent %llu packets\n", rank,
           (unsigned long long)(s1.pkts_sent - s0.pkts_sent));
    if (!failures)
        failures += step_misuse(ctx, cfg, o, upd);
    serene_stats st;
    serene_get_stats(ctx, &st);
    printf("rank %d: step: %d clocks of %d words, %.1f ms in steps, probes %llu held %llu "
           "resent %llu\n",
           rank, o->clocks, o->count, waited / 1e6, (unsigned long long)st.probes,
           (unsigned long long)st.held, (unsigned long long)st.retransmissions);
    free(upd);
    free(out);
    free(model);
    return failures ? 1 : 0;
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: ssp_worker clocks --clocks C --out DIR [--compute-ms M] [--slow-rank R]\n"
            "                         [--slow-ms S] [--jitter-us J] [--seed X]\n"
            "       ssp_worker store --iters I --offset O --count K --capacity W [--seed X]\n"
            "                        [--expect-retrans]\n"
            "       ssp_worker step --clocks C --offset O --count K --staleness S [--others]\n"
            "                       [--out DIR] [--compute-ms M] [--slow-rank R] [--slow-ms S]\n"
            "                       [--jitter-us J] [--seed X]\n"
            "       ssp_worker killed [--nonblocking]\n");
}

static int parse(int argc, char **argv, opts *o)
{
    const tc_opt table[] = {
        {"--clocks", TC_OPT_INT, &o->clocks, NULL, 0, NULL},
        {"--compute-ms", TC_OPT_INT, &o->compute_ms, NULL, 0, NULL},
        {"--slow-rank", TC_OPT_INT, &o->slow_rank, NULL, 0, NULL},
        {"--slow-ms", TC_OPT_INT, &o->slow_ms, NULL, 0, NULL},
        {"--jitter-us", TC_OPT_INT, &o->jitter_us, NULL, 0, NULL},
        {"--iters", TC_OPT_INT, &o->iters, NULL, 0, NULL},
        {"--count", TC_OPT_INT, &o->count, NULL, 0, NULL},
        {"--out", TC_OPT_STR, &o->out, NULL, 0, NULL},
        {"--offset", TC_OPT_SIZE, &o->offset, NULL, 0, NULL},
        {"--capacity", TC_OPT_SIZE, &o->capacity, NULL, 0, NULL},
        {"--seed", TC_OPT_U64, &o->seed, NULL, 0, NULL},
        {"--expect-retrans", TC_OPT_FLAG, &o->expect_retrans, NULL, 0, NULL},
        {"--nonblocking", TC_OPT_FLAG, &o->nonblocking, NULL, 0, NULL},
        {"--staleness", TC_OPT_INT, &o->staleness, NULL, 0, NULL},
        {"--others", TC_OPT_FLAG, &o->others, NULL, 0, NULL},
        {NULL, TC_OPT_FLAG, NULL, NULL, 0, NULL},
    };

    memset(o, 0, sizeof *o);
    o->slow_rank = -1;
    o->seed = 1;
    if (argc < 2)
        return -1;
    o->mode = argv[1];
    if (tc_parse_opts(argc, argv, 2, table))
        return -1;
    if (!strcmp(o->mode, "clocks"))
        return o->clocks > 0 && o->out ? 0 : -1;
    if (!strcmp(o->mode, "store"))
        return o->iters > 0 && o->count > 0 && o->capacity > 0 ? 0 : -1;
    if (!strcmp(o->mode, "step"))
        return o->clocks > 0 && o->count > 0 && o->staleness >= -1 ? 0 : -1;
    return strcmp(o->mode, "killed") ? -1 : 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o)) {
        usage();
        return 2;
    }
    serene_config cfg;
    if (tc_config_from_env(&cfg) || cfg.world_size > MAX_RANKS)
        return 2;
    log_sink sink = {.rank = cfg.rank};
    cfg.log_fn = log_to_stderr;
    cfg.log_cookie = &sink;
    serene_ctx *ctx = NULL;
    if (tc_ctx_create(&ctx, &cfg))
        return 1;
    int status = !strcmp(o.mode, "clocks")  ? run_clocks(ctx, &cfg, &o)
                 : !strcmp(o.mode, "store") ? run_store(ctx, &cfg, &o)
                 : !strcmp(o.mode, "step")  ? run_step(ctx, &cfg, &o)
                                            : run_killed(ctx, &cfg, &o);
    serene_ctx_destroy(&ctx);
    return status;
}
