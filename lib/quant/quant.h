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
 * - The sum dequantizes as s * 2^(E+1-B). Per element the error is at most
 *   N * 2^(E-B) (half a step per worker), plus float32 rounding of the result.
 *
 * Rounding is round-to-nearest-even independent of the caller's floating
 * point environment. Values beyond int32 saturate to INT32_MIN/INT32_MAX and
 * are counted (they cannot occur under the scheme above, only when a caller
 * passes a scale too large). NaN and Inf are rejected.
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
    /* *maxabs = max |src[i]| over n >= 0 values (0 for n == 0). Returns the
     * number of NaN/Inf values seen (0 means all finite). */
    size_t (*maxabs)(const float *src, size_t n, float *maxabs);
    /* dst (4*n bytes, any alignment) = big-endian int32 of
     * sat(rne(src[i] * mul)); mul is a power of two. Returns the number of
     * saturated values. NaN/Inf input gives an unspecified word and counts
     * as saturated; callers reject non-finite input first with maxabs. */
    size_t (*encode)(uint8_t *dst, const float *src, size_t n, float mul);
    /* dst[i] = (float)be32(src + 4i) * mul, where (float) rounds to nearest
     * even; mul is any finite float (2^k, or 2^k / N for an average). */
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
int sr_quant_bits(unsigned n_workers);         /* B = 30 - ceil(log2 n) */
int sr_quant_exponent(float maxabs);           /* local e for a packet, clamped */
float sr_quant_encode_mul(int exp, int bits);  /* 2^(bits-1-exp) */
float sr_quant_decode_mul(int exp, int bits);  /* 2^(exp+1-bits) */

#endif /* SERENE_QUANT_QUANT_H */
