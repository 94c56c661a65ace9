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
 *   worker.RANK = A.B.C.D:PORT      each rank 0..N-1 exactly once (required)
 *   worker.RANK.port = P     switch port of the rank (default RANK + 1)
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

int serene_ctl_job_parse(const char *text, size_t len, const char *name, serene_ctl_job *job,
                         char *err, size_t errcap)
{
    /* Line of each key seen (0: not seen), to refuse repeats and to place
     * errors found after the last line. */
    int l_job = 0, l_workers = 0, l_store = 0, l_group = 0, l_ring = 0, l_first = 0;
    int l_addr[SERENE_CTL_MAX_WORKERS] = {0}, l_port[SERENE_CTL_MAX_WORKERS] = {0};
    int l_rank_max = 0;
    uint32_t rank_max = 0;
    int lineno = 0;
    const char *p = text, *end = text + len;

    if (!job || (!text && len))
        return -EINVAL;
    if (!name)
        name = "job";
    memset(job, 0, sizeof *job);
    job->ring = 64;
    while (p < end) {
        char buf[JOB_LINE_MAX + 1], *line, *eq, *key, *val, *hash;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        uint64_t v;
        int *seen = NULL;

        lineno++;
        if (n > JOB_LINE_MAX) {
            ctl_errf(err, errcap, "%s:%d: line longer than %d bytes", name, lineno, JOB_LINE_MAX);
            return -EINVAL;
        }
        memcpy(buf, p, n);
        buf[n] = '\0';
        p = nl ? nl + 1 : end;
        if ((hash = strchr(buf, '#')))
            *hash = '\0';
        line = trim(buf);
        if (!*line)
            continue;
        if (!(eq = strchr(line, '='))) {
            ctl_errf(err, errcap, "%s:%d: '%.40s' is not 'key = value'", name, lineno, line);
            return -EINVAL;
        }
        *eq = '\0';
        key = trim(line);
        val = trim(eq + 1);
        if (!strncmp(key, "worker.", 7)) {
            char *dot = strchr(key + 7, '.');
            int is_port = dot && !strcmp(dot, ".port");
            if (dot && !is_port) {
                ctl_errf(err, errcap, "%s:%d: unknown key '%.40s' (worker.RANK or worker.RANK.port)",
                         name, lineno, key);
                return -EINVAL;
            }
            if (dot)
                *dot = '\0';
            if (parse_num(key + 7, SERENE_CTL_MAX_WORKERS - 1, &v)) {
                ctl_errf(err, errcap, "%s:%d: unknown worker '%.40s' (ranks are 0..%d)", name,
                         lineno, key + 7, SERENE_CTL_MAX_WORKERS - 1);
                return -EINVAL;
            }
            serene_ctl_worker *w = &job->workers[v];
            int *l = is_port ? &l_port[v] : &l_addr[v];
            if (*l) {
                ctl_errf(err, errcap, "%s:%d: worker %" PRIu64 "%s given twice (first at line %d)",
                         name, lineno, v, is_port ? "'s port" : "", *l);
                return -EINVAL;
            }
            *l = lineno;
            if (v >= rank_max) {
                rank_max = (uint32_t)v;
                l_rank_max = lineno;
            }
            if (is_port) {
                uint64_t pv;
                if (parse_num(val, 65535, &pv)) {
                    ctl_errf(err, errcap, "%s:%d: switch port '%.40s' of worker %" PRIu64
                                          " is not a number in 0..65535",
                             name, lineno, val, v);
                    return -EINVAL;
                }
                w->sw_port = (uint16_t)pv;
            } else if (parse_endpoint(val, &w->addr, &w->udp_port)) {
                ctl_errf(err, errcap, "%s:%d: address '%.40s' of worker %" PRIu64
                                      " is not A.B.C.D:PORT (port 1..65535)",
                         name, lineno, val, v);
                return -EINVAL;
            }
            continue;
        }
        uint64_t max = 0;
        if (!strcmp(key, "job"))
            seen = &l_job, max = 65535;
        else if (!strcmp(key, "workers"))
            seen = &l_workers, max = SERENE_CTL_MAX_WORKERS;
        else if (!strcmp(key, "store"))
            seen = &l_store, max = UINT32_MAX;
        else if (!strcmp(key, "mcast_group"))
            seen = &l_group, max = 65535;
        else if (!strcmp(key, "ring"))
            seen = &l_ring, max = CTL_RING_MAX;
        else if (!strcmp(key, "first_clock"))
            seen = &l_first, max = UINT32_MAX;
        else {
            ctl_errf(err, errcap,
                     "%s:%d: unknown key '%.40s' (job, workers, store, mcast_group, ring, "
                     "first_clock, worker.RANK, worker.RANK.port)",
                     name, lineno, key);
            return -EINVAL;
        }
        if (*seen) {
            ctl_errf(err, errcap, "%s:%d: '%s' given twice (first at line %d)", name, lineno, key,
                     *seen);
            return -EINVAL;
        }
        *seen = lineno;
        if (parse_num(val, max, &v) || (seen == &l_workers && v == 0) ||
            (seen == &l_group && v == 0) ||
            (seen == &l_ring && (v < 2 || (v & (v - 1))))) {
            const char *what = seen == &l_ring ? "a power of 2 in 2.." : "a number in ";
            uint64_t lo = seen == &l_workers || seen == &l_group ? 1 : 0;
            if (seen == &l_ring)
                ctl_errf(err, errcap, "%s:%d: %s '%.40s' is not %s%" PRIu64, name, lineno, key, val,
                         what, max);
            else
                ctl_errf(err, errcap, "%s:%d: %s '%.40s' is not %s%" PRIu64 "..%" PRIu64, name,
                         lineno, key, val, what, lo, max);
            return -EINVAL;
        }
        if (seen == &l_job)
            job->id = (uint16_t)v;
        else if (seen == &l_workers)
            job->n_workers = (uint32_t)v;
        else if (seen == &l_store)
            job->store_words = (uint32_t)v;
        else if (seen == &l_group)
            job->mcast_group = (uint16_t)v;
        else if (seen == &l_ring)
            job->ring = (uint32_t)v;
        else
            job->first_clock = (uint32_t)v;
    }
    if (!l_job || !l_workers) {
        ctl_errf(err, errcap, "%s:0: no '%s = ...' line", name, !l_job ? "job" : "workers");
        return -EINVAL;
    }
    if (l_rank_max && rank_max >= job->n_workers) {
        ctl_errf(err, errcap, "%s:%d: unknown worker %" PRIu32 ": the job has workers = %" PRIu32
                              " (ranks 0..%" PRIu32 ")",
                 name, l_rank_max, rank_max, job->n_workers, job->n_workers - 1);
        return -EINVAL;
    }
    for (uint32_t r = 0; r < job->n_workers; r++) {
        if (!l_addr[r]) {
            ctl_errf(err, errcap, "%s:0: worker %" PRIu32 " has no address (worker.%" PRIu32
                                  " = A.B.C.D:PORT)",
                     name, r, r);
            return -EINVAL;
        }
        if (!l_port[r])
            job->workers[r].sw_port = (uint16_t)(r + 1);
        for (uint32_t q = 0; q < r; q++)
            if (job->workers[q].addr == job->workers[r].addr &&
                job->workers[q].udp_port == job->workers[r].udp_port) {
                ctl_errf(err, errcap, "%s:%d: workers %" PRIu32 " and %" PRIu32
                                      " have the same address and port",
                         name, l_addr[r], q, r);
                return -EINVAL;
            }
    }
    if (!l_group)
        job->mcast_group = (uint16_t)(job->id < 65535 ? job->id + 1 : 65535);
    return 0;
}
