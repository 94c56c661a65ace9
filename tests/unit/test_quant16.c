/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_quant16.c - the 16-bit kernels (lib/quant/quant16.h).
 *
 * - The references: float16 <-> float32 and bfloat16 <-> float32 against
 *   an independent double-arithmetic oracle on every 16-bit pattern and on
 *   float32 patterns sampled across every binade, the rounding boundaries
 *   (ties, 65504 / 65520, the subnormal edges) placed on purpose; encode's
 *   clamp, its saturation count and its packing (two values to a word,
 *   a * 2^16 + b, checked against a packing spelled out here); the
 *   scheme's claim that N values at the clamp sum within an int16 for
 *   every N up to 64, and that the int32 sum of N packed words, in any
 *   order, decodes to the N values' exact sums.
 * - Every variant this CPU runs (sr_quant16_init_variant) against the
 *   reference, bit for bit: every n in 0..100 and large n, misaligned
 *   inputs and outputs with guard bytes, NaN/Inf/subnormals, in every
 *   rounding mode and under FTZ/DAZ.
 */
#include "quant_helpers.h"

#include "quant/quant16.h"

typedef struct fixture16 {
    fixture *f; /* the 32-bit fixture: its generator and buffers */
    sr_quant16_kernels ref, var[3];
    size_t nvar;
} fixture16;

static int setup16(void **state)
{
    void *inner = NULL;
    if (group_setup(&inner))
        return -1;
    fixture16 *g = calloc(1, sizeof *g);
    if (!g)
        return -1;
    g->f = inner;
    sr_quant16_init_variant(&g->ref, 0);
    static const unsigned variants[] = {0, SR_CPU_AVX2, SR_CPU_AVX512};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (sr_quant16_init_variant(&g->var[g->nvar], variants[i]) == 0)
            printf("# quant16 variant: %s\n", g->var[g->nvar++].name);
    *state = g;
    return 0;
}

static int teardown16(void **state)
{
    fixture16 *g = *state;
    void *inner = g->f;
    group_teardown(&inner);
    free(g);
    return 0;
}

static int fp_reset16(void **state)
{
    fixture16 *g = *state;
    void *inner = g->f;
    return fp_teardown(&inner);
}

/* ---- the oracle ---------------------------------------------------------------- */

/* The value of a float16 / bfloat16 pattern, from its fields. */
static double f16_value(uint16_t h)
{
    int e = h >> 10 & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}

static double bf16_value(uint16_t h)
{
    return (double)u2f((uint32_t)h << 16);
}

/* x rounded to nearest even at the format's precision, as a double (Inf
 * beyond the range), with a scaled rint: no bit tricks shared with the
 * code under test. */
static double round_to(double x, int f16)
{
    if (x == 0 || !isfinite(x))
        return x;
    int lo = f16 ? -14 : -126, mant = f16 ? 10 : 7;
    int e = ilogb(x);
    double step = ldexp(1.0, (e < lo ? lo : e) - mant);
    double r = rint(x / step) * step;
    double top = f16 ? 65504.0 : (double)FLT_MAX;
    /* Beyond the largest finite value, RNE goes to Inf from the midpoint
     * to the next power of two on. */
    if (fabs(r) > top)
        return x > 0 ? INFINITY : -INFINITY;
    return r;
}

/* The pattern the reference must give for x (not NaN): the oracle's value
 * found among the format's patterns of that sign. */
static uint16_t oracle_bits(float x, int f16)
{
    double r = round_to(x, f16);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isinf(r))
        return sign | (f16 ? 0x7c00 : 0x7f80);
    if (!f16)
        return (uint16_t)(f2u((float)r) >> 16); /* r is exact in float */
    double a = fabs(r);
    if (a < 0x1p-14)
        return sign | (uint16_t)ldexp(a, 24);
    int e = ilogb(a);
    return sign | (uint16_t)((e + 15) << 10) | (uint16_t)(ldexp(a, 10 - e) - 1024);
}

/* ---- references ------------------------------------------------------------------ */

/* Every 16-bit pattern: to float32 is its value (NaN stays NaN, quieted,
 * with its sign), and back gives the pattern (NaN: a quiet NaN). */
static void test_half_to_f32_all(void **state)
{
    fixture16 *g = *state;
    static uint16_t in[65536], back[65536];
    static float out[65536];
    for (uint32_t i = 0; i < 65536; i++)
        in[i] = (uint16_t)i;
    for (int f16 = 0; f16 <= 1; f16++) {
        (f16 ? g->ref.f16_to_f32 : g->ref.bf16_to_f32)(out, in, 65536);
        for (uint32_t i = 0; i < 65536; i++) {
            double v = f16 ? f16_value(in[i]) : bf16_value(in[i]);
            if (isnan(v)) {
                assert_true(isnan(out[i]));
                assert_int_equal(f2u(out[i]) >> 31, i >> 15);
                if (f16) /* vcvtph2ps quiets it; bfloat16 is a shift, as torch's */
                    assert_true(f2u(out[i]) & 0x400000u);
            } else {
                assert_true((double)out[i] == v && !!signbit(out[i]) == !!signbit(v));
            }
        }
        assert_int_equal((f16 ? g->ref.f32_to_f16 : g->ref.f32_to_bf16)(back, out, 65536), 0);
        for (uint32_t i = 0; i < 65536; i++) {
            uint16_t exp_bits = f16 ? 0x7c00 : 0x7f80;
            if ((in[i] & 0x7fff) > exp_bits) /* NaN: quiet, same sign */
                assert_int_equal(back[i], in[i] | (f16 ? 0x200 : 0x40));
            else
                assert_int_equal(back[i], in[i]);
        }
    }
}

/* float32 -> 16 bits against the oracle: every 2^11-th pattern (each
 * binade many times), the boundaries placed on purpose. */
static void test_f32_to_half_oracle(void **state)
{
    fixture16 *g = *state;
    static const float edges[] = {
        65504.0f, 65519.996f, 65520.0f, 65536.0f, 0x1p-14f, 0x1.ffcp-15f, 0x1p-24f, 0x1p-25f,
        0x1.000002p-25f, 0x1.8p-24f, 0x1.4p-24f, 0x1.ffep-15f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f,
        FLT_MAX, 0x1.fffffep127f, 0x1.ff7ffep127f, 0x1.ff8p127f, 0x1p-126f, 0x1p-133f,
        0x1p-134f, 0x1.8p-133f, 0x1p-149f, 0.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f};
    enum { CHUNK = 4096 };
    float in[CHUNK];
    uint16_t out[CHUNK];
    size_t k = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 2048) {
        float x = u2f((uint32_t)u ^ (uint32_t)(u >> 21)); /* low bits vary too */
        in[k++] = isnan(x) ? 1.0f : x;
        if (k == CHUNK - 2 * sizeof edges / sizeof edges[0] || u + 2048 >= (1ull << 32)) {
            for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
                in[k++] = edges[e];
                in[k++] = -edges[e];
            }
            for (int f16 = 0; f16 <= 1; f16++) {
                size_t ninf = (f16 ? g->ref.f32_to_f16 : g->ref.f32_to_bf16)(out, in, k), want = 0;
                for (size_t i = 0; i < k; i++) {
                    uint16_t o = oracle_bits(in[i], f16);
                    if (out[i] != o)
                        fail_msg("%s(%a): 0x%04x, oracle 0x%04x", f16 ? "f16" : "bf16",
                                 (double)in[i], out[i], o);
                    want += isfinite(in[i]) && (o & 0x7fff) == (f16 ? 0x7c00 : 0x7f80);
                }
                assert_int_equal(ninf, want);
            }
            k = 0;
        }
    }
}

/* Payload bytes of n 16-bit values: whole words. */
static size_t bytes16(size_t n)
{
    return 2 * (n + (n & 1));
}

/* Value i of packed words, spelled out from wire.h: word i / 2 = a * 2^16
 * + b (mod 2^32), b its low half as an int16, a the high half of word - b. */
static int32_t unpack16(const uint8_t *w, size_t i)
{
    const uint8_t *p = w + 4 * (i / 2);
    uint32_t word = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    int32_t b = (int16_t)(word & 0xffff);
    return i % 2 ? b : (int16_t)((word - (uint32_t)b) >> 16);
}

/* encode clamps to +-lim and counts only what lies beyond the block's top
 * (lim + 1) or is not finite, packs two to a word (the odd last one with
 * a 0); decode gives back the int16 times mul. */
static void test_encode_clamp(void **state)
{
    fixture16 *g = *state;
    const int32_t lim = 8191; /* B = 13: N = 4 */
    float in[] = {8190.4f, 8190.5f, 8191.0f, 8191.5f, 8192.0f, 8192.5f, 8193.0f, -8192.0f,
                  -8192.5f, -8193.0f, NAN, INFINITY, -INFINITY, -0.0f, 0.5f, 1.5f, -2.5f};
    int16_t want[] = {8190, 8190, 8191, 8191, 8191, 8191, 8191, -8191,
                      -8191, -8191, -8191, 8191, -8191, 0, 0, 2, -2};
    /* 8192.5 rounds to 8192 (even): the top, not counted; 8193 and the
     * three non-finite ones are. */
    const size_t n = sizeof in / sizeof in[0];
    uint8_t w[2 * sizeof in / sizeof in[0] + 2];
    float back[sizeof in / sizeof in[0]];
    assert_true(n % 2 == 1);
    for (size_t v = 0; v < g->nvar; v++) {
        memset(w, 0xa5, sizeof w);
        assert_int_equal(g->var[v].encode(w, in, n, 1.0f, lim), 5);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(unpack16(w, i), want[i]);
        assert_int_equal(unpack16(w, n), 0); /* the padding */
        /* The first word, by hand: 8190 * 2^16 + 8190. */
        assert_int_equal(w[0] << 24 | w[1] << 16 | w[2] << 8 | w[3], 0x1ffe1ffe);
        /* Word 3 holds (8191, -8191): 8191 * 2^16 - 8191, the borrow. */
        assert_int_equal((uint32_t)w[12] << 24 | w[13] << 16 | w[14] << 8 | w[15], 0x1ffee001u);
        g->var[v].decode(back, w, n, 0.25f);
        for (size_t i = 0; i < n; i++)
            assert_true(back[i] == (float)want[i] * 0.25f);
    }
}

/* The scheme: N values at the clamp, of either sign, sum within an int16
 * for every N; the bits shrink with N as documented. */
static void test_scheme_fits(void **state)
{
    (void)state;
    for (unsigned n = 1; n <= SR_WIRE_MAX_WORKERS; n++) {
        int b = sr_quant16_bits(n), lg = 0;
        while ((1u << lg) < n)
            lg++;
        assert_int_equal(b, 15 - lg);
        int32_t lim = sr_quant16_lim(b);
        assert_true((int64_t)n * lim <= INT16_MAX);
        assert_true(-(int64_t)n * lim >= INT16_MIN);
        /* At the exponent clamp one bit less, the same lim. */
        assert_int_equal(sr_quant16_bits_at(b, SR_WIRE_EXP_MAX), b - 1);
        assert_int_equal(sr_quant16_bits_at(b, SR_WIRE_EXP_MAX - 1), b);
    }
    assert_int_equal(sr_quant16_bits(0), 15);
}

/* The packing under the switch's adds: N workers' packed words summed as
 * int32 in a random order (each worker's own order of words too) decode
 * to the exact sums of the values, for N up to 64, values anywhere in
 * [-lim, lim] (the clamp included) and odd counts. */
static void test_packed_sums(void **state)
{
    fixture16 *g = *state;
    enum { N_VALS = 37 };
    for (unsigned n = 1; n <= SR_WIRE_MAX_WORKERS; n++) {
        int32_t lim = sr_quant16_lim(sr_quant16_bits(n));
        uint32_t sum[(N_VALS + 1) / 2] = {0};
        int32_t exact[N_VALS] = {0};
        for (unsigned w = 0; w < n; w++) {
            float x[N_VALS];
            uint8_t pl[2 * N_VALS + 2];
            for (size_t i = 0; i < N_VALS; i++) {
                uint32_t r = rnd32(g->f);
                int32_t q = r % 4 == 0 ? (r & 16 ? lim : -lim) : (int32_t)(r >> 8) % (lim + 1);
                x[i] = (float)q;
                exact[i] += q;
            }
            assert_int_equal(g->ref.encode(pl, x, N_VALS, 1.0f, lim), 0);
            for (size_t k = 0; k < (N_VALS + 1) / 2; k++)
                sum[k] += (uint32_t)pl[4 * k] << 24 | (uint32_t)pl[4 * k + 1] << 16 |
                          (uint32_t)pl[4 * k + 2] << 8 | pl[4 * k + 3];
        }
        uint8_t res[2 * N_VALS + 2];
        for (size_t k = 0; k < (N_VALS + 1) / 2; k++)
            sr_put_be32(res + 4 * k, sum[k]);
        float back[N_VALS];
        for (size_t v = 0; v < g->nvar; v++) {
            g->var[v].decode(back, res, N_VALS, 1.0f);
            for (size_t i = 0; i < N_VALS; i++)
                if (back[i] != (float)exact[i])
                    fail_msg("N = %u, value %zu: %g, exact %d (%s)", n, i, (double)back[i],
                             exact[i], g->var[v].name);
        }
    }
}

/* sr_half_maxabs: exact, counts NaN/Inf, for both formats. */
static void test_half_maxabs(void **state)
{
    (void)state;
    uint16_t h[] = {0x0001, 0x8400, 0x3c00, 0xbc01, 0x0000};
    float m;
    assert_int_equal(sr_half_maxabs(h, 5, SR_HALF_F16, &m), 0);
    assert_true(m == (float)f16_value(0x3c01));
    assert_int_equal(sr_half_maxabs(h, 1, SR_HALF_F16, &m), 0);
    assert_true(m == 0x1p-24f);
    h[4] = 0xfc00; /* -Inf */
    assert_int_equal(sr_half_maxabs(h, 5, SR_HALF_F16, &m), 1);
    assert_true(isinf(m));
    uint16_t b[] = {0x0001, 0xc2c8, 0x4248}; /* bf16: subnormal, -100, 50 */
    assert_int_equal(sr_half_maxabs(b, 3, SR_HALF_BF16, &m), 0);
    assert_true(m == 100.0f);
    b[0] = 0x7fc1; /* NaN */
    assert_int_equal(sr_half_maxabs(b, 3, SR_HALF_BF16, &m), 1);
    assert_true(isnan(m));
    assert_int_equal(sr_half_maxabs(b, 0, SR_HALF_BF16, &m), 0);
    assert_true(m == 0.0f);
}

/* ---- variants against the reference ---------------------------------------------- */

/* Random 16-bit patterns: every class (NaN, Inf, subnormal, zero) often. */
static uint16_t rnd_half(fixture *f, int f16)
{
    uint32_t r = rnd32(f);
    switch (r % 8) {
    case 0:
        return f16 ? 0x7c00 | (r >> 16 & 0x83ff) : 0x7f80 | (r >> 16 & 0x807f);
    case 1:
        return (uint16_t)(r >> 16 & (f16 ? 0x83ff : 0x807f)); /* subnormal or zero */
    default:
        return (uint16_t)(r >> 16);
    }
}

/* One comparison of every kernel of variant k with the reference, n values,
 * input offset so (elements) and output offset dof (elements). */
static void compare_all(fixture16 *g, const sr_quant16_kernels *k, size_t n, size_t so, size_t dof)
{
    fixture *f = g->f;
    size_t dst_off = dof; /* DECODED_AS_REF's name */
    float mul = rnd32(f) % 4 ? sr_quant_encode_mul(rnd_range(f, SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX),
                                                   rnd_range(f, 8, 15))
                             : rnd_mul(f);
    int32_t lim = rnd32(f) % 3 ? sr_quant16_lim(rnd_range(f, 9, 15)) : rnd_range(f, 1, 32767);
    float *src = f->src + so;
    fill_inputs(f, src, n, mul);
    /* encode */
    guard_fill(f->w_var, 2 * dof, bytes16(n));
    size_t s_ref = g->ref.encode(f->w_ref + GUARD, src, n, mul, lim);
    size_t s_var = k->encode(f->w_var + GUARD + 2 * dof, src, n, mul, lim);
    assert_int_equal(s_var, s_ref);
    assert_memory_equal(f->w_var + GUARD + 2 * dof, f->w_ref + GUARD, bytes16(n));
    guard_check(f->w_var, 2 * dof, bytes16(n));
    /* decode and decode_avg of random words (padding bits included), read
     * misaligned */
    uint8_t *words = (uint8_t *)(f->src + MAXN / 2) + (so & 1);
    for (size_t i = 0; i < n + (n & 1); i++)
        sr_put_be16(words + 2 * i, (uint16_t)rnd32(f));
    float dmul = rnd32(f) & 1 ? 0.1f : sr_quant_decode_mul(rnd_range(f, -96, 126), rnd_range(f, 8, 15));
    uint8_t *r = (uint8_t *)f->f_ref + GUARD, *v = (uint8_t *)f->f_var + GUARD + 4 * dof;
    g->ref.decode((float *)(void *)r, words, n, dmul);
    DECODED_AS_REF(k->decode((float *)(void *)v, words, n, dmul));
    double am[2];
    unsigned nw = (unsigned)rnd_range(f, 1, 64);
    sr_quant_avg_mul(rnd_range(f, -96, 126), sr_quant16_bits(nw), nw, &am[0], &am[1]);
    g->ref.decode_avg((float *)(void *)r, words, n, am[0], am[1]);
    DECODED_AS_REF(k->decode_avg((float *)(void *)v, words, n, am[0], am[1]));
    /* the half-float conversions both ways */
    for (int f16 = 0; f16 <= 1; f16++) {
        uint16_t *h = (uint16_t *)(void *)(f->src + MAXN / 4) + so;
        for (size_t i = 0; i < n; i++)
            h[i] = rnd_half(f, f16);
        (f16 ? g->ref.f16_to_f32 : g->ref.bf16_to_f32)((float *)(void *)r, h, n);
        DECODED_AS_REF((f16 ? k->f16_to_f32 : k->bf16_to_f32)((float *)(void *)v, h, n));
        guard_fill(f->w_var, 2 * dof, 2 * n);
        size_t i_ref = (f16 ? g->ref.f32_to_f16 : g->ref.f32_to_bf16)((uint16_t *)(void *)(f->w_ref + GUARD),
                                                                     src, n);
        size_t i_var = (f16 ? k->f32_to_f16 : k->f32_to_bf16)(
            (uint16_t *)(void *)(f->w_var + GUARD + 2 * dof), src, n);
        assert_int_equal(i_var, i_ref);
        assert_memory_equal(f->w_var + GUARD + 2 * dof, f->w_ref + GUARD, 2 * n);
        guard_check(f->w_var, 2 * dof, 2 * n);
    }
}

static void test_variants_all_n(void **state)
{
    fixture16 *g = *state;
    static const size_t big[] = {127, 128, 129, 255, 256, 257, 1000, 2048, 4099, 65536 + 17};
    for (size_t v = 0; v < g->nvar; v++) {
        for (size_t n = 0; n <= 100; n++)
            for (size_t so = 0; so < 4; so++)
                compare_all(g, &g->var[v], n, so, (n + so) & 3);
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
            compare_all(g, &g->var[v], big[i], i & 3, (i + 1) & 3);
    }
}

/* The same bits in every rounding mode and under FTZ/DAZ. */
static void test_fp_environment(void **state)
{
    fixture16 *g = *state;
    static const int modes[] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        assert_int_equal(fesetround(modes[m]), 0);
        for (size_t v = 0; v < g->nvar; v++)
            for (size_t n = 1; n <= 300; n += 37)
                compare_all(g, &g->var[v], n, n & 3, (n >> 2) & 3);
    }
    assert_int_equal(fesetround(FE_TONEAREST), 0);
#if defined(__x86_64__)
    const char *pre = getenv("LD_PRELOAD");
    if (!(pre && strstr(pre, "vgpreload"))) { /* valgrind ignores MXCSR's FTZ/DAZ */
        _mm_setcsr(g->f->mxcsr | 0x8040u);
        for (size_t v = 0; v < g->nvar; v++)
            for (size_t n = 1; n <= 300; n += 37)
                compare_all(g, &g->var[v], n, n & 3, (n >> 2) & 3);
        _mm_setcsr(g->f->mxcsr);
    }
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_half_to_f32_all, fp_reset16),
        cmocka_unit_test_teardown(test_f32_to_half_oracle, fp_reset16),
        cmocka_unit_test_teardown(test_encode_clamp, fp_reset16),
        cmocka_unit_test_teardown(test_packed_sums, fp_reset16),
        cmocka_unit_test_teardown(test_scheme_fits, fp_reset16),
        cmocka_unit_test_teardown(test_half_maxabs, fp_reset16),
        cmocka_unit_test_teardown(test_variants_all_n, fp_reset16),
        cmocka_unit_test_teardown(test_fp_environment, fp_reset16),
    };
    return cmocka_run_group_tests(tests, setup16, teardown16);
}
