/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job.c - the job description file of serene-ctl: one `key = value` a line,
 * '#' comments, blank lines ignored, every key at most once:
 *
 *   job = ID                 0..65535 (required)
 *   workers = N              1..64 (required)
 *   store = WORDS            parameter store words (default 0)
 *   mcast_group = G          1..65535 (default ID + 1)
 *   ring = R                 power of 2 in 2..4096 (default 64)
 *   first_clock = C          (default 0)
 *   token = HEX              admission token, 1 to 16 hex digits (default none)
 *   worker.RANK = A.B.C.D:PORT      each rank 0..N-1 exactly once (required)
 *   worker.RANK.port = P     switch port of the rank (default RANK + 1)
 *
 * An aggregation tree of serene-switches (lib/ctl/README.md, "Trees"):
 *   leaf.K = A-B             leaf K (0, 1, ...) serves ranks A..B; the leaves'
 *                            ranges cover the ranks once each
 *   root = A.B.C.D:PORT      where the leaves reach the root
 *   leaf.K.up = A.B.C.D:PORT where leaf K reaches it (default: root)
 *   leaf.K.addr = A.B.C.D:PORT   where leaf K's workers reach it (optional)
 *   upjob = J                the root's job of the leaves (default ID ^ 32768)
 *   elems = E, slots = S     packet values and pool (default 256 and 128)
 * A tree needs no worker.RANK lines (the software switch binds workers by
 * JOIN).
 *
 * A shared job (lib/ctl/README.md, "Shared jobs"; not in a tree):
 *   fallback = A.B.C.D:PORT  its fallback aggregator
 *   fallback.port = P        switch port toward it (default N + 1)
 *   lease = L                slots 0..L-1 get a block (default all)
 *   lease.first = B          slot s gets block B + s (default: the job's own)
 *
 * Errors are "NAME:LINE: message" (NAME:0 for what is missing at the end).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"

#define JOB_LINE_MAX 256

/* Strict decimal in 0..max. */
static int parse_num(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max)
            return -1;
    }
    *out = v;
    return 0;
}

/* A.B.C.D:PORT */
static int parse_endpoint(const char *s, uint32_t *addr, uint16_t *port)
{
    char part[16];
    uint32_t a = 0;
    uint64_t v;

    for (int i = 0; i < 4; i++) {
        size_t n = 0;
        while (s[n] >= '0' && s[n] <= '9' && n < 3)
            n++;
        if (n == 0 || s[n] != (i < 3 ? '.' : ':'))
            return -1;
        memcpy(part, s, n);
        part[n] = '\0';
        if (parse_num(part, 255, &v))
            return -1;
        a = a << 8 | (uint32_t)v;
        s += n + 1;
    }
    if (parse_num(s, 65535, &v) || v == 0)
        return -1;
    *addr = a;
    *port = (uint16_t)v;
    return 0;
}

static char *trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

/* The parse in progress: the line of each key seen (0: not seen), to
 * refuse repeats and to place errors found after the last line. */
typedef struct job_parser {
    const char *name;
    serene_ctl_job *job;
    char *err;
    size_t errcap;
    int lineno;
    int l_job, l_workers, l_store, l_group, l_ring, l_first, l_token;
    int l_elems, l_slots, l_upjob, l_root;
    int l_fb, l_fb_port, l_lease, l_lease_first;
    int l_leaf[SERENE_CTL_MAX_WORKERS], l_leaf_up[SERENE_CTL_MAX_WORKERS];
    int l_leaf_addr[SERENE_CTL_MAX_WORKERS];
    uint32_t root_addr;
    uint16_t root_port;
    int l_addr[SERENE_CTL_MAX_WORKERS], l_port[SERENE_CTL_MAX_WORKERS];
    int l_rank_max;
    uint32_t rank_max;
} job_parser;

/* worker.RANK = A.B.C.D:PORT or worker.RANK.port = P; key and val trimmed. */
static int parse_worker_key(job_parser *jp, char *key, const char *val)
{
    const char *name = jp->name;
    int lineno = jp->lineno;
    char *dot = strchr(key + 7, '.');
    int is_port = dot && !strcmp(dot, ".port");
    uint64_t v;

    if (dot && !is_port) {
        ctl_errf(jp->err, jp->errcap,
                 "%s:%d: unknown key '%.40s' (worker.RANK or worker.RANK.port)", name, lineno,
                 key);
        return -EINVAL;
    }
    if (dot)
        *dot = '\0';
    if (parse_num(key + 7, SERENE_CTL_MAX_WORKERS - 1, &v)) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: unknown worker '%.40s' (ranks are 0..%d)", name,
                 lineno, key + 7, SERENE_CTL_MAX_WORKERS - 1);
        return -EINVAL;
    }
    serene_ctl_worker *w = &jp->job->workers[v];
    int *l = is_port ? &jp->l_port[v] : &jp->l_addr[v];
    if (*l) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: worker %" PRIu64 "%s given twice (first at line %d)",
                 name, lineno, v, is_port ? "'s port" : "", *l);
        return -EINVAL;
    }
    *l = lineno;
    if (v >= jp->rank_max) {
        jp->rank_max = (uint32_t)v;
        jp->l_rank_max = lineno;
    }
    if (is_port) {
        uint64_t pv;
        if (parse_num(val, 65535, &pv)) {
            ctl_errf(jp->err, jp->errcap, "%s:%d: switch port '%.40s' of worker %" PRIu64
                                          " is not a number in 0..65535",
                     name, lineno, val, v);
            return -EINVAL;
        }
        w->sw_port = (uint16_t)pv;
    } else if (parse_endpoint(val, &w->addr, &w->udp_port)) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: address '%.40s' of worker %" PRIu64
                                      " is not A.B.C.D:PORT (port 1..65535)",
                 name, lineno, val, v);
        return -EINVAL;
    }
    return 0;
}

/* job, workers, store, mcast_group, ring or first_clock = NUMBER. */
static int parse_scalar_key(job_parser *jp, const char *key, const char *val)
{
    const char *name = jp->name;
    int lineno = jp->lineno;
    serene_ctl_job *job = jp->job;
    uint64_t max = 0, v;
    int *seen;

    if (!strcmp(key, "job"))
        seen = &jp->l_job, max = 65535;
    else if (!strcmp(key, "workers"))
        seen = &jp->l_workers, max = SERENE_CTL_MAX_WORKERS;
    else if (!strcmp(key, "store"))
        seen = &jp->l_store, max = UINT32_MAX;
    else if (!strcmp(key, "mcast_group"))
        seen = &jp->l_group, max = 65535;
    else if (!strcmp(key, "ring"))
        seen = &jp->l_ring, max = CTL_RING_MAX;
    else if (!strcmp(key, "first_clock"))
        seen = &jp->l_first, max = UINT32_MAX;
    else if (!strcmp(key, "elems"))
        seen = &jp->l_elems, max = 2048;
    else if (!strcmp(key, "slots"))
        seen = &jp->l_slots, max = 32768;
    else if (!strcmp(key, "upjob"))
        seen = &jp->l_upjob, max = 65535;
    else if (!strcmp(key, "fallback.port"))
        seen = &jp->l_fb_port, max = 511;
    else if (!strcmp(key, "lease"))
        seen = &jp->l_lease, max = 32768;
    else if (!strcmp(key, "lease.first"))
        seen = &jp->l_lease_first, max = 32767;
    else {
        ctl_errf(jp->err, jp->errcap,
                 "%s:%d: unknown key '%.40s' (job, workers, store, mcast_group, ring, "
                 "first_clock, token, worker.RANK, worker.RANK.port, elems, slots, upjob, root, "
                 "leaf.K, leaf.K.up, leaf.K.addr, fallback, fallback.port, lease, lease.first)",
                 name, lineno, key);
        return -EINVAL;
    }
    if (*seen) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: '%s' given twice (first at line %d)", name, lineno,
                 key, *seen);
        return -EINVAL;
    }
    *seen = lineno;
    if (parse_num(val, max, &v) || (seen == &jp->l_workers && v == 0) ||
        (seen == &jp->l_group && v == 0) || (seen == &jp->l_elems && v == 0) ||
        (seen == &jp->l_slots && v == 0) ||
        (seen == &jp->l_ring && (v < 2 || (v & (v - 1))))) {
        const char *what = seen == &jp->l_ring ? "a power of 2 in 2.." : "a number in ";
        uint64_t lo = seen == &jp->l_workers || seen == &jp->l_group || seen == &jp->l_elems ||
                              seen == &jp->l_slots
                          ? 1
                          : 0;
        if (seen == &jp->l_ring)
            ctl_errf(jp->err, jp->errcap, "%s:%d: %s '%.40s' is not %s%" PRIu64, name, lineno,
                     key, val, what, max);
        else
            ctl_errf(jp->err, jp->errcap, "%s:%d: %s '%.40s' is not %s%" PRIu64 "..%" PRIu64,
                     name, lineno, key, val, what, lo, max);
        return -EINVAL;
    }
    if (seen == &jp->l_job)
        job->id = (uint16_t)v;
    else if (seen == &jp->l_workers)
        job->n_workers = (uint32_t)v;
    else if (seen == &jp->l_store)
        job->store_words = (uint32_t)v;
    else if (seen == &jp->l_group)
        job->mcast_group = (uint16_t)v;
    else if (seen == &jp->l_ring)
        job->ring = (uint32_t)v;
    else if (seen == &jp->l_elems)
        job->elems = (uint32_t)v;
    else if (seen == &jp->l_slots)
        job->slots = (uint32_t)v;
    else if (seen == &jp->l_upjob)
        job->up_job = (uint16_t)v;
    else if (seen == &jp->l_fb_port)
        job->fb_sw_port = (uint16_t)v;
    else if (seen == &jp->l_lease)
        job->lease = (uint32_t)v;
    else if (seen == &jp->l_lease_first)
        job->lease_first = (uint32_t)v;
    else
        job->first_clock = (uint32_t)v;
    return 0;
}

/* root = A.B.C.D:PORT, leaf.K = A-B, leaf.K.up = A.B.C.D:PORT or
 * leaf.K.addr = A.B.C.D:PORT; key and val trimmed. */
static int parse_tree_key(job_parser *jp, char *key, const char *val)
{
    const char *name = jp->name, *dash;
    int lineno = jp->lineno, *l;
    char *dot = key[0] == 'l' ? strchr(key + 5, '.') : NULL;
    uint64_t k, a, b;
    char num[8];

    if (key[0] == 'r') {
        if (jp->l_root) {
            ctl_errf(jp->err, jp->errcap, "%s:%d: 'root' given twice (first at line %d)", name,
                     lineno, jp->l_root);
            return -EINVAL;
        }
        jp->l_root = lineno;
        if (parse_endpoint(val, &jp->root_addr, &jp->root_port)) {
            ctl_errf(jp->err, jp->errcap,
                     "%s:%d: root '%.40s' is not A.B.C.D:PORT (port 1..65535)", name, lineno, val);
            return -EINVAL;
        }
        return 0;
    }
    if (dot && strcmp(dot, ".up") && strcmp(dot, ".addr")) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: unknown key '%.40s' (leaf.K, leaf.K.up or leaf.K.addr)",
                 name, lineno, key);
        return -EINVAL;
    }
    if (dot)
        *dot = '\0';
    if (parse_num(key + 5, SERENE_CTL_MAX_WORKERS - 1, &k)) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: unknown leaf '%.40s' (leaves are 0..%d)", name,
                 lineno, key + 5, SERENE_CTL_MAX_WORKERS - 1);
        return -EINVAL;
    }
    serene_ctl_leaf *lf = &jp->job->leaves[k];
    l = !dot ? &jp->l_leaf[k] : dot[1] == 'u' ? &jp->l_leaf_up[k] : &jp->l_leaf_addr[k];
    if (*l) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: leaf %" PRIu64 "%s given twice (first at line %d)",
                 name, lineno, k, !dot ? "" : dot[1] == 'u' ? "'s up" : "'s addr", *l);
        return -EINVAL;
    }
    *l = lineno;
    if (dot) {
        int bad = dot[1] == 'u' ? parse_endpoint(val, &lf->up_addr, &lf->up_port)
                                : parse_endpoint(val, &lf->addr, &lf->port);
        if (bad) {
            ctl_errf(jp->err, jp->errcap,
                     "%s:%d: %s '%.40s' of leaf %" PRIu64 " is not A.B.C.D:PORT (port 1..65535)",
                     name, lineno, dot + 1, val, k);
            return -EINVAL;
        }
        return 0;
    }
    dash = strchr(val, '-');
    if (!dash || (size_t)(dash - val) >= sizeof num ||
        (memcpy(num, val, (size_t)(dash - val)), num[dash - val] = '\0',
         parse_num(num, SERENE_CTL_MAX_WORKERS - 1, &a)) ||
        parse_num(dash + 1, SERENE_CTL_MAX_WORKERS - 1, &b) || b < a) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: ranks '%.40s' of leaf %" PRIu64
                                      " are not A-B (A <= B, ranks 0..%d)",
                 name, lineno, val, k, SERENE_CTL_MAX_WORKERS - 1);
        return -EINVAL;
    }
    lf->first = (uint32_t)a;
    lf->count = (uint32_t)(b - a + 1);
    return 0;
}

/* token = 1 to 16 hex digits, not all zero. */
static int parse_token_key(job_parser *jp, const char *val)
{
    size_t n = strlen(val);

    if (jp->l_token) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: 'token' given twice (first at line %d)", jp->name,
                 jp->lineno, jp->l_token);
        return -EINVAL;
    }
    jp->l_token = jp->lineno;
    if (n < 1 || n > 16 || strspn(val, "0123456789abcdefABCDEF") != n ||
        !(jp->job->token = strtoull(val, NULL, 16))) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: token is not 1 to 16 hex digits (not all zero)",
                 jp->name, jp->lineno);
        return -EINVAL;
    }
    return 0;
}

/* fallback = A.B.C.D:PORT: the job is shared (its fallback aggregator). */
static int parse_fallback_key(job_parser *jp, const char *val)
{
    if (jp->l_fb) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: 'fallback' given twice (first at line %d)",
                 jp->name, jp->lineno, jp->l_fb);
        return -EINVAL;
    }
    jp->l_fb = jp->lineno;
    if (parse_endpoint(val, &jp->job->fb_addr, &jp->job->fb_udp_port) || !jp->job->fb_addr) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: fallback '%.40s' is not A.B.C.D:PORT", jp->name,
                 jp->lineno, val);
        return -EINVAL;
    }
    return 0;
}

/* After the last line, for a shared job: no tree, its own switch port,
 * defaults. */
static int check_shared(job_parser *jp, int tree)
{
    serene_ctl_job *job = jp->job;
    int l = jp->l_fb_port ? jp->l_fb_port : jp->l_lease ? jp->l_lease : jp->l_lease_first;

    if (!jp->l_fb) {
        if (l) {
            ctl_errf(jp->err, jp->errcap, "%s:%d: %s without fallback = A.B.C.D:PORT", jp->name,
                     l, jp->l_fb_port ? "fallback.port" : jp->l_lease ? "lease" : "lease.first");
            return -EINVAL;
        }
        return 0;
    }
    if (tree) {
        ctl_errf(jp->err, jp->errcap,
                 "%s:%d: a tree cannot be shared (fallback): its root holds its rounds", jp->name,
                 jp->l_fb);
        return -EINVAL;
    }
    if (!jp->l_fb_port)
        job->fb_sw_port = (uint16_t)(job->n_workers + 1);
    for (uint32_t r = 0; r < job->n_workers; r++)
        if (job->workers[r].sw_port == job->fb_sw_port ||
            (job->workers[r].addr == job->fb_addr &&
             job->workers[r].udp_port == job->fb_udp_port)) {
            ctl_errf(jp->err, jp->errcap, "%s:%d: the fallback has worker %" PRIu32 "'s %s",
                     jp->name, jp->l_fb_port ? jp->l_fb_port : jp->l_fb, r,
                     job->workers[r].sw_port == job->fb_sw_port ? "switch port"
                                                                 : "address and port");
            return -EINVAL;
        }
    if (!jp->l_lease)
        job->lease = SERENE_CTL_LEASE_ALL;
    if (!jp->l_lease_first)
        job->lease_first = SERENE_CTL_LEASE_ALL;
    return 0;
}

/* One line of n bytes at p, without its newline: comment, blank or key. */
static int parse_line(job_parser *jp, const char *p, size_t n)
{
    char buf[JOB_LINE_MAX + 1], *line, *eq, *hash;

    if (n > JOB_LINE_MAX) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: line longer than %d bytes", jp->name, jp->lineno,
                 JOB_LINE_MAX);
        return -EINVAL;
    }
    memcpy(buf, p, n);
    buf[n] = '\0';
    if ((hash = strchr(buf, '#')))
        *hash = '\0';
    line = trim(buf);
    if (!*line)
        return 0;
    if (!(eq = strchr(line, '='))) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: '%.40s' is not 'key = value'", jp->name,
                 jp->lineno, line);
        return -EINVAL;
    }
    *eq = '\0';
    char *key = trim(line), *val = trim(eq + 1);
    if (!strncmp(key, "worker.", 7))
        return parse_worker_key(jp, key, val);
    if (!strcmp(key, "token"))
        return parse_token_key(jp, val);
    if (!strcmp(key, "root") || !strncmp(key, "leaf.", 5))
        return parse_tree_key(jp, key, val);
    if (!strcmp(key, "fallback"))
        return parse_fallback_key(jp, val);
    return parse_scalar_key(jp, key, val);
}

/* After the last line, for a tree: leaves 0..n-1 each with its ranks,
 * covering every rank once, each with a way up; upjob apart from job. */
static int check_tree(job_parser *jp)
{
    const char *name = jp->name;
    serene_ctl_job *job = jp->job;
    uint64_t covered = 0;
    uint32_t n = 0;

    while (n < SERENE_CTL_MAX_WORKERS && jp->l_leaf[n])
        n++;
    for (uint32_t k = n; k < SERENE_CTL_MAX_WORKERS; k++) {
        int l = jp->l_leaf[k] ? jp->l_leaf[k] : jp->l_leaf_up[k] ? jp->l_leaf_up[k]
                                                                   : jp->l_leaf_addr[k];
        if (l) {
            ctl_errf(jp->err, jp->errcap,
                     "%s:%d: leaf %" PRIu32 " without leaf %" PRIu32 " = A-B (leaves are "
                     "numbered from 0 without gaps)",
                     name, l, k, n);
            return -EINVAL;
        }
    }
    if (n == 0) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: root without any leaf.K = A-B line", name,
                 jp->l_root);
        return -EINVAL;
    }
    for (uint32_t k = 0; k < n; k++) {
        serene_ctl_leaf *lf = &job->leaves[k];
        uint64_t bits = (lf->count >= 64 ? UINT64_MAX : (UINT64_C(1) << lf->count) - 1)
                        << lf->first;

        if (lf->first + lf->count > job->n_workers || (covered & bits)) {
            ctl_errf(jp->err, jp->errcap,
                     "%s:%d: leaf %" PRIu32 "'s ranks %" PRIu32 "-%" PRIu32 " %s", name,
                     jp->l_leaf[k], k, lf->first, lf->first + lf->count - 1,
                     covered & bits ? "overlap another leaf's" : "are beyond the job's workers");
            return -EINVAL;
        }
        covered |= bits;
        if (!jp->l_leaf_up[k]) {
            if (!jp->l_root) {
                ctl_errf(jp->err, jp->errcap,
                         "%s:%d: leaf %" PRIu32 " has no way up (root = A.B.C.D:PORT, or "
                         "leaf.%" PRIu32 ".up)",
                         name, jp->l_leaf[k], k, k);
                return -EINVAL;
            }
            lf->up_addr = jp->root_addr;
            lf->up_port = jp->root_port;
        }
    }
    if (covered != (job->n_workers >= 64 ? UINT64_MAX : (UINT64_C(1) << job->n_workers) - 1)) {
        ctl_errf(jp->err, jp->errcap, "%s:0: rank %d is under no leaf", name,
                 __builtin_ctzll(~covered));
        return -EINVAL;
    }
    if (!jp->l_upjob)
        job->up_job = job->id ^ 0x8000u;
    if (job->up_job == job->id) {
        ctl_errf(jp->err, jp->errcap, "%s:%d: upjob %u is the job's own id", name, jp->l_upjob,
                 (unsigned)job->up_job);
        return -EINVAL;
    }
    job->n_leaves = n;
    return 0;
}

/* After the last line: required keys, every rank's address, defaults. */
static int check_job(job_parser *jp)
{
    const char *name = jp->name;
    serene_ctl_job *job = jp->job;
    int tree = jp->l_root || jp->l_leaf[0] || jp->l_upjob;
    int rc;

    for (uint32_t k = 0; !tree && k < SERENE_CTL_MAX_WORKERS; k++)
        tree = jp->l_leaf[k] || jp->l_leaf_up[k] || jp->l_leaf_addr[k];

    if (!jp->l_job || !jp->l_workers) {
        ctl_errf(jp->err, jp->errcap, "%s:0: no '%s = ...' line", name,
                 !jp->l_job ? "job" : "workers");
        return -EINVAL;
    }
    if (jp->l_rank_max && jp->rank_max >= job->n_workers) {
        ctl_errf(jp->err, jp->errcap,
                 "%s:%d: unknown worker %" PRIu32 ": the job has workers = %" PRIu32
                 " (ranks 0..%" PRIu32 ")",
                 name, jp->l_rank_max, jp->rank_max, job->n_workers, job->n_workers - 1);
        return -EINVAL;
    }
    if (tree && (rc = check_tree(jp)))
        return rc;
    for (uint32_t r = 0; r < job->n_workers; r++) {
        if (!jp->l_addr[r] && tree) {
            job->workers[r].sw_port = (uint16_t)(r + 1);
            continue;
        }
        if (!jp->l_addr[r]) {
            ctl_errf(jp->err, jp->errcap,
                     "%s:0: worker %" PRIu32 " has no address (worker.%" PRIu32
                     " = A.B.C.D:PORT)",
                     name, r, r);
            return -EINVAL;
        }
        if (!jp->l_port[r])
            job->workers[r].sw_port = (uint16_t)(r + 1);
        for (uint32_t q = 0; q < r; q++)
            if (jp->l_addr[q] && job->workers[q].addr == job->workers[r].addr &&
                job->workers[q].udp_port == job->workers[r].udp_port) {
                ctl_errf(jp->err, jp->errcap,
                         "%s:%d: workers %" PRIu32 " and %" PRIu32
                         " have the same address and port",
                         name, jp->l_addr[r], q, r);
                return -EINVAL;
            }
    }
    if (!jp->l_group)
        job->mcast_group = (uint16_t)(job->id < 65535 ? job->id + 1 : 65535);
    return check_shared(jp, tree);
}

int serene_ctl_job_parse(const char *text, size_t len, const char *name, serene_ctl_job *job,
                         char *err, size_t errcap)
{
    const char *p = text, *end = text + len;

    if (!job || (!text && len))
        return -EINVAL;
    job_parser jp = {.name = name ? name : "job", .job = job, .err = err, .errcap = errcap};
    memset(job, 0, sizeof *job);
    job->ring = 64;
    job->elems = 256;
    job->slots = 128;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        int rc;

        jp.lineno++;
        if ((rc = parse_line(&jp, p, n)))
            return rc;
        p = nl ? nl + 1 : end;
    }
    return check_job(&jp);
}
