/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_quant.c - quantization kernels and exponent helpers (lib/quant).
 *
 * Three kinds of checks:
 * - the C reference against values worked out by hand and against an
 *   independent oracle (double arithmetic + nearbyint under FE_TONEAREST);
 * - every variant this CPU runs (sr_quant_init_variant) against the C
 *   reference, bit for bit: all n in 0..100 and large n, every misalignment,
 *   ties, -0, saturation at and around +-2^31, NaN/Inf, subnormals, under
 *   all four rounding modes and under FTZ/DAZ, with guard bytes around each
 *   output to catch tail overruns;
 * - the end-to-end property of the scheme in quant.h: N workers quantize
 *   with the common exponent, the int32 sum cannot overflow, and the decoded
 *   sum is within N * 2^(E-B) + ulp(r)/2 of the exact sum, checked exactly
 *   in 64-bit integers;
 * - decode_avg against an exact integer reference: the float nearest to
 *   s * 2^k / N for random s, k and every N in 1..64, ties built on
 *   purpose (which a single double multiplier gets wrong for N = 49),
 *   subnormal results and overflow to Inf; and its multiplier helpers.
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

#define MAXN 70000u /* largest n tested */
#define GUARD 64u   /* guard bytes before and after every output */
#define GUARD_BYTE 0xa5

typedef struct fixture {
    sr_quant_kernels ref;    /* the C reference */
    sr_quant_kernels var[3]; /* every variant this CPU runs, C included */
    size_t nvar;
    uint64_t rng;
    unsigned mxcsr; /* restored after every test */
    float *src;     /* MAXN + 8 inputs */
    uint8_t *w_ref, *w_var; /* GUARD + 4 * (MAXN + 8) + GUARD */
    float *f_ref, *f_var;   /* same size in bytes */
} fixture;

/* ---- helpers ------------------------------------------------------------- */

static uint32_t rnd32(fixture *f)
{
    uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static int rnd_range(fixture *f, int lo, int hi) /* inclusive */
{
    return lo + (int)(rnd32(f) % (uint32_t)(hi - lo + 1));
}

static float u2f(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static uint32_t f2u(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* A scaled value y (the kernel sees x = y / mul) from the classes that
 * matter for rounding and saturation, or a special x. Returns x. */
static float rnd_input(fixture *f, float mul)
{
    float y;
    switch (rnd32(f) % 16) {
    case 0: /* tie: k + 0.5 */
        y = (float)rnd_range(f, -(1 << 23), (1 << 23) - 1) + 0.5f;
        break;
    case 1: /* around the saturation edges */
        y = u2f(0x4f000000u + (uint32_t)rnd_range(f, -3, 3)); /* 2^31 +- ulps */
        y = rnd32(f) & 1 ? -y : y;
        break;
    case 2: { /* exactly representable edges */
        static const float edges[] = {0x1p31f, -0x1p31f, 0x1p31f - 128, -0x1p31f - 256, 0x1p32f,
                                      -0x1p32f, 0x1p23f - 0.5f, 0x1p24f, 0.5f, -0.5f};
        y = edges[rnd32(f) % (sizeof edges / sizeof edges[0])];
        break;
    }
    case 3: { /* non-finite, zeros, subnormals: given as x directly */
        static const uint32_t bits[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7f800000u,
                                        0xff800000u, 0x00000000u, 0x80000000u, 0x00000001u,
                                        0x807fffffu, 0x00400000u};
        return u2f(bits[rnd32(f) % (sizeof bits / sizeof bits[0])]);
    }
    case 4: /* small: many exact ties and signs */
        y = (float)rnd_range(f, -16, 16) * 0.25f;
        break;
    default: { /* any finite magnitude, random bits */
        uint32_t u = rnd32(f) & 0x80ffffffu;
        u |= (uint32_t)rnd_range(f, 1, 254) << 23;
        return u2f(u);
    }
    }
    return y / mul;
}

static float rnd_mul(fixture *f)
{
    switch (rnd32(f) % 5) {
    case 0:
        return 1.0f;
    case 1: /* outside the contract, but the kernels must still agree */
        return rnd32(f) & 1 ? INFINITY : 0x1p-149f;
    case 2: /* a caller passing a scale far too large: saturates */
        return ldexpf(1.0f, rnd_range(f, 60, 127));
    default:
        return sr_quant_encode_mul(rnd_range(f, SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX), rnd_range(f, 24, 30));
    }
}

/* An output of len bytes goes to buf + GUARD + off: fill the whole span
 * with the guard pattern first, and afterwards check the GUARD + off bytes
 * before it and the GUARD bytes after it. */
static void guard_fill(void *buf, size_t off, size_t len)
{
    memset(buf, GUARD_BYTE, GUARD + off + len + GUARD);
}

static void guard_check(const void *buf, size_t off, size_t len)
{
    const uint8_t *b = buf;
    for (size_t i = 0; i < GUARD + off; i++)
        assert_int_equal(b[i], GUARD_BYTE);
    for (size_t i = GUARD + off + len; i < GUARD + off + len + GUARD; i++)
        assert_int_equal(b[i], GUARD_BYTE);
}

static size_t out_bytes(void)
{
    return GUARD + 4 * (MAXN + 8) + GUARD;
}

/* Run maxabs and encode of k and of the reference on src[0..n) and compare
 * all results bit for bit; dst_off misaligns the output. */
static void cmp_encode(fixture *f, const sr_quant_kernels *k, const float *src, size_t n, float mul,
                       size_t dst_off)
{
    float m_ref, m_var;
    size_t c_ref = f->ref.maxabs(src, n, &m_ref);
    size_t c_var = k->maxabs(src, n, &m_var);
    assert_int_equal(c_var, c_ref);
    assert_int_equal(f2u(m_var), f2u(m_ref));

    guard_fill(f->w_var, dst_off, 4 * n);
    size_t s_ref = f->ref.encode(f->w_ref + GUARD, src, n, mul);
    size_t s_var = k->encode(f->w_var + GUARD + dst_off, src, n, mul);
    assert_int_equal(s_var, s_ref);
    assert_memory_equal(f->w_var + GUARD + dst_off, f->w_ref + GUARD, 4 * n);
    guard_check(f->w_var, dst_off, 4 * n);
}

/* Decode the n words at w (any alignment) with k and with the reference;
 * dst_off (floats) misaligns the output. */
static void cmp_decode(fixture *f, const sr_quant_kernels *k, const uint8_t *w, size_t n, float mul,
                       size_t dst_off)
{
    guard_fill(f->f_var, 4 * dst_off, 4 * n);
    uint8_t *r = (uint8_t *)f->f_ref + GUARD, *v = (uint8_t *)f->f_var + GUARD + 4 * dst_off;
    f->ref.decode((float *)(void *)r, w, n, mul);
    k->decode((float *)(void *)v, w, n, mul);
    assert_memory_equal(v, r, 4 * n);
    guard_check(f->f_var, 4 * dst_off, 4 * n);
}

/* decode_avg of the n words at w with k and with the reference. */
static void cmp_decode_avg(fixture *f, const sr_quant_kernels *k, const uint8_t *w, size_t n,
                           const double m[2], size_t dst_off)
{
    guard_fill(f->f_var, 4 * dst_off, 4 * n);
    uint8_t *r = (uint8_t *)f->f_ref + GUARD, *v = (uint8_t *)f->f_var + GUARD + 4 * dst_off;
    f->ref.decode_avg((float *)(void *)r, w, n, m[0], m[1]);
    k->decode_avg((float *)(void *)v, w, n, m[0], m[1]);
    assert_memory_equal(v, r, 4 * n);
    guard_check(f->f_var, 4 * dst_off, 4 * n);
}

/* An average's multiplier: any worker count, any exponent in range and,
 * now and then, one below the floor (subnormal results) or a multiplier
 * that is not of sr_quant_avg_mul's form at all (the kernels must still
 * agree). */
static void rnd_avg_mul(fixture *f, double m[2])
{
    unsigned nw = (unsigned)rnd_range(f, 1, (int)SR_WIRE_MAX_WORKERS);
    switch (rnd32(f) % 8) {
    case 0:
        sr_quant_avg_mul(rnd_range(f, -150, SR_WIRE_EXP_MIN), sr_quant_bits(nw), nw, &m[0], &m[1]);
        break;
    case 1:
        m[0] = ldexp(1.0, rnd_range(f, -180, 100)) / 3.0;
        m[1] = m[0] * 0x1p-30 / 7.0;
        break;
    default:
        sr_quant_avg_mul(rnd_range(f, SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX), sr_quant_bits(nw), nw, &m[0],
                         &m[1]);
        break;
    }
}

static void fill_inputs(fixture *f, float *x, size_t n, float mul)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rnd_input(f, mul);
}

static void fill_words(fixture *f, uint8_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t v = rnd32(f);
        switch (v % 4) {
        case 0: /* drop low bits: values of every length */
            v = (uint32_t)((int32_t)rnd32(f) >> rnd_range(f, 0, 31));
            break;
        case 1: /* 2^24..2^31 with a tie in the dropped bits */
            v = ((rnd32(f) | 0x01000000u) & ~0xffu) | 0x80u;
            v = (rnd32(f) & 1) ? 0u - (v & 0x7fffffffu) : (v & 0x7fffffffu);
            break;
        case 2:
            v = rnd32(f) & 1 ? 0x80000000u : 0x7fffffffu;
            break;
        default:
            break;
        }
        sr_put_be32(w + 4 * i, v);
    }
}

/* The float nearest to s * 2^k / n (ties to even; +-Inf beyond the float
 * range; -0 for a negative s that rounds to 0), in integers only: the
 * reference decode_avg must match. n in 1..64, |k| small enough that the
 * quotient's binade is known (asserted). */
static float exact_avg(int32_t s, int k, unsigned n)
{
    if (s == 0)
        return 0.0f;
    uint64_t a = s < 0 ? (uint64_t)-(int64_t)s : (uint64_t)s; /* 1..2^31 */
    int e0 = 32; /* floor(log2(a / n)), in -6..31 */
    while (!(e0 >= 0 ? a >= ((uint64_t)n << e0) : (a << -e0) >= n))
        e0--;
    int e = e0 + k < -126 ? -126 : e0 + k; /* binade of the result, subnormals at -126 */
    int t = k - (e - 23);                  /* q / 2^(e-23) = a * 2^t / n */
    assert_true(t >= -40 && t <= 29);
    uint64_t num = t >= 0 ? a << t : a, den = t >= 0 ? n : (uint64_t)n << -t;
    uint64_t m = num / den, rem = num % den;
    m += 2 * rem > den || (2 * rem == den && (m & 1));
    if (m == 1u << 24) { /* rounded up into the next binade */
        m = 1u << 23;
        e++;
    }
    float r = e > 127 ? INFINITY : ldexpf((float)m, e - 23); /* exact */
    return s < 0 ? -r : r;
}

/* ---- setup / teardown ---------------------------------------------------- */

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->rng = 0x5e7e7e5eull;
    sr_quant_init(&f->ref, 0);
    static const unsigned variants[] = {0, SR_CPU_AVX2, SR_CPU_AVX512};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (sr_quant_init_variant(&f->var[f->nvar], variants[i]) == 0)
            f->nvar++;
#if defined(__x86_64__)
    f->mxcsr = _mm_getcsr();
#endif
    f->src = calloc(MAXN + 8, sizeof(float));
    f->w_ref = malloc(out_bytes());
    f->w_var = malloc(out_bytes());
    f->f_ref = malloc(out_bytes());
    f->f_var = malloc(out_bytes());
    if (!f->src || !f->w_ref || !f->w_var || !f->f_ref || !f->f_var)
        return -1;
    for (size_t i = 0; i < f->nvar; i++)
        printf("# quant variant: %s\n", f->var[i].name);
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    free(f->src);
    free(f->w_ref);
    free(f->w_var);
    free(f->f_ref);
    free(f->f_var);
    free(f);
    return 0;
}

/* A failed assertion leaves a test midway: put the FP environment back. */
static int fp_teardown(void **state)
{
    fixture *f = *state;
    fesetround(FE_TONEAREST);
#if defined(__x86_64__)
    _mm_setcsr(f->mxcsr);
#else
    (void)f;
#endif
    return 0;
}

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
        cmocka_unit_test(test_variants_all_n),
        cmocka_unit_test(test_specials),
        cmocka_unit_test_teardown(test_rounding_modes, fp_teardown),
#if defined(__x86_64__)
        cmocka_unit_test_teardown(test_ftz_daz, fp_teardown),
#endif
        cmocka_unit_test(test_end_to_end),
        cmocka_unit_test(test_avg_multiplier),
        cmocka_unit_test_teardown(test_avg_correctly_rounded, fp_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
