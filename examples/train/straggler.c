/* SPDX-License-Identifier: Apache-2.0 */
/*
 * straggler.c - the straggler models of straggler.h.
 */
#include "straggler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data.h"

/* Strict number: the whole field, finite, in [lo, hi]. */
static int field(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int straggler_parse(straggler *s, const char *spec, char *why, size_t why_len)
{
    char buf[128], *f[5];
    int n = 0;
    memset(s, 0, sizeof *s);
    if (strlen(spec) >= sizeof buf) {
        snprintf(why, why_len, "straggler spec '%.40s...' is too long", spec);
        return -1;
    }
    strcpy(buf, spec);
    for (char *tok = buf, *colon; n < 5; tok = colon + 1) {
        f[n++] = tok;
        if (!(colon = strchr(tok, ':')))
            break;
        *colon = '\0';
    }
    if (strcmp(f[0], "none") == 0 && n == 1) {
        s->kind = STRAG_NONE;
        return 0;
    }
    if (strcmp(f[0], "slow") == 0 && n == 4 && !field(f[1], 0, 1, &s->p) &&
        !field(f[2], 0, 1000, &s->lo) && !field(f[3], s->lo, 1000, &s->hi)) {
        s->kind = STRAG_SLOW;
        return 0;
    }
    if (strcmp(f[0], "fail") == 0 && n == 3 && !field(f[1], 0, 1, &s->p) &&
        !field(f[2], 0, 3600000, &s->lo)) {
        s->kind = STRAG_FAIL;
        return 0;
    }
    if (strcmp(f[0], "hetero") == 0 && n == 2 && !field(f[1], 1, 1000, &s->lo)) {
        s->kind = STRAG_HETERO;
        return 0;
    }
    double start, len;
    if (strcmp(f[0], "burst") == 0 && n == 4 && !field(f[1], 1, 1000, &s->lo) &&
        !field(f[2], 0, 1e9, &start) && !field(f[3], 1, 1e9, &len) && start == (uint64_t)start &&
        len == (uint64_t)len) {
        s->kind = STRAG_BURST;
        s->start = (uint64_t)start;
        s->len = (uint64_t)len;
        return 0;
    }
    snprintf(why, why_len,
             "straggler spec '%s' is not none, slow:P:MIN:MAX (0<=P<=1, 0<=MIN<=MAX<=1000), "
             "fail:P:MS (0<=MS<=3600000), hetero:F (1<=F<=1000) or burst:F:START:LEN "
             "(1<=F<=1000, whole 0<=START<=1e9, 1<=LEN<=1e9)",
             spec);
    return -1;
}

void straggler_seed(straggler *s, uint64_t seed, int rank)
{
    s->rng = seed * 0x100000001b3ull ^ (uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull;
    (void)rng_next(&s->rng);
    s->failed = 0;
    s->calls = 0;
}

double straggler_delay(straggler *s, double mean_s)
{
    /* Two draws per iteration whatever the kind or outcome: the stream
     * stays aligned with the iteration number. */
    double coin = rng_unit(&s->rng), u = rng_unit(&s->rng);
    uint64_t call = s->calls++;
    switch (s->kind) {
    case STRAG_SLOW: return coin < s->p ? (s->lo + u * (s->hi - s->lo)) * mean_s : 0.0;
    case STRAG_FAIL:
        if (!s->failed && coin < s->p) {
            s->failed = 1;
            return s->lo / 1000.0;
        }
        return 0.0;
    case STRAG_HETERO: return (s->lo - 1.0) * mean_s;
    case STRAG_BURST:
        return call >= s->start && call - s->start < s->len ? (s->lo - 1.0) * mean_s : 0.0;
    case STRAG_NONE: break;
    }
    return 0.0;
}

void straggler_sleep(double d)
{
    if (!(d > 0))
        return;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}
