/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bound_worker.c - one rank of the quantization-bound acceptance test (run
 * under serene-run, against the real software switch, through the public
 * API only).
 *
 * Every rank regenerates every rank's input from (seed, case, rank, index),
 * so each rank knows the exact sum without extra traffic and checks EVERY
 * element against the bound stated in serene.h, quant.h, quant16.h and the
 * README. For element i of packet k (elements [k*P, (k+1)*P), P = --elems,
 * the job's words per packet, times 2 on a 16-bit wire: two values a word):
 *   E = max over ranks w of clamp(floor(log2(max_{j in k} |x_w[j]|)), -96, 126)
 *       (-96 when all of them are zero);
 *   32-bit wire, B = 30 - ceil(log2 N):
 *     SUM: |r_i - sum_w x_w[i]|     <= N * 2^(E-B) + ulp(r_i)/2
 *     AVG: |r_i - sum_w x_w[i] / N| <=     2^(E-B) + ulp(r_i)/2
 *   16-bit wire (--wire 16), B = 15 - ceil(log2 N): the same with one step
 *   2^(E+1-B) per worker instead of half a step;
 *   ulp(r) = 2^(e-23) for |r| in [2^e, 2^(e+1)), 2^-149 below 2^-126;
 *   a float16 / bfloat16 result (--dtype f16 / bf16) is rounded once more,
 *   to nearest even in its format: + ulp16(r_i)/2 (float16: 2^(e-10),
 *   2^-24 below 2^-14; bfloat16: 2^(e-7), 2^-133 below 2^-126), and the
 *   float32 term is taken at r_i (doubled, as the float32 result it was
 *   rounded from may lie a binade above);
 * and a SUM beyond the result's range comes back as +-Inf with
 * SERENE_ERR_NONFINITE on every rank, after which the context still works;
 * so does a NaN or Inf in one rank's input, whose packet comes back NaN.
 *
 * The exact sums are taken in long double (64-bit mantissa): every element
 * whose ranks' values lie within 40 binades of each other (all but a few
 * planted ones) sums exactly, and otherwise the rounding is below 2^-60 of
 * the largest value, far below the bound's first term. The 16-bit float
 * inputs are rounded to their format here (in double arithmetic, not with
 * the library's conversions), so the ranks' inputs are exact in it.
 *
 * Cases (each a separate call on the same context, in this order):
 *   mixed-sum, mixed-avg  magnitudes 2^-60..2^60 by blocks (float16:
 *                         2^-20..2^12), per-rank jitter, zeros, random
 *                         signs (cancellation), a tail packet;
 *   tiny-sum, tiny-avg    values around and below the exponent floor 2^-96
 *                         (float16: its subnormals, 2^-24 to 2^-14), zeros;
 *   overflow-sum          all ranks at the format's top (3e38; float16
 *                         60000) in some elements: those are +-Inf and the
 *                         call returns SERENE_ERR_NONFINITE;
 *   overflow-avg          the same data averaged: finite, the value itself;
 *   nonfinite-sum         one rank has a NaN and an Inf in two packets:
 *                         those packets are NaN, the others in the bound,
 *                         SERENE_ERR_NONFINITE;
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
#define BIG16 60000.0f  /* two of them overflow float16 (65504), their mean does not */

enum { MIXED, TINY, OVERFLOW, NONFINITE, AFTER };
static const char *const kind_name[] = {"mixed", "tiny", "overflow", "nonfinite", "after"};
enum { F32, F16, BF16 }; /* --dtype */
static const char *const dtype_name[] = {"f32", "f16", "bf16"};

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

static int ceil_log2(int n)
{
    int b = 0;
    while ((1 << b) < n)
        b++;
    return b;
}

/* Input of rank r at index i for case kind of call c, before rounding to
 * the dtype (input() below). Element classes are shared by all ranks (from
 * the block or the index), values and signs are not. */
static float input_f(uint64_t seed, int kind, int c, int n, int r, size_t i, int f16)
{
    uint64_t blk = hash4(seed, (uint64_t)c, 1000 + i / 37, 0);
    uint64_t el = hash4(seed, (uint64_t)c, i, 1);
    uint64_t h = hash4(seed, (uint64_t)c, i, 2 + (uint64_t)r);
    switch (kind) {
    case MIXED:
    case AFTER: {
        if ((h >> 20) % 16 == 0)
            return 0.0f;
        /* float16: below 2^(13 - ceil(log2 N)), so that sums stay finite. */
        int base = f16 ? (int)(blk % 23) - 12 - ceil_log2(n) : (int)(blk % 121) - 60;
        if (el % 53 == 0) /* a lone large value: the rest of its packet sits far below E */
            return val(h, base + (f16 ? 2 : 20));
        return val(h, base - (int)((h >> 8) % (f16 ? 8 : 13)));
    }
    case NONFINITE:
        if (r == n - 1 && i == 3)
            return NAN;
        if (r == 0 && i == 700)
            return el & 1 ? -INFINITY : INFINITY;
        return val(h, (int)((h >> 8) % 9) - 4);
    case TINY:
        if (f16) { /* float16's subnormals and smallest normals, zeros */
            switch (blk % 4) {
            case 0: return val(h, -24 + (int)((h >> 8) % 10));
            case 1: return 0.0f;
            case 2: return (h >> 20) % 3 ? 0x1p-24f * (h & 1 ? -1.0f : 1.0f) : 0.0f;
            default: return val(h, -14 - (int)((h >> 8) % 3));
            }
        }
        {
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
        float big = f16 ? BIG16 : BIG, top = f16 ? 65504.0f : FLT_MAX;
        if ((g == 0 && i % 5 == 0) || (g == 2 && i % 7 == 0)) /* same sign on every rank */
            return el & 1 ? -big : big;
        if (g == 0 && i % 5 == 1) /* inside the range once summed: 0.9 of the top */
            return (el & 1 ? -0.9f : 0.9f) * (top / (float)n);
        if (g == 1)
            return val(h, (int)((h >> 8) % 11) - 5);
        return f16 ? val(h, 10 + (int)((h >> 8) % 5)) : val(h, 100 + (int)((h >> 8) % 20));
    }
    }
}

/* x rounded to nearest even in float16 (f16) or bfloat16: in double
 * arithmetic, a scaled rint, independent of the library's integer code. */
static float round16(float x, int dtype)
{
    if (dtype == F32 || x == 0.0f || !isfinite(x))
        return x;
    int lo = dtype == F16 ? -14 : -126, mant = dtype == F16 ? 10 : 7;
    int e = ilogbf(x);
    double step = ldexp(1.0, (e < lo ? lo : e) - mant);
    double r = rint((double)x / step) * step;
    if (dtype == F16 && fabs(r) > 65504.0)
        return x > 0 ? INFINITY : -INFINITY;
    return (float)r;
}

static float input(uint64_t seed, int kind, int c, int n, int r, size_t i, int dtype)
{
    return round16(input_f(seed, kind, c, n, r, i, dtype == F16), dtype);
}

/* The bits of a value exact in the 16-bit format, and back. */
static uint16_t to_bits16(float x, int dtype)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if (dtype == BF16)
        return (uint16_t)(u >> 16 | (isnan(x) ? 0x40u : 0u));
    uint16_t sign = (uint16_t)(u >> 16 & 0x8000u);
    float a = fabsf(x);
    if (isnan(x))
        return 0x7e00u;
    if (isinf(x))
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x1p-14f)
        return (uint16_t)(sign | (uint16_t)ldexpf(a, 24));
    int e = ilogbf(a);
    return (uint16_t)(sign | (e + 15) << 10 | ((uint16_t)ldexpf(a, 10 - e) - 1024u));
}

static float from_bits16(uint16_t b, int dtype)
{
    if (dtype == BF16) {
        uint32_t u = (uint32_t)b << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = b >> 10 & 31, m = b & 1023;
    float v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexpf((float)(1024 + m), e - 25) : ldexpf((float)m, -24);
    return b & 0x8000u ? -v : v;
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

/* The spacing of the 16-bit format at |r|. */
static long double ulp16_of(float r, int dtype)
{
    float a = fabsf(r);
    if (dtype == F16)
        return a < 0x1p-14f ? 0x1p-24L : ldexpl(1.0L, ilogbf(a) - 10);
    return a < 0x1p-126f ? 0x1p-133L : ldexpl(1.0L, ilogbf(a) - 7);
}

typedef struct job {
    uint64_t seed;
    int rank, n, bits, wire16, dtype;
    size_t elems; /* P: values per packet */
    serene_ctx *ctx;
    float **x;         /* x[w][i], every rank's input (exact in the dtype) */
    float *recv;
    uint16_t *h_send, *h_recv; /* the 16-bit dtypes' buffers */
    long double *sum;  /* exact sum per element */
    int *E;            /* per element, from its packet */
} job;

/* The call under test: float32 through serene_allreduce (its wire width
 * from SERENE_WIRE_BITS) or serene_allreduce_typed with the width. */
static int call(job *J, size_t count, int avg)
{
    serene_reduce_op op = avg ? SERENE_AVG : SERENE_SUM;
    unsigned flags = J->wire16 ? SERENE_WIRE16 : SERENE_WIRE32;
    if (J->dtype == F32 && !J->wire16)
        return serene_allreduce(J->ctx, J->x[J->rank], J->recv, count, op);
    if (J->dtype == F32)
        return serene_allreduce_typed(J->ctx, J->x[J->rank], J->recv, count, SERENE_FLOAT32, op,
                                      flags);
    for (size_t i = 0; i < count; i++) {
        J->h_send[i] = to_bits16(J->x[J->rank][i], J->dtype);
        J->h_recv[i] = 0x7fffu; /* a NaN: unwritten elements fail */
    }
    int rc = serene_allreduce_typed(J->ctx, J->h_send, J->h_recv, count,
                                    J->dtype == F16 ? SERENE_FLOAT16 : SERENE_BFLOAT16, op, flags);
    for (size_t i = 0; i < count; i++)
        J->recv[i] = from_bits16(J->h_recv[i], J->dtype);
    return rc;
}

/* One call of a case; returns the number of failed checks. */
/* Every rank's inputs of the case's call c, their exact sums and each
 * element's packet exponent E. */
static void make_inputs(job *J, int kind, int c, size_t count)
{
    const int n = J->n;
    for (int w = 0; w < n; w++)
        for (size_t i = 0; i < count; i++)
            J->x[w][i] = input(J->seed, kind, c, n, w, i, J->dtype);
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
}

static int run_case(job *J, int kind, int c, int avg, size_t count)
{
    const int n = J->n;
    char name[32];
    snprintf(name, sizeof name, "%s-%s", kind_name[kind], avg ? "avg" : "sum");
    make_inputs(J, kind, c, count);
    for (size_t i = 0; i < count; i++)
        J->recv[i] = NAN;
    int rc = call(J, count, avg);
    /* The packets that hold a NaN or Inf on some rank come back NaN. */
    int *bad_pkt = NULL;
    if (kind == NONFINITE) {
        bad_pkt = calloc(count / J->elems + 1, sizeof *bad_pkt);
        for (int w = 0; w < n; w++)
            for (size_t i = 0; i < count; i++)
                if (!isfinite(J->x[w][i]))
                    bad_pkt[i / J->elems] = 1;
    }

    int fails = 0;
    size_t bad = 0, ninf = 0, worst_i = 0;
    long double worst = 0;
    for (size_t i = 0; i < count; i++) {
        float r = J->recv[i];
        /* Half a step 2^(E-B) on a 32-bit wire, a whole one on 16 bits,
         * where a packet at the exponent clamp 126 has one bit less. */
        int bits = J->bits - (J->wire16 && J->E[i] == EXP_CEIL);
        long double step = ldexpl(1.0L, J->E[i] + J->wire16 - bits);
        long double quant = avg ? step : n * step;
        const char *why = NULL;
        long double err = 0, bound = 0;
        if (bad_pkt && bad_pkt[i / J->elems]) {
            ninf++; /* counted as non-finite: the call must say so */
            if (!isnan(r))
                why = "a packet with a NaN or Inf input is not NaN";
        } else if (isinf(r)) {
            /* Only a sum can leave the float range, and only when its
             * quantized value rounds past FLT_MAX: then the exact sum is
             * within the quantization term of 2^128 - 2^103 or beyond. */
            ninf++;
            if (avg)
                why = "an average is never infinite";
            else if ((r > 0) != (J->sum[i] > 0) ||
                     fabsl(J->sum[i]) + quant < (J->dtype == F16 ? 65520.0L : 0x1p128L - 0x1p103L))
                why = "infinite but the exact sum is in range";
        } else if (isnan(r)) {
            why = "NaN";
        } else {
            /* For AVG compare N*r with the sum: exact in long double. */
            err = avg ? fabsl((long double)r * n - J->sum[i]) / n : fabsl((long double)r - J->sum[i]);
            bound = J->dtype == F32 ? quant + ulp_of(r) / 2
                                    : quant + ulp_of(r) + ulp16_of(r, J->dtype) / 2;
            if (!(err <= bound))
                why = "outside the bound";
            if (err / bound > worst) { /* failures too: the ratio says by how much */
                worst = err / bound;
                worst_i = i;
            }
            float big = J->dtype == F16 ? BIG16 : BIG;
            if (kind == OVERFLOW && avg && fabsf(J->x[0][i]) == big && fabsf(r) != big &&
                J->x[0][i] == J->x[n - 1][i] && !J->wire16)
                why = "the mean of equal values is not that value";
        }
        if (why && bad++ < 5)
            fprintf(stderr, "rank %d: %s [%zu] got %.9g want %.12Lg (E %d): err %.4Lg bound %.4Lg: %s\n",
                    J->rank, name, i, (double)r, avg ? J->sum[i] / n : J->sum[i], J->E[i], err, bound,
                    why);
    }
    free(bad_pkt);
    if (bad) {
        fprintf(stderr, "rank %d: %s: %zu of %zu values fail\n", J->rank, name, bad, count);
        fails++;
    }
    int want_rc = ninf ? SERENE_ERR_NONFINITE : 0;
    if ((kind == OVERFLOW || kind == NONFINITE) && !avg && !ninf) {
        fprintf(stderr, "rank %d: %s: no element overflowed\n", J->rank, name);
        fails++;
    }
    if (rc != want_rc) {
        fprintf(stderr, "rank %d: %s: returned %s, expected %s\n", J->rank, name, serene_err_name(rc),
                want_rc ? serene_err_name(want_rc) : "SERENE_OK");
        fails++;
    }
    printf("rank %d: %-13s N=%d P=%zu wire=%d dtype=%s count=%zu rc=%s inf=%zu worst err/bound "
           "%.4f at [%zu]%s\n",
           J->rank, name, n, J->elems, J->wire16 ? 16 : 32, dtype_name[J->dtype], count,
           rc ? serene_err_name(rc) : "SERENE_OK", ninf, (double)worst, worst_i,
           fails ? " FAIL" : "");
    return fails;
}

int main(int argc, char **argv)
{
    job J = {.seed = 1};
    size_t count = 20000;
    int wire = 32;
    const char *dtype = "f32";
    const tc_opt table[] = {
        {"--elems", TC_OPT_SIZE, &J.elems, NULL, 0, NULL},
        {"--seed", TC_OPT_U64, &J.seed, NULL, 0, NULL},
        {"--count", TC_OPT_SIZE, &count, NULL, 0, NULL},
        {"--wire", TC_OPT_INT, &wire, NULL, 0, NULL},
        {"--dtype", TC_OPT_STR, &dtype, NULL, 0, NULL},
        {NULL, TC_OPT_FLAG, NULL, NULL, 0, NULL},
    };
    if (tc_parse_opts(argc, argv, 1, table)) {
        fprintf(stderr, "usage: bound_worker --elems P [--seed S] [--count C] [--wire 16|32] "
                        "[--dtype f32|f16|bf16]\n");
        return 2;
    }
    J.dtype = !strcmp(dtype, "f16") ? F16 : !strcmp(dtype, "bf16") ? BF16 : F32;
    if (!J.elems || count < 701 || (wire != 16 && wire != 32) ||
        (J.dtype == F32 && strcmp(dtype, "f32"))) {
        fprintf(stderr, "bound_worker: --elems must be > 0, --count >= 701, --wire 16 or 32, "
                        "--dtype f32, f16 or bf16\n");
        return 2;
    }
    J.wire16 = wire == 16;
    J.elems *= J.wire16 ? 2 : 1; /* the job's words per packet -> values */

    serene_config cfg;
    if (tc_config_from_env(&cfg))
        return 2;
    J.rank = cfg.rank;
    J.n = cfg.world_size;
    J.bits = (J.wire16 ? 15 : 30) - ceil_log2(J.n);
    if (tc_ctx_create(&J.ctx, &cfg))
        return 1;
    J.x = calloc((size_t)J.n, sizeof *J.x);
    J.recv = malloc(count * sizeof *J.recv);
    J.h_send = malloc(count * sizeof *J.h_send);
    J.h_recv = malloc(count * sizeof *J.h_recv);
    J.sum = malloc(count * sizeof *J.sum);
    J.E = malloc(count * sizeof *J.E);
    if (!J.x || !J.recv || !J.sum || !J.E || !J.h_send || !J.h_recv)
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
    fails += run_case(&J, OVERFLOW, c, 0, 701); /* same data twice: call index c */
    fails += run_case(&J, OVERFLOW, c++, 1, 701);
    fails += run_case(&J, NONFINITE, c++, 0, 701);
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
    free(J.h_send);
    free(J.h_recv);
    free(J.sum);
    free(J.E);
    return fails ? 1 : 0;
}
