/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_quant.c - quantization kernels and exponent helpers (lib/quant): the
 * CPU probe and the kernel table it selects, the exponent helpers, the C
 * reference against values worked out by hand and every kernel against an
 * independent oracle (double arithmetic + nearbyint under FE_TONEAREST),
 * and the end-to-end property of the scheme in quant.h: N workers quantize
 * with the common exponent, the int32 sum cannot overflow, and the decoded
 * sum is within N * 2^(E-B) + ulp(r)/2 of the exact sum, checked exactly
 * in 64-bit integers.
 *
 * Every variant against the reference, bit for bit, is in
 * test_quant_variants.c; decode_avg in test_quant_avg.c; the fixture and
 * helpers all three use in quant_helpers.h.
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

/* ---- CPU probe and kernel selection ------------------------------------- */

/* Whether /proc/cpuinfo lists flag; -1 if it cannot be read. */
static int cpuinfo_has(const char *flag)
{
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp)
        return -1;
    char line[8192];
    int found = -1;
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        found = 0;
        for (char *tok = strtok(strchr(line, ':') + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
            if (strcmp(tok, flag) == 0)
                found = 1;
        break;
    }
    fclose(fp);
    return found;
}

static void test_cpu_and_init(void **state)
{
    (void)state;
    unsigned feat = sr_cpu_features();
    assert_int_equal(feat & ~(SR_CPU_AVX2 | SR_CPU_AVX512), 0);
#if defined(__x86_64__)
    int avx2 = cpuinfo_has("avx2");
    if (avx2 >= 0) {
        int avx512 = cpuinfo_has("avx512f") == 1 && cpuinfo_has("avx512bw") == 1 &&
                     cpuinfo_has("avx512vl") == 1;
        /* Never claims what the kernel says the CPU lacks ... */
        assert_true(!(feat & SR_CPU_AVX2) || avx2);
        assert_true(!(feat & SR_CPU_AVX512) || avx512);
        /* ... and finds everything it has, unless an emulator (valgrind,
         * whose CPUID hides AVX-512) stands between the probe and the CPU. */
        const char *pre = getenv("LD_PRELOAD");
        if (!(pre && strstr(pre, "vgpreload"))) {
            assert_int_equal(!!(feat & SR_CPU_AVX2), avx2);
            assert_int_equal(!!(feat & SR_CPU_AVX512), avx512);
        }
    }
#endif
    sr_quant_kernels k;
    sr_quant_init(&k, 0);
    assert_string_equal(k.name, "c");
    assert_non_null(k.maxabs);
    assert_non_null(k.encode);
    assert_non_null(k.decode);
    assert_non_null(k.decode_avg);
    sr_quant_init(&k, ~0u);
    assert_string_equal(k.name, feat & SR_CPU_AVX512 ? "avx512" : feat & SR_CPU_AVX2 ? "avx2" : "c");
#if defined(__x86_64__)
    /* The variants are built on every x86-64 gcc/clang, so the CPU alone
     * decides. */
    sr_quant_init(&k, SR_CPU_AVX2);
    assert_string_equal(k.name, feat & SR_CPU_AVX2 ? "avx2" : "c");
    sr_quant_init(&k, SR_CPU_AVX512);
    assert_string_equal(k.name, feat & SR_CPU_AVX512 ? "avx512" : "c");
    assert_int_equal(sr_quant_init_variant(&k, SR_CPU_AVX2), feat & SR_CPU_AVX2 ? 0 : -1);
    assert_int_equal(sr_quant_init_variant(&k, SR_CPU_AVX512), feat & SR_CPU_AVX512 ? 0 : -1);
#endif
    assert_int_equal(sr_quant_init_variant(&k, 0), 0);
    assert_string_equal(k.name, "c");
    /* Unknown or combined variants are refused and leave k untouched. */
    sr_quant_kernels before;
    memset(&before, 0x5a, sizeof before);
    memcpy(&k, &before, sizeof k);
    assert_int_equal(sr_quant_init_variant(&k, 0x4), -1);
    assert_int_equal(sr_quant_init_variant(&k, SR_CPU_AVX2 | SR_CPU_AVX512), -1);
    assert_memory_equal(&k, &before, sizeof k);
}

/* ---- exponent helpers ---------------------------------------------------- */

static void test_exponent_helpers(void **state)
{
    (void)state;
    static const struct { unsigned n; int b; } bits[] = {
        {0, 30}, {1, 30}, {2, 29}, {3, 28}, {4, 28}, {5, 27}, {8, 27}, {9, 26},
        {16, 26}, {17, 25}, {32, 25}, {33, 24}, {64, 24}, {65, 23}, {1u << 29, 1},
    };
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        assert_int_equal(sr_quant_bits(bits[i].n), bits[i].b);
    assert_int_equal(sr_quant_bits(SR_WIRE_MAX_WORKERS), 24);

    static const struct { float x; int e; } ex[] = {
        {1.0f, 0}, {1.5f, 0}, {1.999999f, 0}, {2.0f, 1}, {0.75f, -1}, {-3.0f, 1},
        {0x1p-96f, -96}, {0x1.fffffep-96f, -96}, {0x1p-95f, -95}, {0x1p-97f, -96},
        {0x1p-126f, -96}, {0x1p-149f, -96}, {0.0f, -96}, {-0.0f, -96}, {0x1p100f, 100},
        {0x1p126f, 126 < SR_WIRE_EXP_MAX ? 126 : SR_WIRE_EXP_MAX},
        {FLT_MAX, SR_WIRE_EXP_MAX}, {-FLT_MAX, SR_WIRE_EXP_MAX}, {0x1p127f, SR_WIRE_EXP_MAX},
        {INFINITY, SR_WIRE_EXP_MAX}, {-INFINITY, SR_WIRE_EXP_MAX}, {NAN, SR_WIRE_EXP_MAX},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
        assert_int_equal(sr_quant_exponent(ex[i].x), ex[i].e);
    assert_int_equal(SR_WIRE_EXP_MIN, -96); /* the table above assumes it */
    for (int e = SR_WIRE_EXP_MIN; e <= SR_WIRE_EXP_MAX; e++) { /* every binade in range */
        assert_int_equal(sr_quant_exponent(ldexpf(1.0f, e)), e);
        assert_int_equal(sr_quant_exponent(-ldexpf(1.75f, e)), e);
    }

    /* Over the whole clamped range both multipliers are exact powers of two
     * and normal floats, and they are inverses of each other. */
    for (int b = 24; b <= 30; b++) {
        for (int e = SR_WIRE_EXP_MIN; e <= SR_WIRE_EXP_MAX; e++) {
            float em = sr_quant_encode_mul(e, b), dm = sr_quant_decode_mul(e, b);
            assert_int_equal(f2u(em), (uint32_t)(127 + b - 1 - e) << 23);
            assert_int_equal(f2u(dm), (uint32_t)(127 + e + 1 - b) << 23);
            assert_true(isnormal(em) && isnormal(dm));
            assert_true(em * dm == 1.0f);
            /* |x| < 2^(e+1) maps below 2^b in magnitude; when the clamp
             * leaves the top binade out, |x| < 2^128 maps below 2^(b+1). */
            float top = u2f(((uint32_t)(127 + e) << 23) | 0x7fffffu);
            assert_true(top * em < ldexpf(1.0f, b));
            if (e == SR_WIRE_EXP_MAX)
                assert_true(FLT_MAX * em < ldexpf(1.0f, b + 1));
        }
    }
}

/* ---- the reference against hand-worked values ---------------------------- */

static void test_known_values(void **state)
{
    fixture *f = *state;
    static const struct { float x; int32_t q; int sat; } enc[] = {
        {0.5f, 0, 0}, {1.5f, 2, 0}, {2.5f, 2, 0}, {3.5f, 4, 0}, {-0.5f, 0, 0},
        {-1.5f, -2, 0}, {-2.5f, -2, 0}, {0.49999997f, 0, 0}, {0.50000006f, 1, 0},
        {-0.0f, 0, 0}, {0x1p-149f, 0, 0}, {8388607.5f, 8388608, 0},
        {8388606.5f, 8388606, 0}, {-8388605.5f, -8388606, 0}, {3.0f, 3, 0}, {-7.0f, -7, 0},
        {0x1p31f - 128, 2147483520, 0}, {-0x1p31f, INT32_MIN, 0},
        {0x1p31f, INT32_MAX, 1}, {-0x1p31f - 256, INT32_MIN, 1}, {FLT_MAX, INT32_MAX, 1},
        {-FLT_MAX, INT32_MIN, 1}, {INFINITY, INT32_MAX, 1}, {-INFINITY, INT32_MIN, 1},
        {NAN, INT32_MIN, 1}, {-NAN, INT32_MIN, 1},
    };
    const size_t ne = sizeof enc / sizeof enc[0];
    size_t want_sat = 0;
    for (size_t v = 0; v < f->nvar; v++) {
        const sr_quant_kernels *k = &f->var[v];
        for (int sh = -3; sh <= 3; sh++) { /* the same values as x * 2^-sh */
            float mul = ldexpf(1.0f, sh);
            want_sat = 0;
            for (size_t i = 0; i < ne; i++) {
                f->src[i] = ldexpf(enc[i].x, -sh);
                want_sat += (size_t)enc[i].sat;
            }
            uint8_t *w = f->w_var;
            assert_int_equal(k->encode(w, f->src, ne, mul), want_sat);
            for (size_t i = 0; i < ne; i++)
                assert_int_equal((int32_t)sr_get_be32(w + 4 * i), enc[i].q);
        }
        /* The words are big-endian on the wire. */
        f->src[0] = 0x01020304;
        assert_int_equal(k->encode(f->w_var, f->src, 1, 1.0f), 0);
        assert_int_equal(f->w_var[0], 1);
        assert_int_equal(f->w_var[3], 4);

        static const struct { int32_t w; float x; } dec[] = {
            {0, 0.0f}, {1, 1.0f}, {-1, -1.0f}, {(1 << 24) + 1, 0x1p24f},
            {(1 << 24) + 2, 0x1p24f + 2}, {(1 << 24) + 3, 0x1p24f + 4},
            {-(1 << 24) - 1, -0x1p24f}, {(1 << 30) + 64, 0x1p30f},
            {(1 << 30) + 192, 0x1p30f + 256}, {(1 << 30) + 65, 0x1p30f + 128},
            {INT32_MAX, 0x1p31f}, {INT32_MIN, -0x1p31f}, {INT32_MAX - 64, 0x1p31f - 128},
        };
        const size_t nd = sizeof dec / sizeof dec[0];
        for (size_t i = 0; i < nd; i++)
            sr_put_be32(f->w_ref + 1 + 4 * i, (uint32_t)dec[i].w); /* odd address */
        float out[sizeof dec / sizeof dec[0]];
        k->decode(out, f->w_ref + 1, nd, 0.25f);
        for (size_t i = 0; i < nd; i++)
            assert_int_equal(f2u(out[i]), f2u(dec[i].x * 0.25f));

        /* maxabs: largest magnitude, sign dropped, non-finite counted. */
        float m = -1;
        assert_int_equal(k->maxabs(f->src, 0, &m), 0);
        assert_int_equal(f2u(m), 0);
        static const float mx[] = {-0.0f, 1.0f, -5.5f, 0x1p-140f, 3.0f};
        assert_int_equal(k->maxabs(mx, 5, &m), 0);
        assert_true(m == 5.5f);
        assert_int_equal(k->maxabs(mx, 1, &m), 0);
        assert_int_equal(f2u(m), 0); /* |-0| is +0 */
        assert_int_equal(k->maxabs(mx + 3, 1, &m), 0);
        assert_true(m == 0x1p-140f);
        static const float nf[] = {1.0f, INFINITY, 2.0f, -INFINITY, NAN, 7.0f};
        assert_int_equal(k->maxabs(nf, 4, &m), 2);
        assert_true(isinf(m) && m > 0);
        assert_int_equal(k->maxabs(nf, 6, &m), 3);
        assert_true(isnan(m));
    }
}

/* ---- every kernel against an independent oracle ------------------------- */

static int32_t oracle_q(float x, float mul, size_t *sat)
{
    double y = (double)x * (double)mul; /* exact: 24 x 24 bits */
    if (isnan(y) || y < -0x1p31) {
        (*sat)++;
        return INT32_MIN;
    }
    if (y >= 0x1p31) {
        (*sat)++;
        return INT32_MAX;
    }
    return (int32_t)nearbyint(y); /* RNE: the test runs in FE_TONEAREST */
}

static void test_oracle(void **state)
{
    fixture *f = *state;
    assert_int_equal(fegetround(), FE_TONEAREST);
    for (int iter = 0; iter < 200; iter++) {
        size_t n = (size_t)rnd_range(f, 1, 300);
        /* Powers of two whose products stay out of the subnormal range
         * (where the float product would round but the double one not). */
        float mul = ldexpf(1.0f, rnd_range(f, -20, 40));
        for (size_t i = 0; i < n; i++) {
            f->src[i] = rnd_input(f, mul);
            if (fpclassify(f->src[i] * mul) == FP_SUBNORMAL)
                f->src[i] = 0;
        }
        for (size_t v = 0; v < f->nvar; v++) {
            const sr_quant_kernels *k = &f->var[v];
            size_t want = 0;
            size_t got = k->encode(f->w_var, f->src, n, mul);
            for (size_t i = 0; i < n; i++)
                assert_int_equal((int32_t)sr_get_be32(f->w_var + 4 * i), oracle_q(f->src[i], mul, &want));
            assert_int_equal(got, want);

            fill_words(f, f->w_ref, n);
            float dmul = rnd32(f) & 1 ? 1.0f / 3.0f : ldexpf(1.0f, rnd_range(f, -60, 60));
            k->decode(f->f_var, f->w_ref, n, dmul);
            for (size_t i = 0; i < n; i++) {
                float want_f = (float)(int32_t)sr_get_be32(f->w_ref + 4 * i) * dmul;
                assert_int_equal(f2u(f->f_var[i]), f2u(want_f));
            }
        }
    }
}

/* ---- end to end: N workers, common exponent, int32 sum, decode ---------- */

/* One round of the scheme with N workers on L elements; every quantity is
 * compared exactly in units of 2^(T-55), T being the top exponent. */
static void e2e_round(fixture *f, const sr_quant_kernels *k, unsigned nw, int top)
{
    enum { L = 257 };
    float x[64][L];
    int64_t exact[L], qsum[L];
    int E = SR_WIRE_EXP_MIN;
    memset(exact, 0, sizeof exact);
    memset(qsum, 0, sizeof qsum);
    for (unsigned w = 0; w < nw; w++) {
        int tw = w == 0 ? top : top - rnd_range(f, 0, 30); /* magnitudes far apart */
        for (int i = 0; i < L; i++) {
            int cls = rnd_range(f, 0, 19), e;
            if (cls == 0) {
                x[w][i] = 0;
                continue;
            }
            e = cls == 1 ? rnd_range(f, top - 32, tw) : rnd_range(f, tw - 2, tw);
            float m = (float)(rnd32(f) % (1u << 23) + (1u << 23));
            x[w][i] = (rnd32(f) & 1 ? -1 : 1) * ldexpf(m, e - 23);
        }
        if (w == 0)
            x[0][rnd_range(f, 0, L - 1)] = (rnd32(f) & 1 ? -1.5f : 1.5f) * ldexpf(1.0f, top);
        for (int i = 0; i < L; i++) {
            double d = ldexp((double)x[w][i], 55 - top); /* exact: scaled by 2^k */
            assert_true(d == floor(d) && fabs(d) < 0x1p56);
            exact[i] += (int64_t)d;
        }
        float mx;
        assert_int_equal(k->maxabs(x[w], L, &mx), 0);
        int ew = sr_quant_exponent(mx);
        E = ew > E ? ew : E;
    }
    assert_int_equal(E, top < SR_WIRE_EXP_MIN ? SR_WIRE_EXP_MIN : top > SR_WIRE_EXP_MAX ? SR_WIRE_EXP_MAX : top);

    int B = sr_quant_bits(nw);
    /* Above the top clamp |x| < 2^(E+2): |q| < 2^(B+1) instead of <= 2^B. */
    const int64_t qmax = top > SR_WIRE_EXP_MAX ? ((int64_t)2 << B) - 1 : (int64_t)1 << B;
    float emul = sr_quant_encode_mul(E, B);
    for (unsigned w = 0; w < nw; w++) {
        assert_int_equal(k->encode(f->w_var, x[w], L, emul), 0);
        for (int i = 0; i < L; i++) {
            int32_t q = (int32_t)sr_get_be32(f->w_var + 4 * i);
            assert_true(q <= qmax && q >= -qmax);
            qsum[i] += q;
        }
    }
    /* The switch adds int32 words: the sum must fit, so no wrap happened. */
    for (int i = 0; i < L; i++) {
        assert_true(qsum[i] <= (int64_t)nw * qmax && qsum[i] >= -(int64_t)nw * qmax);
        assert_true((int64_t)nw * qmax <= INT32_MAX);
        sr_put_be32(f->w_ref + 4 * i, (uint32_t)(int32_t)qsum[i]);
    }
    float r[L];
    k->decode(r, f->w_ref, L, sr_quant_decode_mul(E, B));
    /* Bound: N * 2^(E-B) + ulp(r)/2, here in units of 2^(T-55). */
    const int kk = E + 56 - B - top; /* r = fl(qsum) * 2^(E+1-B) = fl(qsum) * 2^kk units */
    assert_true(kk >= 25 && kk <= 62);
    for (int i = 0; i < L; i++) {
        double rs = ldexp((double)r[i], 55 - top);
        assert_true(rs == floor(rs) && fabs(rs) < 0x1p62);
        int64_t err = (int64_t)rs - exact[i];
        if (err < 0)
            err = -err;
        double fq = ldexp((double)r[i], -(E + 1 - B)); /* fl(qsum), an integer */
        int64_t ulp = fq == 0 ? 0 : (int64_t)1 << (ilogb(fq) > 23 ? ilogb(fq) - 23 : 0);
        int64_t bound = ((int64_t)nw << (E - B + 55 - top)) + (ulp << (kk - 1));
        assert_true(err <= bound);
    }
}

static void test_end_to_end(void **state)
{
    fixture *f = *state;
    static const unsigned ns[] = {1, 2, 3, 4, 8, 64};
    for (size_t v = 0; v < f->nvar; v++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (int trial = 0; trial < 12; trial++) {
                /* Tops cover both clamps and stay low enough that the
                 * sum remains a finite float (127 only for one worker). */
                int top = trial == 0 ? -100 : trial == 1 ? 120 : rnd_range(f, -90, 120);
                if (trial == 2 && ns[i] == 1)
                    top = 127;
                e2e_round(f, &f->var[v], ns[i], top);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_and_init),
        cmocka_unit_test(test_exponent_helpers),
        cmocka_unit_test(test_known_values),
        cmocka_unit_test_teardown(test_oracle, fp_teardown),
        cmocka_unit_test(test_end_to_end),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
