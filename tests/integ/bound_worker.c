/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bound_worker.c - one rank of the quantization-bound acceptance test (run
 * under serene-run, against the real software switch, through the public
 * API only).
 *
 * Every rank regenerates every rank's input from (seed, case, rank, index),
 * so each rank knows the exact sum without extra traffic and checks EVERY
 * element against the bound stated in serene.h, quant.h and the README.
 * For element i of packet k (elements [k*P, (k+1)*P), P = --elems):
 *   E = max over ranks w of clamp(floor(log2(max_{j in k} |x_w[j]|)), -96, 126)
 *       (-96 when all of them are zero), B = 30 - ceil(log2 N);
 *   SUM: |r_i - sum_w x_w[i]|     <= N * 2^(E-B) + ulp(r_i)/2
 *   AVG: |r_i - sum_w x_w[i] / N| <=     2^(E-B) + ulp(r_i)/2
 *   ulp(r) = 2^(e-23) for |r| in [2^e, 2^(e+1)), 2^-149 below 2^-126;
 * and a SUM beyond the float range comes back as +-Inf with
 * SERENE_ERR_NONFINITE on every rank, after which the context still works.
 *
 * The exact sums are taken in long double (64-bit mantissa): every element
 * whose ranks' values lie within 40 binades of each other (all but a few
 * planted ones) sums exactly, and otherwise the rounding is below 2^-60 of
 * the largest value, some 2^30 times smaller than the bound's first term.
 *
 * Cases (each a separate call on the same context, in this order):
 *   mixed-sum, mixed-avg  magnitudes 2^-60..2^60 by blocks, per-rank jitter,
 *                         zeros, random signs (cancellation), a tail packet;
 *   tiny-sum, tiny-avg    values around and below the exponent floor 2^-96:
 *                         1e-30, 1e-38, subnormals such as 1e-42, zeros;
 *   overflow-sum          all ranks +-3e38 in some elements: those are +-Inf
 *                         and the call returns SERENE_ERR_NONFINITE;
 *   overflow-avg          the same data averaged: finite, 3e38 exactly, OK;
 *   after-sum             a normal call on the same context succeeds.
 * Each case prints its worst err/bound ratio.
 *
 * Exit status: 0 all checks passed, 1 a check failed, 2 bad usage.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serene/serene.h"
#include "worker.h"

#define EXP_FLOOR (-96) /* SR_WIRE_EXP_MIN: the documented floor of E */
#define EXP_CEIL 126    /* SR_WIRE_EXP_MAX */
#define BIG 3e38f       /* three of them overflow float, their mean does not */

enum { MIXED, TINY, OVERFLOW, AFTER };
static const char *const kind_name[] = {"mixed", "tiny", "overflow", "after"};

static uint64_t hash4(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
    return tc_mix(seed ^ tc_mix(a ^ tc_mix(b ^ tc_mix(c))));
}

/* A random-mantissa value of binade e (below 2^-126 a subnormal of that
 * scale, rounded by ldexpf), sign from the hash. */
static float val(uint64_t h, int e)
{
    float m = (float)((h >> 40) | (1u << 23)); /* 24 bits */
    float x = ldexpf(m, e - 23);
    return h & 1 ? -x : x;
}

/* Input of rank r at index i for case kind of call c. Element classes are
 * shared by all ranks (from the block or the index), values and signs are
 * not. */
static float input(uint64_t seed, int kind, int c, int n, int r, size_t i)
{
    uint64_t blk = hash4(seed, (uint64_t)c, 1000 + i / 37, 0);
    uint64_t el = hash4(seed, (uint64_t)c, i, 1);
    uint64_t h = hash4(seed, (uint64_t)c, i, 2 + (uint64_t)r);
    switch (kind) {
    case MIXED:
    case AFTER: {
        if ((h >> 20) % 16 == 0)
            return 0.0f;
        int base = (int)(blk % 121) - 60;
        if (el % 53 == 0) /* a lone large value: the rest of its packet sits far below E */
            return val(h, base + 20);
        return val(h, base - (int)((h >> 8) % 13));
    }
    case TINY: {
        static const float planted[] = {1e-30f, 1e-38f, 1e-42f, 0x1p-96f, 0x1.fffffep-97f, 0x1p-149f};
        switch (blk % 7) {
        case 0: /* around the floor */
            return val(h, -99 + (int)((h >> 8) % 7));
        case 1: /* about 1e-30 */
            return val(h, -101 + (int)((h >> 8) % 3));
        case 2: /* about 1e-38: the smallest normals */
            return val(h, -128 + (int)((h >> 8) % 4));
        case 3: /* subnormals about 1e-42 */
            return val(h, -142 + (int)((h >> 8) % 6));
        case 4:
            return 0.0f;
        case 5: { /* the literal values, a zero now and then */
            float x = planted[(el >> 8) % (sizeof planted / sizeof planted[0])];
            return (h >> 20) % 5 == 0 ? 0.0f : h & 1 ? -x : x;
        }
        default: /* well above the floor, so some packets get E > -96 */
            return val(h, -70 + (int)((h >> 8) % 10));
        }
    }
    default: { /* OVERFLOW */
        size_t g = i / 256;
        if ((g == 0 && i % 5 == 0) || (g == 2 && i % 7 == 0)) /* same sign on every rank */
            return el & 1 ? -BIG : BIG;
        if (g == 0 && i % 5 == 1) /* inside the range once summed: 0.9 FLT_MAX */
            return (el & 1 ? -0.9f : 0.9f) * (FLT_MAX / (float)n);
        if (g == 1)
            return val(h, (int)((h >> 8) % 11) - 5);
        return val(h, 100 + (int)((h >> 8) % 20));
    }
    }
}

static int ceil_log2(int n)
{
    int b = 0;
    while ((1 << b) < n)
        b++;
    return b;
}

/* The exponent rule exactly as the documentation states it. */
static int local_exponent(float maxabs)
{
    if (maxabs == 0.0f)
        return EXP_FLOOR;
    int e = ilogbf(maxabs); /* floor(log2 |x|), subnormals included */
    return e < EXP_FLOOR ? EXP_FLOOR : e > EXP_CEIL ? EXP_CEIL : e;
}

static long double ulp_of(float r)
{
    float a = fabsf(r);
    return a < 0x1p-126f ? 0x1p-149L : ldexpl(1.0L, ilogbf(a) - 23);
}

typedef struct job {
    uint64_t seed;
    int rank, n, bits;
    size_t elems; /* P */
    serene_ctx *ctx;
    float **x;         /* x[w][i], every rank's input */
    float *recv;
    long double *sum;  /* exact sum per element */
    int *E;            /* per element, from its packet */
} job;

/* One call of a case; returns the number of failed checks. */
static int run_case(job *J, int kind, int c, int avg, size_t count)
{
    const int n = J->n;
    char name[32];
    snprintf(name, sizeof name, "%s-%s", kind_name[kind], avg ? "avg" : "sum");
    for (int w = 0; w < n; w++)
        for (size_t i = 0; i < count; i++)
            J->x[w][i] = input(J->seed, kind, c, n, w, i);
    for (size_t i = 0; i < count; i++) {
        long double s = 0;
        for (int w = 0; w < n; w++)
            s += J->x[w][i];
        J->sum[i] = s;
    }
    for (size_t p = 0; p < count; p += J->elems) {
        size_t end = p + J->elems < count ? p + J->elems : count;
        int E = EXP_FLOOR;
        for (int w = 0; w < n; w++) {
            float m = 0;
            for (size_t i = p; i < end; i++)
                m = fabsf(J->x[w][i]) > m ? fabsf(J->x[w][i]) : m;
            int e = local_exponent(m);
            E = e > E ? e : E;
        }
        for (size_t i = p; i < end; i++)
            J->E[i] = E;
    }

    for (size_t i = 0; i < count; i++)
        J->recv[i] = NAN;
    int rc = serene_allreduce(J->ctx, J->x[J->rank], J->recv, count, avg ? SERENE_AVG : SERENE_SUM);

    int fails = 0;
    size_t bad = 0, ninf = 0, worst_i = 0;
    long double worst = 0;
    for (size_t i = 0; i < count; i++) {
        float r = J->recv[i];
        long double step = ldexpl(1.0L, J->E[i] - J->bits); /* 2^(E-B) */
        long double quant = avg ? step : n * step;
        const char *why = NULL;
        long double err = 0, bound = 0;
        if (isinf(r)) {
            /* Only a sum can leave the float range, and only when its
             * quantized value rounds past FLT_MAX: then the exact sum is
             * within the quantization term of 2^128 - 2^103 or beyond. */
            ninf++;
            if (avg)
                why = "an average is never infinite";
            else if ((r > 0) != (J->sum[i] > 0) || fabsl(J->sum[i]) + quant < 0x1p128L - 0x1p103L)
                why = "infinite but the exact sum is in range";
        } else if (isnan(r)) {
            why = "NaN";
        } else {
            /* For AVG compare N*r with the sum: exact in long double. */
            err = avg ? fabsl((long double)r * n - J->sum[i]) / n : fabsl((long double)r - J->sum[i]);
            bound = quant + ulp_of(r) / 2;
            if (!(err <= bound))
                why = "outside the bound";
            if (err / bound > worst) { /* failures too: the ratio says by how much */
                worst = err / bound;
                worst_i = i;
            }
            if (kind == OVERFLOW && avg && fabsf(J->x[0][i]) == BIG && fabsf(r) != BIG &&
                J->x[0][i] == J->x[n - 1][i])
                why = "the mean of equal values is not that value";
        }
        if (why && bad++ < 5)
            fprintf(stderr, "rank %d: %s [%zu] got %.9g want %.12Lg (E %d): err %.4Lg bound %.4Lg: %s\n",
                    J->rank, name, i, (double)r, avg ? J->sum[i] / n : J->sum[i], J->E[i], err, bound,
                    why);
    }
    if (bad) {
        fprintf(stderr, "rank %d: %s: %zu of %zu values fail\n", J->rank, name, bad, count);
        fails++;
    }
    int want_rc = ninf ? SERENE_ERR_NONFINITE : 0;
    if (kind == OVERFLOW && !avg && !ninf) {
        fprintf(stderr, "rank %d: %s: no element overflowed\n", J->rank, name);
        fails++;
    }
    if (rc != want_rc) {
        fprintf(stderr, "rank %d: %s: returned %s, expected %s\n", J->rank, name, serene_err_name(rc),
                want_rc ? serene_err_name(want_rc) : "SERENE_OK");
        fails++;
    }
    printf("rank %d: %-12s N=%d P=%zu count=%zu rc=%s inf=%zu worst err/bound %.4f at [%zu]%s\n",
           J->rank, name, n, J->elems, count, rc ? serene_err_name(rc) : "SERENE_OK", ninf,
           (double)worst, worst_i, fails ? " FAIL" : "");
    return fails;
}

int main(int argc, char **argv)
{
    job J = {.seed = 1};
    size_t count = 20000;
    const tc_opt table[] = {
        {"--elems", TC_OPT_SIZE, &J.elems, NULL, 0, NULL},
        {"--seed", TC_OPT_U64, &J.seed, NULL, 0, NULL},
        {"--count", TC_OPT_SIZE, &count, NULL, 0, NULL},
        {NULL, TC_OPT_FLAG, NULL, NULL, 0, NULL},
    };
    if (tc_parse_opts(argc, argv, 1, table)) {
        fprintf(stderr, "usage: bound_worker --elems P [--seed S] [--count C]\n");
        return 2;
    }
    if (!J.elems || count < 700) {
        fprintf(stderr, "bound_worker: --elems must be > 0 and --count >= 700\n");
        return 2;
    }

    serene_config cfg;
    if (tc_config_from_env(&cfg))
        return 2;
    J.rank = cfg.rank;
    J.n = cfg.world_size;
    J.bits = 30 - ceil_log2(J.n);
    if (tc_ctx_create(&J.ctx, &cfg))
        return 1;
    J.x = calloc((size_t)J.n, sizeof *J.x);
    J.recv = malloc(count * sizeof *J.recv);
    J.sum = malloc(count * sizeof *J.sum);
    J.E = malloc(count * sizeof *J.E);
    if (!J.x || !J.recv || !J.sum || !J.E)
        return 1;
    for (int w = 0; w < J.n; w++)
        if (!(J.x[w] = malloc(count * sizeof **J.x)))
            return 1;

    /* Every rank makes every call whatever its checks found, so that no
     * peer is left waiting. */
    int fails = 0, c = 0;
    fails += run_case(&J, MIXED, c++, 0, count);
    fails += run_case(&J, MIXED, c++, 1, count);
    fails += run_case(&J, TINY, c++, 0, count);
    fails += run_case(&J, TINY, c++, 1, count);
    fails += run_case(&J, OVERFLOW, c, 0, 700); /* same data twice: call index c */
    fails += run_case(&J, OVERFLOW, c++, 1, 700);
    fails += run_case(&J, AFTER, c++, 0, count);

    serene_stats st;
    serene_get_stats(J.ctx, &st);
    if (st.saturations) {
        fprintf(stderr, "rank %d: %llu saturations\n", J.rank, (unsigned long long)st.saturations);
        fails++;
    }
    printf("rank %d: %s\n", J.rank, fails ? "FAILED" : "all elements within the bound");
    serene_ctx_destroy(&J.ctx);
    for (int w = 0; w < J.n; w++)
        free(J.x[w]);
    free(J.x);
    free(J.recv);
    free(J.sum);
    free(J.E);
    return fails ? 1 : 0;
}
