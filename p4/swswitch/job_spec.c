/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job_spec.c - the job spec of --job and `job add` (job_spec.h): the
 * fields, the options and their limits, with one message per mistake.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_spec.h"

typedef struct spec {
    const char *s; /* the whole spec, for messages */
    const char *(*env)(const char *name);
    sr_pipe_job_params *jp;
    char *why;
    size_t cap;
} spec;

__attribute__((format(printf, 2, 3))) static int bad(const spec *sp, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sp->why, sp->cap, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* Strict unsigned decimal: digits only, no sign or blank, at most max. */
static int parse_dec(const char *s, uint64_t max, uint64_t *out)
{
    unsigned long long v;
    char *end;

    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

/* token=HEX or token=env:NAME (where the caller gave an env). */
static int parse_token(const spec *sp, const char *val)
{
    const char *hex = val;
    size_t n;

    if (!strncmp(val, "env:", 4)) {
        if (!sp->env)
            return bad(sp, "token=env: in '%s' is for the command line; give the hex digits",
                       sp->s);
        hex = sp->env(val + 4);
        if (!hex)
            return bad(sp, "token variable '%s' in '%s' is not set", val + 4, sp->s);
    }
    /* Hex digits only: no 0x, sign or blank (strtoull alone takes them). */
    n = strlen(hex);
    if (n < 1 || n > 16 || strspn(hex, "0123456789abcdefABCDEF") != n ||
        !(sp->jp->token = strtoull(hex, NULL, 16)))
        return bad(sp, "token in '%s' is not 1 to 16 hex digits (not all zero)%s", sp->s,
                   hex == val ? "" : ", in its variable");
    return 0;
}

/* policy=bsp|asp|ssp:S; val is writable. */
static int parse_policy(const spec *sp, char *val)
{
    sr_pipe_job_params *jp = sp->jp;
    char *colon = strchr(val, ':');
    uint64_t v;

    if (colon)
        *colon++ = '\0';
    if (!strcmp(val, "bsp"))
        jp->mode = SR_SYNC_BSP;
    else if (!strcmp(val, "asp"))
        jp->mode = SR_SYNC_ASP;
    else if (!strcmp(val, "ssp") && colon)
        jp->mode = SR_SYNC_SSP;
    else
        return bad(sp, "policy '%s%s%s' in '%s' is not bsp, asp or ssp:S", val, colon ? ":" : "",
                   colon ? colon : "", sp->s);
    jp->s = 0;
    if (jp->mode == SR_SYNC_SSP) {
        if (parse_dec(colon, SR_BARRIER_RING_MAX - 2, &v))
            return bad(sp, "s '%s' of policy ssp in '%s' is not a number in 0..%u", colon, sp->s,
                       SR_BARRIER_RING_MAX - 2);
        jp->s = (uint32_t)v;
    } else if (colon) {
        return bad(sp, "policy %s in '%s' takes no :S (only ssp does)", val, sp->s);
    }
    return 0;
}

/* The tree's options (k: 4 local=A-B, 5 up=ADDR:PORT, 6 upjob=J, 7
 * member=K); val is writable. */
static int parse_tree(const spec *sp, unsigned k, char *val)
{
    sr_pipe_job_params *jp = sp->jp;
    char *sep = strchr(val, k == 4 ? '-' : ':'), orig[96];
    uint64_t a, b;
    struct in_addr in;

    snprintf(orig, sizeof orig, "%s", val); /* for messages: val is cut at sep */

    if (k == 4) {
        if (!sep || (*sep++ = '\0', parse_dec(val, SR_WIRE_MAX_WORKERS - 1, &a)) ||
            parse_dec(sep, SR_WIRE_MAX_WORKERS - 1, &b) || b < a)
            return bad(sp, "local '%s' in '%s' is not A-B, worker ids with A <= B <= 63", orig,
                       sp->s);
        jp->local_first = (uint32_t)a;
        jp->local_n = (uint32_t)(b - a + 1);
    } else if (k == 5) {
        if (!sep || (*sep++ = '\0', inet_pton(AF_INET, val, &in) != 1) ||
            parse_dec(sep, 65535, &b) || b == 0)
            return bad(sp, "up '%s' in '%s' is not ADDR:PORT (IPv4, port 1..65535)", orig, sp->s);
        jp->up = 1;
        jp->up_peer.ip = ntohl(in.s_addr);
        jp->up_peer.port = (uint16_t)b;
    } else if (k == 6) {
        if (parse_dec(val, 65535, &a))
            return bad(sp, "upjob '%s' in '%s' is not a job id in 0..65535", val, sp->s);
        jp->up_job = (uint16_t)a;
    } else {
        if (parse_dec(val, SR_WIRE_MAX_WORKERS - 1, &a))
            return bad(sp, "member '%s' in '%s' is not a member id in 0..63", val, sp->s);
        jp->up_member = (uint16_t)a;
    }
    return 0;
}

/* fallback=ADDR:PORT; val is writable. */
static int parse_fallback(const spec *sp, char *val)
{
    char *sep = strchr(val, ':');
    struct in_addr in;
    uint64_t port;

    if (!sep || (*sep++ = '\0', inet_pton(AF_INET, val, &in) != 1) ||
        parse_dec(sep, 65535, &port) || port == 0)
        return bad(sp, "fallback in '%s' is not ADDR:PORT (IPv4, port 1..65535)", sp->s);
    sp->jp->fallback = 1;
    sp->jp->fb_peer.ip = ntohl(in.s_addr);
    sp->jp->fb_peer.port = (uint16_t)port;
    return 0;
}

/* One "key=value" option (opt, of len bytes, inside the spec). */
static int parse_option(const spec *sp, const char *opt, size_t len, unsigned *seen)
{
    static const char *const keys[] = {"store",  "ring",     "policy", "token", "local", "up",
                                       "upjob",  "member",   "fallback", "prio", "rows", "model"};
    enum { NKEYS = sizeof keys / sizeof keys[0] };
    sr_pipe_job_params *jp = sp->jp;
    char buf[96], *val;
    unsigned k;
    uint64_t v;

    if (len == 0)
        return bad(sp, "empty option in '%s'", sp->s);
    if (len >= sizeof buf || !memchr(opt, '=', len))
        return bad(sp,
                   "'%.*s' in '%s' is not store=WORDS, ring=R, policy=MODE, token=T, "
                   "local=A-B, up=ADDR:PORT, upjob=J, member=K, fallback=ADDR:PORT, prio=P, "
                   "rows=whole|any or model=tna|none",
                   (int)len, opt, sp->s);
    memcpy(buf, opt, len);
    buf[len] = '\0';
    val = strchr(buf, '=');
    *val++ = '\0';
    for (k = 0; k < NKEYS && strcmp(buf, keys[k]); k++)
        ;
    if (k == NKEYS)
        return bad(sp,
                   "unknown option '%s' in '%s' (store=, ring=, policy=, token=, local=, up=, "
                   "upjob=, member=, fallback=, prio=, rows= or model=)",
                   buf, sp->s);
    if (*seen & 1u << k)
        return bad(sp, "'%s' given twice in '%s'", buf, sp->s);
    *seen |= 1u << k;
    if (k == 0) {
        if (parse_dec(val, SR_PIPE_STORE_MAX, &v))
            return bad(sp, "store '%s' in '%s' is not a number of words in 0..%u", val, sp->s,
                       SR_PIPE_STORE_MAX);
        jp->store_words = (uint32_t)v;
    } else if (k == 1) {
        if (parse_dec(val, SR_BARRIER_RING_MAX, &v) || v < 2 || (v & (v - 1)))
            return bad(sp, "ring '%s' in '%s' is not a power of 2 in 2..%u", val, sp->s,
                       SR_BARRIER_RING_MAX);
        jp->ring = (uint32_t)v;
    } else if (k == 3) {
        return parse_token(sp, val);
    } else if (k == 8) {
        return parse_fallback(sp, val);
    } else if (k == 9) {
        if (parse_dec(val, 255, &v))
            return bad(sp, "prio '%s' in '%s' is not a number in 0..255", val, sp->s);
        jp->prio = (uint8_t)v;
    } else if (k == 10) {
        if (strcmp(val, "whole") && strcmp(val, "any"))
            return bad(sp, "rows '%s' in '%s' is not whole or any", val, sp->s);
        jp->whole_rows = !strcmp(val, "whole");
    } else if (k == 11) {
        if (strcmp(val, "tna") && strcmp(val, "none"))
            return bad(sp, "model '%s' in '%s' is not tna or none", val, sp->s);
        jp->tna_model = !strcmp(val, "tna");
    } else if (k >= 4) {
        return parse_tree(sp, k, val);
    } else {
        return parse_policy(sp, val);
    }
    return 0;
}

/* ID:N[:ELEMS[:SLOTS]], the part before the first comma (end). */
static int parse_fields(const spec *sp, const char *end, uint64_t v[4])
{
    static const char *const names[] = {"ID", "N", "ELEMS", "SLOTS"};
    const uint64_t lo[] = {0, 1, 1, 0}; /* SLOTS 0: a job without allreduce */
    const uint64_t hi[] = {65535, SR_WIRE_MAX_WORKERS, SR_WIRE_MAX_ELEMS, SR_WIRE_MAX_SLOTS};
    const char *p = sp->s;
    unsigned k = 0;

    for (;;) {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        size_t len = colon ? (size_t)(colon - p) : (size_t)(end - p);
        char field[24];

        if (k == 4)
            return bad(sp, "'%s' has more than ID:N:ELEMS:SLOTS", sp->s);
        if (len >= sizeof field || (memcpy(field, p, len), field[len] = '\0',
                                    parse_dec(field, UINT64_MAX, &v[k])) ||
            v[k] < lo[k] || v[k] > hi[k])
            return bad(sp, "%s '%.*s' in '%s' is not in %" PRIu64 "..%" PRIu64, names[k],
                       (int)len, p, sp->s, lo[k], hi[k]);
        k++;
        if (!colon)
            break;
        p = colon + 1;
    }
    if (k < 2)
        return bad(sp, "'%s' is not ID:N[:ELEMS[:SLOTS]][,OPTION=VALUE...]", sp->s);
    return 0;
}

int sw_job_spec_parse(const char *s, const char *(*env)(const char *name), uint16_t *id,
                      sr_pipe_job_params *jp, char *why, size_t cap)
{
    const spec sp = {s, env, jp, why, cap};
    uint64_t v[4] = {0, 0, SR_WIRE_DEF_ELEMS, SR_WIRE_DEF_SLOTS};
    const char *end = s + strcspn(s, ","), *p, *msg;
    unsigned seen = 0;

    if (cap)
        why[0] = '\0';
    if (parse_fields(&sp, end, v))
        return -EINVAL;
    sr_pipe_job_params_init(jp);
    *id = (uint16_t)v[0];
    jp->n_workers = (uint32_t)v[1];
    jp->elems_per_pkt = (uint32_t)v[2];
    jp->pool_slots = (uint32_t)v[3];
    for (p = end; *p == ',';) {
        const char *q = p + 1, *next = q + strcspn(q, ",");

        if (parse_option(&sp, q, (size_t)(next - q), &seen))
            return -EINVAL;
        p = next;
    }
    if (!jp->up && (seen & (3u << 6)))
        return bad(&sp, "upjob= and member= in '%s' need up=ADDR:PORT", s);
    if (jp->up && (seen & (3u << 6)) != (3u << 6))
        return bad(&sp, "a leaf ('%s') needs upjob=J and member=K with up=", s);
    if (jp->up && jp->up_job == *id)
        return bad(&sp, "upjob in '%s' must differ from the job's id (the root holds both)", s);
    if ((seen & (1u << 9)) && !jp->fallback)
        return bad(&sp, "prio= in '%s' needs fallback=ADDR:PORT (it ranks shared jobs)", s);
    if (jp->mode == SR_SYNC_SSP && jp->s > jp->ring - 2)
        return bad(&sp,
                   "policy ssp:%" PRIu32 " in '%s' needs ring >= %" PRIu32
                   " (s + 2; ring is %" PRIu32 ")",
                   jp->s, s, jp->s + 2, jp->ring);
    if (sr_pipe_job_params_check(jp, &msg))
        return bad(&sp, "'%s': %s", s, msg);
    return 0;
}
