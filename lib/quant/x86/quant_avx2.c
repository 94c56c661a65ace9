/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant_avx2.c - AVX2 kernels, bit-identical to the C reference in quant.c.
 *
 * Built alone with -mavx2 and only called after sr_cpu_features() saw AVX2.
 * How each step matches the reference:
 * - maxabs is an unsigned integer max over the |x| bit patterns, as in C;
 *   non-finite values are rare, so they are only counted in a second pass
 *   when the max shows there is one.
 * - encode rounds with _mm256_round_ps(RN) (the immediate overrides MXCSR)
 *   and truncates; cvtt gives 0x80000000 for NaN and out-of-range lanes,
 *   which is the reference's INT32_MIN, and lanes >= 2^31 are flipped to
 *   INT32_MAX with the compare mask.
 * - decode converts with cvtdq2ps when MXCSR rounds to nearest (the normal
 *   case); in any other mode it takes an exact path through double.
 * - decode_avg does the reference's double operations 4 lanes at a time.
 * Tails never touch memory outside the caller's n elements: loads use
 * vmaskmov (masked lanes do not fault) or a zero-padded stack copy, and
 * stores go through a stack buffer and memcpy (masked vmaskmov stores are
 * slow on AMD). src and dst may have any alignment.
 */
#include <immintrin.h>
#include <string.h>

#include "quant/quant.h"

extern const sr_quant_kernels sr_quant_kernels_avx2; /* picked by quant.c */

/* vpshufb control reversing the bytes of each 32-bit lane. */
static inline __m256i bswap32_ctl(void)
{
    return _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
                            3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
}

/* All-ones in lanes [0, m), m in 0..8. */
static inline __m256i lanes_below(size_t m)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m), idx);
}

static inline uint32_t hmax_epu32(__m256i v)
{
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
    return (uint32_t)_mm_cvtsi128_si32(m);
}

static inline size_t hsum_epi32(__m256i v)
{
    uint32_t l[8];
    size_t s = 0;
    _mm256_storeu_si256((__m256i *)l, v);
    for (int i = 0; i < 8; i++)
        s += l[i];
    return s;
}

/* Per-lane 32-bit counters take at most one step per 8 elements, so
 * counting in blocks of 2^32 elements can never wrap them. */
#define COUNT_BLOCK ((size_t)1 << 32)

/* ---- maxabs --------------------------------------------------------------- */

static size_t count_nonfinite(const float *src, size_t n)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff);
    const __m256i finite_max = _mm256_set1_epi32(0x7f7fffff); /* FLT_MAX */
    size_t total = 0;
    while (n) {
        size_t blk = n < COUNT_BLOCK ? n : COUNT_BLOCK, i = 0;
        __m256i acc = _mm256_setzero_si256();
        for (; i + 8 <= blk; i += 8) {
            __m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(src + i)), absm);
            acc = _mm256_sub_epi32(acc, _mm256_cmpgt_epi32(a, finite_max));
        }
        total += hsum_epi32(acc);
        for (; i < blk; i++) { /* rare path: plain scalar tail */
            uint32_t u;
            memcpy(&u, src + i, 4);
            total += (u & 0x7fffffffu) > 0x7f7fffffu;
        }
        src += blk;
        n -= blk;
    }
    return total;
}

static size_t maxabs_avx2(const float *src, size_t n, float *maxabs)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff);
    /* Four accumulators hide the latency of vpmaxud. */
    __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i *p = (const __m256i *)(src + i);
        m0 = _mm256_max_epu32(m0, _mm256_and_si256(_mm256_loadu_si256(p + 0), absm));
        m1 = _mm256_max_epu32(m1, _mm256_and_si256(_mm256_loadu_si256(p + 1), absm));
        m2 = _mm256_max_epu32(m2, _mm256_and_si256(_mm256_loadu_si256(p + 2), absm));
        m3 = _mm256_max_epu32(m3, _mm256_and_si256(_mm256_loadu_si256(p + 3), absm));
    }
    for (; i + 8 <= n; i += 8)
        m0 = _mm256_max_epu32(m0, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(src + i)), absm));
    if (i < n) /* masked lanes load as +0, which never raises the max */
        m1 = _mm256_max_epu32(m1, _mm256_and_si256(_mm256_maskload_epi32((const int *)(src + i),
                                                                         lanes_below(n - i)), absm));
    uint32_t m = hmax_epu32(_mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3)));
    memcpy(maxabs, &m, 4);
    return m >= 0x7f800000u ? count_nonfinite(src, n) : 0;
}

/* ---- encode --------------------------------------------------------------- */

/* 8 lanes: words of sat(rne(x * mul)), byte-swapped; *sat_acc counts the
 * saturated lanes selected by valid (all-ones lanes). */
static inline __m256i encode8(__m256 x, __m256 vmul, __m256i valid, __m256i *sat_acc)
{
    const __m256 p31 = _mm256_set1_ps(0x1p31f);
    const __m256 m31 = _mm256_set1_ps(-0x1p31f);
    __m256 y = _mm256_mul_ps(x, vmul);
    /* Saturation is decided on y itself: every float of magnitude >= 2^23
     * is an integer, so rounding cannot move y across +-2^31. */
    __m256 hi = _mm256_cmp_ps(y, p31, _CMP_GE_OQ);  /* -> INT32_MAX */
    __m256 lo = _mm256_cmp_ps(y, m31, _CMP_NGE_UQ); /* below -2^31 or NaN -> INT32_MIN */
    __m256i q = _mm256_cvttps_epi32(_mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    __m256i hi_i = _mm256_castps_si256(hi);
    q = _mm256_xor_si256(q, hi_i); /* 0x80000000 ^ ~0 = INT32_MAX */
    __m256i sat = _mm256_and_si256(_mm256_or_si256(hi_i, _mm256_castps_si256(lo)), valid);
    *sat_acc = _mm256_sub_epi32(*sat_acc, sat);
    return _mm256_shuffle_epi8(q, bswap32_ctl());
}

static size_t encode_block(uint8_t *dst, const float *src, size_t n, __m256 vmul)
{
    const __m256i all = _mm256_set1_epi32(-1);
    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i w0 = encode8(_mm256_loadu_ps(src + i), vmul, all, &acc0);
        __m256i w1 = encode8(_mm256_loadu_ps(src + i + 8), vmul, all, &acc1);
        _mm256_storeu_si256((__m256i *)(dst + 4 * i), w0);
        _mm256_storeu_si256((__m256i *)(dst + 4 * i + 32), w1);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_si256((__m256i *)(dst + 4 * i), encode8(_mm256_loadu_ps(src + i), vmul, all, &acc0));
    if (i < n) {
        /* Padding lanes are excluded from the count: 0 * mul is NaN when a
         * caller passes an infinite mul. */
        size_t rem = n - i;
        __m256i valid = lanes_below(rem);
        __m256 x = _mm256_maskload_ps(src + i, valid);
        uint8_t tmp[32];
        _mm256_storeu_si256((__m256i *)tmp, encode8(x, vmul, valid, &acc1));
        memcpy(dst + 4 * i, tmp, 4 * rem);
    }
    return hsum_epi32(_mm256_add_epi32(acc0, acc1));
}

static size_t encode_avx2(uint8_t *dst, const float *src, size_t n, float mul)
{
    const __m256 vmul = _mm256_set1_ps(mul);
    size_t nsat = 0;
    while (n) {
        size_t blk = n < COUNT_BLOCK ? n : COUNT_BLOCK;
        nsat += encode_block(dst, src, blk, vmul);
        dst += 4 * blk;
        src += blk;
        n -= blk;
    }
    return nsat;
}

/* ---- decode --------------------------------------------------------------- */

/* Rounding-mode-free int32 -> float (RNE) for 4 lanes: the double is exact,
 * then its mantissa is rounded to 24 bits in the integer domain (half to
 * even at bit 29; a carry into the exponent is the correct result), after
 * which the narrowing conversion is exact. */
static inline __m128 cvt4_rne_exact(__m128i v)
{
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i bias = _mm256_set1_epi64x(0x0fffffff);
    const __m256i keep = _mm256_set1_epi64x(~(long long)0x1fffffff);
    __m256i b = _mm256_castpd_si256(_mm256_cvtepi32_pd(v));
    __m256i odd = _mm256_and_si256(_mm256_srli_epi64(b, 29), one);
    b = _mm256_and_si256(_mm256_add_epi64(_mm256_add_epi64(b, bias), odd), keep);
    return _mm256_cvtpd_ps(_mm256_castsi256_pd(b));
}

static inline __m256 cvt8_rne_exact(__m256i v)
{
    __m128 lo = cvt4_rne_exact(_mm256_castsi256_si128(v));
    __m128 hi = cvt4_rne_exact(_mm256_extracti128_si256(v, 1));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

static inline __m256 decode8(__m256i w, __m256 vmul, int exact)
{
    __m256i v = _mm256_shuffle_epi8(w, bswap32_ctl());
    __m256 f = exact ? cvt8_rne_exact(v) : _mm256_cvtepi32_ps(v);
    return _mm256_mul_ps(f, vmul);
}

/* Stores 8 floats: non-temporal (dst 32-byte aligned) or ordinary. */
static inline __attribute__((always_inline)) void store8(float *dst, __m256 f, int stream)
{
    if (stream)
        _mm256_stream_ps(dst, f);
    else
        _mm256_storeu_ps(dst, f);
}

/* Instantiated with constant exact and stream, so each loop is branch
 * free; with stream, n is a multiple of 8 and dst 32-byte aligned. */
static inline __attribute__((always_inline)) void decode_loop(float *dst, const uint8_t *src,
                                                               size_t n, __m256 vmul, int exact,
                                                               int stream)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 f0 = decode8(_mm256_loadu_si256((const __m256i *)(src + 4 * i)), vmul, exact);
        __m256 f1 = decode8(_mm256_loadu_si256((const __m256i *)(src + 4 * i + 32)), vmul, exact);
        store8(dst + i, f0, stream);
        store8(dst + i + 8, f1, stream);
    }
    for (; i + 8 <= n; i += 8)
        store8(dst + i, decode8(_mm256_loadu_si256((const __m256i *)(src + 4 * i)), vmul, exact),
               stream);
    if (i < n) {
        size_t rem = n - i;
        uint8_t in[32] = {0};
        float out[8];
        memcpy(in, src + 4 * i, 4 * rem);
        _mm256_storeu_ps(out, decode8(_mm256_loadu_si256((const __m256i *)in), vmul, exact));
        memcpy(dst + i, out, 4 * rem);
    }
}

static void decode_avx2(float *dst, const uint8_t *src, size_t n, float mul)
{
    const __m256 vmul = _mm256_set1_ps(mul);
    /* cvtdq2ps rounds as MXCSR says: RNE in the usual round-to-nearest
     * mode, and only then is the one-instruction path correct. */
    if ((_mm_getcsr() & _MM_ROUND_MASK) == _MM_ROUND_NEAREST)
        decode_loop(dst, src, n, vmul, 0, 0);
    else
        decode_loop(dst, src, n, vmul, 1, 0);
}

/* decode, with non-temporal stores from the first 32-byte boundary of dst
 * on (the head and tail go through decode). */
static void decode_stream_avx2(float *dst, const uint8_t *src, size_t n, float mul)
{
    const __m256 vmul = _mm256_set1_ps(mul);
    size_t i = sr_quant_stream_head(dst, n, 32), body = (n - i) & ~(size_t)7;
    decode_avx2(dst, src, i, mul);
    if ((_mm_getcsr() & _MM_ROUND_MASK) == _MM_ROUND_NEAREST)
        decode_loop(dst + i, src + 4 * i, body, vmul, 0, 1);
    else
        decode_loop(dst + i, src + 4 * i, body, vmul, 1, 1);
    _mm_sfence();
    i += body;
    decode_avx2(dst + i, src + 4 * i, n - i, mul);
}

/* ---- decode_avg ------------------------------------------------------------ */

/* The reference's (float)(s * hi + s * lo) on 4 lanes: the same IEEE double
 * operations (vcvtdq2pd is exact), then vcvtpd2ps in the MXCSR mode, like
 * the scalar narrowing. */
static inline __m128 avg4(__m128i v, __m256d hi, __m256d lo)
{
    __m256d s = _mm256_cvtepi32_pd(v);
    return _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(s, hi), _mm256_mul_pd(s, lo)));
}

static inline __m256 decode_avg8(__m256i w, __m256d hi, __m256d lo)
{
    __m256i v = _mm256_shuffle_epi8(w, bswap32_ctl());
    __m128 a = avg4(_mm256_castsi256_si128(v), hi, lo);
    __m128 b = avg4(_mm256_extracti128_si256(v, 1), hi, lo);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(a), b, 1);
}

static void decode_avg_avx2(float *dst, const uint8_t *src, size_t n, double mul_hi, double mul_lo)
{
    const __m256d hi = _mm256_set1_pd(mul_hi), lo = _mm256_set1_pd(mul_lo);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 f0 = decode_avg8(_mm256_loadu_si256((const __m256i *)(src + 4 * i)), hi, lo);
        __m256 f1 = decode_avg8(_mm256_loadu_si256((const __m256i *)(src + 4 * i + 32)), hi, lo);
        _mm256_storeu_ps(dst + i, f0);
        _mm256_storeu_ps(dst + i + 8, f1);
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, decode_avg8(_mm256_loadu_si256((const __m256i *)(src + 4 * i)), hi, lo));
    if (i < n) {
        size_t rem = n - i;
        uint8_t in[32] = {0};
        float out[8];
        memcpy(in, src + 4 * i, 4 * rem);
        _mm256_storeu_ps(out, decode_avg8(_mm256_loadu_si256((const __m256i *)in), hi, lo));
        memcpy(dst + i, out, 4 * rem);
    }
}

/* decode_avg, with non-temporal stores as decode_stream_avx2. */
static void decode_avg_stream_avx2(float *dst, const uint8_t *src, size_t n, double mul_hi,
                                   double mul_lo)
{
    const __m256d hi = _mm256_set1_pd(mul_hi), lo = _mm256_set1_pd(mul_lo);
    size_t i = sr_quant_stream_head(dst, n, 32);
    decode_avg_avx2(dst, src, i, mul_hi, mul_lo);
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_loadu_si256((const __m256i *)(src + 4 * i));
        _mm256_stream_ps(dst + i, decode_avg8(w, hi, lo));
    }
    _mm_sfence();
    decode_avg_avx2(dst + i, src + 4 * i, n - i, mul_hi, mul_lo);
}

const sr_quant_kernels sr_quant_kernels_avx2 = {
    .maxabs = maxabs_avx2,
    .encode = encode_avx2,
    .decode = decode_avx2,
    .decode_avg = decode_avg_avx2,
    .decode_stream = decode_stream_avx2,
    .decode_avg_stream = decode_avg_stream_avx2,
    .name = "avx2",
};
