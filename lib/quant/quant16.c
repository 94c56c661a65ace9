/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant16.c - scalar reference kernels of quant16.h and their selection.
 *
 * As in quant.c, the C kernels define the results and spell out every
 * rounding in integers: the SIMD kernels in x86/quant16_*.c must match
 * them bit for bit in every rounding mode and under FTZ/DAZ. The only
 * floating-point operations here are the multiplies by mul (exact for the
 * scheme's powers of two), the decode_avg double steps (quant.c's), and
 * the int16 -> float conversion, exact in every mode.
 */
#include "quant/quant16.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "proto/wire.h"
#include "quant/quant.h"

#if SR_QUANT_HAVE_AVX2
extern const sr_quant16_kernels sr_quant16_kernels_avx2;
#endif
#if SR_QUANT_HAVE_AVX512
extern const sr_quant16_kernels sr_quant16_kernels_avx512;
#endif

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* sat(rne(y)) as quant.c's rne_sat, without counting: truncation and an
 * exact difference, so the caller's rounding mode plays no part. */
static int32_t rne_i32(float y)
{
    if (y >= 0x1p31f)
        return INT32_MAX;
    if (!(y >= -0x1p31f))
        return INT32_MIN;
    int32_t t = (int32_t)y;
    float frac = y - (float)t;
    int odd = t & 1;
    t += ((frac > 0.5f) | ((frac == 0.5f) & odd)) - ((frac < -0.5f) | ((frac == -0.5f) & odd));
    return t;
}

/* clamp(sat(rne(x)), -lim, lim); *nsat counts a value beyond the block's
 * top (|q| = lim + 1, which the scheme clamps by one step), or NaN
 * (INT32_MIN). */
static int32_t q16(float x, int32_t lim, size_t *nsat)
{
    int32_t q = rne_i32(x);
    if (q > lim) {
        *nsat += q > lim + 1;
        q = lim;
    } else if (q < -lim) {
        *nsat += q < -lim - 1;
        q = -lim;
    }
    return q;
}

static size_t encode_c(uint8_t *dst, const float *src, size_t n, float mul, int32_t lim)
{
    size_t nsat = 0;
    for (size_t i = 0; i < n; i += 2) {
        int32_t a = q16(src[i] * mul, lim, &nsat);
        int32_t b = i + 1 < n ? q16(src[i + 1] * mul, lim, &nsat) : 0;
        sr_put_be32(dst + 2 * i, (uint32_t)a * 65536u + (uint32_t)b); /* wraps, as defined */
    }
    return nsat;
}

/* Value i of a packed payload: word i / 2 = a * 2^16 + b (mod 2^32), b
 * its low 16 bits as an int16 and a the high 16 bits of word - b. */
static int32_t get_v16(const uint8_t *src, size_t i)
{
    uint32_t w = sr_get_be32(src + 2 * (i & ~(size_t)1));
    uint32_t b = (w & 0xffffu) ^ 0x8000u, a;
    b -= 0x8000u; /* sign-extended, in unsigned arithmetic */
    a = ((w - b) >> 16 ^ 0x8000u) - 0x8000u;
    return (int32_t)(i & 1 ? b : a);
}

static void decode_c(float *dst, const uint8_t *src, size_t n, float mul)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)get_v16(src, i) * mul;
}

/* quant.c's decode_avg_c, whose one-rounding argument covers any int32 s. */
static void decode_avg_c(float *dst, const uint8_t *src, size_t n, double hi, double lo)
{
    for (size_t i = 0; i < n; i++) {
        double s = (double)get_v16(src, i);
        dst[i] = (float)(s * hi + s * lo);
    }
}

/* float16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
static uint32_t f16_bits_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) /* Inf; NaN quieted, its payload kept (as vcvtph2ps) */
        return s | 0x7f800000u | m << 13 | (m ? 0x400000u : 0u);
    if (e)
        return s | (e + 112u) << 23 | m << 13;
    if (!m)
        return s;
    /* Subnormal m * 2^-24: normalise (a float has room for it). */
    e = 113;
    while (!(m & 0x400u)) {
        m <<= 1;
        e--;
    }
    return s | e << 23 | (m & 0x3ffu) << 13;
}

static void f16_to_f32_c(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = u2f(f16_bits_to_f32(src[i]));
}

static void bf16_to_f32_c(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = u2f((uint32_t)src[i] << 16);
}

/* Round-to-nearest-even float32 -> float16 in integers, as F16C's
 * vcvtps2ph with an immediate RNE: NaN keeps its sign and the top 9
 * payload bits, quieted; 65520 and above (a tie with 65504's odd
 * mantissa) become Inf; below 2^-14 the result is a subnormal, rne of
 * x * 2^24. */
static uint16_t f32_to_f16_bits(uint32_t u, size_t *ninf)
{
    uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x1ffu));
    if (a >= 0x477ff000u) {
        *ninf += a < 0x7f800000u;
        return (uint16_t)(s | 0x7c00u);
    }
    if (a >= 0x38800000u) { /* a normal float16: rebias, round at bit 13 */
        uint32_t r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return (uint16_t)(s | r >> 13);
    }
    uint32_t e = a >> 23;
    if (e < 102) /* below 2^-25: 0 (2^-25 itself ties to the even 0) */
        return (uint16_t)s;
    uint32_t m = (a & 0x7fffffu) | 0x800000u, sh = 126 - e; /* 14..24 */
    uint32_t q = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1);
    q += (rem > half) | ((rem == half) & q);
    return (uint16_t)(s | q); /* q = 0x400 is the smallest normal, rightly */
}

static size_t f32_to_f16_c(uint16_t *dst, const float *src, size_t n)
{
    size_t ninf = 0;
    for (size_t i = 0; i < n; i++)
        dst[i] = f32_to_f16_bits(f2u(src[i]), &ninf);
    return ninf;
}

/* bfloat16 is float32's top half: round the low half away, to nearest
 * even (a carry into the exponent is right, up to Inf); NaN is quieted. */
static uint16_t f32_to_bf16_bits(uint32_t u, size_t *ninf)
{
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    *ninf += (r & 0x7fffu) == 0x7f80u && (u & 0x7fffffffu) < 0x7f800000u;
    return (uint16_t)r;
}

static size_t f32_to_bf16_c(uint16_t *dst, const float *src, size_t n)
{
    size_t ninf = 0;
    for (size_t i = 0; i < n; i++)
        dst[i] = f32_to_bf16_bits(f2u(src[i]), &ninf);
    return ninf;
}

static const sr_quant16_kernels kernels16_c = {
    .encode = encode_c,
    .decode = decode_c,
    .decode_avg = decode_avg_c,
    .f16_to_f32 = f16_to_f32_c,
    .bf16_to_f32 = bf16_to_f32_c,
    .f32_to_f16 = f32_to_f16_c,
    .f32_to_bf16 = f32_to_bf16_c,
    .name = "c",
};

/* ---- selection ------------------------------------------------------------ */

/* F16C (CPUID.1:ECX bit 29): every AVX2 CPU has it, but the AVX2 table
 * uses it, so it is checked. (clang's __builtin_cpu_supports does not know
 * it.) */
static int have_f16c(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
#else
    return 0;
#endif
}

static const void *variant16(unsigned variant, unsigned features)
{
    switch (variant) {
    case 0:
        return &kernels16_c;
#if SR_QUANT_HAVE_AVX2
    case SR_CPU_AVX2:
        return (features & SR_CPU_AVX2) && have_f16c() ? &sr_quant16_kernels_avx2 : NULL;
#endif
#if SR_QUANT_HAVE_AVX512
    case SR_CPU_AVX512:
        return features & SR_CPU_AVX512 ? &sr_quant16_kernels_avx512 : NULL;
#endif
    default:
        return NULL;
    }
}

void sr_quant16_init(sr_quant16_kernels *k, unsigned mask)
{
    *k = *(const sr_quant16_kernels *)sr_quant_best(variant16, mask);
}

int sr_quant16_init_variant(sr_quant16_kernels *k, unsigned variant)
{
    const sr_quant16_kernels *t = variant16(variant, sr_cpu_features());
    if (!t)
        return -1;
    *k = *t;
    return 0;
}

/* ---- the scheme and the half formats --------------------------------------- */

int sr_quant16_bits(unsigned n_workers)
{
    return sr_quant_bits(n_workers) - 15; /* 30 - lg - 15 */
}
_Static_assert(SR_WIRE_MAX_WORKERS <= 64, "B = 15 - ceil(log2 N) stays >= 9");
_Static_assert(SR_WIRE_EXP_MAX == 126, "sr_quant16_bits_at takes one bit off at E = 126");
/* quant.h's multipliers stay normal floats for B in 8..15 (9, one less at
 * E = 126): 2^(B-1-E) and 2^(E+1-B) over E in [SR_WIRE_EXP_MIN,
 * SR_WIRE_EXP_MAX]. */
_Static_assert(15 - 1 - SR_WIRE_EXP_MIN <= 127 && 8 - 1 - SR_WIRE_EXP_MAX >= -126,
               "16-bit encode multiplier stays a normal float");
_Static_assert(SR_WIRE_EXP_MIN + 1 - 15 >= -126 && SR_WIRE_EXP_MAX + 1 - 8 <= 127,
               "16-bit decode multiplier stays a normal float");
/* A sum of N values of at most 2^B - 1 fits an int16: N * (2^B - 1) < 2^15
 * for N <= 2^(15-B). */

size_t sr_half_maxabs(const uint16_t *src, size_t n, int fmt, float *maxabs)
{
    /* |x| orders as its bit pattern without the sign, NaN above Inf, in
     * both formats, as float32's does (quant.c). */
    uint16_t inf = fmt == SR_HALF_BF16 ? 0x7f80u : 0x7c00u, m = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t a = src[i] & 0x7fffu;
        m = a > m ? a : m;
        bad += a >= inf;
    }
    *maxabs = u2f(fmt == SR_HALF_BF16 ? (uint32_t)m << 16 : f16_bits_to_f32(m));
    return bad;
}

uint16_t sr_half_nan(int fmt)
{
    return fmt == SR_HALF_BF16 ? 0x7fc0u : 0x7e00u;
}
