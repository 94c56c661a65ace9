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
 * - The sum s dequantizes as r = fl(s) * 2^(E+1-B), fl = float32 RNE.
 *   Each worker's error is at most half a step, 2^(E-B), so
 *       |r - sum(x)| <= N * 2^(E-B) + ulp(r)/2
 *   whenever r is finite (test_quant checks this bound exactly, in
 *   integers). The first term is N/2 steps of 2^(E+1-B); the second only
 *   matters when |s| >= 2^24, where float32 cannot hold every integer.
 * - If SR_WIRE_EXP_MAX < 127, values of magnitude >= 2^(SR_WIRE_EXP_MAX+1)
 *   break |x| < 2^(E+1) by one binade: their |q| < 2^(B+1), the sum stays
 *   below N * 2^(B+1) <= 2^31, so it still fits an int32, nothing
 *   saturates, and the bound above still holds.
 *
 * Rounding is round-to-nearest-even independent of the caller's floating
 * point rounding mode. Values beyond int32 saturate to INT32_MIN/INT32_MAX
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
     * even in every rounding mode; mul is any finite float (2^k, or 2^k / N
     * for an average). The multiply rounds in the caller's mode, which
     * only matters when mul is not a power of two or the product leaves the
     * normal range; src may have any alignment. For an average, fl(s),
     * fl(2^k / N) and the product each round: up to about 2 ulp of the
     * result besides the quantization error / N (1.33 ulp seen at N = 3,
     * 1.97 at N = 63), against ulp/2 for a sum. */
    void (*decode)(float *dst, const uint8_t *src, size_t n, float mul);
    const char *name; /* "c", "avx2", "avx512" */
} sr_quant_kernels;

/* CPU features the running CPU supports (SR_CPU_* bits). */
unsigned sr_cpu_features(void);

/* Fill k with the best kernels allowed by (sr_cpu_features() & mask). */
void sr_quant_init(sr_quant_kernels *k, unsigned mask);

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

#endif /* SERENE_QUANT_QUANT_H */
