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
 *       Sends one command line to serene-switch's control socket, prints
 *       the answer; exit 0 iff it starts with "ok".
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
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 64
#define MAX_SEQ 16
#define MAX_ERRORS 10
#define CTL_TIMEOUT_MS 2000
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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

static int cmd_clocks(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const char *dir = argv[2];
    const int n = atoi(argv[3]), clocks = atoi(argv[4]);
    policy expect = {UNKNOWN_MODE, 0}, seq[MAX_SEQ];
    uint32_t changes[MAX_SEQ];
    int nseq = 0, nchanges = -1, no_holds = 0, fast[MAX_RANKS], nfast = 0;
    if (n < 1 || n > MAX_RANKS || clocks < 1)
        return 2;
    for (int i = 5; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *items[MAX_SEQ + 1];
        if (!strcmp(argv[i], "--expect") && v) {
            if (parse_policy(v, &expect))
                return 2;
            i++;
        } else if (!strcmp(argv[i], "--seq") && v) {
            nseq = split_list(v, items, MAX_SEQ);
            for (int k = 0; k < nseq; k++)
                if (parse_policy(items[k], &seq[k]))
                    return 2;
            i++;
        } else if (!strcmp(argv[i], "--changes") && v) {
            nchanges = split_list(v, items, MAX_SEQ);
            for (int k = 0; k < nchanges; k++)
                changes[k] = (uint32_t)strtoul(items[k], NULL, 10);
            i++;
        } else if (!strcmp(argv[i], "--fast") && v) {
            nfast = split_list(v, items, MAX_SEQ);
            for (int k = 0; k < nfast; k++)
                fast[k] = atoi(items[k]);
            i++;
        } else if (!strcmp(argv[i], "--no-holds")) {
            no_holds = 1;
        } else {
            return 2;
        }
    }

    rank_log lg[MAX_RANKS];
    memset(lg, 0, sizeof lg);
    for (int r = 0; r < n; r++)
        if (load(dir, r, clocks, &lg[r]))
            goto out;

    /* One policy per clock, the same at every rank. */
    for (int c = 0; c < clocks; c++) {
        const row *a = &lg[0].rows[c];
        for (int r = 1; r < n; r++) {
            const row *b = &lg[r].rows[c];
            if (a->mode != b->mode || a->s != b->s)
                fail("clock %d: rank 0 saw %s s=%u but rank %d saw %s s=%u", c,
                     mode_names[a->mode], a->s, r, mode_names[b->mode], b->s);
        }
        if (expect.mode != UNKNOWN_MODE && !same_policy(a, &expect))
            fail("clock %d ran under %s s=%u, want %s s=%u", c, mode_names[a->mode], a->s,
                 mode_names[expect.mode], expect.s);
    }

    /* The barrier, from the timestamps of every rank. */
    long checked = 0;
    for (int w = 0; w < n; w++) {
        for (int c = 0; c < clocks; c++) {
            const row *x = &lg[w].rows[c];
            if (x->mode == ASP || x->mode == UNKNOWN_MODE || (long)c - (long)x->s < 0)
                continue;
            int d = c - (int)x->s;
            if ((int32_t)(x->low - (uint32_t)d) < 0)
                fail("rank %d: clock %d (%s s=%u) returned with low %u < %d", w, c,
                     mode_names[x->mode], x->s, x->low, d);
            for (int v = 0; v < n; v++) {
                checked++;
                if (v != w && lg[v].rows[d].t_call > x->t_ret)
                    fail("rank %d: clock %d (%s s=%u) returned at %" PRIu64
                         " ns, but rank %d called clock() for clock %d only %.1f us later",
                         w, c, mode_names[x->mode], x->s, x->t_ret, v, d,
                         (double)(lg[v].rows[d].t_call - x->t_ret) / 1e3);
            }
        }
    }

    /* The sequence of policies and where it changed. */
    if (nseq > 0) {
        policy got[MAX_SEQ];
        uint32_t at[MAX_SEQ];
        int ngot = 0;
        for (int c = 0; c < clocks; c++) {
            const row *a = &lg[0].rows[c];
            if (ngot > 0 && same_policy(a, &got[ngot - 1]))
                continue;
            if (ngot == MAX_SEQ) {
                fail("more than %d policy changes", MAX_SEQ);
                break;
            }
            got[ngot].mode = a->mode;
            got[ngot].s = a->s;
            at[ngot++] = (uint32_t)c;
        }
        printf("policy sequence:");
        for (int k = 0; k < ngot; k++)
            printf(" %s(s=%u)@%u", mode_names[got[k].mode], got[k].s, at[k]);
        printf("\n");
        int ok = ngot == nseq;
        for (int k = 0; ok && k < nseq; k++)
            ok = same_policy(&(row){.mode = got[k].mode, .s = got[k].s}, &seq[k]);
        if (!ok)
            fail("the policy did not go through the %d steps asked for, in order", nseq);
        if (ok && nchanges >= 0) {
            if (nchanges != nseq - 1)
                fail("%d change clocks given for %d steps", nchanges, nseq);
            for (int k = 0; k < nchanges && k + 1 < ngot; k++)
                if (at[k + 1] != changes[k])
                    fail("change %d took effect at clock %u, the switch said %u", k + 1,
                         at[k + 1], changes[k]);
        }
    }

    uint64_t fast_wait = 0;
    for (int r = 0; r < n; r++) {
        uint64_t wait = 0, worst = 0;
        for (int c = 0; c < clocks; c++) {
            uint64_t d = lg[r].rows[c].t_ret - lg[r].rows[c].t_call;
            wait += d;
            worst = d > worst ? d : worst;
        }
        for (int k = 0; k < nfast; k++)
            fast_wait += fast[k] == r ? wait : 0;
        printf("rank %d: waited %.1f ms in clock() (worst %.2f ms), holds %" PRIu64
               " releases %" PRIu64 "\n",
               r, (double)wait / 1e6, (double)worst / 1e6, lg[r].holds, lg[r].releases);
        if (no_holds && lg[r].holds)
            fail("rank %d was held %" PRIu64 " times under a policy that never holds", r,
                 lg[r].holds);
    }
    printf("checked %ld (rank, clock, peer) barrier conditions\n", checked);
    if (nfast)
        printf("fast_wait_ns=%" PRIu64 "\n", fast_wait);
out:
    for (int r = 0; r < n; r++)
        free(lg[r].rows);
    if (failures > MAX_ERRORS)
        printf("FAIL: ... %d failures in all\n", failures);
    return failures ? 1 : 0;
}

/* ---- control socket ----------------------------------------------------- */

/* Send one command line, read the one-line answer into ans. 0 or -1. */
static int control(const char *sock, const char *cmd, char *ans, size_t cap)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) >= sizeof sa.sun_path) {
        snprintf(ans, cap, "socket path too long");
        return -1;
    }
    strcpy(sa.sun_path, sock);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        snprintf(ans, cap, "connect %s: %s", sock, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char line[256];
    int len = snprintf(line, sizeof line, "%s\n", cmd);
    if (write(fd, line, (size_t)len) != len) {
        snprintf(ans, cap, "write: %s", strerror(errno));
        close(fd);
        return -1;
    }
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    uint64_t deadline = now_ns() + CTL_TIMEOUT_MS * 1000000ull;
    while (got + 1 < cap && !memchr(ans, '\n', got)) {
        uint64_t now = now_ns();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) <= 0) {
            snprintf(ans, cap, "no answer within %d ms", CTL_TIMEOUT_MS);
            close(fd);
            return -1;
        }
        ssize_t k = read(fd, ans + got, cap - 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    ans[got] = 0;
    ans[strcspn(ans, "\n")] = 0;
    return got ? 0 : (snprintf(ans, cap, "empty answer"), -1);
}

static int cmd_ctl(int argc, char **argv)
{
    char cmd[256] = "", ans[1024];
    if (argc < 4)
        return 2;
    for (int i = 3; i < argc; i++) {
        size_t len = strlen(cmd);
        snprintf(cmd + len, sizeof cmd - len, "%s%s", i > 3 ? " " : "", argv[i]);
    }
    int rc = control(argv[2], cmd, ans, sizeof ans);
    printf("%s -> %s\n", cmd, ans);
    return rc || strncmp(ans, "ok", 2) ? 1 : 0;
}

/* The value of " key=" in an answer line; -1 when absent. */
static int field(const char *ans, const char *key, uint32_t *out)
{
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(ans, pat);
    if (!p)
        return -1;
    char *end;
    unsigned long long v = strtoull(p + strlen(pat), &end, 10);
    if (end == p + strlen(pat))
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
        uint64_t deadline = now_ns() + SWAP_DEADLINE_MS * 1000000ull;
        uint32_t high = 0;
        for (;;) {
            if (control(sock, status_cmd, ans, sizeof ans) || strncmp(ans, "ok", 2) ||
                field(ans, "high", &high)) {
                fail("swap: '%s' -> '%s'", status_cmd, ans);
                return 1;
            }
            if ((int32_t)high >= target)
                break;
            if (now_ns() > deadline) {
                fail("swap: the job's high clock stayed at %d, below %d, for %d ms",
                     (int32_t)high, target, SWAP_DEADLINE_MS);
                return 1;
            }
            usleep(SWAP_POLL_US);
        }
        char cmd[128];
        uint32_t from = high + 4 + (uint32_t)((seed >> 40) % 8);
        if (k == 2)
            snprintf(cmd, sizeof cmd, "policy %d %s from %" PRIu32, job, steps[k], from);
        else
            snprintf(cmd, sizeof cmd, "policy %d %s", job, steps[k]);
        if (control(sock, cmd, ans, sizeof ans) || strncmp(ans, "ok", 2) ||
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
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
    uint64_t t = now_ns();
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
