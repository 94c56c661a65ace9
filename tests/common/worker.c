/* SPDX-License-Identifier: Apache-2.0 */
/* worker.c - see worker.h. */
#include "worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- options -------------------------------------------------------------- */

static int parse_num(const char *s, int base, unsigned long long *out)
{
    char *end;

    if (!*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    *out = strtoull(s, &end, base);
    return errno || *end ? -1 : 0;
}

static int parse_signed(const char *s, long *out)
{
    char *end;

    if (!*s)
        return -1;
    errno = 0;
    *out = strtol(s, &end, 10);
    return errno || *end ? -1 : 0;
}

static int parse_sizes(const char *v, const tc_opt *o)
{
    size_t *dst = o->dst;
    char buf[1024];
    char *save = NULL;
    int n = 0;

    if (strlen(v) >= sizeof buf)
        return -1;
    memcpy(buf, v, strlen(v) + 1);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        unsigned long long x;

        if (n == o->cap || parse_num(t, 0, &x))
            return -1;
        dst[n++] = (size_t)x;
    }
    *o->count = n;
    return n ? 0 : -1;
}

/* Store v into o's destination. 0 or -1. */
static int set_value(const tc_opt *o, const char *v)
{
    unsigned long long u;
    long l;

    switch (o->kind) {
    case TC_OPT_INT:
        if (parse_signed(v, &l) || l < -2147483647L - 1 || l > 2147483647L)
            return -1;
        *(int *)o->dst = (int)l;
        return 0;
    case TC_OPT_LONG:
        if (parse_signed(v, &l))
            return -1;
        *(long *)o->dst = l;
        return 0;
    case TC_OPT_U32:
        if (parse_num(v, 0, &u) || u > UINT32_MAX)
            return -1;
        *(uint32_t *)o->dst = (uint32_t)u;
        return 0;
    case TC_OPT_U64:
        if (parse_num(v, 0, &u))
            return -1;
        *(uint64_t *)o->dst = u;
        return 0;
    case TC_OPT_SIZE:
        if (parse_num(v, 0, &u) || u > SIZE_MAX)
            return -1;
        *(size_t *)o->dst = (size_t)u;
        return 0;
    case TC_OPT_STR:
        *(const char **)o->dst = v;
        return 0;
    case TC_OPT_SIZES:
        return parse_sizes(v, o);
    case TC_OPT_FLAG:
        break;
    }
    return -1;
}

int tc_parse_opts(int argc, char **argv, int first, const tc_opt *opts)
{
    for (int i = first; i < argc; i++) {
        const tc_opt *o = opts;

        while (o->name && strcmp(o->name, argv[i]))
            o++;
        if (!o->name) {
            fprintf(stderr, "unknown option '%s'\n", argv[i]);
            return -1;
        }
        if (o->seen)
            *o->seen = 1;
        if (o->kind == TC_OPT_FLAG) {
            *(int *)o->dst = 1;
            continue;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "%s needs a value\n", o->name);
            return -1;
        }
        if (set_value(o, argv[++i])) {
            fprintf(stderr, "%s: bad value '%s'\n", o->name, argv[i]);
            return -1;
        }
    }
    return 0;
}

/* ---- the context ------------------------------------------------------------- */

int tc_config_from_env(serene_config *cfg)
{
    serene_config_init(cfg);
    return serene_config_from_env(cfg) ? -1 : 0;
}

int tc_ctx_create(serene_ctx **ctx, const serene_config *cfg)
{
    int rc = serene_ctx_create(ctx, cfg);

    if (rc)
        fprintf(stderr, "rank %d: serene_ctx_create: %s (%s)\n", cfg->rank, serene_err_name(rc),
                serene_strerror(rc));
    return rc;
}

/* ---- inputs ---------------------------------------------------------------------- */

uint64_t tc_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

const char *tc_mode_name(serene_sync_mode m)
{
    switch (m) {
    case SERENE_SYNC_BSP: return "BSP";
    case SERENE_SYNC_SSP: return "SSP";
    case SERENE_SYNC_ASP: return "ASP";
    }
    return "?";
}

/* ---- the clock log ----------------------------------------------------------------- */

int tc_clock_log_open(tc_clock_log *lg, const char *dir, int rank)
{
    snprintf(lg->path, sizeof lg->path, "%s/rank%d.csv", dir, rank);
    lg->f = fopen(lg->path, "w");
    if (!lg->f) {
        fprintf(stderr, "rank %d: cannot write %s: %s\n", rank, lg->path, strerror(errno));
        return -1;
    }
    fprintf(lg->f, "clock,t_call_ns,t_return_ns,mode,s,low,high\n");
    return 0;
}

void tc_clock_log_row(tc_clock_log *lg, long clock, uint64_t t_call, uint64_t t_ret,
                      const serene_clock_info *ci)
{
    fprintf(lg->f, "%ld,%llu,%llu,%s,%u,%u,%u\n", clock, (unsigned long long)t_call,
            (unsigned long long)t_ret, tc_mode_name(ci->mode), ci->staleness, ci->low, ci->high);
}

int tc_clock_log_close(tc_clock_log *lg, serene_ctx *ctx)
{
    serene_stats st;
    int rc;

    serene_get_stats(ctx, &st);
    fprintf(lg->f, "#stats holds=%llu releases=%llu clock_wait_ns=%llu retrans=%llu\n",
            (unsigned long long)st.holds, (unsigned long long)st.releases,
            (unsigned long long)st.clock_wait_ns, (unsigned long long)st.retransmissions);
    rc = fclose(lg->f);
    lg->f = NULL;
    if (rc) {
        fprintf(stderr, "writing %s failed: %s\n", lg->path, strerror(errno));
        return -1;
    }
    return 0;
}
