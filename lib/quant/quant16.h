/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant16.h - 16-bit wire values, and float16 / bfloat16 tensors.
 *
 * The 16-bit scheme is quant.h's block floating point with fewer bits:
 * - Every worker quantizes packet k with the switch's max-reduced exponent
 *   E (quant.h), to q = clamp(rne(x * 2^(B-1-E)), -L, L) with
 *   B = 15 - ceil(log2 N) and L = 2^B - 1. As |x| < 2^(E+1), rne gives
 *   |q| <= 2^B, so the clamp moves a value by at most one step, and only
 *   for the values within half a step of the block's top.
 * - A sum of N such values is at most N * (2^B - 1) < 2^15 in magnitude:
 *   it fits an int16. Two values a, b travel as one int32 word a * 2^16 + b
 *   (wire.h, SR_WIRE_AUX_V16): the switch adds the words as it adds any,
 *   and since both sums fit an int16 the receiver takes them back exactly
 *   from the summed word, whatever the order of the adds.
 * - One exception: a packet whose E is SR_WIRE_EXP_MAX (126) holds values
 *   up to 2^128 = 2^(E+2), so it uses one bit less (sr_quant16_bits_at)
 *   and the same clamp L.
 * - SUM decodes as r = s * 2^(E+1-B) (exact: s has at most 15 bits), AVG
 *   as the float nearest to s * 2^(E+1-B) / N (decode16_avg, quant.c's
 *   one-rounding argument with |s| < 2^15).
 * - The bound, for element i of packet k with E as in quant.h and
 *   B = 15 - ceil(log2 N), for float32 results:
 *       SUM: |r_i - sum_w x_w[i]|       <= N * 2^(E+1-B) + ulp(r_i)/2
 *       AVG: |r_i - (sum_w x_w[i]) / N| <=     2^(E+1-B) + ulp(r_i)/2
 *   Each worker's value is off by at most one step 2^(E+1-B) (half a step
 *   but for the clamped top); the last term is the one final rounding. For
 *   float16 and bfloat16 results the float32 result is rounded once more,
 *   to nearest even in that format: add ulp16(r_i)/2, the spacing of the
 *   16-bit format at |r_i| (float16: 2^(e-10) for |r| in [2^e, 2^(e+1)),
 *   2^-24 below 2^-14; bfloat16: 2^(e-7), 2^-133 below 2^-126).
 * - One step 2^(E+1-B) is 2^-B to 2^(1-B) of the packet's largest |x|
 *   (2^-13 to 2^-12 for N = 4); values far below the packet's largest
 *   lose their low bits or come back as 0 (lib/README.md has the error
 *   measured on ResNet-18's gradients against float16's own).
 *
 * Kernels: C references and AVX2 (with F16C) / AVX-512 versions picked at
 * run time, bit for bit equal to the references, in a table per context
 * like quant.h's. The half-float conversions are integer operations (or
 * F16C instructions, which do the same in every rounding mode and ignore
 * DAZ/FTZ for the 16-bit side), so they agree in every floating-point
 * environment.
 */
#ifndef SERENE_QUANT_QUANT16_H
#define SERENE_QUANT_QUANT16_H

#include <stddef.h>
#include <stdint.h>

typedef struct sr_quant16_kernels {
    /* q[i] = clamp(sat(rne(src[i] * mul)), -lim, lim), with sat and rne as
     * quant.h's encode (NaN and -Inf give -lim, +Inf lim); lim in
     * 1..32767; dst (4 * ceil(n / 2) bytes, any alignment) = the
     * big-endian int32 words q[2k] * 2^16 + q[2k + 1] (modulo 2^32; q[n]
     * = 0 for an odd n). Returns the number of values saturated beyond the scheme:
     * |rne| > lim + 1, or not finite (lim + 1 = 2^B is the block's top,
     * which the scheme clamps by one step). */
    size_t (*encode)(uint8_t *dst, const float *src, size_t n, float mul, int32_t lim);
    /* dst[i] = (float)s[i] * mul for the n values s packed as encode
     * packs them (ceil(n / 2) words of src, each the sum of such words:
     * s[2k + 1] is word k's low 16 bits as an int16, s[2k] the high 16 of
     * word k - s[2k + 1]; the int16 is exact as a float; the multiply
     * rounds in the caller's mode, which only matters when mul is not a
     * power of two). */
    void (*decode)(float *dst, const uint8_t *src, size_t n, float mul);
    /* quant.h's decode_avg for those values: (float)(s * hi + s * lo). */
    void (*decode_avg)(float *dst, const uint8_t *src, size_t n, double hi, double lo);
    /* float16 (IEEE binary16) and bfloat16 to float32: exact. */
    void (*f16_to_f32)(float *dst, const uint16_t *src, size_t n);
    void (*bf16_to_f32)(float *dst, const uint16_t *src, size_t n);
    /* float32 to float16 / bfloat16, rounded to nearest even; NaN stays a
     * quiet NaN of the same sign with the top bits of its payload. Returns
     * how many finite values became +-Inf (beyond the format's range). */
    size_t (*f32_to_f16)(uint16_t *dst, const float *src, size_t n);
    size_t (*f32_to_bf16)(uint16_t *dst, const float *src, size_t n);
    const char *name; /* "c", "avx2", "avx512" */
} sr_quant16_kernels;

/* Fill k with the best kernels allowed by the CPU and mask (SR_CPU_*
 * bits, as sr_quant_init; the AVX2 table also needs F16C). */
void sr_quant16_init(sr_quant16_kernels *k, unsigned mask);
/* Exactly one variant (0 for C, SR_CPU_AVX2, SR_CPU_AVX512): -1 if it is
 * not built or not supported here, else 0. */
int sr_quant16_init_variant(sr_quant16_kernels *k, unsigned variant);

/* B = 15 - ceil(log2 n); n = 0 counts as 1. 9 for SR_WIRE_MAX_WORKERS. */
int sr_quant16_bits(unsigned n_workers);
/* The B a packet of exponent exp uses: bits, but one less at the clamp
 * SR_WIRE_EXP_MAX (126), where |x| may reach 2^128 = 2^(E+2): with one bit
 * less those values still quantize to at most 2^bits, clamped to L like
 * any other (quant.h's 32-bit scheme has the headroom instead). */
static inline int sr_quant16_bits_at(int bits, int exp)
{
    return exp >= 126 ? bits - 1 : bits;
}

/* L = 2^B - 1, the clamp, with B from sr_quant16_bits (not _at). */
static inline int32_t sr_quant16_lim(int bits)
{
    return (int32_t)((1u << bits) - 1u);
}

/* The 16-bit float formats of a tensor. */
enum sr_half { SR_HALF_F16 = 1, SR_HALF_BF16 = 2 };

/* *maxabs = max |src[i]| as a float32 (exact), for n >= 0 values of the
 * format (+0 for n == 0). Returns the number of NaN/Inf values, as
 * quant.h's maxabs, with *maxabs then +Inf or a NaN. Integer only. */
size_t sr_half_maxabs(const uint16_t *src, size_t n, int fmt, float *maxabs);
/* The quiet NaN a float16 / bfloat16 result holds where the sum is not a
 * number. */
uint16_t sr_half_nan(int fmt);

#endif /* SERENE_QUANT_QUANT16_H */
