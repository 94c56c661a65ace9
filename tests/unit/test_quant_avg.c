/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_quant_avg.c - decode_avg (lib/quant) against an exact integer
 * reference: the float nearest to s * 2^k / N for random s, k and every N
 * in 1..64, ties built on purpose (which a single double multiplier gets
 * wrong for N = 49), subnormal results and overflow to Inf; and its
 * multiplier helpers.
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

/* ---- the average, rounded once ------------------------------------------- */

static int32_t rnd_word(fixture *f)
{
    switch (rnd32(f) % 8) {
    case 0:
        return rnd32(f) & 1 ? INT32_MIN : INT32_MAX;
    case 1:
        return rnd_range(f, -3, 3);
    default: /* every length */
        return (int32_t)rnd32(f) >> rnd_range(f, 0, 31);
    }
}

/* decode_avg of one word with every variant: the exact nearest float. */
static void check_avg(fixture *f, int32_t w, int exp, int bits, unsigned nw)
{
    double hi, lo;
    sr_quant_avg_mul(exp, bits, nw, &hi, &lo);
    float want = exact_avg(w, exp + 1 - bits, nw);
    uint8_t b[4];
    sr_put_be32(b, (uint32_t)w);
    for (size_t v = 0; v < f->nvar; v++) {
        float got;
        f->var[v].decode_avg(&got, b, 1, hi, lo);
        if (f2u(got) != f2u(want))
            fail_msg("%s: s %d exp %d bits %d N %u: got %a want %a", f->var[v].name, w, exp, bits, nw,
                     (double)got, (double)want);
    }
}

static void test_avg_multiplier(void **state)
{
    (void)state;
    for (unsigned nw = 1; nw <= SR_WIRE_MAX_WORKERS; nw++) {
        for (int exp = -150; exp <= SR_WIRE_EXP_MAX; exp += 7) {
            int bits = sr_quant_bits(nw), k = exp + 1 - bits;
            double hi, lo;
            sr_quant_avg_mul(exp, bits, nw, &hi, &lo);
            int eh;
            double mh = frexp(hi, &eh); /* hi = mh * 2^eh, mh in [0.5, 1) */
            assert_true(ldexp(mh, 22) == floor(ldexp(mh, 22))); /* 22 bits at most */
            assert_true(lo >= 0 && lo < ldexp(hi, -21));
            if ((nw & (nw - 1)) == 0) { /* a power of two divides exactly */
                assert_true(hi == ldexp(1.0, k) / nw);
                assert_true(lo == 0);
            }
            /* N * hi is exact (28 bits) and within a factor 2 of 2^k, so
             * the remainder 2^k - N * hi is exact too; N * lo must match it
             * to 2^-71 (hi + lo is within 2^-73 of 2^k / N, and N * lo
             * rounds at 2^-74). Plain doubles: valgrind's long double is
             * only a double. */
            double rem = ldexp(1.0, k) - nw * hi;
            assert_true(fabs(nw * lo - rem) <= ldexp(1.0, k - 71));
        }
    }
    /* Overflow is possible only from 2^(E+1+ceil(log2 N)) >= 2^128 on. */
    assert_false(sr_quant_sum_may_overflow(SR_WIRE_EXP_MAX, sr_quant_bits(1)));
    assert_true(sr_quant_sum_may_overflow(SR_WIRE_EXP_MAX, sr_quant_bits(2)));
    assert_false(sr_quant_sum_may_overflow(SR_WIRE_EXP_MAX - 1, sr_quant_bits(2)));
    assert_true(sr_quant_sum_may_overflow(SR_WIRE_EXP_MAX - 1, sr_quant_bits(3)));
    assert_false(sr_quant_sum_may_overflow(SR_WIRE_EXP_MAX - 2, sr_quant_bits(4)));
    assert_true(sr_quant_sum_may_overflow(121, sr_quant_bits(64)));
    assert_false(sr_quant_sum_may_overflow(120, sr_quant_bits(64)));
    assert_false(sr_quant_sum_may_overflow(SR_WIRE_EXP_MIN, 24));
}

static void test_avg_correctly_rounded(void **state)
{
    fixture *f = *state;
    assert_int_equal(fegetround(), FE_TONEAREST);
    /* Random words, every worker count, exponents over the whole range and
     * below the floor (subnormal means, some rounding to 0). */
    for (int iter = 0; iter < 100000; iter++) {
        unsigned nw = (unsigned)rnd_range(f, 1, (int)SR_WIRE_MAX_WORKERS);
        int exp = iter % 4 == 0 ? rnd_range(f, -150, SR_WIRE_EXP_MIN) : rnd_range(f, SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX);
        check_avg(f, rnd_word(f), exp, sr_quant_bits(nw), nw);
    }
    /* The extremes of the range: the largest words at the top exponent go
     * to +-Inf for small N, the smallest means at the floor. */
    for (unsigned nw = 1; nw <= SR_WIRE_MAX_WORKERS; nw++) {
        static const int32_t ws[] = {INT32_MAX, INT32_MIN, INT32_MAX - 64, -INT32_MAX + 63, 1, -1, 3};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            check_avg(f, ws[i], SR_WIRE_EXP_MAX, sr_quant_bits(nw), nw);
            check_avg(f, ws[i], SR_WIRE_EXP_MIN, sr_quant_bits(nw), nw);
        }
    }
    /* Ties: s = n * t with N = 2^a * n (n odd) and t odd of 25 bits makes
     * the mean t * 2^(k-a) exactly halfway between two floats. A single
     * double multiplier fl(2^k / N) misses some of them (for N = 49 it is
     * off by 0.72 * 2^-53); decode_avg breaks every one to even. */
    unsigned single_wrong = 0;
    for (unsigned nw = 1; nw <= SR_WIRE_MAX_WORKERS; nw++) {
        unsigned odd = nw;
        while (!(odd & 1))
            odd >>= 1;
        uint32_t tmax = (uint32_t)INT32_MAX / odd < (1u << 25) ? (uint32_t)INT32_MAX / odd : (1u << 25) - 1;
        for (int iter = 0; iter < 300; iter++) {
            uint32_t t = ((uint32_t)rnd_range(f, 1 << 24, (int)tmax)) | 1u;
            if (t > tmax)
                t -= 2;
            int32_t w = (int32_t)(odd * t) * (rnd32(f) & 1 ? -1 : 1);
            int exp = rnd_range(f, SR_WIRE_EXP_MIN, 90), bits = sr_quant_bits(nw), k = exp + 1 - bits;
            check_avg(f, w, exp, bits, nw);
            float single = (float)((double)w * (ldexp(1.0, k) / nw));
            single_wrong += f2u(single) != f2u(exact_avg(w, k, nw));
        }
    }
    printf("# a single double multiplier got %u of %u ties wrong\n", single_wrong,
           300u * SR_WIRE_MAX_WORKERS);
    assert_true(single_wrong > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avg_multiplier),
        cmocka_unit_test_teardown(test_avg_correctly_rounded, fp_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
