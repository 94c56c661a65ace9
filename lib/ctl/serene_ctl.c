/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene_ctl.c - serene-ctl, the control-plane CLI over libserene-ctl:
 *
 *   serene-ctl compile --target sw|bmv2|tofino --job-file JOB.conf POLICY
 *   serene-ctl check [--ring R] POLICY
 *   serene-ctl status --control PATH --job J [--json]
 *   serene-ctl job add --control PATH SPEC
 *   serene-ctl job remove --control PATH --job J [--force]
 *   serene-ctl run --control PATH --job J POLICY [--interval MS]
 *                  [--duration S] [--log FILE] [--metrics FILE]
 *
 * POLICY is a file ('-': standard input). Output goes to stdout; messages
 * to stderr start with "serene-ctl: ". Exit status: 0 ok; 1 a runtime
 * failure (the switch unreachable or refusing a change); 2 bad usage or bad
 * input (a policy or job file error, an unknown target, job or worker).
 * run is a bounded loop: it ends at --duration (default 60 s), or when the
 * job passes the policy's stop clock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serene/ctl.h"

#define PROG "serene-ctl"
#define FILE_MAX (1u << 20)
#define CMD_TIMEOUT_MS 2000
#define MAX_DECISIONS 80

__attribute__((format(printf, 1, 2))) static void msg(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, PROG ": ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: " PROG " compile --target sw|bmv2|tofino --job-file JOB.conf POLICY\n"
            "       " PROG " tree [--target sw|bmv2] --job-file JOB.conf [POLICY]\n"
            "       " PROG " counters --target tofino --job-file JOB.conf\n"
            "       " PROG " reset --target tofino --job-file JOB.conf\n"
            "       " PROG " check [--ring R] POLICY\n"
            "       " PROG " status --control PATH --job J [--json]\n"
            "       " PROG " job add --control PATH ID:N[:ELEMS[:SLOTS]][,OPTION=VALUE...]\n"
            "       " PROG " job remove --control PATH --job J [--force]\n"
            "       " PROG " run --control PATH --job J POLICY [--interval MS] [--duration S]\n"
            "                  [--log FILE] [--metrics FILE]\n"
            "       " PROG " pool --control PATH [--policy static|first|fair|priority] [--raw]\n"
            "       " PROG " pool --control PATH --take JOB:SLOT\n");
    return 2;
}

/* Read a whole file ('-': stdin) into a NUL-terminated buffer. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    char *buf;
    size_t n;

    if (!f) {
        msg("cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    buf = malloc(FILE_MAX + 1);
    if (!buf) {
        msg("out of memory");
        if (f != stdin)
            fclose(f);
        return NULL;
    }
    n = fread(buf, 1, FILE_MAX + 1, f);
    if (ferror(f) || n > FILE_MAX) {
        msg("cannot read %s: %s", path, n > FILE_MAX ? "larger than 1 MiB" : "read error");
        free(buf);
        buf = NULL;
    } else {
        buf[n] = '\0';
        *len = n;
    }
    if (f != stdin)
        fclose(f);
    return buf;
}

static int load_policy(const char *path, uint32_t ring, serene_ctl_policy **pol)
{
    char err[SERENE_CTL_ERR_MAX];
    size_t len = 0;
    char *text = slurp(path, &len);
    int rc;

    if (!text)
        return 2;
    rc = serene_ctl_policy_parse(text, len, ring, pol, err, sizeof err);
    free(text);
    if (rc == -EINVAL) {
        msg("%s:%s", path, err);
        return 2;
    }
    if (rc) {
        msg("%s: %s", path, strerror(-rc));
        return 1;
    }
    return 0;
}

static int parse_uint(const char *opt, const char *v, unsigned long max, unsigned long *out)
{
    char *end;

    errno = 0;
    if (!v || !*v || *v == '-') {
        msg("%s needs a number", opt);
        return -1;
    }
    *out = strtoul(v, &end, 10);
    if (errno || *end || *out > max) {
        msg("%s '%s' is not a number in 0..%lu", opt, v, max);
        return -1;
    }
    return 0;
}

/* ---- compile and check --------------------------------------------------- */

/* compile's and tree's target name and job file: 0, or 2 with a message. */
static int target_and_job(const char *target, const char *job_file, serene_ctl_target *t,
                          serene_ctl_job *job)
{
    char err[SERENE_CTL_ERR_MAX];
    size_t len = 0;
    char *text;
    int rc;

    if (serene_ctl_target_parse(target, t)) {
        msg("unknown target '%s' (sw, bmv2 or tofino)", target);
        return 2;
    }
    if (!(text = slurp(job_file, &len)))
        return 2;
    rc = serene_ctl_job_parse(text, len, job_file, job, err, sizeof err);
    free(text);
    if (rc) {
        msg("%s", err);
        return 2;
    }
    return 0;
}

/* compile's and tree's arguments after the command: --target NAME,
 * --job-file PATH and at most one POLICY ("-": stdin), in any order.
 * 0, or 2 with a message and the usage. */
static int target_args(int argc, char **argv, const char **target, const char **job_file,
                       const char **policy)
{
    for (int i = 2; i < argc; i++) {
        const char **val = !strcmp(argv[i], "--target")     ? target
                           : !strcmp(argv[i], "--job-file") ? job_file
                                                            : NULL;
        if (val && i + 1 >= argc) {
            msg("%s: %s needs a value", argv[1], argv[i]);
            return usage();
        }
        if (val) {
            *val = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            msg("%s: unknown option '%s'", argv[1], argv[i]);
            return usage();
        } else if (*policy) {
            msg("%s: one policy only ('%s', then '%s')", argv[1], *policy, argv[i]);
            return usage();
        } else {
            *policy = argv[i];
        }
    }
    return 0;
}

static int cmd_compile(int argc, char **argv)
{
    const char *target = NULL, *job_file = NULL, *policy = NULL;
    serene_ctl_target t;
    serene_ctl_job job;
    serene_ctl_policy *pol = NULL;
    char err[SERENE_CTL_ERR_MAX];
    int rc;

    if ((rc = target_args(argc, argv, &target, &job_file, &policy)))
        return rc;
    if (!target || !job_file || !policy)
        return usage();
    if ((rc = target_and_job(target, job_file, &t, &job)))
        return rc;
    if ((rc = load_policy(policy, job.ring, &pol)))
        return rc;
    rc = serene_ctl_emit(stdout, t, pol, &job, err, sizeof err);
    serene_ctl_policy_free(&pol);
    if (rc) {
        msg("%s: %s", target, err);
        return rc == -EINVAL ? 2 : 1;
    }
    return 0;
}

/* counters and reset: a Tofino-only script for the job file's job. */
static int cmd_tofino_script(int argc, char **argv, const char *name, const char *elsewhere,
                             int (*emit)(FILE *, const serene_ctl_job *, char *, size_t))
{
    const char *target = NULL, *job_file = NULL, *policy = NULL;
    serene_ctl_target t;
    serene_ctl_job job;
    char err[SERENE_CTL_ERR_MAX];
    int rc;

    if ((rc = target_args(argc, argv, &target, &job_file, &policy)))
        return rc;
    if (!target || !job_file || policy)
        return usage();
    if ((rc = target_and_job(target, job_file, &t, &job)))
        return rc;
    if (t != SERENE_CTL_TARGET_TOFINO) {
        msg("%s: target %s: %s", name, target, elsewhere);
        return 2;
    }
    if ((rc = emit(stdout, &job, err, sizeof err))) {
        msg("%s: %s", name, err);
        return 1;
    }
    return 0;
}

/* serene-ctl counters --target tofino --job-file JOB.conf: the bfrt_python
 * script that prints the job's counters on the switch. A software switch's
 * are in `serene-ctl status`. */
static int cmd_counters(int argc, char **argv)
{
    return cmd_tofino_script(argc, argv, "counters",
                             "a software switch's counters are in `" PROG
                             " status`, BMv2's in simple_switch_CLI",
                             serene_ctl_emit_counters);
}

/* serene-ctl reset --target tofino --job-file JOB.conf: the bfrt_python
 * script that clears a job's register block for a new run of the job. */
static int cmd_reset(int argc, char **argv)
{
    return cmd_tofino_script(argc, argv, "reset",
                             "only Tofino's register blocks need it (serene-switch resets a job "
                             "by `" PROG " job remove` and `job add`)",
                             serene_ctl_emit_reset);
}

/* serene-ctl tree [--target sw|bmv2] --job-file JOB.conf [POLICY]: each
 * switch's configuration (the policy: bmv2's root). */
static int cmd_tree(int argc, char **argv)
{
    const char *target = "sw", *job_file = NULL, *policy = NULL;
    serene_ctl_target t;
    serene_ctl_job job;
    serene_ctl_policy *pol = NULL;
    char err[SERENE_CTL_ERR_MAX];
    int rc;

    if ((rc = target_args(argc, argv, &target, &job_file, &policy)))
        return rc;
    if (!job_file)
        return usage();
    if ((rc = target_and_job(target, job_file, &t, &job)))
        return rc;
    if (policy && (rc = load_policy(policy, job.ring, &pol)))
        return rc;
    rc = serene_ctl_emit_tree(stdout, t, pol, &job, err, sizeof err);
    serene_ctl_policy_free(&pol);
    if (rc) {
        msg("%s", err);
        return rc == -EINVAL ? 2 : 1;
    }
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    const char *policy = NULL;
    unsigned long ring = 0;
    serene_ctl_policy *pol = NULL;
    int rc;

    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--ring") && i + 1 < argc) {
            if (parse_uint("--ring", argv[++i], 4096, &ring))
                return 2;
        } else if (!policy)
            policy = argv[i];
        else
            return usage();
    }
    if (!policy)
        return usage();
    if ((rc = load_policy(policy, (uint32_t)ring, &pol)))
        return rc;
    rc = serene_ctl_policy_print(pol, stdout);
    serene_ctl_policy_free(&pol);
    return rc ? 1 : 0;
}

/* ---- the switch ------------------------------------------------------------ */

/* `status J`, parsed. Returns 0, 1 (switch failure) or 2 (unknown job). */
static int get_status(const char *ctl, unsigned long job, serene_ctl_status *st)
{
    char line[64], reply[4096];
    int rc;

    snprintf(line, sizeof line, "status %lu", job);
    rc = serene_ctl_sw_command(ctl, line, reply, sizeof reply, CMD_TIMEOUT_MS);
    if (rc == -EPROTO && !strncmp(reply, "error unknown job", 17)) {
        char jobs[512];
        if (serene_ctl_sw_command(ctl, "jobs", jobs, sizeof jobs, CMD_TIMEOUT_MS) == 0)
            msg("unknown job %lu: the switch at %s has jobs:%s", job, ctl,
                jobs[2] ? jobs + 2 : " none");
        else
            msg("unknown job %lu at %s", job, ctl);
        return 2;
    }
    if (rc == -EPROTO) {
        msg("%s: %s", ctl, reply);
        return 1;
    }
    if (rc) {
        msg("cannot reach the switch's control socket %s: %s", ctl, strerror(-rc));
        return 1;
    }
    if (serene_ctl_status_parse(reply, st)) {
        msg("%s: cannot parse the status reply '%.80s'", ctl, reply);
        return 1;
    }
    return 0;
}

static int switch_opts(int argc, char **argv, const char **ctl, unsigned long *job, int *have_job,
                       int i)
{
    if (!strcmp(argv[i], "--control") && i + 1 < argc) {
        *ctl = argv[i + 1];
        return 1;
    }
    if (!strcmp(argv[i], "--job") && i + 1 < argc) {
        if (parse_uint("--job", argv[i + 1], 65535, job))
            return -1;
        *have_job = 1;
        return 1;
    }
    return 0;
}

static int cmd_status(int argc, char **argv)
{
    const char *ctl = NULL;
    unsigned long job = 0;
    int have_job = 0, json = 0, rc;
    serene_ctl_status st;

    for (int i = 2; i < argc; i++) {
        int k = switch_opts(argc, argv, &ctl, &job, &have_job, i);
        if (k < 0)
            return 2;
        if (k > 0)
            i++;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else
            return usage();
    }
    if (!ctl || !have_job)
        return usage();
    if ((rc = get_status(ctl, job, &st)))
        return rc;
    if (json) {
        serene_ctl_status_json(&st, stdout);
        putchar('\n');
    } else {
        printf("job %" PRIu32 ": workers %" PRIu32 " low %" PRId32 " high %" PRId32
               " mode %s s %" PRIu32 " clocks %" PRIu64 " holds %" PRIu64 " proceeds %" PRIu64
               " advances %" PRIu64 " rules %u\n",
               st.job, st.workers, (int32_t)st.low, (int32_t)st.high,
               serene_ctl_mode_name(st.mode), st.s, st.clocks, st.holds, st.proceeds,
               st.advances, st.n_rules);
    }
    return fflush(stdout) ? 1 : 0;
}

/* job add SPEC | job remove --job J [--force], on a running switch: the
 * switch's reply on stdout. Returns 0, 1 (unreachable, or the switch
 * refused) or 2 (usage, a bad spec, an unknown job). */
static int cmd_job(int argc, char **argv)
{
    const char *ctl = NULL, *spec = NULL;
    unsigned long job = 0;
    int have_job = 0, force = 0, add, rc;
    char line[320], reply[1024];

    if (argc < 3 || (strcmp(argv[2], "add") && strcmp(argv[2], "remove")))
        return usage();
    add = !strcmp(argv[2], "add");
    for (int i = 3; i < argc; i++) {
        int k = switch_opts(argc, argv, &ctl, &job, &have_job, i);
        if (k < 0)
            return 2;
        if (k > 0)
            i++;
        else if (!add && !strcmp(argv[i], "--force"))
            force = 1;
        else if (add && !spec && argv[i][0] != '-')
            spec = argv[i];
        else
            return usage();
    }
    if (!ctl || (add ? !spec || have_job : !have_job))
        return usage();
    if (add && (size_t)snprintf(line, sizeof line, "job add %s", spec) >= 256) {
        msg("job spec '%.40s...' is longer than the switch takes (247 bytes)", spec);
        return 2;
    }
    if (!add)
        snprintf(line, sizeof line, "job remove %lu%s", job, force ? " force" : "");
    rc = serene_ctl_sw_command(ctl, line, reply, sizeof reply, CMD_TIMEOUT_MS);
    if (rc == -EPROTO) {
        msg("%s: %s", ctl, reply);
        return !strncmp(reply, "error unknown job", 17) || !strncmp(reply, "error usage", 11) ||
                       (add && strncmp(reply, "error job", 9))
                   ? 2
                   : 1;
    }
    if (rc) {
        msg("cannot reach the switch's control socket %s: %s", ctl, strerror(-rc));
        return 1;
    }
    puts(reply);
    return fflush(stdout) ? 1 : 0;
}

/* pool: the switch's shared pool as a table (--raw: the switch's line),
 * its policy changed (--policy), or a slot's block taken back (--take).
 * Returns 0, 1 (unreachable, no pool, refused) or 2 (usage). */
static int cmd_pool(int argc, char **argv)
{
    const char *ctl = NULL, *policy = NULL, *take = NULL, *jobs;
    unsigned long job = 0;
    int have_job = 0, raw = 0, rc;
    char line[64], reply[4096];
    unsigned blocks, elems, nfree, revoking, peak, idle, id, held, prio, take_job, take_slot;
    int n = -1;
    unsigned long long grants, revokes, returns, away, preempted, wait, others;
    char pol[16];

    for (int i = 2; i < argc; i++) {
        int k = switch_opts(argc, argv, &ctl, &job, &have_job, i);
        if (k < 0)
            return 2;
        if (k > 0)
            i++;
        else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
            policy = argv[++i];
        else if (!strcmp(argv[i], "--raw"))
            raw = 1;
        else if (!strcmp(argv[i], "--take") && i + 1 < argc)
            take = argv[++i];
        else
            return usage();
    }
    if (!ctl || have_job || (take && policy))
        return usage();
    if (take && (strspn(take, "0123456789:") != strlen(take) ||
                 sscanf(take, "%5u:%9u%n", &take_job, &take_slot, &n) != 2 ||
                 n != (int)strlen(take) || take_job > 65535)) {
        msg("--take '%.20s' is not JOB:SLOT", take);
        return 2;
    }
    if (take)
        snprintf(line, sizeof line, "pool take %u %u", take_job, take_slot);
    if (policy && (!*policy || strchr(policy, ' ') ||
                   (size_t)snprintf(line, sizeof line, "pool policy %s", policy) >= sizeof line)) {
        msg("policy '%.20s%s' is not static, first, fair or priority", policy,
            strlen(policy) > 20 ? "..." : "");
        return 2;
    }
    rc = serene_ctl_sw_command(ctl, policy || take ? line : "pool", reply, sizeof reply,
                               CMD_TIMEOUT_MS);
    if (rc == -EPROTO) {
        msg("%s: %s", ctl, reply);
        return policy && strstr(reply, "is not") ? 2 : 1;
    }
    if (rc) {
        msg("cannot reach the switch's control socket %s: %s", ctl, strerror(-rc));
        return 1;
    }
    if (raw || policy || take) {
        puts(reply);
        return fflush(stdout) ? 1 : 0;
    }
    jobs = strstr(reply, " jobs=");
    if (!jobs || sscanf(reply,
                        "ok pool blocks=%u elems=%u policy=%15s idle_ms=%u free=%u revoking=%u "
                        "peak=%u grants=%llu revokes=%llu returns=%llu",
                        &blocks, &elems, pol, &idle, &nfree, &revoking, &peak, &grants, &revokes,
                        &returns) != 10) {
        msg("%s: unexpected answer: %.80s", ctl, reply);
        return 1;
    }
    printf("pool: %u blocks of %u words, policy %s, idle after %u ms\n"
           "      %u free, %u being taken back, at most %u held at once\n"
           "      %llu leased, %llu taken back, %llu returned idle\n"
           "job    held  prio  rounds at the fallback  blocks taken back  rounds before a block"
           "  others' rounds meanwhile\n",
           blocks, elems, pol, idle, nfree, revoking, peak, grants, revokes, returns);
    for (const char *q = jobs + 6;
         sscanf(q, "%u:%u:%u:%llu:%llu:%llu:%llu%n", &id, &held, &prio, &away, &preempted, &wait,
                &others, &n) == 7;
         q += n + 1) {
        printf("%-6u %5u %5u %23llu %18llu %22llu %25llu\n", id, held, prio, away, preempted, wait,
               others);
        if (q[n] != ',')
            break;
    }
    if ((jobs = strstr(reply, " more=")))
        printf("(%s more shared jobs than the answer holds)\n", jobs + 6);
    return fflush(stdout) ? 1 : 0;
}

/* ---- run: the dynamic controller ----------------------------------------- */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The metrics file: "CLOCK LOSS" lines. The loss is on a plateau when the
 * newest loss is not 1% below the one before it. -1 without a file, 0 with
 * fewer than two lines. */
static int read_plateau(const char *path)
{
    FILE *f;
    char line[128];
    double prev = 0, last = 0;
    int n = 0;

    if (!path)
        return -1;
    if (!(f = fopen(path, "r")))
        return 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long c;
        double loss;
        if (sscanf(line, "%lu %lf", &c, &loss) == 2) {
            prev = last;
            last = loss;
            n++;
        }
    }
    fclose(f);
    return n >= 2 && last >= 0.99 * prev;
}

static void mode_str(char *b, size_t cap, serene_ctl_mode m, uint32_t s)
{
    if (m == SERENE_CTL_SSP)
        snprintf(b, cap, "ssp:%" PRIu32, s);
    else
        snprintf(b, cap, "%s", serene_ctl_mode_name(m));
}

/* Install d; writes the effective clock. Returns 0 or 1. */
static int install(const char *ctl, unsigned long job, const serene_ctl_decision *d,
                   uint32_t *effective)
{
    char line[96], reply[512];
    const char *e;
    int rc;

    if (d->new_mode == SERENE_CTL_SSP)
        snprintf(line, sizeof line, "policy %lu ssp %" PRIu32 " from %" PRIu32, job, d->new_s,
                 d->from);
    else
        snprintf(line, sizeof line, "policy %lu %s from %" PRIu32, job,
                 serene_ctl_mode_name(d->new_mode), d->from);
    rc = serene_ctl_sw_command(ctl, line, reply, sizeof reply, CMD_TIMEOUT_MS);
    if (rc) {
        msg("'%s' failed: %s", line, rc == -EPROTO ? reply : strerror(-rc));
        return 1;
    }
    if (!(e = strstr(reply, "effective=")) || sscanf(e, "effective=%" SCNu32, effective) != 1) {
        msg("'%s': unexpected reply '%.80s'", line, reply);
        return 1;
    }
    return 0;
}

/* serene-ctl run's options and state. */
typedef struct run_state {
    const char *ctl, *policy, *log_path, *metrics;
    unsigned long job, interval, duration;
    int tty;
    serene_ctl_controller *c;
    FILE *log;
    unsigned decisions;
} run_state;

/* Returns 0, or the exit status of a bad command line. */
static int parse_run_args(int argc, char **argv, run_state *rs)
{
    int have_job = 0;

    for (int i = 2; i < argc; i++) {
        int k = switch_opts(argc, argv, &rs->ctl, &rs->job, &have_job, i);
        if (k < 0)
            return 2;
        if (k > 0) {
            i++;
            continue;
        }
        if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
            if (parse_uint("--interval", argv[++i], 60000, &rs->interval) || rs->interval == 0)
                return 2;
        } else if (!strcmp(argv[i], "--duration") && i + 1 < argc) {
            if (parse_uint("--duration", argv[++i], 86400 * 30, &rs->duration))
                return 2;
        } else if (!strcmp(argv[i], "--log") && i + 1 < argc)
            rs->log_path = argv[++i];
        else if (!strcmp(argv[i], "--metrics") && i + 1 < argc)
            rs->metrics = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            msg("run: unknown option '%s'", argv[i]);
            return usage();
        } else if (!rs->policy)
            rs->policy = argv[i];
        else
            return usage();
    }
    if (!rs->ctl || !have_job || !rs->policy)
        return usage();
    return 0;
}

/* Install the n decisions of one controller step, log them (--log) and
 * report the reactive ones on stderr. Returns 0 or 1. */
static int apply_decisions(run_state *rs, const serene_ctl_decision *d, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        char o[24], w[24];
        uint32_t e = 0;

        if (install(rs->ctl, rs->job, &d[i], &e))
            return 1;
        serene_ctl_controller_applied(rs->c, &d[i], e);
        rs->decisions++;
        mode_str(o, sizeof o, d[i].old_mode, d[i].old_s);
        mode_str(w, sizeof w, d[i].new_mode, d[i].new_s);
        if (rs->log) {
            fprintf(rs->log,
                    "kind=%s clock=%" PRId32 " old=%s new=%s from=%" PRIu32 " effective=%" PRIu32
                    " why=%s\n",
                    d[i].reactive ? "reactive" : "schedule", (int32_t)d[i].clock, o, w, d[i].from,
                    e, d[i].why);
            fflush(rs->log);
        }
        if (d[i].reactive)
            fprintf(stderr, "%s" PROG ": clock %" PRId32 ": %s: %s -> %s from %" PRIu32 "\n",
                    rs->tty ? "\n" : "", (int32_t)d[i].clock, d[i].why, o, w, e);
    }
    return 0;
}

/* The progress line: rewritten in place on a terminal, else once a second. */
static void progress_line(const run_state *rs, const serene_ctl_status *st)
{
    char m[24];

    mode_str(m, sizeof m, st->mode, st->s);
    fprintf(stderr, "%sjob %lu: low %" PRId32 " high %" PRId32 " %s clocks %" PRIu64
                    " holds %" PRIu64 " decisions %u%s",
            rs->tty ? "\r" : "", rs->job, (int32_t)st->low, (int32_t)st->high, m, st->clocks,
            st->holds, rs->decisions, rs->tty ? "   " : "\n");
}

/* The control loop: step the controller on each status sample until the
 * policy's stop clock or --duration. Returns the exit status. */
static int control_loop(run_state *rs, serene_ctl_status *st)
{
    double t0 = now_s(), t_line = 0;
    int failures = 0, rc;

    for (;;) {
        serene_ctl_decision d[MAX_DECISIONS];
        unsigned n =
            serene_ctl_controller_step(rs->c, st, read_plateau(rs->metrics), d, MAX_DECISIONS);

        if (apply_decisions(rs, d, n))
            return 1;
        if (serene_ctl_controller_done(rs->c))
            break;
        if (now_s() - t0 >= (double)rs->duration)
            break;
        if (rs->tty || now_s() - t_line >= 1.0) {
            progress_line(rs, st);
            t_line = now_s();
        }
        struct timespec ts = {(time_t)(rs->interval / 1000),
                              (long)(rs->interval % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        if ((rc = get_status(rs->ctl, rs->job, st))) {
            /* The job may have ended and the switch gone: a few tries. */
            if (++failures >= 3)
                return rc;
            continue;
        }
        failures = 0;
    }
    if (rs->tty)
        fputc('\n', stderr);
    printf("serene-ctl run: job %lu: %u decisions, high %" PRId32 ", %s\n", rs->job, rs->decisions,
           (int32_t)st->high,
           serene_ctl_controller_done(rs->c) ? "passed the stop clock" : "duration over");
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    run_state rs = {.interval = 20, .duration = 60, .tty = isatty(2)};
    serene_ctl_policy *pol = NULL;
    serene_ctl_status st;
    int rc;

    if ((rc = parse_run_args(argc, argv, &rs)))
        return rc;
    if ((rc = get_status(rs.ctl, rs.job, &st)))
        return rc;
    if ((rc = load_policy(rs.policy, st.ring, &pol)))
        return rc;
    if (serene_ctl_controller_create(&rs.c, pol)) {
        serene_ctl_policy_free(&pol);
        msg("out of memory");
        return 1;
    }
    if (rs.log_path && !(rs.log = fopen(rs.log_path, "w"))) {
        msg("cannot write %s: %s", rs.log_path, strerror(errno));
        rc = 2;
    } else
        rc = control_loop(&rs, &st);
    if (rs.log && fclose(rs.log))
        rc = rc ? rc : 1;
    serene_ctl_controller_destroy(&rs.c);
    serene_ctl_policy_free(&pol);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    if (!strcmp(argv[1], "compile"))
        return cmd_compile(argc, argv);
    if (!strcmp(argv[1], "check"))
        return cmd_check(argc, argv);
    if (!strcmp(argv[1], "tree"))
        return cmd_tree(argc, argv);
    if (!strcmp(argv[1], "counters"))
        return cmd_counters(argc, argv);
    if (!strcmp(argv[1], "reset"))
        return cmd_reset(argc, argv);
    if (!strcmp(argv[1], "status"))
        return cmd_status(argc, argv);
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc, argv);
    if (!strcmp(argv[1], "job"))
        return cmd_job(argc, argv);
    if (!strcmp(argv[1], "pool"))
        return cmd_pool(argc, argv);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage();
        return 0;
    }
    msg("unknown command '%s' (compile, tree, counters, check, status, job, run or pool)",
        argv[1]);
    return 2;
}
