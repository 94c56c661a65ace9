/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssp_check.c - the checker and helpers of tests/integ/test_ssp.sh.
 *
 *   ssp_check clocks DIR N CLOCKS [--expect MODE[:S]] [--seq P,P,...]
 *                    [--changes E,E,...] [--no-holds] [--fast R,R,...]
 *       Reads DIR/rank0.csv .. rank<N-1>.csv written by `ssp_worker clocks`
 *       and checks, across ranks:
 *       - every rank logged clocks 0..CLOCKS-1, t_call <= t_return;
 *       - at every clock every rank saw the same (mode, s);
 *       - the barrier: when rank w's clock() for clock c returned under
 *         SSP(s) or BSP (s = 0) with c - s >= 0, every rank v had already
 *         called clock() for clock c - s: t_call[v][c - s] <= t_return[w][c]
 *         (CLOCK_MONOTONIC is one clock for every process of the host);
 *         and the low clock w was told is >= c - s;
 *       - --expect: every clock ran under this policy (bsp, asp, ssp:S);
 *       - --seq: the policy changed exactly along this sequence, and
 *         --changes: at exactly these clocks;
 *       - --no-holds: every rank's stats show 0 holds.
 *       Prints "fast_wait_ns=W": the total time the --fast ranks spent in
 *       clock() (t_return - t_call summed), for the script to compare runs.
 *
 *   ssp_check ctl SOCKET COMMAND...
 *       Sends one command line to serene-switch's control socket (through
 *       libserene-ctl's client), prints the answer; exit 0 iff it starts
 *       with "ok".
 *
 *   ssp_check swap SOCKET JOB SEED
 *       The hot-swap controller: watches the job's high clock (status) and,
 *       at seeded random clocks, asks for SSP(3), then ASP, then BSP (the
 *       last with "from", a few clocks ahead). Prints
 *       "changes=E1,E2,E3" (the effective clocks) on success.
 *
 *   ssp_check kill PID DELAY_MS
 *       Sleeps, sends SIGKILL to PID, prints "killed PID at T ns"
 *       (CLOCK_MONOTONIC, as ssp_worker prints its error times).
 *
 * Every wait is bounded. Exit status: 0 ok; 1 a check failed; 2 bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <unistd.h>

#include "switch_proc.h"
#include "timing.h"

#define MAX_RANKS 64
#define MAX_SEQ 16
#define MAX_ERRORS 10
/* The hot-swap controller gives up when the job does not reach its next
 * change point in this long: the workers are stuck or gone. */
#define SWAP_DEADLINE_MS 30000
#define SWAP_POLL_US 2000

enum { BSP, SSP, ASP, UNKNOWN_MODE };
static const char *const mode_names[] = {"BSP", "SSP", "ASP", "?"};

typedef struct row {
    uint64_t t_call, t_ret;
    int mode;
    uint32_t s, low, high;
} row;

typedef struct policy {
    int mode;
    uint32_t s;
} policy;

static int failures;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    if (failures++ >= MAX_ERRORS)
        return;
    va_list ap;
    fputs("FAIL: ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
}

static int parse_mode(const char *s, int *mode)
{
    for (int m = BSP; m <= ASP; m++) {
        if (!strcasecmp(s, mode_names[m])) {
            *mode = m;
            return 0;
        }
    }
    *mode = UNKNOWN_MODE;
    return -1;
}

/* "bsp", "asp", "ssp:S" */
static int parse_policy(const char *s, policy *p)
{
    char name[8];
    size_t len = strcspn(s, ":");
    if (len >= sizeof name)
        return -1;
    memcpy(name, s, len);
    name[len] = 0;
    if (parse_mode(name, &p->mode))
        return -1;
    p->s = 0;
    if (p->mode == SSP) {
        char *end;
        if (s[len] != ':')
            return -1;
        p->s = (uint32_t)strtoul(s + len + 1, &end, 10);
        return *end ? -1 : 0;
    }
    return s[len] ? -1 : 0;
}

static int same_policy(const row *r, const policy *p)
{
    return r->mode == p->mode && (p->mode == ASP || r->s == p->s);
}

/* ---- clocks ------------------------------------------------------------- */

typedef struct rank_log {
    row *rows;
    uint64_t holds, releases, wait_ns;
    int have_stats;
} rank_log;

static int load(const char *dir, int r, int clocks, rank_log *lg)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/rank%d.csv", dir, r);
    FILE *f = fopen(path, "r");
    if (!f) {
        fail("rank %d: cannot read %s: %s", r, path, strerror(errno));
        return -1;
    }
    lg->rows = calloc((size_t)clocks, sizeof *lg->rows);
    int n = 0, lineno = 0;
    while (lg->rows && fgets(line, sizeof line, f)) {
        lineno++;
        if (lineno == 1)
            continue; /* header */
        unsigned long long holds, rel, wait, retr;
        if (sscanf(line, "#stats holds=%llu releases=%llu clock_wait_ns=%llu retrans=%llu",
                   &holds, &rel, &wait, &retr) == 4) {
            lg->holds = holds;
            lg->releases = rel;
            lg->wait_ns = wait;
            lg->have_stats = 1;
            continue;
        }
        int c;
        unsigned long long tc, tr;
        char mode[8];
        unsigned s, low, high;
        if (sscanf(line, "%d,%llu,%llu,%7[A-Z?],%u,%u,%u", &c, &tc, &tr, mode, &s, &low,
                   &high) != 7) {
            fail("%s:%d: malformed line: %s", path, lineno, line);
            break;
        }
        if (c != n || n >= clocks) {
            fail("%s:%d: clock %d where clock %d was due (of %d)", path, lineno, c, n, clocks);
            break;
        }
        row *w = &lg->rows[n++];
        w->t_call = tc;
        w->t_ret = tr;
        parse_mode(mode, &w->mode);
        w->s = s;
        w->low = low;
        w->high = high;
        if (tr < tc)
            fail("rank %d clock %d: returned before it was called", r, c);
    }
    fclose(f);
    if (!lg->rows)
        return -1;
    if (n != clocks) {
        fail("rank %d: logged %d clocks, want %d (did it fail or stop early?)", r, n, clocks);
        return -1;
    }
    if (!lg->have_stats) {
        fail("rank %d: no #stats line in %s", r, path);
        return -1;
    }
    return 0;
}

static int split_list(const char *s, char **out, int cap)
{
    static char buf[1024];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < cap;
         t = strtok_r(NULL, ",", &save))
        out[n++] = t;
    return n;
}

/* What `ssp_check clocks` was asked to check. */
typedef struct clocks_args {
    const char *dir;
    int n, clocks;
    policy expect, seq[MAX_SEQ];
    uint32_t changes[MAX_SEQ];
    int nseq, nchanges, no_holds, fast[MAX_RANKS], nfast;
} clocks_args;

/* argv: clocks DIR N CLOCKS [options]. 0, or 2 on bad usage. */
static int parse_clocks_args(int argc, char **argv, clocks_args *a)
{
    if (argc < 5)
        return 2;
    memset(a, 0, sizeof *a);
    a->dir = argv[2];
    a->n = atoi(argv[3]);
    a->clocks = atoi(argv[4]);
    a->expect.mode = UNKNOWN_MODE;
    a->nchanges = -1;
    if (a->n < 1 || a->n > MAX_RANKS || a->clocks < 1)
        return 2;
    for (int i = 5; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *items[MAX_SEQ + 1];
        if (!strcmp(argv[i], "--expect") && v) {
            if (parse_policy(v, &a->expect))
                return 2;
            i++;
        } else if (!strcmp(argv[i], "--seq") && v) {
            a->nseq = split_list(v, items, MAX_SEQ);
            for (int k = 0; k < a->nseq; k++)
                if (parse_policy(items[k], &a->seq[k]))
                    return 2;
            i++;
        } else if (!strcmp(argv[i], "--changes") && v) {
            a->nchanges = split_list(v, items, MAX_SEQ);
            for (int k = 0; k < a->nchanges; k++)
                a->changes[k] = (uint32_t)strtoul(items[k], NULL, 10);
            i++;
        } else if (!strcmp(argv[i], "--fast") && v) {
            a->nfast = split_list(v, items, MAX_SEQ);
            for (int k = 0; k < a->nfast; k++)
                a->fast[k] = atoi(items[k]);
            i++;
        } else if (!strcmp(argv[i], "--no-holds")) {
            a->no_holds = 1;
        } else {
            return 2;
        }
    }
    return 0;
}

/* One policy per clock, the same at every rank (and the expected one). */
static void check_same_policy(const clocks_args *a, const rank_log *lg)
{
    for (int c = 0; c < a->clocks; c++) {
        const row *x = &lg[0].rows[c];
        for (int r = 1; r < a->n; r++) {
            const row *y = &lg[r].rows[c];
            if (x->mode != y->mode || x->s != y->s)
                fail("clock %d: rank 0 saw %s s=%u but rank %d saw %s s=%u", c,
                     mode_names[x->mode], x->s, r, mode_names[y->mode], y->s);
        }
        if (a->expect.mode != UNKNOWN_MODE && !same_policy(x, &a->expect))
            fail("clock %d ran under %s s=%u, want %s s=%u", c, mode_names[x->mode], x->s,
                 mode_names[a->expect.mode], a->expect.s);
    }
}

/* The barrier, from the timestamps of every rank. Returns the number of
 * (rank, clock, peer) conditions checked. */
static long check_barrier(const clocks_args *a, const rank_log *lg)
{
    long checked = 0;
    for (int w = 0; w < a->n; w++) {
        for (int c = 0; c < a->clocks; c++) {
            const row *x = &lg[w].rows[c];
            if (x->mode == ASP || x->mode == UNKNOWN_MODE || (long)c - (long)x->s < 0)
                continue;
            int d = c - (int)x->s;
            if ((int32_t)(x->low - (uint32_t)d) < 0)
                fail("rank %d: clock %d (%s s=%u) returned with low %u < %d", w, c,
                     mode_names[x->mode], x->s, x->low, d);
            for (int v = 0; v < a->n; v++) {
                checked++;
                if (v != w && lg[v].rows[d].t_call > x->t_ret)
                    fail("rank %d: clock %d (%s s=%u) returned at %" PRIu64
                         " ns, but rank %d called clock() for clock %d only %.1f us later",
                         w, c, mode_names[x->mode], x->s, x->t_ret, v, d,
                         (double)(lg[v].rows[d].t_call - x->t_ret) / 1e3);
            }
        }
    }
    return checked;
}

/* The sequence of policies rank 0 saw and where it changed, against --seq
 * and --changes. */
static void check_sequence(const clocks_args *a, const rank_log *lg)
{
    policy got[MAX_SEQ];
    uint32_t at[MAX_SEQ];
    int ngot = 0;
    for (int c = 0; c < a->clocks; c++) {
        const row *x = &lg[0].rows[c];
        if (ngot > 0 && same_policy(x, &got[ngot - 1]))
            continue;
        if (ngot == MAX_SEQ) {
            fail("more than %d policy changes", MAX_SEQ);
            break;
        }
        got[ngot].mode = x->mode;
        got[ngot].s = x->s;
        at[ngot++] = (uint32_t)c;
    }
    printf("policy sequence:");
    for (int k = 0; k < ngot; k++)
        printf(" %s(s=%u)@%u", mode_names[got[k].mode], got[k].s, at[k]);
    printf("\n");
    int ok = ngot == a->nseq;
    for (int k = 0; ok && k < a->nseq; k++)
        ok = same_policy(&(row){.mode = got[k].mode, .s = got[k].s}, &a->seq[k]);
    if (!ok)
        fail("the policy did not go through the %d steps asked for, in order", a->nseq);
    if (ok && a->nchanges >= 0) {
        if (a->nchanges != a->nseq - 1)
            fail("%d change clocks given for %d steps", a->nchanges, a->nseq);
        for (int k = 0; k < a->nchanges && k + 1 < ngot; k++)
            if (at[k + 1] != a->changes[k])
                fail("change %d took effect at clock %u, the switch said %u", k + 1, at[k + 1],
                     a->changes[k]);
    }
}

/* Each rank's time in clock(); returns the --fast ranks' total. */
static uint64_t report_waits(const clocks_args *a, const rank_log *lg)
{
    uint64_t fast_wait = 0;
    for (int r = 0; r < a->n; r++) {
        uint64_t wait = 0, worst = 0;
        for (int c = 0; c < a->clocks; c++) {
            uint64_t d = lg[r].rows[c].t_ret - lg[r].rows[c].t_call;
            wait += d;
            worst = d > worst ? d : worst;
        }
        for (int k = 0; k < a->nfast; k++)
            fast_wait += a->fast[k] == r ? wait : 0;
        printf("rank %d: waited %.1f ms in clock() (worst %.2f ms), holds %" PRIu64
               " releases %" PRIu64 "\n",
               r, (double)wait / 1e6, (double)worst / 1e6, lg[r].holds, lg[r].releases);
        if (a->no_holds && lg[r].holds)
            fail("rank %d was held %" PRIu64 " times under a policy that never holds", r,
                 lg[r].holds);
    }
    return fast_wait;
}

static int cmd_clocks(int argc, char **argv)
{
    clocks_args a;
    int rc = parse_clocks_args(argc, argv, &a);
    if (rc)
        return rc;

    rank_log lg[MAX_RANKS];
    memset(lg, 0, sizeof lg);
    for (int r = 0; r < a.n; r++)
        if (load(a.dir, r, a.clocks, &lg[r]))
            goto out;
    check_same_policy(&a, lg);
    long checked = check_barrier(&a, lg);
    if (a.nseq > 0)
        check_sequence(&a, lg);
    uint64_t fast_wait = report_waits(&a, lg);
    printf("checked %ld (rank, clock, peer) barrier conditions\n", checked);
    if (a.nfast)
        printf("fast_wait_ns=%" PRIu64 "\n", fast_wait);
out:
    for (int r = 0; r < a.n; r++)
        free(lg[r].rows);
    if (failures > MAX_ERRORS)
        printf("FAIL: ... %d failures in all\n", failures);
    return failures ? 1 : 0;
}

/* ---- control socket ----------------------------------------------------- */

static int cmd_ctl(int argc, char **argv)
{
    char cmd[256] = "", ans[1024];
    if (argc < 4)
        return 2;
    for (int i = 3; i < argc; i++) {
        size_t len = strlen(cmd);
        snprintf(cmd + len, sizeof cmd - len, "%s%s", i > 3 ? " " : "", argv[i]);
    }
    int rc = sw_command(argv[2], cmd, ans, sizeof ans);
    printf("%s -> %s\n", cmd, ans);
    return rc ? 1 : 0;
}

/* The value of " key=" in an answer line; -1 when absent. */
static int field(const char *ans, const char *key, uint32_t *out)
{
    uint64_t v;

    if (sw_field(ans, key, &v))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int cmd_swap(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    const char *sock = argv[2];
    const int job = atoi(argv[3]);
    uint64_t seed = strtoull(argv[4], NULL, 0) * 2654435761u + 12345u;
    const char *steps[] = {"ssp 3", "asp", "bsp"};
    uint32_t eff[3];
    /* Before any clock the job's high is first_clock - 1 = -1 (serial). */
    int32_t target = -1;
    char status_cmd[64], ans[1024];
    snprintf(status_cmd, sizeof status_cmd, "status %d", job);
    for (int k = 0; k < 3; k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        target += 10 + (int32_t)((seed >> 33) % 25);
        uint64_t deadline = tc_now_ns() + SWAP_DEADLINE_MS * 1000000ull;
        uint32_t high = 0;
        for (;;) {
            if (sw_command(sock, status_cmd, ans, sizeof ans) ||
                field(ans, "high", &high)) {
                fail("swap: '%s' -> '%s'", status_cmd, ans);
                return 1;
            }
            if ((int32_t)high >= target)
                break;
            if (tc_now_ns() > deadline) {
                fail("swap: the job's high clock stayed at %d, below %d, for %d ms",
                     (int32_t)high, target, SWAP_DEADLINE_MS);
                return 1;
            }
            tc_sleep_us(SWAP_POLL_US);
        }
        char cmd[128];
        uint32_t from = high + 4 + (uint32_t)((seed >> 40) % 8);
        if (k == 2)
            snprintf(cmd, sizeof cmd, "policy %d %s from %" PRIu32, job, steps[k], from);
        else
            snprintf(cmd, sizeof cmd, "policy %d %s", job, steps[k]);
        if (sw_command(sock, cmd, ans, sizeof ans) ||
            field(ans, "effective", &eff[k])) {
            fail("swap: '%s' -> '%s'", cmd, ans);
            return 1;
        }
        printf("swap: at high=%" PRIu32 ": %s -> %s\n", high, cmd, ans);
        if ((int32_t)(eff[k] - high) <= 0)
            fail("swap: change effective at %" PRIu32 ", not after high %" PRIu32, eff[k], high);
        if (k == 2 && (int32_t)(eff[k] - from) < 0)
            fail("swap: asked for clock %" PRIu32 ", got %" PRIu32, from, eff[k]);
        target = (int32_t)eff[k];
    }
    fflush(stdout);
    printf("changes=%" PRIu32 ",%" PRIu32 ",%" PRIu32 "\n", eff[0], eff[1], eff[2]);
    return failures ? 1 : 0;
}

/* ---- kill --------------------------------------------------------------- */

static int cmd_kill(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    pid_t pid = (pid_t)atol(argv[2]);
    long ms = atol(argv[3]);
    if (pid <= 1 || ms < 0)
        return 2;
    tc_sleep_ms(ms);
    uint64_t t = tc_now_ns();
    if (kill(pid, SIGKILL)) {
        printf("FAIL: kill %ld: %s\n", (long)pid, strerror(errno));
        return 1;
    }
    printf("killed %ld at %" PRIu64 " ns\n", (long)pid, t);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
    if (argc >= 2 && !strcmp(argv[1], "clocks"))
        rc = cmd_clocks(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "ctl"))
        rc = cmd_ctl(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "swap"))
        rc = cmd_swap(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "kill"))
        rc = cmd_kill(argc, argv);
    if (rc == 2)
        fprintf(stderr,
                "usage: ssp_check clocks DIR N CLOCKS [--expect P] [--seq P,..] "
                "[--changes E,..] [--no-holds] [--fast R,..]\n"
                "       ssp_check ctl SOCKET COMMAND...\n"
                "       ssp_check swap SOCKET JOB SEED\n"
                "       ssp_check kill PID DELAY_MS\n");
    return rc;
}
