/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen_digits.c - a small deterministic digit-like data set in the SRDIGIT1
 * format of examples/train/data.h, so the training test needs no network:
 *
 *     gen_digits OUT N SIDE [SEED]
 *
 * N images of SIDE x SIDE pixels, 10 classes (label i % 10). Each class has
 * a fixed random prototype (a third of its pixels lit); an image is its
 * class's prototype with every pixel flipped with probability 0.2 and the
 * lit ones at a random intensity: learnable, not trivially.
 * Exit status: 0 written; 1 I/O error; 2 bad usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: gen_digits OUT N SIDE [SEED]\n");
        return 2;
    }
    long n = strtol(argv[2], NULL, 10), side = strtol(argv[3], NULL, 10);
    uint64_t seed = argc == 5 ? strtoull(argv[4], NULL, 10) : 1;
    if (n < 10 || n > 100000 || side < 2 || side > 64) {
        fprintf(stderr, "gen_digits: N in 10..100000, SIDE in 2..64\n");
        return 2;
    }
    size_t dim = (size_t)(side * side);
    uint8_t *proto = malloc(10 * dim), *img = malloc(dim), hdr[28];
    FILE *f = fopen(argv[1], "wb");
    if (!proto || !img || !f) {
        fprintf(stderr, "gen_digits: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    for (size_t k = 0; k < 10 * dim; k++)
        proto[k] = next(&seed) % 3 == 0;
    memcpy(hdr, "SRDIGIT1", 8);
    put32(hdr + 8, (uint32_t)n);
    put32(hdr + 12, (uint32_t)side);
    put32(hdr + 16, (uint32_t)side);
    put32(hdr + 20, 10);
    put32(hdr + 24, 255);
    fwrite(hdr, 1, sizeof hdr, f);
    for (long i = 0; i < n; i++) {
        const uint8_t *p = proto + (size_t)(i % 10) * dim;
        for (size_t k = 0; k < dim; k++) {
            int on = p[k] ^ (next(&seed) % 5 == 0);
            img[k] = on ? (uint8_t)(128 + next(&seed) % 128) : 0;
        }
        fwrite(img, 1, dim, f);
    }
    for (long i = 0; i < n; i++)
        fputc((int)(i % 10), f);
    if (fclose(f)) {
        fprintf(stderr, "gen_digits: writing %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    free(proto);
    free(img);
    return 0;
}
