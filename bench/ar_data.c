/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ar_data.c - allreduce benchmark inputs and the check of their sum (see
 * ar_data.h for the construction and the bounds).
 */
#include "ar_data.h"

#include <math.h>
#include <stdio.h>

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* k of block b: |base(i)| < 2^k for every i in the block. */
static int block_exp(uint64_t seed, size_t b)
{
    return (int)(mix(seed ^ 0x5e7e4e00ull ^ (uint64_t)b) % 17) - 8;
}

static float base(uint64_t seed, size_t i, float scale)
{
    uint64_t h = mix(seed * 0x2545f4914f6cdd1dull + i);
    /* 24 random bits, uniform in (-1, 1): exact in float */
    float u = (float)(int32_t)((h >> 40) - (1u << 23)) / (float)(1u << 23);
    return u * scale;
}

void sr_ar_fill(float *x, size_t n, int rank, uint64_t seed)
{
    const float mul = (float)(rank + 1);
    for (size_t b0 = 0; b0 < n; b0 += SR_AR_BLOCK) {
        size_t end = n - b0 < SR_AR_BLOCK ? n : b0 + SR_AR_BLOCK;
        float scale = ldexpf(1.0f, block_exp(seed, b0 / SR_AR_BLOCK));
        for (size_t i = b0; i < end; i++)
            x[i] = mul * base(seed, i, scale);
    }
}

static int ceil_log2(int n)
{
    int b = 0;
    while ((1 << b) < n)
        b++;
    return b;
}

size_t sr_ar_check(const float *got, size_t n, int world, uint64_t seed, int quantized, char *why,
                   size_t why_len)
{
    const int lg = ceil_log2(world), bits = 30 - lg;
    size_t bad = 0, nblocks = (n + SR_AR_BLOCK - 1) / SR_AR_BLOCK;
    for (size_t b = 0; b < nblocks; b++) {
        int k = block_exp(seed, b);
        if (b > 0 && block_exp(seed, b - 1) > k)
            k = block_exp(seed, b - 1);
        if (b + 1 < nblocks && block_exp(seed, b + 1) > k)
            k = block_exp(seed, b + 1);
        const int e = k + lg;
        const double tol_abs = quantized ? world * ldexp(1.0, e - bits) : world * ldexp(1.0, e - 23);
        const float scale = ldexpf(1.0f, block_exp(seed, b));
        size_t end = n - b * SR_AR_BLOCK < SR_AR_BLOCK ? n : (b + 1) * SR_AR_BLOCK;
        for (size_t i = b * SR_AR_BLOCK; i < end; i++) {
            float v = base(seed, i, scale);
            double exact = 0;
            for (int r = 0; r < world; r++)
                exact += (double)((float)(r + 1) * v);
            double g = (double)got[i];
            double tol = tol_abs + (quantized ? 0.5 * ldexp(1.0, ilogb(g == 0 ? 1e-45 : g) - 23) : 0);
            if (!(fabs(g - exact) <= tol)) { /* NaN fails too */
                if (!bad && why)
                    snprintf(why, why_len, "element %zu: %.9g, exact %.9g, |error| %.3g > bound %.3g", i, g,
                             exact, fabs(g - exact), tol);
                bad++;
            }
        }
    }
    return bad;
}
