/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant_helpers.h - the fixture and helpers of the quantization tests
 * (test_quant.c, test_quant_variants.c, test_quant_avg.c): the C reference
 * and every variant this CPU runs, a seeded generator of inputs from the
 * classes that matter for rounding and saturation, guard bytes around every
 * output, the comparisons of a variant with the reference, and the exact
 * integer reference of decode_avg. Header-only (static inline), so each
 * test binary stays a single source file.
 */
#ifndef SERENE_TESTS_QUANT_HELPERS_H
#define SERENE_TESTS_QUANT_HELPERS_H

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

static inline uint32_t rnd32(fixture *f)
{
    uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static inline int rnd_range(fixture *f, int lo, int hi) /* inclusive */
{
    return lo + (int)(rnd32(f) % (uint32_t)(hi - lo + 1));
}

static inline float u2f(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static inline uint32_t f2u(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* A scaled value y (the kernel sees x = y / mul) from the classes that
 * matter for rounding and saturation, or a special x. Returns x. */
static inline float rnd_input(fixture *f, float mul)
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

static inline float rnd_mul(fixture *f)
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
static inline void guard_fill(void *buf, size_t off, size_t len)
{
    memset(buf, GUARD_BYTE, GUARD + off + len + GUARD);
}

static inline void guard_check(const void *buf, size_t off, size_t len)
{
    const uint8_t *b = buf;
    for (size_t i = 0; i < GUARD + off; i++)
        assert_int_equal(b[i], GUARD_BYTE);
    for (size_t i = GUARD + off + len; i < GUARD + off + len + GUARD; i++)
        assert_int_equal(b[i], GUARD_BYTE);
}

static inline size_t out_bytes(void)
{
    return GUARD + 4 * (MAXN + 8) + GUARD;
}

/* Run maxabs and encode of k and of the reference on src[0..n) and compare
 * all results bit for bit; dst_off misaligns the output. */
static inline void cmp_encode(fixture *f, const sr_quant_kernels *k, const float *src, size_t n, float mul,
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

/* Inside cmp_decode*: CALL writes the n floats at v, dst_off floats into
 * f_var, whose guards must stay intact, and they must equal r's. */
#define DECODED_AS_REF(CALL)                          \
    do {                                              \
        guard_fill(f->f_var, 4 * dst_off, 4 * n);    \
        CALL;                                         \
        assert_memory_equal(v, r, 4 * n);             \
        guard_check(f->f_var, 4 * dst_off, 4 * n);   \
    } while (0)

/* Decode the n words at w (any alignment) with k and with the reference;
 * dst_off (floats) misaligns the output. */
static inline void cmp_decode(fixture *f, const sr_quant_kernels *k, const uint8_t *w, size_t n, float mul,
                       size_t dst_off)
{
    uint8_t *r = (uint8_t *)f->f_ref + GUARD, *v = (uint8_t *)f->f_var + GUARD + 4 * dst_off;
    f->ref.decode((float *)(void *)r, w, n, mul);
    DECODED_AS_REF(k->decode((float *)(void *)v, w, n, mul));
    if (k->decode_stream) /* bit for bit the same, around the cache */
        DECODED_AS_REF(k->decode_stream((float *)(void *)v, w, n, mul));
}

/* decode_avg of the n words at w with k and with the reference. */
static inline void cmp_decode_avg(fixture *f, const sr_quant_kernels *k, const uint8_t *w, size_t n,
                           const double m[2], size_t dst_off)
{
    uint8_t *r = (uint8_t *)f->f_ref + GUARD, *v = (uint8_t *)f->f_var + GUARD + 4 * dst_off;
    f->ref.decode_avg((float *)(void *)r, w, n, m[0], m[1]);
    DECODED_AS_REF(k->decode_avg((float *)(void *)v, w, n, m[0], m[1]));
    if (k->decode_avg_stream)
        DECODED_AS_REF(k->decode_avg_stream((float *)(void *)v, w, n, m[0], m[1]));
}

/* An average's multiplier: any worker count, any exponent in range and,
 * now and then, one below the floor (subnormal results) or a multiplier
 * that is not of sr_quant_avg_mul's form at all (the kernels must still
 * agree). */
static inline void rnd_avg_mul(fixture *f, double m[2])
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

static inline void fill_inputs(fixture *f, float *x, size_t n, float mul)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rnd_input(f, mul);
}

static inline void fill_words(fixture *f, uint8_t *w, size_t n)
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
static inline float exact_avg(int32_t s, int k, unsigned n)
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

static inline int group_setup(void **state)
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

static inline int group_teardown(void **state)
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
static inline int fp_teardown(void **state)
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

#endif /* SERENE_TESTS_QUANT_HELPERS_H */
