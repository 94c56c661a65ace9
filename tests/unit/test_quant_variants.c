/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_quant_variants.c - every quantization kernel variant this CPU runs
 * (sr_quant_init_variant) against the C reference, bit for bit: all n in
 * 0..100 and large n, every misalignment, ties, -0, saturation at and
 * around +-2^31, NaN/Inf, subnormals, under all four rounding modes and
 * under FTZ/DAZ, with guard bytes around each output to catch tail
 * overruns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "proto/wire.h"
#include "quant/quant.h"
#include "quant_helpers.h"

/* ---- variants against the reference ------------------------------------- */

static void sweep(fixture *f, size_t n)
{
    float mul = rnd_mul(f);
    for (size_t so = 0; so < 4; so++) { /* src offset in floats */
        float *src = f->src + so;
        fill_inputs(f, src, n, mul);
        for (size_t v = 0; v < f->nvar; v++) {
            for (size_t dof = 0; dof < 4; dof++)
                cmp_encode(f, &f->var[v], src, n, mul, dof);
        }
        /* decode: words of every length, ties in the dropped bits, the
         * int32 extremes; read from byte offset so (src is done with) */
        uint8_t *words = (uint8_t *)f->src;
        fill_words(f, words + so, n);
        float dmul = so & 1 ? sr_quant_decode_mul(rnd_range(f, SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX), 28)
                            : 0.1f;
        double am[2];
        rnd_avg_mul(f, am);
        for (size_t v = 0; v < f->nvar; v++)
            for (size_t dof = 0; dof < 4; dof++) {
                cmp_decode(f, &f->var[v], words + so, n, dmul, dof);
                cmp_decode_avg(f, &f->var[v], words + so, n, am, dof);
            }
    }
}

static void test_variants_all_n(void **state)
{
    fixture *f = *state;
    for (size_t n = 0; n <= 100; n++)
        sweep(f, n);
    static const size_t big[] = {127, 128, 129, 255, 256, 257, 1000, 2048, 4099, 65536 + 17, MAXN};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        sweep(f, big[i]);
}

/* Special values at every position of short vectors and at the ends of
 * long ones, so that each loop (unrolled, single vector, tail) sees them. */
static void test_specials(void **state)
{
    fixture *f = *state;
    static const float sp[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0x1p31f, -0x1p31f,
                               -0x1p31f - 256, 0x1p31f - 128, 2.5f, -3.5f, 0x1p-127f, 0x1p-149f,
                               -0x1.8p-127f, 0x1.8p-127f, 0x1p-126f};
    static const float muls[] = {1.0f, 0x1p127f, 0x1p-3f, 0x1p100f};
    const size_t ns = sizeof sp / sizeof sp[0];
    for (size_t m = 0; m < sizeof muls / sizeof muls[0]; m++) {
        for (size_t n = 1; n <= 80; n++) {
            for (size_t pos = 0; pos < n; pos++) {
                for (size_t i = 0; i < n; i++)
                    f->src[i] = (float)rnd_range(f, -1000, 1000) * 0.5f; /* ties too */
                f->src[pos] = sp[(pos + n) % ns];
                f->src[n - 1 - pos] = sp[(pos + 3 * n) % ns];
                for (size_t v = 0; v < f->nvar; v++)
                    cmp_encode(f, &f->var[v], f->src, n, muls[m], pos & 3);
            }
        }
        /* Long vectors: one NaN, one Inf, one saturating value at each end. */
        size_t n = 5000;
        for (size_t i = 0; i < n; i++)
            f->src[i] = (float)rnd_range(f, -1000, 1000) * 0.5f;
        f->src[0] = NAN;
        f->src[n - 1] = -INFINITY;
        f->src[n / 2] = 0x1p40f;
        f->src[n - 2] = -0x1p40f;
        for (size_t v = 0; v < f->nvar; v++) {
            float mx;
            assert_int_equal(f->var[v].maxabs(f->src, n, &mx), 2);
            /* Small multipliers saturate the four planted values only;
             * from 2^100 up every nonzero value saturates. */
            size_t want = 4;
            if (muls[m] >= 0x1p100f)
                for (size_t i = want = 0; i < n; i++)
                    want += f->src[i] != 0; /* NaN included */
            assert_int_equal(f->var[v].encode(f->w_var, f->src, n, muls[m]), want);
            cmp_encode(f, &f->var[v], f->src, n, muls[m], 1);
        }
    }
    /* Subnormals only: the true maximum, not zero, whatever DAZ says. */
    for (size_t i = 0; i < 37; i++)
        f->src[i] = u2f((uint32_t)i * 1000u + 1u);
    for (size_t v = 0; v < f->nvar; v++) {
        float mx;
        assert_int_equal(f->var[v].maxabs(f->src, 37, &mx), 0);
        assert_int_equal(f2u(mx), 36u * 1000u + 1u);
    }
}

/* The same results in every rounding mode: encode and maxabs always, decode
 * for power-of-two multipliers; for other multipliers the kernels still
 * agree with each other. */
static void test_rounding_modes(void **state)
{
    fixture *f = *state;
    static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    const size_t n = 1003;
    float mul = 0x1p-4f;
    fill_inputs(f, f->src, n, mul);
    uint8_t *words = malloc(4 * n), *enc_rn = malloc(4 * n);
    float *dec_rn = malloc(4 * n), mx_rn;
    assert_non_null(words);
    assert_non_null(enc_rn);
    assert_non_null(dec_rn);
    fill_words(f, words, n);
    size_t sat_rn = f->ref.encode(enc_rn, f->src, n, mul);
    size_t bad_rn = f->ref.maxabs(f->src, n, &mx_rn);
    f->ref.decode(dec_rn, words, n, 0x1p-7f);
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        assert_int_equal(fesetround(modes[m]), 0);
        for (size_t v = 0; v < f->nvar; v++) {
            const sr_quant_kernels *k = &f->var[v];
            float mx;
            assert_int_equal(k->maxabs(f->src, n, &mx), bad_rn);
            assert_int_equal(f2u(mx), f2u(mx_rn));
            assert_int_equal(k->encode(f->w_var, f->src, n, mul), sat_rn);
            assert_memory_equal(f->w_var, enc_rn, 4 * n);
            k->decode(f->f_var, words, n, 0x1p-7f);
            assert_memory_equal(f->f_var, dec_rn, 4 * n);
            cmp_encode(f, k, f->src + 1, n - 1, mul, 3);
            cmp_decode(f, k, words + 4, n - 1, 1.0f / 3.0f, 1);
        }
        assert_int_equal(fesetround(FE_TONEAREST), 0);
    }
    /* decode_avg: the kernels agree in every mode, and the result is the
     * nearest float (default mode) or one of the two around the exact mean
     * (the others). */
    static const struct { int exp; unsigned nw; } avgs[] = {
        {0, 3}, {SR_WIRE_EXP_MIN, 49}, {SR_WIRE_EXP_MAX, 1}, {SR_WIRE_EXP_MAX, 3}, {-140, 7},
        {17, 64}, {-5, 5}, {40, 63},
    };
    static const int all_modes[] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    for (size_t a = 0; a < sizeof avgs / sizeof avgs[0]; a++) {
        int bits = sr_quant_bits(avgs[a].nw), kx = avgs[a].exp + 1 - bits;
        double am[2];
        sr_quant_avg_mul(avgs[a].exp, bits, avgs[a].nw, &am[0], &am[1]);
        for (size_t m = 0; m < sizeof all_modes / sizeof all_modes[0]; m++) {
            assert_int_equal(fesetround(all_modes[m]), 0);
            for (size_t v = 0; v < f->nvar; v++) {
                cmp_decode_avg(f, &f->var[v], words + 4, n - 1, am, 2);
                f->var[v].decode_avg(f->f_var, words, n, am[0], am[1]);
                for (size_t i = 0; i < n; i++) {
                    float near = exact_avg((int32_t)sr_get_be32(words + 4 * i), kx, avgs[a].nw);
                    uint32_t got = f2u(f->f_var[i]);
                    if (all_modes[m] == FE_TONEAREST)
                        assert_int_equal(got, f2u(near));
                    else
                        assert_true(got == f2u(near) || got == f2u(nextafterf(near, INFINITY)) ||
                                    got == f2u(nextafterf(near, -INFINITY)));
                }
            }
        }
        assert_int_equal(fesetround(FE_TONEAREST), 0);
    }
    free(words);
    free(enc_rn);
    free(dec_rn);
}

#if defined(__x86_64__)
/* FTZ/DAZ (set by many ML runtimes) act on scalar and vector SSE/AVX math
 * alike, so the kernels still agree; maxabs, being integer, ignores DAZ. */
static void test_ftz_daz(void **state)
{
    fixture *f = *state;
    const size_t n = 517;
    const char *pre = getenv("LD_PRELOAD");
    const int valgrind = pre && strstr(pre, "vgpreload");
    _mm_setcsr(f->mxcsr | 0x8040u); /* FTZ | DAZ */
    for (int iter = 0; iter < 20; iter++) {
        float mul = ldexpf(1.0f, rnd_range(f, 100, 127));
        for (size_t i = 0; i < n; i++)
            f->src[i] = rnd32(f) % 3 ? u2f(rnd32(f) & 0x807fffffu) : rnd_input(f, mul);
        f->src[7] = u2f(0x007fffffu); /* largest subnormal */
        f->src[8] = u2f(0x80012345u); /* a negative one */
        uint8_t *words = (uint8_t *)(f->src + n) + 3; /* spare room after the input */
        fill_words(f, words, n);
        for (size_t v = 0; v < f->nvar; v++) {
            cmp_encode(f, &f->var[v], f->src, n, mul, 1);
            /* products below 2^-126 flush to zero */
            cmp_decode(f, &f->var[v], words, n, 0x1p-140f, 2);
            double am[2];
            rnd_avg_mul(f, am);
            cmp_decode_avg(f, &f->var[v], words, n, am, 1);
            sr_quant_avg_mul(-140, 28, 3, &am[0], &am[1]); /* subnormal means, flushed */
            cmp_decode_avg(f, &f->var[v], words, n, am, 3);
            f->var[v].decode_avg(f->f_var, words + 4 * 9, 1, am[0], am[1]);
            if (!valgrind) /* which does not emulate FTZ */
                assert_true(f->f_var[0] == 0.0f || fabsf(f->f_var[0]) >= 0x1p-126f);
            float mx;
            assert_int_equal(f->var[v].maxabs(f->src + 8, 1, &mx), 0);
            assert_int_equal(f2u(mx), 0x00012345u);
            assert_int_equal(f->var[v].maxabs(f->src + 7, 1, &mx), 0);
            assert_int_equal(f2u(mx), 0x007fffffu);
        }
    }
    _mm_setcsr(f->mxcsr);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variants_all_n),
        cmocka_unit_test(test_specials),
        cmocka_unit_test_teardown(test_rounding_modes, fp_teardown),
#if defined(__x86_64__)
        cmocka_unit_test_teardown(test_ftz_daz, fp_teardown),
#endif
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
