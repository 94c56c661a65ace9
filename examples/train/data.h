/* SPDX-License-Identifier: Apache-2.0 */
/*
 * data.h - the digit data set of the training example: the compact binary
 * file that fetch_data.sh writes (or a test generates), loaded, split into a
 * training and a test part, and sharded over the ranks.
 *
 * File format ("SRDIGIT1"), all integers little-endian:
 *     8 bytes  magic "SRDIGIT1"
 *     u32      n        images (1..1000000)
 *     u32      rows     (1..64)
 *     u32      cols     (1..64)
 *     u32      classes  (2..255)
 *     u32      maxval   pixel value meaning full intensity (1..255)
 *     n*rows*cols u8    pixels, image after image, row-major
 *     n u8     labels   (each < classes)
 * The file holds exactly these bytes: a short or long file is refused.
 */
#ifndef TRAIN_DATA_H
#define TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

typedef struct digit_set {
    uint32_t n, dim, classes;
    float *x;       /* n * dim values in [0, 1] */
    uint8_t *y;     /* n labels */
    uint32_t *perm; /* a fixed permutation of 0..n-1 (split and shards) */
    uint32_t n_test; /* perm[0 .. n_test) is the test split */
} digit_set;

/* Load path into set. On error returns -1 with a one-line reason in why. */
int digit_set_load(digit_set *set, const char *path, char *why, size_t why_len);

/* Shuffle with seed (the same on every rank) and hold out test_frac of the
 * images as the test split. */
void digit_set_split(digit_set *set, uint64_t seed, double test_frac);

/* Indices of rank's shard of the training split: every world-th training
 * image from rank on. *out is malloc'd; returns the count (0 on ENOMEM). */
size_t digit_set_shard(const digit_set *set, int rank, int world, uint32_t **out);

/* Indices of rank's non-IID shard: each class c has an owner, rank
 * c % world. Every training image, in the split's order, goes to its
 * class's owner with probability frac (a draw seeded by seed and the
 * image's index, the same on every rank), else to the ranks in turn (the
 * k-th such image to rank k % world). frac 0 is an IID split (not the same
 * one as digit_set_shard's), frac 1 gives each rank only its own classes.
 * *out is malloc'd; returns the count (0 on ENOMEM or an empty shard). */
size_t digit_set_shard_noniid(const digit_set *set, int rank, int world, double frac,
                              uint64_t seed, uint32_t **out);

void digit_set_free(digit_set *set);

/* splitmix64: small, seeded and the same everywhere. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

#endif /* TRAIN_DATA_H */
