/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vectors.h - test_wire's golden vectors (the .hex files of tests/vectors,
 * format in its README.md): loading a directory of them, and reading a
 * vector's key=value expectations. Independent of the code under test.
 */
#ifndef SERENE_TESTS_VECTORS_H
#define SERENE_TESTS_VECTORS_H

#include <stddef.h>
#include <stdint.h>

#define MAX_KV 40
#define MAX_BYTES 512
struct vector {
    char name[64];
    char key[MAX_KV][24], val[MAX_KV][96];
    int nkv;
    uint8_t bytes[MAX_BYTES];
    size_t len;
};
struct vectors { struct vector *v; size_t n; };

/* Load every .hex file of dir (NULL: an error), sorted by name, into a new
 * *out. *out is set, for vectors_free, even when a file fails to load.
 * Returns 0, or -1 after a message on stderr. */
int vectors_load(const char *dir, struct vectors **out);
/* Free what vectors_load set; accepts NULL. */
void vectors_free(struct vectors *vs);

/* The value of key, or NULL. */
const char *vget(const struct vector *v, const char *key);
/* key's value as a number (strtoll base 0); fails the test if absent or not
 * a number. */
long long vnum(const struct vector *v, const char *key);
/* Whether key is present with exactly this value. */
int is(const struct vector *v, const char *key, const char *val);

#endif /* SERENE_TESTS_VECTORS_H */
