/* SPDX-License-Identifier: Apache-2.0 */
/*
 * control.c - the control socket's commands (see control.h for the
 * protocol). Pure: parses one line, calls the pipeline's control API,
 * formats one reply line. No I/O, no globals, no allocation.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "control.h"
#include "job_spec.h"

#define MAX_WORDS 8

/* The reply under construction: appends never overrun; len counts what
 * would have been written, like snprintf. */
typedef struct reply {
    char *buf;
    size_t cap, len;
} reply;

__attribute__((format(printf, 2, 3))) static void put(reply *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(r->len < r->cap ? r->buf + r->len : NULL, r->len < r->cap ? r->cap - r->len : 0,
                  fmt, ap);
    va_end(ap);
    if (n > 0)
        r->len += (size_t)n;
}

static const char *mode_lc(enum sr_sync_mode m)
{
    switch (m) {
    case SR_SYNC_BSP: return "bsp";
    case SR_SYNC_SSP: return "ssp";
    case SR_SYNC_ASP: return "asp";
    }
    return "?";
}

/* Strict unsigned decimal: digits only, at most max. */
static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;

    if (!*s)
        return -1;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max)
            return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* The job of word s: 0, or -1 after writing the error. */
static int parse_job(reply *r, const sr_pipe *p, const char *s, uint16_t *job)
{
    uint32_t v;
    sr_pipe_job_info info;

    if (parse_u32(s, 65535, &v)) {
        put(r, "error bad job id '%s' (0..65535)", s);
        return -1;
    }
    if (sr_pipe_job_info_get(p, (uint16_t)v, &info)) {
        put(r, "error unknown job %" PRIu32, v);
        return -1;
    }
    *job = (uint16_t)v;
    return 0;
}

/* Ascending: probe every id (65536 table lookups, well under a millisecond)
 * rather than hold a list of them. */
static void cmd_jobs(reply *r, const sr_pipe *p)
{
    put(r, "ok");
    for (uint32_t id = 0; id <= 65535; id++) {
        sr_pipe_job_info info;

        if (!sr_pipe_job_info_get(p, (uint16_t)id, &info))
            put(r, " %" PRIu32, id);
    }
}

static void cmd_status(reply *r, const sr_pipe *p, uint16_t job)
{
    sr_pipe_job_info info;
    sr_pipe_sync_state st;
    sr_pipe_job_counters c;
    sr_pipe_job_held held;

    if (sr_pipe_job_info_get(p, job, &info) || sr_pipe_sync_get(p, job, &st) ||
        sr_pipe_job_counters_get(p, job, &c) || sr_pipe_job_held_get(p, job, &held)) {
        put(r, "error unknown job %u", job);
        return;
    }
    put(r, "ok job=%u workers=%" PRIu32 " low=%" PRIu32 " high=%" PRIu32 " mode=%s s=%" PRIu32
           " rules=",
        job, info.n_workers, st.low, st.high, mode_lc(st.mode), st.s);
    for (unsigned i = 0; i < st.n_rules; i++) {
        const sr_barrier_range *g = &st.rules[i];

        put(r, "%s%" PRIu32 "-", i ? "," : "", g->from);
        if (g->open)
            put(r, "inf");
        else
            put(r, "%" PRIu32, g->to);
        put(r, ":%s:%" PRIu32, mode_lc(g->mode), g->s);
    }
    put(r,
        " clocks=%" PRIu64 " holds=%" PRIu64 " proceeds=%" PRIu64 " advances=%" PRIu64
        " pushes=%" PRIu64 " push_dups=%" PRIu64 " pulls=%" PRIu64 " bound=%" PRIu32
        " nonce=%" PRIu32 " ring=%" PRIu32 " store=%" PRIu32 " clock_ahead=%" PRIu64
        " range_errors=%" PRIu64 " leaves=%" PRIu64 " in_use_refused=%" PRIu64 " live=%" PRIu32
        " lapsed=%" PRIu64 " denied=%" PRIu64 " bytes=%" PRIu64 " slots_open=%" PRIu32
        " ring_entries=%" PRIu32,
        c.clocks, c.holds, c.proceeds, c.releases, c.pushes, c.push_dups, c.pulls, info.n_bound,
        info.nonce, st.ring, info.store_words, c.clock_ahead, c.range_errors, c.leaves,
        c.in_use_refused, info.n_live, c.lapsed, c.denied, info.bytes, held.slots_open,
        held.ring_entries);
}

/* pool take JOB SLOT: the slot's block back to the pool (sr_pipe_pool_take). */
static void cmd_pool_take(reply *r, sr_pipe *p, const char *job, const char *slot)
{
    uint32_t j, s;
    int rc;

    if (parse_u32(job, 65535, &j) || parse_u32(slot, UINT32_MAX, &s)) {
        put(r, "error usage: pool take JOB SLOT");
        return;
    }
    rc = sr_pipe_pool_take(p, (uint16_t)j, s);
    if (rc >= 0)
        put(r, "ok pool take job=%" PRIu32 " slot=%" PRIu32 " %s", j, s,
            rc ? "now" : "at its boundary");
    else
        put(r, "error job %" PRIu32 " slot %" PRIu32 ": %s", j, s,
            rc == -ESRCH     ? "no such shared job"
            : rc == -EINVAL  ? "past the job's slots"
            : rc == -ENODATA ? "holds no block"
            : rc == -EALREADY ? "being taken back already"
                              : "the switch has no pool");
}

/* pool [policy NAME]: the shared pool and who holds it, as
 * `ok pool blocks=B ... jobs=J:HELD:PRIO:AWAY:PREEMPTED:WAIT,...` (AWAY:
 * rounds sent to the job's fallback; WAIT: of those, the ones before its
 * first block in this incarnation; ` more=N` when the rest would not fit the
 * reply), or the policy changed. */
static void cmd_pool(reply *r, sr_pipe *p, char **w, unsigned n)
{
    sr_pipe_pool_state st;
    enum sr_pool_policy pol;
    unsigned k = 0, nj, listed = 0;

    if (sr_pipe_pool_get(p, &st)) {
        put(r, "error the switch has no pool (serene-switch --pool BLOCKS:ELEMS)");
        return;
    }
    if (n == 4 && !strcasecmp(w[1], "take")) {
        cmd_pool_take(r, p, w[2], w[3]);
        return;
    }
    if (n == 3 && !strcasecmp(w[1], "policy")) {
        if (sr_pool_policy_parse(w[2], &pol))
            put(r, "error policy '%.32s' is not static, first, fair or priority", w[2]);
        else {
            sr_pipe_pool_set_policy(p, pol);
            put(r, "ok pool policy=%s", sr_pool_policy_name(pol));
        }
        return;
    }
    if (n != 1) {
        put(r, "error usage: pool [policy static|first|fair|priority | take JOB SLOT]");
        return;
    }
    put(r, "ok pool blocks=%" PRIu32 " elems=%" PRIu32 " policy=%s idle_ms=%" PRIu64
           " free=%" PRIu32 " revoking=%" PRIu32 " peak=%" PRIu32 " grants=%" PRIu64
           " revokes=%" PRIu64 " returns=%" PRIu64 " jobs=",
        st.blocks, st.elems, sr_pool_policy_name(st.policy), st.idle_ms, st.free, st.revoking,
        st.peak, st.grants, st.revokes, st.returns);
    nj = sr_pipe_job_list(p, NULL, 0);
    for (unsigned i = 0; i < 65536u && k < nj; i++) {
        sr_pipe_job_info info;
        sr_pipe_job_counters c;

        if (sr_pipe_job_info_get(p, (uint16_t)i, &info))
            continue;
        k++;
        if (!info.fallback || sr_pipe_job_counters_get(p, (uint16_t)i, &c))
            continue;
        if (r->len + 128 > SR_CTL_REPLY_MAX) { /* the rest would not fit the reply */
            put(r, " more=%u", st.n_jobs - listed);
            return;
        }
        put(r, "%s%u:%" PRIu32 ":%u:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64,
            listed++ ? "," : "", i, info.held, info.prio, c.fb_rounds, c.preempted, c.first_wait,
            c.first_wait_others);
    }
}

/* job add SPEC: the spec of --job (job_spec.h), token=env: refused. The
 * job's memory is allocated here, between two bursts of packets; every
 * array is calloc'ed, so its pages are mapped (and zeroed by the kernel)
 * only when first touched, and the cost does not grow with the store. */
static void cmd_job_add(reply *r, sr_pipe *p, const char *spec)
{
    char why[SW_JOB_SPEC_WHY_MAX];
    sr_pipe_job_params jp;
    sr_pipe_job_info info;
    uint16_t id;
    int rc;

    if (sw_job_spec_parse(spec, NULL, &id, &jp, why, sizeof why)) {
        put(r, "error %s", why);
        return;
    }
    rc = sr_pipe_job_add(p, id, &jp);
    if (rc == -EEXIST) {
        put(r, "error job %u exists already (job remove %u first)", id, id);
        return;
    }
    if (rc || sr_pipe_job_info_get(p, id, &info)) {
        put(r, "error job %u not added: %s", id, strerror(rc ? -rc : ENOENT));
        return;
    }
    put(r, "ok job=%u added workers=%" PRIu32 " elems=%" PRIu32 " slots=%" PRIu32
           " store=%" PRIu32 " ring=%" PRIu32 " mode=%s s=%" PRIu32 " token=%s bytes=%" PRIu64,
        id, info.n_workers, info.elems_per_pkt, info.pool_slots, info.store_words, info.ring,
        mode_lc(info.mode), info.s, jp.token ? "set" : "none", info.bytes);
}

/* job remove JOB [force]: refused while a worker is live (bound, not
 * left, lease not lapsed) unless forced; a dead run's lapsed bindings do
 * not hold the job. Frees all of the job's memory. */
static void cmd_job_remove(reply *r, sr_pipe *p, char **w, unsigned n)
{
    sr_pipe_job_info info;
    uint16_t job;
    int force = n == 4 && !strcasecmp(w[3], "force");

    if (n < 3 || n > 4 || (n == 4 && !force)) {
        put(r, "error usage: job remove JOB [force]");
        return;
    }
    if (parse_job(r, p, w[2], &job))
        return;
    sr_pipe_job_info_get(p, job, &info);
    if (info.n_live && !force) {
        put(r, "error job %u has %" PRIu32 " live worker%s (bound, not left, lease not lapsed): "
               "wait for its run to end or its lease to lapse, or 'job remove %u force'",
            job, info.n_live, info.n_live == 1 ? "" : "s", job);
        return;
    }
    sr_pipe_job_remove(p, job);
    put(r, "ok job=%u removed freed=%" PRIu64 " live=%" PRIu32, job, info.bytes, info.n_live);
}

static void cmd_job(reply *r, sr_pipe *p, char **w, unsigned n)
{
    if (n == 3 && !strcasecmp(w[1], "add"))
        cmd_job_add(r, p, w[2]);
    else if (n >= 2 && !strcasecmp(w[1], "remove"))
        cmd_job_remove(r, p, w, n);
    else
        put(r, "error usage: job add ID:N[:ELEMS[:SLOTS]][,OPTION=VALUE...] | job remove JOB "
               "[force]");
}

/* |a - b| in serial-number arithmetic: 0..2^31. */
static int64_t serial_dist(uint32_t a, uint32_t b)
{
    int64_t d = (int32_t)(a - b);

    return d < 0 ? -d : d;
}

_Static_assert(SR_BARRIER_MAX_AHEAD == 1u << 30, "the policy messages spell out the bound");

/* policy JOB MODE [S] [from CLOCK] */
static void cmd_policy(reply *r, sr_pipe *p, char **w, unsigned n)
{
    enum sr_sync_mode mode;
    uint32_t s = 0, from = 0, e = 0;
    int have_s = 0, have_from = 0, rc;
    unsigned i = 3;
    uint16_t job;
    sr_pipe_sync_state st;

    if (n < 3) {
        put(r, "error usage: policy JOB bsp|asp|ssp [S] [from CLOCK]");
        return;
    }
    if (parse_job(r, p, w[1], &job))
        return;
    if (!strcasecmp(w[2], "bsp"))
        mode = SR_SYNC_BSP;
    else if (!strcasecmp(w[2], "ssp"))
        mode = SR_SYNC_SSP;
    else if (!strcasecmp(w[2], "asp"))
        mode = SR_SYNC_ASP;
    else {
        put(r, "error bad mode '%s' (bsp, asp or ssp)", w[2]);
        return;
    }
    if (i < n && strcasecmp(w[i], "from")) {
        if (parse_u32(w[i], UINT32_MAX, &s)) {
            put(r, "error bad s '%s' (a number in 0..4294967295)", w[i]);
            return;
        }
        have_s = 1;
        i++;
    }
    if (i < n && !strcasecmp(w[i], "from")) {
        if (i + 1 >= n || parse_u32(w[i + 1], UINT32_MAX, &from)) {
            put(r, "error 'from' needs a clock (0..4294967295)");
            return;
        }
        have_from = 1;
        i += 2;
    }
    if (i < n) {
        put(r, "error unexpected '%s' (usage: policy JOB bsp|asp|ssp [S] [from CLOCK])", w[i]);
        return;
    }
    if (mode == SR_SYNC_SSP && !have_s) {
        put(r, "error ssp needs S (policy JOB ssp S [from CLOCK])");
        return;
    }
    if (mode != SR_SYNC_SSP)
        s = 0;
    sr_pipe_sync_get(p, job, &st);
    if (!have_from)
        from = st.low; /* at or before high + 1: as soon as possible */
    /* The one rule for from (control.h): within SR_BARRIER_MAX_AHEAD of low
     * either way, in serial arithmetic. Behind low it means "as soon as
     * possible"; further away it is refused, whichever way it lies. */
    if (serial_dist(from, st.low) > (int64_t)SR_BARRIER_MAX_AHEAD) {
        put(r, "error from %" PRIu32 " is more than 2^30 clocks %s low %" PRIu32, from, (int32_t)(from - st.low) > 0 ? "past" : "before", st.low);
        return;
    }
    rc = sr_pipe_set_policy(p, job, mode, s, from, &e);
    if (rc == 0)
        put(r, "ok job=%u effective=%" PRIu32, job, e);
    else if (rc == -ERANGE && mode == SR_SYNC_SSP && s > st.ring - 2)
        put(r, "error s %" PRIu32 " is above %" PRIu32 ", the most job %u's ring of %" PRIu32
               " allows",
            s, st.ring - 2, job, st.ring);
    else if (rc == -ENOSPC)
        put(r, "error job %u has %u policy rules pending already; retry after low advances",
            job, (unsigned)SR_BARRIER_MAX_RULES);
    else
        put(r, "error policy change refused: %s", strerror(-rc));
}

size_t sr_ctl_exec(sr_pipe *p, const char *line, char *out, size_t cap)
{
    char buf[SR_CTL_LINE_MAX + 1];
    char *w[MAX_WORDS + 1];
    unsigned n = 0;
    size_t len = strlen(line);
    reply r = {out, cap, 0};
    uint16_t job;

    if (cap)
        out[0] = '\0';
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    if (len > SR_CTL_LINE_MAX - 1) {
        put(&r, "error command longer than %u bytes", SR_CTL_LINE_MAX - 1);
        goto done;
    }
    memcpy(buf, line, len);
    buf[len] = '\0';
    for (char *s = buf; *s;) {
        while (*s == ' ' || *s == '\t')
            *s++ = '\0';
        if (!*s)
            break;
        if (n == MAX_WORDS) {
            put(&r, "error too many words");
            goto done;
        }
        w[n++] = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
    }
    for (unsigned i = 0; i < n; i++)
        for (const char *s = w[i]; *s; s++)
            if (!isprint((unsigned char)*s)) {
                put(&r, "error control characters in the command");
                goto done;
            }
    if (n == 0)
        put(&r, "error empty command (try 'help')");
    else if (!strcasecmp(w[0], "jobs")) {
        if (n != 1)
            put(&r, "error usage: jobs");
        else
            cmd_jobs(&r, p);
    } else if (!strcasecmp(w[0], "status")) {
        if (n != 2)
            put(&r, "error usage: status JOB");
        else if (!parse_job(&r, p, w[1], &job))
            cmd_status(&r, p, job);
    } else if (!strcasecmp(w[0], "reset")) {
        if (n != 2)
            put(&r, "error usage: reset JOB");
        else if (!parse_job(&r, p, w[1], &job)) {
            int rc = sr_pipe_job_reset(p, job);
            if (rc)
                put(&r, "error reset of job %u failed: %s", (unsigned)job, strerror(-rc));
            else
                put(&r, "ok job=%u reset", (unsigned)job);
        }
    } else if (!strcasecmp(w[0], "policy"))
        cmd_policy(&r, p, w, n);
    else if (!strcasecmp(w[0], "job"))
        cmd_job(&r, p, w, n);
    else if (!strcasecmp(w[0], "pool"))
        cmd_pool(&r, p, w, n);
    else if (!strcasecmp(w[0], "help"))
        put(&r, "ok commands: jobs | status JOB | reset JOB | policy JOB bsp|asp|ssp [S] "
                "[from CLOCK] | job add SPEC | job remove JOB [force] | pool [policy NAME | take JOB SLOT] | "
                "help");
    else
        put(&r, "error unknown command '%.32s' (try 'help')", w[0]);
done:
    return r.len < cap ? r.len : (cap ? cap - 1 : 0);
}
