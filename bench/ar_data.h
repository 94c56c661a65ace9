/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ar_data.h - the tensors every allreduce benchmark reduces (Serene, OpenMPI
 * and Gloo alike), and the check of the result after timing.
 *
 * Rank r's input is x_r[i] = (r + 1) * base(i), as float, where base(i) is
 * a hash of (seed, i) uniform in (-1, 1) scaled by 2^k, k in [-8, 8]
 * constant over aligned blocks of SR_AR_BLOCK elements. So every rank can
 * compute the exact float64 sum of all ranks' inputs alone, in O(N) per
 * element, without traffic, and the magnitudes vary between packets as real
 * gradients' do.
 *
 * Tolerance per element (E bounds the exponent of the largest |x| of the
 * element's packet on any rank: a packet of at most SR_WIRE_MAX_ELEMS
 * elements lies within the element's block and its two neighbours, so
 * E = max k over those three blocks + ceil(log2 N)):
 *   quantized (Serene):  N * 2^(E - B) + ulp(result) / 2,  B = 30 - ceil(log2 N)
 *                        (the bound in the README, with E rounded up);
 *   float sum (MPI, Gloo): N * 2^(E - 23) (N - 1 float additions, each off
 *                        by at most half an ulp of a partial sum < 2^(E+1)).
 */
#ifndef SERENE_BENCH_AR_DATA_H
#define SERENE_BENCH_AR_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SR_AR_BLOCK 2048u /* = SR_WIRE_MAX_ELEMS: a packet spans at most two blocks */

/* Fill x[0..n) with rank r's input. */
void sr_ar_fill(float *x, size_t n, int rank, uint64_t seed);

/* Check got[0..n) against the exact sum over `world` ranks. quantized
 * selects Serene's bound, else the float-sum bound. Returns the number of
 * elements out of bounds (0 = right) and describes the first one in why. */
size_t sr_ar_check(const float *got, size_t n, int world, uint64_t seed, int quantized, char *why,
                   size_t why_len);

#ifdef __cplusplus
}
#endif

#endif /* SERENE_BENCH_AR_DATA_H */
