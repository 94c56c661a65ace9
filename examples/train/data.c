/* SPDX-License-Identifier: Apache-2.0 */
/*
 * data.c - load, split and shard the digit data set (format in data.h).
 */
#include "data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IMAGES 1000000u
#define MAX_SIDE 64u

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int digit_set_load(digit_set *set, const char *path, char *why, size_t why_len)
{
    memset(set, 0, sizeof *set);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    uint8_t hdr[28];
    uint8_t *pix = NULL;
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr || memcmp(hdr, "SRDIGIT1", 8) != 0) {
        snprintf(why, why_len, "%s is not a digit set (no SRDIGIT1 header); run fetch_data.sh",
                 path);
        goto fail;
    }
    uint32_t n = le32(hdr + 8), rows = le32(hdr + 12), cols = le32(hdr + 16);
    uint32_t classes = le32(hdr + 20), maxval = le32(hdr + 24);
    if (n < 1 || n > MAX_IMAGES || rows < 1 || rows > MAX_SIDE || cols < 1 || cols > MAX_SIDE ||
        classes < 2 || classes > 255 || maxval < 1 || maxval > 255) {
        snprintf(why, why_len,
                 "%s: header out of range (n=%u rows=%u cols=%u classes=%u maxval=%u)", path, n,
                 rows, cols, classes, maxval);
        goto fail;
    }
    size_t dim = (size_t)rows * cols, npix = (size_t)n * dim;
    set->n = n;
    set->dim = (uint32_t)dim;
    set->classes = classes;
    pix = malloc(npix);
    set->x = malloc(npix * sizeof *set->x);
    set->y = malloc(n);
    set->perm = malloc((size_t)n * sizeof *set->perm);
    if (!pix || !set->x || !set->y || !set->perm) {
        snprintf(why, why_len, "out of memory for %u images of %zu pixels", n, dim);
        goto fail;
    }
    if (fread(pix, 1, npix, f) != npix || fread(set->y, 1, n, f) != n) {
        snprintf(why, why_len, "%s is truncated (header says %u images of %ux%u)", path, n, rows,
                 cols);
        goto fail;
    }
    if (fgetc(f) != EOF) {
        snprintf(why, why_len, "%s has bytes after its %u labels", path, n);
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (set->y[i] >= classes) {
            snprintf(why, why_len, "%s: image %u has label %u >= %u classes", path, i, set->y[i],
                     classes);
            goto fail;
        }
        set->perm[i] = i;
    }
    for (size_t i = 0; i < npix; i++) {
        if (pix[i] > maxval) {
            snprintf(why, why_len, "%s: pixel %zu is %u > maxval %u", path, i, pix[i], maxval);
            goto fail;
        }
        set->x[i] = (float)pix[i] / (float)maxval;
    }
    free(pix);
    fclose(f);
    return 0;
fail:
    free(pix);
    fclose(f);
    digit_set_free(set);
    return -1;
}

void digit_set_split(digit_set *set, uint64_t seed, double test_frac)
{
    uint64_t s = seed;
    for (uint32_t i = set->n - 1; i > 0; i--) { /* Fisher-Yates */
        uint32_t j = (uint32_t)(rng_next(&s) % ((uint64_t)i + 1));
        uint32_t t = set->perm[i];
        set->perm[i] = set->perm[j];
        set->perm[j] = t;
    }
    set->n_test = (uint32_t)(test_frac * set->n);
    if (set->n_test >= set->n)
        set->n_test = set->n - 1;
}

size_t digit_set_shard(const digit_set *set, int rank, int world, uint32_t **out)
{
    size_t n_train = set->n - set->n_test, k = 0;
    *out = malloc((n_train / (size_t)world + 1) * sizeof **out);
    if (!*out)
        return 0;
    for (size_t i = (size_t)rank; i < n_train; i += (size_t)world)
        (*out)[k++] = set->perm[set->n_test + i];
    return k;
}

size_t digit_set_shard_noniid(const digit_set *set, int rank, int world, double frac,
                              uint64_t seed, uint32_t **out)
{
    size_t n_train = set->n - set->n_test, k = 0, shared = 0;
    *out = malloc((n_train ? n_train : 1) * sizeof **out);
    if (!*out)
        return 0;
    for (size_t i = 0; i < n_train; i++) {
        uint32_t img = set->perm[set->n_test + i];
        uint64_t s = seed ^ (uint64_t)img * 0xd1342543de82ef95ull;
        int owner;
        if (rng_unit(&s) < frac)
            owner = (int)(set->y[img] % (uint32_t)world);
        else
            owner = (int)(shared++ % (size_t)world);
        if (owner == rank)
            (*out)[k++] = img;
    }
    return k;
}

void digit_set_free(digit_set *set)
{
    free(set->x);
    free(set->y);
    free(set->perm);
    memset(set, 0, sizeof *set);
}
