/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant_avx512.c - AVX-512 (F+BW+VL) kernels, bit-identical to the C
 * reference in quant.c.
 *
 * Built alone with -mavx512f -mavx512bw -mavx512vl and only called after
 * sr_cpu_features() saw all three. Compared with AVX2:
 * - embedded rounding ({rn-sae}) does both conversions in one instruction
 *   each and in every MXCSR rounding mode, so decode needs no mode check;
 * - tails use masked loads and stores, which never touch memory outside
 *   the selected lanes (faults included), so no stack buffer is needed;
 * - the saturation count is a masked add driven by compare masks.
 * The multiply by mul stays a plain vmulps, in the caller's mode, exactly
 * like the reference's float multiply; decode_avg's double steps likewise
 * use the MXCSR mode, as the reference's do.
 */
#include <immintrin.h>
#include <string.h>

#include "quant/quant.h"

extern const sr_quant_kernels sr_quant_kernels_avx512; /* picked by quant.c */

#define RN_SAE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* vpshufb control reversing the bytes of each 32-bit lane. */
static inline __m512i bswap32_ctl(void)
{
    return _mm512_set_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203,
                            0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203,
                            0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203,
                            0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
}

static inline __mmask16 lanes_below(size_t m)
{
    return (__mmask16)((1u << m) - 1); /* m in 0..15 */
}

/* Sum of the 16 lanes, widened: a whole block's count may reach 2^32. */
static inline size_t hsum_epu32(__m512i v)
{
    __m512i lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(v));
    __m512i hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(v, 1));
    return (size_t)_mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi));
}

/* Per-lane 32-bit counters take at most one step per 16 elements. */
#define COUNT_BLOCK ((size_t)1 << 32)

/* ---- maxabs --------------------------------------------------------------- */

static size_t count_nonfinite(const float *src, size_t n)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    const __m512i finite_max = _mm512_set1_epi32(0x7f7fffff); /* FLT_MAX */
    size_t total = 0;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 ld = n - i >= 16 ? (__mmask16)0xffff : lanes_below(n - i);
        __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(ld, src + i), absm);
        total += (size_t)__builtin_popcount(_mm512_cmpgt_epi32_mask(a, finite_max));
    }
    return total;
}

static size_t maxabs_avx512(const float *src, size_t n, float *maxabs)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512(src + i), absm));
        m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_loadu_si512(src + i + 16), absm));
        m2 = _mm512_max_epu32(m2, _mm512_and_si512(_mm512_loadu_si512(src + i + 32), absm));
        m3 = _mm512_max_epu32(m3, _mm512_and_si512(_mm512_loadu_si512(src + i + 48), absm));
    }
    for (; i + 16 <= n; i += 16)
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512(src + i), absm));
    if (i < n) /* masked-off lanes load as +0 */
        m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_maskz_loadu_epi32(lanes_below(n - i), src + i),
                                                   absm));
    uint32_t m = _mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_max_epu32(m0, m1), _mm512_max_epu32(m2, m3)));
    memcpy(maxabs, &m, 4);
    return m >= 0x7f800000u ? count_nonfinite(src, n) : 0;
}

/* ---- encode --------------------------------------------------------------- */

/* 16 lanes (those in valid) of byte-swapped sat(rne(x * mul)). */
static inline __m512i encode16(__m512 x, __m512 vmul, __mmask16 valid, __m512i *sat_acc)
{
    const __m512 p31 = _mm512_set1_ps(0x1p31f);
    const __m512 m31 = _mm512_set1_ps(-0x1p31f);
    __m512 y = _mm512_mul_ps(x, vmul);
    /* Decided on y: floats >= 2^23 in magnitude are integers already. */
    __mmask16 hi = _mm512_mask_cmp_ps_mask(valid, y, p31, _CMP_GE_OQ);
    __mmask16 lo = _mm512_mask_cmp_ps_mask(valid, y, m31, _CMP_NGE_UQ); /* NaN too */
    __m512i q = _mm512_cvt_roundps_epi32(y, RN_SAE); /* 0x80000000 if out of range/NaN */
    q = _mm512_mask_mov_epi32(q, hi, _mm512_set1_epi32(INT32_MAX));
    *sat_acc = _mm512_mask_add_epi32(*sat_acc, _mm512_kor(hi, lo), *sat_acc, _mm512_set1_epi32(1));
    return _mm512_shuffle_epi8(q, bswap32_ctl());
}

static size_t encode_block(uint8_t *dst, const float *src, size_t n, __m512 vmul)
{
    __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i w0 = encode16(_mm512_loadu_ps(src + i), vmul, 0xffff, &acc0);
        __m512i w1 = encode16(_mm512_loadu_ps(src + i + 16), vmul, 0xffff, &acc1);
        _mm512_storeu_si512(dst + 4 * i, w0);
        _mm512_storeu_si512(dst + 4 * i + 64, w1);
    }
    for (; i < n; i += 16) {
        __mmask16 valid = n - i >= 16 ? (__mmask16)0xffff : lanes_below(n - i);
        __m512i w = encode16(_mm512_maskz_loadu_ps(valid, src + i), vmul, valid, &acc0);
        _mm512_mask_storeu_epi32(dst + 4 * i, valid, w);
    }
    return hsum_epu32(_mm512_add_epi32(acc0, acc1));
}

static size_t encode_avx512(uint8_t *dst, const float *src, size_t n, float mul)
{
    const __m512 vmul = _mm512_set1_ps(mul);
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

static inline __m512 decode16(__m512i w, __m512 vmul)
{
    __m512i v = _mm512_shuffle_epi8(w, bswap32_ctl());
    return _mm512_mul_ps(_mm512_cvt_roundepi32_ps(v, RN_SAE), vmul);
}

static void decode_avx512(float *dst, const uint8_t *src, size_t n, float mul)
{
    const __m512 vmul = _mm512_set1_ps(mul);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 f0 = decode16(_mm512_loadu_si512(src + 4 * i), vmul);
        __m512 f1 = decode16(_mm512_loadu_si512(src + 4 * i + 64), vmul);
        _mm512_storeu_ps(dst + i, f0);
        _mm512_storeu_ps(dst + i + 16, f1);
    }
    for (; i < n; i += 16) {
        __mmask16 valid = n - i >= 16 ? (__mmask16)0xffff : lanes_below(n - i);
        __m512 f = decode16(_mm512_maskz_loadu_epi32(valid, src + 4 * i), vmul);
        _mm512_mask_storeu_ps(dst + i, valid, f);
    }
}

/* decode, with non-temporal stores from the first 64-byte boundary of dst
 * on (the head and tail go through decode). */
static void decode_stream_avx512(float *dst, const uint8_t *src, size_t n, float mul)
{
    const __m512 vmul = _mm512_set1_ps(mul);
    size_t i = sr_quant_stream_head(dst, n, 64);
    decode_avx512(dst, src, i, mul);
    for (; i + 16 <= n; i += 16)
        _mm512_stream_ps(dst + i, decode16(_mm512_loadu_si512(src + 4 * i), vmul));
    _mm_sfence();
    decode_avx512(dst + i, src + 4 * i, n - i, mul);
}

/* ---- decode_avg ------------------------------------------------------------ */

/* The reference's (float)(s * hi + s * lo), 8 lanes per double vector; the
 * narrowing rounds in the MXCSR mode like the scalar one. */
static inline __m256 avg8(__m256i v, __m512d hi, __m512d lo)
{
    __m512d s = _mm512_cvtepi32_pd(v);
    return _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(s, hi), _mm512_mul_pd(s, lo)));
}

static inline __m512 decode_avg16(__m512i w, __m512d hi, __m512d lo)
{
    __m512i v = _mm512_shuffle_epi8(w, bswap32_ctl());
    __m256 a = avg8(_mm512_castsi512_si256(v), hi, lo);
    __m256 b = avg8(_mm512_extracti64x4_epi64(v, 1), hi, lo);
    /* vinsertf64x4 moves the 8 floats as 4 doubles' worth of bits (F only). */
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(a)),
                                               _mm256_castps_pd(b), 1));
}

static void decode_avg_avx512(float *dst, const uint8_t *src, size_t n, double mul_hi,
                              double mul_lo)
{
    const __m512d hi = _mm512_set1_pd(mul_hi), lo = _mm512_set1_pd(mul_lo);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 f0 = decode_avg16(_mm512_loadu_si512(src + 4 * i), hi, lo);
        __m512 f1 = decode_avg16(_mm512_loadu_si512(src + 4 * i + 64), hi, lo);
        _mm512_storeu_ps(dst + i, f0);
        _mm512_storeu_ps(dst + i + 16, f1);
    }
    for (; i < n; i += 16) {
        __mmask16 valid = n - i >= 16 ? (__mmask16)0xffff : lanes_below(n - i);
        __m512 f = decode_avg16(_mm512_maskz_loadu_epi32(valid, src + 4 * i), hi, lo);
        _mm512_mask_storeu_ps(dst + i, valid, f);
    }
}

/* decode_avg, with non-temporal stores as decode_stream_avx512. */
static void decode_avg_stream_avx512(float *dst, const uint8_t *src, size_t n, double mul_hi,
                                     double mul_lo)
{
    const __m512d hi = _mm512_set1_pd(mul_hi), lo = _mm512_set1_pd(mul_lo);
    size_t i = sr_quant_stream_head(dst, n, 64);
    decode_avg_avx512(dst, src, i, mul_hi, mul_lo);
    for (; i + 16 <= n; i += 16)
        _mm512_stream_ps(dst + i, decode_avg16(_mm512_loadu_si512(src + 4 * i), hi, lo));
    _mm_sfence();
    decode_avg_avx512(dst + i, src + 4 * i, n - i, mul_hi, mul_lo);
}

const sr_quant_kernels sr_quant_kernels_avx512 = {
    .maxabs = maxabs_avx512,
    .encode = encode_avx512,
    .decode = decode_avx512,
    .decode_avg = decode_avg_avx512,
    .decode_stream = decode_stream_avx512,
    .decode_avg_stream = decode_avg_stream_avx512,
    .name = "avx512",
};
