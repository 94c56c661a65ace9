/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant16_avx2.c - AVX2 (+F16C) kernels of quant16.h, bit for bit equal to
 * the C references in quant16.c.
 *
 * Built alone with -mavx2 -mf16c; only called after the probe saw both.
 * - encode rounds as quant_avx2.c's (an immediate RNE, truncation, the
 *   compare masks for the int32 saturation), then clamps to +-lim with
 *   integer min/max and counts the lanes beyond lim + 1; packs with
 *   vpackssdw (exact: the values are within +-32767), which leaves each
 *   pair (a, b) as a little-endian 32-bit lane b:a, so the word
 *   a * 2^16 + b is that lane with a less one where b < 0 (the lane's sign
 *   shifted down: pair_borrow), byte-swapped per 16 bits.
 * - decode byte-swaps, adds the borrow back and widens with vpmovsxwd;
 *   int16 -> float is exact in every mode.
 * - vcvtph2ps and vcvtps2ph (immediate RNE) are the float16 conversions;
 *   they ignore MXCSR's rounding mode and DAZ/FTZ on their 16-bit side,
 *   and round NaN and subnormals as the reference does. bfloat16 is all
 *   integer.
 * Tails go through zero-padded stack copies: nothing outside the caller's
 * n elements is read or written. src and dst may have any alignment.
 */
#include <immintrin.h>
#include <string.h>

#include "quant/quant16.h"

extern const sr_quant16_kernels sr_quant16_kernels_avx2; /* picked by quant16.c */

/* vpshufb control reversing the bytes of each 16-bit lane. */
static inline __m256i bswap16_ctl(void)
{
    return _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
                            1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
}

static inline __m128i bswap16_128(__m128i v)
{
    return _mm_shuffle_epi8(v, _mm256_castsi256_si128(bswap16_ctl()));
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

/* 0xffff in the low 16 bits of each 32-bit lane whose top bit is set, else
 * 0: for pairs b:a (b in the high half) the borrow of a * 2^16 + b. */
static inline __m256i pair_borrow(__m256i v)
{
    return _mm256_srli_epi32(_mm256_srai_epi32(v, 31), 16);
}

static inline __m128i pair_borrow_128(__m128i v)
{
    return _mm_srli_epi32(_mm_srai_epi32(v, 31), 16);
}

/* ---- encode ------------------------------------------------------------------ */

/* All-ones in lanes [0, m), m in 0..8. */
static inline __m256i lanes_below(size_t m)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m), idx);
}

/* 8 lanes: clamp(sat(rne(x * mul)), -lim, lim) as int32; *sat_acc counts
 * the lanes selected by valid that lie beyond lim + 1 (NaN and Inf
 * included). */
static inline __m256i encode8(__m256 x, __m256 vmul, __m256i vlim, __m256i valid, __m256i *sat_acc)
{
    const __m256 p31 = _mm256_set1_ps(0x1p31f);
    const __m256i zero = _mm256_setzero_si256();
    __m256 y = _mm256_mul_ps(x, vmul);
    __m256i hi = _mm256_castps_si256(_mm256_cmp_ps(y, p31, _CMP_GE_OQ));
    __m256i q = _mm256_cvttps_epi32(_mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    q = _mm256_xor_si256(q, hi); /* >= 2^31: INT32_MAX; NaN, below: INT32_MIN */
    __m256i top = _mm256_add_epi32(vlim, _mm256_set1_epi32(1));
    __m256i over = _mm256_or_si256(_mm256_cmpgt_epi32(q, top),
                                   _mm256_cmpgt_epi32(_mm256_sub_epi32(zero, top), q));
    *sat_acc = _mm256_sub_epi32(*sat_acc, _mm256_and_si256(over, valid));
    return _mm256_max_epi32(_mm256_min_epi32(q, vlim), _mm256_sub_epi32(zero, vlim));
}

/* 16 values -> 8 big-endian packed words (two encode8 results, in order). */
static inline __m256i pack16(__m256i a, __m256i b)
{
    /* vpackssdw interleaves 128-bit halves: a0 b0 a1 b1; put them back. */
    __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), _MM_SHUFFLE(3, 1, 2, 0));
    p = _mm256_add_epi16(p, pair_borrow(p));
    return _mm256_shuffle_epi8(p, bswap16_ctl());
}

static size_t encode_avx2(uint8_t *dst, const float *src, size_t n, float mul, int32_t lim)
{
    const __m256 vmul = _mm256_set1_ps(mul);
    const __m256i vlim = _mm256_set1_epi32(lim), all = _mm256_set1_epi32(-1);
    size_t nsat = 0;
    /* Per-lane counters take one step per 8 values: flush every 2^31. */
    while (n) {
        size_t blk = n < ((size_t)1 << 31) ? n : (size_t)1 << 31, i = 0;
        __m256i acc = _mm256_setzero_si256();
        for (; i + 16 <= blk; i += 16) {
            __m256i a = encode8(_mm256_loadu_ps(src + i), vmul, vlim, all, &acc);
            __m256i b = encode8(_mm256_loadu_ps(src + i + 8), vmul, vlim, all, &acc);
            _mm256_storeu_si256((__m256i *)(dst + 2 * i), pack16(a, b));
        }
        if (i < blk) {
            /* Padding lanes are left out of the count: 0 * mul is NaN
             * for an infinite mul, so they are zeroed: an odd tail's last
             * word has a padding 0 in its low half. */
            float in[16] = {0};
            uint8_t out[32];
            size_t rem = blk - i;
            memcpy(in, src + i, 4 * rem);
            __m256i ka = lanes_below(rem), kb = lanes_below(rem > 8 ? rem - 8 : 0);
            __m256i a = _mm256_and_si256(encode8(_mm256_loadu_ps(in), vmul, vlim, ka, &acc), ka);
            __m256i b = _mm256_and_si256(encode8(_mm256_loadu_ps(in + 8), vmul, vlim, kb, &acc), kb);
            _mm256_storeu_si256((__m256i *)out, pack16(a, b));
            memcpy(dst + 2 * i, out, 2 * (rem + (rem & 1)));
        }
        nsat += hsum_epi32(acc);
        src += blk;
        dst += 2 * blk;
        n -= blk;
    }
    return nsat;
}

/* ---- decode -------------------------------------------------------------------- */

/* 4 big-endian packed words -> their 8 values as int32. */
static inline __m256i load8_s16(const uint8_t *src)
{
    __m128i v = bswap16_128(_mm_loadu_si128((const __m128i *)src));
    return _mm256_cvtepi16_epi32(_mm_sub_epi16(v, pair_borrow_128(v)));
}

static void decode_avx2(float *dst, const uint8_t *src, size_t n, float mul)
{
    const __m256 vmul = _mm256_set1_ps(mul);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_cvtepi32_ps(load8_s16(src + 2 * i)), vmul));
    if (i < n) {
        uint8_t in[16] = {0};
        float out[8];
        memcpy(in, src + 2 * i, 2 * (n - i + ((n - i) & 1))); /* whole words */
        _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(load8_s16(in)), vmul));
        memcpy(dst + i, out, 4 * (n - i));
    }
}

/* quant_avx2.c's avg on int16 words: the reference's double steps. */
static inline __m256 avg8(__m256i v, __m256d hi, __m256d lo)
{
    __m256d s0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(v));
    __m256d s1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1));
    __m128 a = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(s0, hi), _mm256_mul_pd(s0, lo)));
    __m128 b = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(s1, hi), _mm256_mul_pd(s1, lo)));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(a), b, 1);
}

static void decode_avg_avx2(float *dst, const uint8_t *src, size_t n, double mul_hi, double mul_lo)
{
    const __m256d hi = _mm256_set1_pd(mul_hi), lo = _mm256_set1_pd(mul_lo);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, avg8(load8_s16(src + 2 * i), hi, lo));
    if (i < n) {
        uint8_t in[16] = {0};
        float out[8];
        memcpy(in, src + 2 * i, 2 * (n - i + ((n - i) & 1))); /* whole words */
        _mm256_storeu_ps(out, avg8(load8_s16(in), hi, lo));
        memcpy(dst + i, out, 4 * (n - i));
    }
}

/* ---- float16 / bfloat16 ----------------------------------------------------------- */

static void f16_to_f32_avx2(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    if (i < n) {
        uint16_t in[8] = {0};
        float out[8];
        memcpy(in, src + i, 2 * (n - i));
        _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)in)));
        memcpy(dst + i, out, 4 * (n - i));
    }
}

static void bf16_to_f32_avx2(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(w, 16));
    }
    for (; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(dst + i, &u, 4);
    }
}

/* Finite lanes (|x| < Inf) of the float32 input whose 16-bit result is
 * +-Inf: one per such lane in the returned count vector. */
static inline __m256i newly_inf(__m256i a, __m256i res_abs32, __m256i inf16)
{
    __m256i was_finite = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7f800000), a);
    return _mm256_and_si256(was_finite, _mm256_cmpeq_epi32(res_abs32, inf16));
}

/* How many of the 8 lanes in mask are set. */
static inline size_t popcount8(__m256i mask)
{
    return (size_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(mask)));
}

static size_t f32_to_f16_avx2(uint16_t *dst, const float *src, size_t n)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), m15 = _mm256_set1_epi32(0x7fff);
    const __m256i inf16 = _mm256_set1_epi32(0x7c00);
    size_t ninf = 0;
    for (size_t i = 0; i < n; i += 8) {
        size_t rem = n - i < 8 ? n - i : 8;
        float in[8] = {0};
        const float *p = src + i;
        if (rem < 8) {
            memcpy(in, src + i, 4 * rem);
            p = in;
        }
        __m256 x = _mm256_loadu_ps(p);
        __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256i a = _mm256_and_si256(_mm256_castps_si256(x), absm);
        ninf += popcount8(newly_inf(a, _mm256_and_si256(_mm256_cvtepu16_epi32(h), m15), inf16));
        if (rem == 8) {
            _mm_storeu_si128((__m128i *)(dst + i), h);
        } else {
            uint16_t out[8];
            _mm_storeu_si128((__m128i *)out, h);
            memcpy(dst + i, out, 2 * rem);
        }
    }
    return ninf;
}

/* 8 float32 bit patterns -> 8 bfloat16 patterns in the low halves of the
 * int32 lanes (the reference's integer rounding, NaN quieted). */
static inline __m256i bf16_8(__m256i u)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff);
    __m256i a = _mm256_and_si256(u, absm);
    __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(r, q, nan);
}

static size_t f32_to_bf16_avx2(uint16_t *dst, const float *src, size_t n)
{
    const __m256i absm = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf16 = _mm256_set1_epi32(0x7f80);
    size_t ninf = 0;
    for (size_t i = 0; i < n; i += 8) {
        size_t rem = n - i < 8 ? n - i : 8;
        float in[8] = {0};
        const float *p = src + i;
        if (rem < 8) {
            memcpy(in, src + i, 4 * rem);
            p = in;
        }
        __m256i u = _mm256_loadu_si256((const __m256i *)p);
        __m256i r = bf16_8(u);
        __m256i a = _mm256_and_si256(u, absm);
        __m256i c = newly_inf(a, _mm256_and_si256(r, _mm256_set1_epi32(0x7fff)), inf16);
        ninf += popcount8(c);
        /* vpackusdw: the lanes are 16-bit values, exact; fix the lane order. */
        __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
        if (rem == 8) {
            _mm_storeu_si128((__m128i *)(dst + i), h);
        } else {
            uint16_t out[8];
            _mm_storeu_si128((__m128i *)out, h);
            memcpy(dst + i, out, 2 * rem);
        }
    }
    return ninf;
}

const sr_quant16_kernels sr_quant16_kernels_avx2 = {
    .encode = encode_avx2,
    .decode = decode_avx2,
    .decode_avg = decode_avg_avx2,
    .f16_to_f32 = f16_to_f32_avx2,
    .bf16_to_f32 = bf16_to_f32_avx2,
    .f32_to_f16 = f32_to_f16_avx2,
    .f32_to_bf16 = f32_to_bf16_avx2,
    .name = "avx2",
};
