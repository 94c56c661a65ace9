/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quant.h - float32 <-> int32 fixed point, with a block exponent per packet.
 *
 * Scheme (block floating point, max-reduced in the switch as in SwitchML):
 * - For a packet of values x[0..n) a worker computes its local exponent
 *   e = clamp(ilogb(max|x|), SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX), or
 *   SR_WIRE_EXP_MIN when all values are zero, so |x| < 2^(e+1).
 * - The switch max-reduces the workers' exponents (carried one round ahead
 *   in next_exp), so every worker quantizes the packet with the same E.
 * - With B = 30 - ceil(log2 N) payload bits, q = rne(x * 2^(B-1-E)) has
 *   |q| <= 2^B, and a sum of N such values is at most N * 2^B <= 2^30:
 *   the int32 sum in the switch cannot overflow.
 * - The switch's sum s dequantizes, for SERENE_SUM, as
 *   r = fl(s) * 2^(E+1-B) (fl = float32 RNE; the product is exact), and for
 *   SERENE_AVG as r = the float nearest to s * 2^(E+1-B) / N, one rounding
 *   (decode_avg with the multiplier of sr_quant_avg_mul).
 * - The bound. For element i of packet k (the elements [k*P, (k+1)*P), P
 *   the job's values per packet), with E the exponent above, i.e. the max
 *   over workers w of clamp(floor(log2(max_{j in k} |x_w[j]|)),
 *   SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX) (SR_WIRE_EXP_MIN when all are 0):
 *       SUM: |r_i - sum_w x_w[i]|       <= N * 2^(E-B) + ulp(r_i)/2
 *       AVG: |r_i - (sum_w x_w[i]) / N| <=     2^(E-B) + ulp(r_i)/2
 *   where ulp(r) is the spacing of floats at |r|: 2^(e-23) for |r| in
 *   [2^e, 2^(e+1)), and 2^-149 below 2^-126 (subnormals and 0). Each
 *   worker's error is at most half a step, 2^(E-B); so is the error of the
 *   exact mean of the quantized values; the last term is the one final
 *   rounding. It holds whenever r_i is finite, in the default floating
 *   point environment (round to nearest, no FTZ); test_quant checks it
 *   exactly.
 * - The floor: E never goes below SR_WIRE_EXP_MIN = -96, so values under
 *   2^-96 (1.26e-29) get the absolute bound N * 2^(-96-B) (the SUM bound
 *   with E clamped) instead of a relative one; subnormal inputs typically
 *   come back as 0.
 * - Overflow: only a SUM can leave the float range. For E below
 *   SR_WIRE_EXP_MAX, |s| <= N * 2^B gives |r| <= 2^(E+1+ceil(log2 N)); at
 *   SR_WIRE_EXP_MAX each |q| * 2^(E+1-B) <= FLT_MAX, so |r| <= N * FLT_MAX.
 *   So r can only be infinite when E + 1 + ceil(log2 N) >= 128
 *   (sr_quant_sum_may_overflow); it is then +-Inf in the default rounding
 *   mode, and the engine reports the call as non-finite. An AVG cannot
 *   overflow: the exact mean is at most max |q| * 2^(E+1-B) <= FLT_MAX.
 * - If SR_WIRE_EXP_MAX < 127, values of magnitude >= 2^(SR_WIRE_EXP_MAX+1)
 *   break |x| < 2^(E+1) by one binade: their |q| < 2^(B+1), the sum stays
 *   below N * 2^(B+1) <= 2^31, so it still fits an int32, nothing
 *   saturates, and the bound above still holds.
 *
 * encode and decode round to nearest even independent of the caller's
 * floating point rounding mode (decode_avg: see there). Values beyond int32 saturate to INT32_MIN/INT32_MAX
 * and are counted (they cannot occur under the scheme above, only when a
 * caller passes a scale too large). NaN and Inf cannot be quantized: maxabs
 * counts them so callers can keep them off the wire; encode maps +Inf to
 * INT32_MAX and -Inf and NaN to INT32_MIN, counted as saturated.
 * FTZ/DAZ act on every kernel alike (x86 scalar and vector float math obey
 * the same MXCSR), so the kernels agree under them too.
 *
 * Kernels: a scalar C reference, and AVX2 / AVX-512 versions picked at run
 * time; every kernel is bit-identical to the reference. The kernel table is
 * filled per context (no globals): C first, then upgraded by the CPU probe
 * ANDed with a mask (SERENE_CPU_MASK), so tests can run every variant.
 */
#ifndef SERENE_QUANT_QUANT_H
#define SERENE_QUANT_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* CPU feature bits, the same as serene_config.cpu_mask. */
#define SR_CPU_AVX2 0x1u
#define SR_CPU_AVX512 0x2u

typedef struct sr_quant_kernels {
    /* *maxabs = max |src[i]| over n >= 0 values (+0 for n == 0). Returns
     * the number of NaN/Inf values seen (0 means all finite); then *maxabs
     * is +Inf, or a NaN if there is one (the largest |src[i]| bit pattern).
     * Exact and independent of the rounding mode and of DAZ. */
    size_t (*maxabs)(const float *src, size_t n, float *maxabs);
    /* dst (4*n bytes, any alignment) = big-endian int32 of
     * sat(rne(src[i] * mul)); mul is a power of two (any float is handled
     * identically by every kernel, but only then is src[i] * mul exact).
     * Returns the number of saturated values: rne >= 2^31 gives INT32_MAX,
     * rne < -2^31 gives INT32_MIN (-2^31 itself is not saturated). +Inf ->
     * INT32_MAX, -Inf and NaN -> INT32_MIN, all counted as saturated;
     * callers reject non-finite input first with maxabs. */
    size_t (*encode)(uint8_t *dst, const float *src, size_t n, float mul);
    /* dst[i] = (float)be32(src + 4i) * mul, where (float) rounds to nearest
     * even in every rounding mode; mul is any finite float (2^(E+1-B) for a
     * sum). The multiply rounds in the caller's mode, which only matters
     * when mul is not a power of two or the product leaves the normal range;
     * src may have any alignment. */
    void (*decode)(float *dst, const uint8_t *src, size_t n, float mul);
    /* The average: dst[i] = (float)((double)s * hi + (double)s * lo) with
     * s = be32(src + 4i), every operation IEEE in this order. With (hi, lo)
     * from sr_quant_avg_mul and the default rounding mode this is the float
     * nearest to s * 2^k / N (ties to even): one rounding, for every int32
     * s (quant.c has the proof). In another rounding mode each step rounds
     * in that mode and the result is within 1 ulp of s * 2^k / N. The
     * kernels agree bit for bit in every mode and under FTZ/DAZ (the double
     * steps never meet a subnormal; only the final narrowing can, and it
     * flushes alike). src may have any alignment. */
    void (*decode_avg)(float *dst, const uint8_t *src, size_t n, double hi, double lo);
    /* decode, bit for bit, with stores that go around the cache (non-
     * temporal, then a store fence, so that they are visible to any
     * thread before it returns): for a result too large to stay in the
     * cache until it is read, whose ordinary stores would first read every
     * line in. NULL in a table without them (C): use decode. */
    void (*decode_stream)(float *dst, const uint8_t *src, size_t n, float mul);
    /* decode_avg, likewise around the cache; NULL with decode_stream. */
    void (*decode_avg_stream)(float *dst, const uint8_t *src, size_t n, double hi, double lo);
    const char *name; /* "c", "avx2", "avx512" */
} sr_quant_kernels;

/* For the *_stream kernels: how many values of dst[0..n) go through the
 * ordinary kernel before the non-temporal stores of align bytes
 * (a power of two) can start: those before dst's first align-byte boundary,
 * or all n when dst is not float-aligned or less than one vector follows
 * that boundary. */
static inline size_t sr_quant_stream_head(const float *dst, size_t n, size_t align)
{
    size_t head = ((align - ((uintptr_t)dst & (align - 1))) & (align - 1)) / 4;
    return ((uintptr_t)dst & 3) || head + align / 4 > n ? n : head;
}

/* CPU features the running CPU supports (SR_CPU_* bits). */
unsigned sr_cpu_features(void);

/* Fill k with the best kernels allowed by (sr_cpu_features() & mask). */
void sr_quant_init(sr_quant_kernels *k, unsigned mask);
/* A kernel table's variants: variant(v, features) is the table of variant
 * v (0 for C, SR_CPU_AVX2, SR_CPU_AVX512) if it is built and features
 * allow it, else NULL; 0 always has one. sr_quant_best returns the best
 * allowed by (sr_cpu_features() & mask) (quant16.c's tables use it too). */
typedef const void *(*sr_quant_variant_fn)(unsigned variant, unsigned features);
const void *sr_quant_best(sr_quant_variant_fn variant, unsigned mask);

/* Fill k with exactly one variant: SR_CPU_AVX2, SR_CPU_AVX512 or 0 for C.
 * Returns -1 (k untouched) if that variant is not built or not supported by
 * this CPU, else 0. Tests and benchmarks use it to run every kernel. */
int sr_quant_init_variant(sr_quant_kernels *k, unsigned variant);

/* Exponent helpers for the scheme above. */
/* B = 30 - ceil(log2 n); n = 0 counts as 1. 24 for SR_WIRE_MAX_WORKERS. */
int sr_quant_bits(unsigned n_workers);
/* Local e for a packet: ilogb(|maxabs|) clamped to [SR_WIRE_EXP_MIN,
 * SR_WIRE_EXP_MAX]; SR_WIRE_EXP_MIN for 0 and subnormals, SR_WIRE_EXP_MAX
 * for Inf and NaN (which callers handle before, see maxabs). */
int sr_quant_exponent(float maxabs);
/* 2^(bits-1-exp) and 2^(exp+1-bits): exact normal floats for exp in
 * [SR_WIRE_EXP_MIN, SR_WIRE_EXP_MAX] and bits in [24, 30]. */
float sr_quant_encode_mul(int exp, int bits);
float sr_quant_decode_mul(int exp, int bits);
/* The decode_avg multiplier for 2^(exp+1-bits) / n_workers, with exp and
 * bits as for sr_quant_decode_mul and n_workers in 1..SR_WIRE_MAX_WORKERS
 * (0 counts as 1), exact in integers and so independent of the rounding mode: hi
 * has at most 22 significant bits, so that (double)s * hi is exact for
 * any int32 s, and hi + lo is within 2^-73 (relative) of the quotient. */
void sr_quant_avg_mul(int exp, int bits, unsigned n_workers, double *hi, double *lo);
/* Whether a sum decoded with (exp, bits) can exceed the float range:
 * exp + 1 + ceil(log2 N) >= 128, where ceil(log2 N) = 30 - bits. Only then
 * need the decoded values be checked for Inf. */
int sr_quant_sum_may_overflow(int exp, int bits);

#endif /* SERENE_QUANT_QUANT_H */
