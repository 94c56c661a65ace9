/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_store.c - rates of the SSP parameter store and barrier: push, pull
 * and clock, one rank per process under the launcher:
 *   serene-run -n 2 -- bench/bench_store --csv
 *
 * Cases (every rank runs them all, in this order, the same number of calls;
 * rank 0 reports):
 *   push/small  serene_push_i32 of --small words (default 256, one row);
 *   push/large  serene_push_i32 of --large words (default 16384, 64 rows);
 *   pull/small, pull/large  serene_pull_i32 of the same ranges, absolute;
 *   clock/bsp   serene_clock under BSP (each call waits for every rank: a
 *               barrier round trip through the switch);
 *   allreduce/float  serene_allreduce (SUM) of --step W floats (default 79510,
 *               the demo's MLP; 0 skips this pair), the synchronous
 *               baseline a data-parallel user would run;
 *   step/bsp    serene_step of the same W floats under BSP (store words
 *               from --large on): push, clock and
 *               pull of one iteration as one pipelined op; its extra
 *               column gives its time over the allreduce's just before
 *               (vs_allreduce, the ratio of the medians); both give the
 *               packets rank 0 sent, resent in full and probed in the case.
 * Rates: calls per second and store words per second (extra column); GB/s
 * counts the words' 4 bytes.
 *
 * Checks after timing: after a push case every rank ends one clock, and
 * under BSP that returns only when every rank has finished it, so all
 * pushes were applied: a pull must then show word i = N * (i + 1) * (the
 * pushes covering it); a second clock keeps every rank from pushing again
 * before all have pulled. The pull cases check the words they read against
 * the same sum; the clock case checks the clock count.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "serene/serene.h"

typedef struct st_ctx {
    serene_ctx *ctx;
    int world;
    size_t small, large, step;
    int32_t *vals, *out;
    float *fin, *fout;      /* the step and allreduce cases' floats */
    uint64_t steps;         /* step calls made by this rank */
    size_t count;           /* words of the current case */
    uint64_t pushes_small;  /* push calls made by this rank on [0, small) */
    uint64_t pushes_large;  /* on [0, large) */
    uint32_t clocks;        /* clock calls made by this rank */
    uint64_t calls;         /* calls of the current case */
    int rc;
} st_ctx;

static void note_rc(st_ctx *c, int rc)
{
    if (rc && !c->rc)
        c->rc = rc;
}

static void run_push(void *a)
{
    st_ctx *c = a;
    note_rc(c, serene_push_i32(c->ctx, 0, c->vals, c->count));
    c->calls++;
}

static void run_pull(void *a)
{
    st_ctx *c = a;
    note_rc(c, serene_pull_i32(c->ctx, 0, c->out, c->count, 0));
    c->calls++;
}

static void run_clock(void *a)
{
    st_ctx *c = a;
    note_rc(c, serene_clock(c->ctx));
    c->clocks++;
}

/* Each step adds STEP_UNIT per rank to every word: exact in the store's
 * default fixed point (16 fractional bits). */
#define STEP_UNIT (1.0f / 4096.0f)

static int failed_rc(const st_ctx *c, char *why, size_t wl);

static void run_step(void *a)
{
    st_ctx *c = a;
    note_rc(c, serene_step(c->ctx, c->large, c->fin, c->fout, c->step, 0));
    c->steps++;
    c->calls++;
}

static void run_allreduce(void *a)
{
    st_ctx *c = a;
    note_rc(c, serene_allreduce(c->ctx, c->fin, c->fout, c->step, SERENE_SUM));
    c->calls++;
}

/* Words [large, large + step) hold only steps: N units per step of every
 * rank, and under BSP a rank's last step holds every rank's steps up to
 * it, plus at most one more of each other rank's (where its answer came
 * after they went on). */
static int verify_step(void *a, char *why, size_t wl)
{
    st_ctx *c = a;
    if (failed_rc(c, why, wl))
        return 1;
    double lo = (double)c->world * (double)c->steps, hi = lo + c->world - 1;
    for (size_t i = 0; i < c->step; i++) {
        double units = c->fout[i] / STEP_UNIT;
        if (units < lo || units > hi) {
            snprintf(why, wl, "word %zu holds %.1f steps' units, want %.0f..%.0f", c->large + i,
                     units, lo, hi);
            return 1;
        }
    }
    return 0;
}

static int verify_allreduce(void *a, char *why, size_t wl)
{
    st_ctx *c = a;
    if (failed_rc(c, why, wl))
        return 1;
    for (size_t i = 0; i < c->step; i++)
        if (c->fout[i] != STEP_UNIT * (float)c->world) {
            snprintf(why, wl, "element %zu is %g, want %g", i, c->fout[i],
                     STEP_UNIT * (float)c->world);
            return 1;
        }
    return 0;
}

/* Word i of the store, as every push so far made it (modulo 2^32). */
static uint32_t expected(const st_ctx *c, size_t i)
{
    uint64_t pushes = (i < c->small ? c->pushes_small : 0) + c->pushes_large;
    return (uint32_t)((uint64_t)c->world * (i + 1) * pushes);
}

static int check_words(st_ctx *c, size_t count, char *why, size_t wl)
{
    for (size_t i = 0; i < count; i++)
        if ((uint32_t)c->out[i] != expected(c, i)) {
            snprintf(why, wl, "word %zu is %u, want %u", i, (uint32_t)c->out[i], expected(c, i));
            return 1;
        }
    return 0;
}

static int failed_rc(const st_ctx *c, char *why, size_t wl)
{
    if (!c->rc)
        return 0;
    snprintf(why, wl, "a call returned %s (%s)", serene_err_name(c->rc), serene_strerror(c->rc));
    return 1;
}

static int verify_push(void *a, char *why, size_t wl)
{
    st_ctx *c = a;
    if (c->count == c->small)
        c->pushes_small += c->calls;
    else
        c->pushes_large += c->calls;
    if (failed_rc(c, why, wl))
        return 1;
    /* the barrier: every rank's pushes are applied once this returns */
    note_rc(c, serene_clock(c->ctx));
    c->clocks++;
    note_rc(c, serene_pull_i32(c->ctx, 0, c->out, c->large, 0));
    int bad = failed_rc(c, why, wl) || check_words(c, c->large, why, wl);
    /* and again, so that no rank pushes again (next case) before every
     * rank has pulled */
    note_rc(c, serene_clock(c->ctx));
    c->clocks++;
    return bad || failed_rc(c, why, wl);
}

static int verify_pull(void *a, char *why, size_t wl)
{
    st_ctx *c = a;
    return failed_rc(c, why, wl) || check_words(c, c->count, why, wl);
}

static int verify_clock(void *a, char *why, size_t wl)
{
    st_ctx *c = a;
    serene_clock_info ci;
    if (failed_rc(c, why, wl))
        return 1;
    serene_get_clock_info(c->ctx, &ci);
    if (ci.clock != c->clocks) {
        snprintf(why, wl, "clock %u after %u clock calls", ci.clock, c->clocks);
        return 1;
    }
    return 0;
}

/* Every case in order (every rank makes the same calls: no --filter);
 * returns 1 if a verification failed. */
static int run_cases(sr_bench *b, st_ctx *c)
{
    int failed = 0;
    static const struct {
        const char *name, *variant;
        int large;
        void (*run)(void *);
        int (*verify)(void *, char *, size_t);
    } cases[] = {
        {"push", "small", 0, run_push, verify_push}, {"push", "large", 1, run_push, verify_push},
        {"pull", "small", 0, run_pull, verify_pull}, {"pull", "large", 1, run_pull, verify_pull},
        {"clock", "bsp", 0, run_clock, verify_clock},
        {"allreduce", "float", 0, run_allreduce, verify_allreduce},
        {"step", "bsp", 0, run_step, verify_step},
    };
    double ar_median = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !c->rc; i++) {
        int pair = cases[i].run == run_step || cases[i].run == run_allreduce;
        if (pair && !c->step)
            continue;
        /* no --filter here: every rank must make the same calls */
        c->count = pair ? c->step : cases[i].large ? c->large : c->small;
        c->calls = 0;
        memset(c->out, 0, 4 * c->large);
        sr_bench_case bc = {cases[i].name, cases[i].variant, cases[i].run == run_clock ? 0 : 4 * c->count,
                            cases[i].run, cases[i].verify, c};
        sr_bench_result r;
        serene_stats s0, s1;
        serene_get_stats(c->ctx, &s0);
        if (sr_bench_run(b, &bc, &r))
            failed = 1;
        serene_get_stats(c->ctx, &s1);
        if (cases[i].run == run_allreduce)
            ar_median = r.median_s;
        if (pair)
            snprintf(r.extra, sizeof r.extra,
                     "workers=%d words=%zu us_per_call=%.1f vs_allreduce=%.3f sent=%llu resent=%llu "
                     "probes=%llu",
                     c->world, c->step, r.median_s * 1e6, r.median_s / ar_median,
                     (unsigned long long)(s1.pkts_sent - s0.pkts_sent),
                     (unsigned long long)(s1.retransmissions - s0.retransmissions),
                     (unsigned long long)(s1.probes - s0.probes));
        else if (cases[i].run == run_clock)
            snprintf(r.extra, sizeof r.extra, "workers=%d calls_per_s=%.0f us_per_call=%.1f", c->world,
                     1.0 / r.median_s, r.median_s * 1e6);
        else
            snprintf(r.extra, sizeof r.extra, "workers=%d words=%zu calls_per_s=%.0f words_per_s=%.4g us_per_call=%.1f",
                     c->world, c->count, 1.0 / r.median_s, (double)c->count / r.median_s, r.median_s * 1e6);
        sr_bench_report(b, &r);
    }
    return failed;
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t small = 256, large = 16384, step = 79510;
    const sr_bench_opt opts[] = {
        {"--small", "words of the small push/pull", &small},
        {"--large", "words of the large push/pull", &large},
        {"--step", "floats of the step and allreduce pair (0: skip it)", &step},
    };
    sr_bench_init(&b, "bench_store", 0);
    b.reps = 5;
    b.iters = 200;
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (b.iters == 0) {
        fprintf(stderr, "bench_store: --iters must be fixed (>= 1): all ranks make the same calls\n");
        return 2;
    }
    if (small == 0 || large < small || large > ((size_t)1 << 26) || step > ((size_t)1 << 26)) {
        fprintf(stderr, "bench_store: need 1 <= --small <= --large <= 64Mi, --step <= 64Mi\n");
        return 2;
    }
    serene_config cfg;
    serene_config_init(&cfg);
    if (serene_config_from_env(&cfg))
        return 2;
    b.quiet = cfg.rank != 0;
    serene_ctx *ctx = NULL;
    rc = serene_ctx_create(&ctx, &cfg);
    if (rc) {
        fprintf(stderr, "bench_store: rank %d: serene_ctx_create: %s\n", cfg.rank, serene_err_name(rc));
        return 1;
    }
    if (serene_store_capacity(ctx) < large + step) {
        fprintf(stderr,
                "bench_store: the job's store holds %zu words, --large and --step need %zu "
                "(serene-run --store W)\n",
                serene_store_capacity(ctx), large + step);
        serene_ctx_destroy(&ctx);
        return 2;
    }
    serene_config eff;
    serene_ctx_config(ctx, &eff);
    st_ctx c = {.ctx = ctx, .world = cfg.world_size, .small = small, .large = large, .step = step};
    c.vals = malloc(4 * large);
    c.out = malloc(4 * large);
    c.fin = malloc(4 * (step ? step : 1));
    c.fout = malloc(4 * (step ? step : 1));
    if (!c.vals || !c.out || !c.fin || !c.fout) {
        fprintf(stderr, "bench_store: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < large; i++)
        c.vals[i] = (int32_t)(i + 1);
    for (size_t i = 0; i < step; i++)
        c.fin[i] = STEP_UNIT;
    b.size_bytes = 4 * large;

    char config[256];
    snprintf(config, sizeof config,
             "serene %s, transport %s, workers %d, store %zu words, window %d; BSP (the job's initial policy)",
             serene_version(), eff.transport, eff.world_size, serene_store_capacity(ctx), eff.window);
    sr_bench_begin(&b, config);

    int failed = run_cases(&b, &c);
    serene_ctx_destroy(&ctx);
    free(c.vals);
    free(c.out);
    free(c.fin);
    free(c.fout);
    int end = sr_bench_end(&b);
    return end ? end : failed;
}
