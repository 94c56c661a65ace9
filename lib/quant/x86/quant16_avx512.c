/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant16_avx512.c - AVX-512 (F, BW, VL) kernels of quant16.h, bit for bit
 * equal to the C references in quant16.c.
 *
 * Built alone with -mavx512f -mavx512bw -mavx512vl; only called after the
 * probe saw them. The same steps as quant16_avx2.c, 16 lanes at a time:
 * masked loads and stores take the tails (masked-off lanes neither fault
 * nor count; an odd tail's store takes the padding 0 after its last value),
 * vpmovsdw narrows the clamped int32 lanes (exact, they are within
 * +-32767) and the pairs' borrow makes the packed words, vcvtph2ps / vcvtps2ph with an immediate RNE convert
 * float16, and bfloat16 is integer arithmetic.
 */
#include <immintrin.h>

#include "quant/quant16.h"

extern const sr_quant16_kernels sr_quant16_kernels_avx512; /* picked by quant16.c */

static inline __mmask16 lanes_below(size_t m)
{
    return (__mmask16)(m >= 16 ? 0xffffu : (1u << m) - 1u);
}

/* Lanes [0, m) rounded up to whole pairs (the packed words). */
static inline __mmask16 words_below(size_t m)
{
    return lanes_below(m + (m & 1));
}

/* 0xffff in the low half of each 32-bit lane whose top bit is set: the
 * borrow of the word a * 2^16 + b for the pair b:a (quant16_avx2.c). */
static inline __m256i pair_borrow(__m256i v)
{
    return _mm256_srli_epi32(_mm256_srai_epi32(v, 31), 16);
}

/* vpshufb control reversing the bytes of each 16-bit lane (per 128 bits). */
static inline __m256i bswap16_ctl(void)
{
    return _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
                            1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
}

static size_t encode_avx512(uint8_t *dst, const float *src, size_t n, float mul, int32_t lim)
{
    const __m512 vmul = _mm512_set1_ps(mul), p31 = _mm512_set1_ps(0x1p31f);
    const __m512i vlim = _mm512_set1_epi32(lim), nlim = _mm512_set1_epi32(-lim);
    const __m512i top = _mm512_set1_epi32(lim + 1), ntop = _mm512_set1_epi32(-lim - 1);
    size_t nsat = 0;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes_below(n - i);
        __m512 y = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, src + i), vmul);
        __mmask16 hi = _mm512_cmp_ps_mask(y, p31, _CMP_GE_OQ);
        __m512i q = _mm512_cvtt_roundps_epi32(
            _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
            _MM_FROUND_NO_EXC);
        q = _mm512_mask_mov_epi32(q, hi, _mm512_set1_epi32(0x7fffffff));
        __mmask16 over = _mm512_mask_cmpgt_epi32_mask(k, q, top) | _mm512_mask_cmplt_epi32_mask(k, q, ntop);
        nsat += (size_t)__builtin_popcount(over);
        /* Lanes past n are 0 (0 * mul is NaN for an infinite mul): an odd
         * tail's padding. */
        q = _mm512_maskz_mov_epi32(k, _mm512_max_epi32(_mm512_min_epi32(q, vlim), nlim));
        __m256i w = _mm512_cvtepi32_epi16(q);
        w = _mm256_shuffle_epi8(_mm256_add_epi16(w, pair_borrow(w)), bswap16_ctl());
        _mm256_mask_storeu_epi16(dst + 2 * i, words_below(n - i), w);
    }
    return nsat;
}

/* 8 big-endian packed words (the values of k, whole words read) -> their
 * 16 values as int32. */
static inline __m512i load16_s16(const uint8_t *src, __mmask16 k)
{
    __mmask16 kw = (__mmask16)(k | (k << 1 & 0xaaaau)); /* a prefix: to whole pairs */
    __m256i w = _mm256_shuffle_epi8(_mm256_maskz_loadu_epi16(kw, src), bswap16_ctl());
    return _mm512_cvtepi16_epi32(_mm256_sub_epi16(w, pair_borrow(w)));
}

static void decode_avx512(float *dst, const uint8_t *src, size_t n, float mul)
{
    const __m512 vmul = _mm512_set1_ps(mul);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes_below(n - i);
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(load16_s16(src + 2 * i, k)), vmul);
        _mm512_mask_storeu_ps(dst + i, k, f);
    }
}

static void decode_avg_avx512(float *dst, const uint8_t *src, size_t n, double mul_hi,
                              double mul_lo)
{
    const __m512d hi = _mm512_set1_pd(mul_hi), lo = _mm512_set1_pd(mul_lo);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes_below(n - i);
        __m512i v = load16_s16(src + 2 * i, k);
        __m512d s0 = _mm512_cvtepi32_pd(_mm512_castsi512_si256(v));
        __m512d s1 = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1));
        __m256 a = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(s0, hi), _mm512_mul_pd(s0, lo)));
        __m256 b = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(s1, hi), _mm512_mul_pd(s1, lo)));
        __m512 f = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(a)),
                                                       _mm256_castps_pd(b), 1));
        _mm512_mask_storeu_ps(dst + i, k, f);
    }
}

static void f16_to_f32_avx512(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes_below(n - i);
        _mm512_mask_storeu_ps(dst + i, k, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, src + i)));
    }
}

static void bf16_to_f32_avx512(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes_below(n - i);
        __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, src + i));
        _mm512_mask_storeu_epi32(dst + i, k, _mm512_slli_epi32(w, 16));
    }
}

/* Lanes of k whose float32 input was finite and whose 16-bit result
 * (low 15 bits, in int32 lanes r) is the format's Inf. */
static inline size_t newly_inf(__mmask16 k, __m512i a, __m512i r, int inf16)
{
    __mmask16 fin = _mm512_mask_cmplt_epi32_mask(k, a, _mm512_set1_epi32(0x7f800000));
    __mmask16 inf = _mm512_mask_cmpeq_epi32_mask(fin, r, _mm512_set1_epi32(inf16));
    return (size_t)__builtin_popcount(inf);
}

static size_t f32_to_f16_avx512(uint16_t *dst, const float *src, size_t n)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), m15 = _mm512_set1_epi32(0x7fff);
    size_t ninf = 0;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes_below(n - i);
        __m512 x = _mm512_maskz_loadu_ps(k, src + i);
        __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16(dst + i, k, h);
        __m512i a = _mm512_and_si512(_mm512_castps_si512(x), absm);
        ninf += newly_inf(k, a, _mm512_and_si512(_mm512_cvtepu16_epi32(h), m15), 0x7c00);
    }
    return ninf;
}

static size_t f32_to_bf16_avx512(uint16_t *dst, const float *src, size_t n)
{
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), m15 = _mm512_set1_epi32(0x7fff);
    size_t ninf = 0;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = lanes_below(n - i);
        __m512i u = _mm512_maskz_loadu_epi32(k, src + i);
        __m512i a = _mm512_and_si512(u, absm);
        __mmask16 nan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7f800000));
        __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        __m512i r = _mm512_srli_epi32(
            _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
        r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16),
                                                          _mm512_set1_epi32(0x40)));
        ninf += newly_inf(k, a, _mm512_and_si512(r, m15), 0x7f80);
        _mm256_mask_storeu_epi16(dst + i, k, _mm512_cvtepi32_epi16(r));
    }
    return ninf;
}

const sr_quant16_kernels sr_quant16_kernels_avx512 = {
    .encode = encode_avx512,
    .decode = decode_avx512,
    .decode_avg = decode_avg_avx512,
    .f16_to_f32 = f16_to_f32_avx512,
    .bf16_to_f32 = bf16_to_f32_avx512,
    .f32_to_f16 = f32_to_f16_avx512,
    .f32_to_bf16 = f32_to_bf16_avx512,
    .name = "avx512",
};
