/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vectors.c - the golden-vector loader for test_wire: reads every .hex file
 * of tests/vectors (format in its README.md) into key=value pairs and bytes,
 * with its own hex parser, never with the code under test.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vectors.h"

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* Read one vector file; the format is in tests/vectors/README.md. */
static int load_vector(const char *path, struct vector *v)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int lineno = 0;
    if (!f)
        return fprintf(stderr, "%s: %s\n", path, strerror(errno)), -1;
    while (fgets(line, sizeof(line), f)) {
        char *s = line, *eq, *save = NULL;
        lineno++;
        s[strcspn(s, "#\r\n")] = '\0';
        if ((eq = strchr(s, '=')) != NULL) {
            *eq = '\0';
            if (v->nkv == MAX_KV || sscanf(s, " %23[a-z_0-9]", v->key[v->nkv]) != 1 ||
                sscanf(eq + 1, " %95s", v->val[v->nkv]) != 1)
                goto bad;
            v->nkv++;
            continue;
        }
        for (char *tok = strtok_r(s, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            size_t tl = strlen(tok);
            if (tl % 2 || strspn(tok, "0123456789abcdefABCDEF") != tl || v->len + tl / 2 > MAX_BYTES)
                goto bad;
            for (size_t i = 0; i < tl; i += 2)
                v->bytes[v->len++] = (uint8_t)(hexval(tok[i]) << 4 | hexval(tok[i + 1]));
        }
    }
    fclose(f);
    return 0;
bad:
    fprintf(stderr, "%s:%d: not key=value nor hex bytes\n", path, lineno);
    fclose(f);
    return -1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct vector *)a)->name, ((const struct vector *)b)->name);
}

int vectors_load(const char *dir, struct vectors **out)
{
    struct vectors *vs = calloc(1, sizeof(*vs));
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    int rc = 0;
    *out = NULL;
    if (!vs || !d) {
        fprintf(stderr, "test_wire: SERENE_VECTORS must name tests/vectors\n");
        free(vs);
        return -1;
    }
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        char path[4096];
        if (nl < 5 || strcmp(e->d_name + nl - 4, ".hex") != 0 || nl >= sizeof(vs->v->name))
            continue;
        struct vector *nv = realloc(vs->v, (vs->n + 1) * sizeof(*vs->v));
        if (!nv) {
            rc = -1;
            break;
        }
        vs->v = nv;
        nv = &vs->v[vs->n++];
        memset(nv, 0, sizeof(*nv));
        memcpy(nv->name, e->d_name, nl + 1);
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        rc = load_vector(path, nv);
    }
    closedir(d);
    qsort(vs->v, vs->n, sizeof(*vs->v), by_name);
    *out = vs;
    return rc;
}

void vectors_free(struct vectors *vs)
{
    if (!vs)
        return;
    free(vs->v);
    free(vs);
}

const char *vget(const struct vector *v, const char *key)
{
    for (int i = 0; i < v->nkv; i++)
        if (strcmp(v->key[i], key) == 0)
            return v->val[i];
    return NULL;
}

long long vnum(const struct vector *v, const char *key)
{
    const char *s = vget(v, key);
    char *end;
    if (!s)
        fail_msg("%s: no %s=", v->name, key);
    errno = 0;
    long long x = strtoll(s, &end, 0);
    if (errno || *end || end == s)
        fail_msg("%s: %s=%s is not a number", v->name, key, s);
    return x;
}

int is(const struct vector *v, const char *key, const char *val)
{
    const char *s = vget(v, key);
    return s && strcmp(s, val) == 0;
}
