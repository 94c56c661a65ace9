/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene_run.c - serene-run, the job launcher (in the spirit of mpirun and
 * torchrun).
 *
 *     serene-run -n N [options] [--] PROGRAM [ARGS...]
 *
 * Unless --switch names a running switch, it starts the embedded software
 * switch (serene-switch) on an ephemeral loopback port. Then it starts N
 * ranks of PROGRAM with SERENE_RANK, SERENE_LOCAL_RANK, SERENE_WORLD_SIZE,
 * SERENE_JOB, SERENE_JOB_NONCE and SERENE_SWITCH set, relays their output
 * line by line behind a "[rank] " prefix, and supervises them: the first
 * failure stops the whole job. The exit codes are listed in help_text.
 * A rank that returns early, even with status 0, leaves its peers waiting
 * until they time out; the first of them is then the failure, so when a
 * job fails after a rank ended early, that rank is named as the likely
 * cause.
 * This file parses the options and starts the switch and the ranks;
 * supervise.c spawns, relays and supervises (run.h joins the two).
 *
 * Invariants:
 * - Only processes this launcher started are signalled: each child (the
 *   switch, every rank) runs in a process group of its own (setpgid in the
 *   child and in the parent), and that group is signalled, so what a rank
 *   starts (a wrapper script's worker) is stopped with it. A group is
 *   signalled only while it has a member: its id cannot be reused until it
 *   is empty, and serene-run is the subreaper of the members that lose
 *   their parent (PR_SET_CHILD_SUBREAPER), so none is reaped behind its
 *   back. Once every rank has exited, what is left in their groups is
 *   stopped (SIGTERM, then SIGKILL) before the switch, and serene-run
 *   exits only when those groups are empty or given up.
 * - With a terminal on stdin, rank 0's group becomes its foreground group
 *   (rank 0 inherits stdin, and a background read would stop it); Ctrl-C
 *   then reaches rank 0's group, and serene-run takes the terminal back
 *   when rank 0 exits.
 * - Every wait on a child is bounded: SIGTERM, SIGKILL after KILL_GRACE_MS,
 *   given up after REAP_MAX_MS more. The one wait that is not bounded is a
 *   write to our own stdout/stderr: a stalled reader is back-pressure that
 *   reaches the ranks just as if they wrote to it directly.
 * - Memory is bounded: one LINE_MAX_BYTES buffer per relayed pipe; longer
 *   lines are split.
 * - Children get PR_SET_PDEATHSIG(SIGTERM): a launcher killed by SIGKILL
 *   (a CI timeout, the OOM killer) does not leave ranks or a switch behind
 *   (what they started themselves is then theirs to stop).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

/* The switch only binds a UDP socket before writing its port: seconds of
 * silence mean it is broken, not slow. */
#define SWITCH_WAIT_MS 10000
/* Port-file polling period while the switch starts (it offers no event). */
#define PORT_POLL_MS 20

static const char usage_line[] =
    "usage: serene-run -n N [--job ID] [--switch HOST:PORT] [--switch-arg ARG]...\n"
    "                  [--elems E] [--slots S] [--store W] [--timeout SEC] [--no-prefix]\n"
    "                  [--] PROGRAM [ARGS...]\n";

static const char help_text[] =
    "Start N ranks of PROGRAM as one Serene job and supervise them.\n"
    "  -n N                ranks, 1..64 (required)\n"
    "  --job ID            job id, 0..65535 (default 0)\n"
    "  --switch HOST:PORT  use this switch; default: start serene-switch on\n"
    "                      127.0.0.1 ($SERENE_SWITCH_BIN, else next to serene-run,\n"
    "                      else the build tree, else PATH)\n"
    "  --switch-arg ARG    extra argument for that switch (repeatable)\n"
    "  --elems E, --slots S  elements per packet, slot pool of its job (0: none)\n"
    "  --store W           words of its job's SSP store (default 1048576)\n"
    "  --timeout SEC       stop everything after SEC seconds (0: never; default)\n"
    "  --no-prefix         relay rank output without the \"[rank] \" prefix\n"
    "Ranks get SERENE_RANK, SERENE_LOCAL_RANK, SERENE_WORLD_SIZE, SERENE_JOB,\n"
    "SERENE_JOB_NONCE (fresh per launch), SERENE_SWITCH. Rank 0 inherits stdin.\n"
    "With the embedded switch, the job takes a fresh random admission token\n"
    "per launch, SERENE_JOB_TOKEN in the switch's and the ranks' environment;\n"
    "with --switch, the ranks inherit SERENE_JOB_TOKEN as it is.\n"
    "Exit status: 0 all ranks exited 0; else the first failing rank's status\n"
    "(128+SIG if a signal killed it); 1 launcher or switch failure; 2 bad usage;\n"
    "124 --timeout; 126 PROGRAM not executable; 127 PROGRAM not found;\n"
    "128+SIG serene-run got SIGINT, SIGTERM or SIGHUP.\n"
    "When the job fails after a rank exited while the others still ran (even\n"
    "with status 0), that rank is named as the likely cause.\n"
    "Each rank runs in a process group of its own, which is what gets signalled:\n"
    "what a rank starts (a wrapper script's worker) is stopped with the job, and\n"
    "what is left in the groups once every rank exited is stopped before exit.\n";

/* One fprintf per message: stderr is unbuffered, so a message never
 * interleaves with the relayed lines we write to the same descriptor. */
__attribute__((format(printf, 2, 0))) static void vnote(const char *tail, const char *fmt,
                                                        va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "serene-run: %s\n%s", line, tail);
}

void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote("", fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote(usage_line, fmt, ap);
    va_end(ap);
    exit(2);
}

/* Strict decimal: digits only (strtol alone would take " 5" and "+5", which
 * the ranks' SERENE_* parsing refuses), the whole string, within [lo, hi];
 * no option takes a negative number. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (s[strspn(s, "0123456789")] != '\0')
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static long opt_long(const char *opt, const char *arg, long lo, long hi)
{
    long v;
    if (parse_long(arg, lo, hi, &v))
        usage_error("%s: '%s' is not a number in %ld..%ld", opt, arg, lo, hi);
    return v;
}

/* HOST:PORT as the library's SERENE_SWITCH accepts it: IPv4 or a name. */
static int valid_switch_addr(const char *s)
{
    const char *colon = strrchr(s, ':');
    long port;
    if (!colon || colon == s || strlen(s) >= SERENE_ADDR_MAX)
        return 0;
    for (const char *c = s; c < colon; c++)
        if (*c == ':' || *c <= ' ' || *c == '/')
            return 0;
    return parse_long(colon + 1, 1, 65535, &port) == 0;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"job", required_argument, NULL, 'j'},
        {"switch", required_argument, NULL, 's'},
        {"switch-arg", required_argument, NULL, 'a'},
        {"elems", required_argument, NULL, 'e'},
        {"slots", required_argument, NULL, 'S'},
        {"store", required_argument, NULL, 'W'},
        {"timeout", required_argument, NULL, 't'},
        {"no-prefix", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->prefix = 1;
    o->store = -1;
    o->slots = -1;
    /* argc bounds the --switch-arg count; freed by process exit. */
    o->switch_args = calloc((size_t)argc, sizeof *o->switch_args);
    if (!o->switch_args)
        usage_error("out of memory");
    opterr = 0; /* our messages name the program without its path */
    int c;
    /* '+': stop at PROGRAM, so its own options are left alone. */
    while ((c = getopt_long(argc, argv, "+:n:h", longopts, NULL)) != -1) {
        char *end;
        double sec;
        switch (c) {
        case 'n': o->n = (int)opt_long("-n", optarg, 1, SR_WIRE_MAX_WORKERS); break;
        case 'j': o->job = (int)opt_long("--job", optarg, 0, 65535); break;
        case 'e': o->elems = (int)opt_long("--elems", optarg, 1, SR_WIRE_MAX_ELEMS); break;
        case 'S': o->slots = (int)opt_long("--slots", optarg, 0, SR_WIRE_MAX_SLOTS); break;
        case 'W': o->store = opt_long("--store", optarg, 0, SR_RUN_STORE_MAX); break;
        case 'a': o->switch_args[o->n_switch_args++] = optarg; break;
        case 'P': o->prefix = 0; break;
        case 's':
            if (!valid_switch_addr(optarg))
                usage_error("--switch: '%s' is not HOST:PORT (port 1..65535)", optarg);
            o->switch_addr = optarg;
            break;
        case 't':
            errno = 0;
            sec = strtod(optarg, &end);
            /* The negated test also rejects NaN. */
            if (errno || end == optarg || *end || !(sec >= 0 && sec <= 1e7))
                usage_error("--timeout: '%s' is not a number of seconds in 0..1e7", optarg);
            o->timeout_ms = (int64_t)(sec * 1000.0 + 0.5);
            if (sec > 0 && o->timeout_ms == 0)
                o->timeout_ms = 1;
            break;
        case 'h':
            printf("%s\n%s", usage_line, help_text);
            exit(0);
        case ':': usage_error("option '%s' needs an argument", argv[optind - 1]);
        default:
            if (optopt)
                usage_error("unknown option '-%c'", optopt);
            usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (o->n == 0)
        usage_error("-n N is required");
    if (optind >= argc)
        usage_error("missing PROGRAM");
    if (o->switch_addr && (o->n_switch_args || o->elems || o->slots >= 0 || o->store >= 0))
        usage_error("--switch-arg, --elems, --slots and --store configure the embedded switch; "
                    "they cannot be used with --switch");
    o->prog = argv + optind;
}

/* ---- The embedded switch ----------------------------------------------- */

static int is_exe(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int find_switch(char *out, size_t len)
{
    const char *env = getenv("SERENE_SWITCH_BIN");
    if (env && *env) {
        /* Asked for by name: a wrong one is an error, not a fallback. */
        if (!is_exe(env) || (size_t)snprintf(out, len, "%s", env) >= len) {
            note("SERENE_SWITCH_BIN=%s is not an executable file", env);
            return -1;
        }
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            int k = snprintf(out, len, "%s/serene-switch", self);
            if (k > 0 && (size_t)k < len && is_exe(out))
                return 0;
        }
    }
#ifdef SERENE_SWITCH_BUILD_PATH
    /* Lets serene-run work straight from the build tree. */
    if (is_exe(SERENE_SWITCH_BUILD_PATH) &&
        (size_t)snprintf(out, len, "%s", SERENE_SWITCH_BUILD_PATH) < len)
        return 0;
#endif
    snprintf(out, len, "serene-switch"); /* last, PATH; spawn() says if it is not there */
    return 0;
}

/* The port the switch wrote: >0; 0 if not (completely) written yet; -1 if
 * the file holds something else. */
static int read_port_file(const char *path)
{
    char b[16];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0)
        return 0;
    b[n] = '\0';
    char *eol = strchr(b, '\n');
    if (!eol)
        return n == (ssize_t)sizeof b - 1 ? -1 : 0;
    *eol = '\0';
    long port;
    return parse_long(b, 1, 65535, &port) == 0 && eol[1] == '\0' ? (int)port : -1;
}

static void remove_port_dir(struct launch *L)
{
    if (!L->port_dir[0])
        return;
    DIR *d = opendir(L->port_dir);
    if (d) {
        /* Ours alone (mkdtemp, 0700): the port file and any temp file the
         * switch used to write it atomically. */
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(L->port_dir);
    L->port_dir[0] = '\0';
}

/* Start serene-switch and wait, bounded, for the port it bound. */
static int start_switch(struct launch *L)
{
    char path[PATH_MAX], port_file[PATH_MAX + 8], job[96];
    const char *tmp = getenv("TMPDIR");
    struct proc *sw = &L->procs[SWITCH_SLOT];
    if (find_switch(path, sizeof path))
        return -1;
    if (!tmp || !*tmp)
        tmp = "/tmp";
    /* A private directory: no other user can plant a file or a symlink
     * where the switch writes, and an atomic rename works inside it. */
    if ((size_t)snprintf(L->port_dir, sizeof L->port_dir, "%s/serene-run.XXXXXX", tmp) >=
            sizeof L->port_dir ||
        !mkdtemp(L->port_dir)) {
        note("cannot create a temporary directory in %s: %s", tmp, strerror(errno));
        L->port_dir[0] = '\0';
        return -1;
    }
    snprintf(port_file, sizeof port_file, "%s/port", L->port_dir);
    int k = snprintf(job, sizeof job, "%d:%d", L->o.job, L->o.n);
    if (L->o.elems || L->o.slots >= 0)
        k += snprintf(job + k, sizeof job - (size_t)k, ":%d",
                      L->o.elems ? L->o.elems : (int)SR_WIRE_DEF_ELEMS);
    if (L->o.slots >= 0)
        k += snprintf(job + k, sizeof job - (size_t)k, ":%d", L->o.slots);
    if (L->o.store >= 0)
        k += snprintf(job + k, sizeof job - (size_t)k, ",store=%ld", L->o.store);
    /* The switch reads the token from its environment (fresh_token), not
     * from argv, which every local user can read. */
    snprintf(job + k, sizeof job - (size_t)k, ",token=env:SERENE_JOB_TOKEN");

    const char **argv = calloc((size_t)L->o.n_switch_args + 8, sizeof *argv);
    if (!argv) {
        note("out of memory");
        return -1;
    }
    int a = 0;
    argv[a++] = path;
    argv[a++] = "--listen";
    argv[a++] = "127.0.0.1:0";
    argv[a++] = "--port-file";
    argv[a++] = port_file;
    argv[a++] = "--job";
    argv[a++] = job;
    for (int i = 0; i < L->o.n_switch_args; i++)
        argv[a++] = L->o.switch_args[i];
    extern char **environ;
    int err = spawn(L, sw, path, (char *const *)argv, environ, 0);
    free(argv);
    if (err) {
        note("cannot start %s: %s%s", path, strerror(err < 0 ? -err : err),
             err == ENOENT ? " (set SERENE_SWITCH_BIN, or give --switch HOST:PORT)" : "");
        return -1;
    }

    int64_t give_up = now_ms() + SWITCH_WAIT_MS;
    for (;;) {
        int port = read_port_file(port_file);
        if (port > 0) {
            snprintf(L->switch_addr, sizeof L->switch_addr, "127.0.0.1:%d", port);
            note("serene-switch (pid %d) listening on %s", (int)sw->pid, L->switch_addr);
            return 0;
        }
        if (port < 0) {
            note("switch wrote something other than a port to %s", port_file);
            return -1;
        }
        int64_t now = now_ms();
        if (!sw->running || L->stopping || check_timeout(L, now))
            return -1; /* reap(), on_signal() or check_timeout() said why */
        if (now >= give_up) {
            note("switch (pid %d) did not report its port within %d s", (int)sw->pid,
                 SWITCH_WAIT_MS / 1000);
            return -1;
        }
        poll_once(L, PORT_POLL_MS);
    }
}

/* ---- Ranks ------------------------------------------------------------- */

/* Start the N ranks. On failure the job is already stopping. */
static void start_ranks(struct launch *L)
{
    /* The variables we set replace inherited ones of the same name. */
    static const char *const names[] = {"SERENE_RANK", "SERENE_LOCAL_RANK", "SERENE_WORLD_SIZE",
                                        "SERENE_JOB", "SERENE_JOB_NONCE", "SERENE_SWITCH"};
    enum { NVARS = sizeof names / sizeof names[0] };
    char vars[NVARS][SERENE_ADDR_MAX + 32];
    extern char **environ;
    size_t envc = 0, keep = 0;
    int err = 0;

    while (environ[envc])
        envc++;
    char **envp = calloc(envc + NVARS + 1, sizeof *envp);
    if (!envp) {
        note("out of memory");
        stop(L, 1, now_ms());
        return;
    }
    for (size_t i = 0; i < envc; i++) {
        int ours = 0;
        for (int v = 0; v < NVARS && !ours; v++) {
            size_t len = strlen(names[v]);
            ours = !strncmp(environ[i], names[v], len) && environ[i][len] == '=';
        }
        if (!ours)
            envp[keep++] = environ[i];
    }
    for (int v = 0; v < NVARS; v++)
        envp[keep + (size_t)v] = vars[v];
    snprintf(vars[2], sizeof vars[2], "%s=%d", names[2], L->o.n);
    snprintf(vars[3], sizeof vars[3], "%s=%d", names[3], L->o.job);
    snprintf(vars[4], sizeof vars[4], "%s=%u", names[4], (unsigned)L->nonce);
    snprintf(vars[5], sizeof vars[5], "%s=%s", names[5], L->switch_addr);

    L->t_ranks = now_ms();
    for (int r = 0; r < L->o.n; r++) {
        struct proc *p = &L->procs[1 + r];
        snprintf(vars[0], sizeof vars[0], "%s=%d", names[0], r);
        snprintf(vars[1], sizeof vars[1], "%s=%d", names[1], r);
        snprintf(p->name, sizeof p->name, "rank %d", r);
        if (L->o.prefix)
            snprintf(p->prefix, sizeof p->prefix, "[%d] ", r);
        /* Like mpirun: one reader of a terminal's stdin, not N racing. */
        if ((err = spawn(L, p, L->o.prog[0], L->o.prog, envp, r == 0)) != 0)
            break;
        L->nstarted = r + 1;
    }
    if (err < 0) {
        note("cannot start rank %d: %s", L->nstarted, strerror(-err));
        stop(L, 1, now_ms());
    } else if (err > 0) {
        note("cannot execute %s: %s", L->o.prog[0], strerror(err));
        stop(L, err == ENOENT ? 127 : 126, now_ms());
    }
    free(envp);
}

/* ---- main -------------------------------------------------------------- */

static uint32_t fresh_nonce(void)
{
    uint32_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
        /* No getrandom (old kernel, seccomp): still differs per launch. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint32_t)ts.tv_nsec ^ ((uint32_t)ts.tv_sec << 12) ^ ((uint32_t)getpid() << 20);
    }
    /* 0 is the library's "no nonce" default; never hand it out. */
    return v ? v : 1;
}

/* A fresh admission token for the embedded switch's job, in our
 * environment, which the switch and the ranks inherit: 64 random bits
 * (never 0, which means none), 16 hex digits. Returns 0, or -1 when no
 * randomness is to be had: a guessable token would be worse than a
 * failed launch. */
static int fresh_token(void)
{
    uint64_t v = 0;
    char hex[17];

    while (v == 0)
        if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
            return -1;
    snprintf(hex, sizeof hex, "%016" PRIx64, v);
    return setenv("SERENE_JOB_TOKEN", hex, 1);
}

int main(int argc, char **argv)
{
    static struct launch launch; /* ~10 KiB of procs: static, not stack */
    struct launch *L = &launch;
    sigset_t block;

    /* Pipes must not land on 0..2 if we were started with them closed. */
    for (int fd = open("/dev/null", O_RDWR); fd >= 0 && fd <= 2; fd = open("/dev/null", O_RDWR))
        ;
    parse_opts(argc, argv, &L->o);
    L->first_end = -1;
    for (int i = 0; i < MAX_PROCS; i++) {
        L->procs[i].io[0] = (struct stream){.fd = -1, .out = STDOUT_FILENO};
        L->procs[i].io[1] = (struct stream){.fd = -1, .out = STDERR_FILENO};
    }
    /* The switch's stdout goes to our stderr too: our stdout carries only
     * the program's output. Its prefix stays under --no-prefix so it is
     * never mistaken for that output. */
    L->procs[SWITCH_SLOT].io[0].out = STDERR_FILENO;
    snprintf(L->procs[SWITCH_SLOT].name, sizeof L->procs[0].name, "switch");
    snprintf(L->procs[SWITCH_SLOT].prefix, sizeof L->procs[0].prefix, "[switch] ");

    /* Signals arrive through signalfd, in the poll loop, never in a handler. */
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &L->child_mask);
    L->sigfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
    if (L->sigfd < 0) {
        note("signalfd: %s", strerror(errno));
        return 1;
    }
    /* Members of the ranks' groups whose parent exits become ours to reap,
     * so their group ids stay theirs until we have seen them go. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        note("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
    L->tty_fg = isatty(0) && tcgetpgrp(0) == getpgrp();
    /* A closed stdout must not kill the supervisor of a running job. */
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        signal(SIGPIPE, SIG_IGN);
        L->reset_sigpipe = 1;
    }

    if (L->o.timeout_ms)
        L->deadline = now_ms() + L->o.timeout_ms;
    L->nonce = fresh_nonce();
    if (L->o.switch_addr)
        snprintf(L->switch_addr, sizeof L->switch_addr, "%s", L->o.switch_addr);
    else if (fresh_token()) {
        note("cannot draw an admission token: %s", strerror(errno));
        stop(L, 1, now_ms());
    } else if (start_switch(L))
        stop(L, 1, now_ms());
    if (!L->stopping)
        start_ranks(L);
    supervise(L);
    tty_take_back(L);

    /* Whatever grandchildren still hold open is cut off here. */
    for (int i = 0; i < MAX_PROCS; i++) {
        proc_drain(&L->procs[i]);
        for (int k = 0; k < 2; k++)
            stream_close(&L->procs[i], &L->procs[i].io[k]);
    }
    remove_port_dir(L);
    report_first_end(L);
    if (L->nstarted) {
        double secs = (double)(now_ms() - L->t_ranks) / 1000.0;
        if (L->exit_code)
            note("%d ranks finished in %.2f s (exit status %d)", L->nstarted, secs, L->exit_code);
        else
            note("%d ranks finished in %.2f s", L->nstarted, secs);
    }
    return L->exit_code;
}
