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
 *
 * Invariants:
 * - Only processes this launcher started are signalled, by PID, and only
 *   until they are reaped, so a PID can never have been reused.
 * - Every wait on a child is bounded: SIGTERM, SIGKILL after KILL_GRACE_MS,
 *   given up after REAP_MAX_MS more. The one wait that is not bounded is a
 *   write to our own stdout/stderr: a stalled reader is back-pressure that
 *   reaches the ranks just as if they wrote to it directly.
 * - Memory is bounded: one LINE_MAX_BYTES buffer per relayed pipe; longer
 *   lines are split.
 * - Children get PR_SET_PDEATHSIG(SIGTERM): a launcher killed by SIGKILL
 *   (a CI timeout, the OOM killer) does not leave ranks or a switch behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
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
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/wire.h"
#include "serene/serene.h"

/* SIGTERM -> SIGKILL: long enough to flush logs and close sockets, short
 * enough that a failed job is reported while someone is still watching. */
#define KILL_GRACE_MS 3000
/* After SIGKILL only a process stuck in the kernel (D state) survives; we
 * report it and stop waiting rather than hang the launcher. */
#define REAP_MAX_MS 2000
/* The switch only binds a UDP socket before writing its port: seconds of
 * silence mean it is broken, not slow. */
#define SWITCH_WAIT_MS 10000
/* Port-file polling period while the switch starts (it offers no event). */
#define PORT_POLL_MS 20
/* Longest relayed line; longer ones are split so memory stays bounded. */
#define LINE_MAX_BYTES (64 * 1024)
/* Lines gathered into one writev (3 iovecs each, far below IOV_MAX). */
#define LINES_PER_WRITE 64

/* Slot 0 of launch.procs is the switch; rank r is procs[1 + r]. */
#define SWITCH_SLOT 0
#define MAX_PROCS (1 + (int)SR_WIRE_MAX_WORKERS)

static const char usage_line[] =
    "usage: serene-run -n N [--job ID] [--switch HOST:PORT] [--switch-arg ARG]...\n"
    "                  [--elems E] [--slots S] [--timeout SEC] [--no-prefix]\n"
    "                  [--] PROGRAM [ARGS...]\n";

static const char help_text[] =
    "Start N ranks of PROGRAM as one Serene job and supervise them.\n"
    "  -n N                ranks, 1..64 (required)\n"
    "  --job ID            job id, 0..65535 (default 0)\n"
    "  --switch HOST:PORT  use this switch; default: start serene-switch on\n"
    "                      127.0.0.1 ($SERENE_SWITCH_BIN, else next to serene-run,\n"
    "                      else the build tree, else PATH)\n"
    "  --switch-arg ARG    extra argument for that switch (repeatable)\n"
    "  --elems E, --slots S  elements per packet, slot pool of its job\n"
    "  --timeout SEC       stop everything after SEC seconds (0: never; default)\n"
    "  --no-prefix         relay rank output without the \"[rank] \" prefix\n"
    "Ranks get SERENE_RANK, SERENE_LOCAL_RANK, SERENE_WORLD_SIZE, SERENE_JOB,\n"
    "SERENE_JOB_NONCE (fresh per launch), SERENE_SWITCH. Rank 0 inherits stdin.\n"
    "Exit status: 0 all ranks exited 0; else the first failing rank's status\n"
    "(128+SIG if a signal killed it); 1 launcher or switch failure; 2 bad usage;\n"
    "124 --timeout; 126 PROGRAM not executable; 127 PROGRAM not found;\n"
    "128+SIG serene-run got SIGINT, SIGTERM or SIGHUP.\n";

struct stream {
    int fd;     /* read end of the child's pipe; -1 once closed */
    int out;    /* where its lines go: STDOUT_FILENO or STDERR_FILENO */
    size_t len; /* bytes of an unfinished line at the start of buf */
    char *buf;  /* LINE_MAX_BYTES */
};

struct proc {
    pid_t pid;           /* 0: never started */
    int running;         /* started, not yet reaped nor given up */
    int signalled;       /* we sent SIGTERM: its exit is then expected */
    int killed;          /* we sent SIGKILL */
    int64_t term_at;     /* when SIGTERM went out (monotonic ms) */
    char name[16];       /* "rank 3" or "switch", for messages */
    char prefix[16];     /* "[3] ", "[switch] " or "" */
    struct stream io[2]; /* its stdout, its stderr */
};

struct opts {
    int n;
    int job;
    const char *switch_addr; /* NULL: start the embedded switch */
    const char **switch_args;
    int n_switch_args;
    int elems; /* 0: the switch's default */
    int slots; /* 0: the switch's default */
    int64_t timeout_ms; /* 0: none */
    int prefix;
    char **prog; /* PROGRAM [ARGS...], NULL-terminated */
};

struct launch {
    struct opts o;
    struct proc procs[MAX_PROCS];
    int nstarted;       /* ranks started */
    int sigfd;          /* SIGCHLD, SIGINT, SIGTERM, SIGHUP */
    sigset_t child_mask; /* the mask we started with, for the children */
    int reset_sigpipe;  /* we ignore SIGPIPE; children get it back */
    int stopping;       /* the job is being torn down */
    int exit_code;      /* valid once stopping, or 0 */
    int timed_out;
    int signals_seen;
    int64_t deadline;   /* --timeout, monotonic ms; 0: none */
    int64_t t_ranks;    /* when the first rank started */
    uint32_t nonce;
    char port_dir[PATH_MAX]; /* private temp dir holding the port file */
    char switch_addr[SERENE_ADDR_MAX];
};

/* One fprintf per message: stderr is unbuffered, so a message never
 * interleaves with the relayed lines we write to the same descriptor. */
__attribute__((format(printf, 2, 0))) static void vnote(const char *tail, const char *fmt,
                                                        va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "serene-run: %s\n%s", line, tail);
}

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
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

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Strict decimal: the whole string, within [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
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
        {"timeout", required_argument, NULL, 't'},
        {"no-prefix", no_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->prefix = 1;
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
        case 'S': o->slots = (int)opt_long("--slots", optarg, 1, SR_WIRE_MAX_SLOTS); break;
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
    if (o->switch_addr && (o->n_switch_args || o->elems || o->slots))
        usage_error("--switch-arg, --elems and --slots configure the embedded switch; "
                    "they cannot be used with --switch");
    o->prog = argv + optind;
}

static const char *signame(int sig)
{
    static const char *const names[] = {
        [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
        [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT", [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
        [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
        [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM", [SIGXCPU] = "SIGXCPU",
        [SIGXFSZ] = "SIGXFSZ", [SIGSYS] = "SIGSYS",
    };
    static char other[16];
    if (sig > 0 && sig < (int)(sizeof names / sizeof names[0]) && names[sig])
        return names[sig];
    snprintf(other, sizeof other, "%d", sig);
    return other;
}

/* "exited with status 3" or "killed by signal SIGSEGV (core dumped)". */
static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, len, "killed by signal %s%s", signame(WTERMSIG(status)),
                 WCOREDUMP(status) ? " (core dumped)" : "");
}

/* The shell's convention, so `serene-run ... || echo $?` reads naturally. */
static int exit_code_of(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- Output relay ------------------------------------------------------ */

static void write_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        ssize_t n = writev(fd, iov, cnt);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) { /* our stdout was handed to us non-blocking */
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                poll(&p, 1, 100);
                continue;
            }
            return; /* EPIPE and the like: nobody reads; keep supervising */
        }
        while (cnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
}

/* Relay every complete line in s->buf; with `all`, the rest too, ended by
 * a newline (EOF, or a line longer than the buffer). */
static void stream_emit(const struct proc *p, struct stream *s, int all)
{
    static char nl[] = "\n";
    struct iovec iov[3 * LINES_PER_WRITE];
    int cnt = 0;
    size_t start = 0;
    while (start < s->len) {
        char *eol = memchr(s->buf + start, '\n', s->len - start);
        if (!eol && !all)
            break;
        size_t end = eol ? (size_t)(eol - s->buf) + 1 : s->len;
        iov[cnt++] = (struct iovec){(void *)p->prefix, strlen(p->prefix)};
        iov[cnt++] = (struct iovec){s->buf + start, end - start};
        if (!eol)
            iov[cnt++] = (struct iovec){nl, 1};
        start = end;
        if (cnt > 3 * LINES_PER_WRITE - 3) {
            write_all(s->out, iov, cnt);
            cnt = 0;
        }
    }
    write_all(s->out, iov, cnt);
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

static void stream_close(const struct proc *p, struct stream *s)
{
    if (s->fd < 0)
        return;
    stream_emit(p, s, 1); /* a last line without its newline */
    close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
}

/* One read. Returns 1 after data, 0 if it would block, -1 once closed. */
static int stream_read(const struct proc *p, struct stream *s)
{
    ssize_t n = read(s->fd, s->buf + s->len, LINE_MAX_BYTES - s->len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        stream_close(p, s);
        return -1;
    }
    s->len += (size_t)n;
    stream_emit(p, s, 0);
    if (s->len == LINE_MAX_BYTES) /* one line fills the buffer: split it */
        stream_emit(p, s, 1);
    return 1;
}

/* What a reaped child left in its pipes. Bounded: a grandchild that kept
 * the pipe open and writes on is read later by the poll loop. */
static void proc_drain(struct proc *p)
{
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 64 && p->io[i].fd >= 0 && stream_read(p, &p->io[i]) > 0; k++)
            ;
}

/* ---- Starting processes ------------------------------------------------ */

static int is_exe(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Fork and exec file (PATH lookup if it has no '/') with its stdout and
 * stderr on fresh pipes. Returns 0, a positive errno the exec failed with,
 * or a negative errno from our own calls (malloc, pipe, fork). */
static int spawn(struct launch *L, struct proc *p, const char *file, char *const argv[],
                 char *const envp[], int keep_stdin)
{
    int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}}; /* stdout, stderr, exec errno */
    int err = 0, e = 0;
    pid_t parent = getpid(), pid = -1;
    for (int i = 0; i < 2; i++)
        if (!(p->io[i].buf = malloc(LINE_MAX_BYTES)))
            err = -ENOMEM;
    for (int i = 0; i < 3 && !err; i++)
        if (pipe2(fds[i], O_CLOEXEC) < 0)
            err = -errno;
    if (!err && (pid = fork()) < 0)
        err = -errno;
    if (pid == 0) {
        /* We are single-threaded, so the child may call anything (execvpe
         * included). dup2 clears O_CLOEXEC on the copies; every other
         * descriptor of ours closes at exec. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            _exit(127); /* the launcher is already gone */
        int null = keep_stdin ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0)
            dup2(null, 0);
        dup2(fds[0][1], 1);
        dup2(fds[1][1], 2);
        if (L->reset_sigpipe)
            signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &L->child_mask, NULL);
        execvpe(file, argv, envp);
        e = errno;
        ssize_t w = write(fds[2][1], &e, sizeof e);
        (void)w; /* nothing more a failed child can do */
        _exit(127);
    }
    for (int i = 0; i < 3; i++)
        if (fds[i][1] >= 0)
            close(fds[i][1]);
    if (pid > 0) {
        /* EOF: the exec succeeded and closed the pipe; an int: its errno. */
        ssize_t n;
        while ((n = read(fds[2][0], &e, sizeof e)) < 0 && errno == EINTR)
            ;
        if (n == (ssize_t)sizeof e) {
            waitpid(pid, NULL, 0); /* it has _exit-ed or is about to */
            err = e ? e : EIO;
        }
    }
    if (fds[2][0] >= 0)
        close(fds[2][0]);
    for (int i = 0; i < 2; i++) {
        struct stream *s = &p->io[i];
        if (err) {
            if (fds[i][0] >= 0)
                close(fds[i][0]);
            free(s->buf);
            s->buf = NULL;
            continue;
        }
        s->fd = fds[i][0];
        s->len = 0;
        fcntl(s->fd, F_SETFL, O_NONBLOCK); /* our end only: the child's stays blocking */
    }
    if (!err) {
        p->pid = pid;
        p->running = 1;
    }
    return err;
}

/* ---- Supervision ------------------------------------------------------- */

static void terminate(struct proc *p, int64_t now)
{
    if (!p->running || p->signalled)
        return;
    kill(p->pid, SIGTERM);
    p->signalled = 1;
    p->term_at = now;
}

/* Begin tearing the job down; the first reason decides the exit code. */
static void stop(struct launch *L, int code, int64_t now)
{
    if (!L->stopping) {
        L->stopping = 1;
        L->exit_code = code;
    }
    for (int r = 0; r < L->nstarted; r++)
        terminate(&L->procs[1 + r], now);
}

static int check_timeout(struct launch *L, int64_t now)
{
    if (!L->deadline || L->timed_out || now < L->deadline)
        return 0;
    L->timed_out = 1;
    note("timeout of %g s exceeded; stopping the job", (double)L->o.timeout_ms / 1000.0);
    stop(L, 124, now);
    terminate(&L->procs[SWITCH_SLOT], now);
    return 1;
}

static void reap(struct launch *L, int64_t now)
{
    int status;
    pid_t pid;
    char what[64];
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct proc *p = NULL;
        for (int i = 0; i < MAX_PROCS && !p; i++)
            if (L->procs[i].running && L->procs[i].pid == pid)
                p = &L->procs[i];
        if (!p)
            continue;
        p->running = 0;
        proc_drain(p); /* its last words come before our verdict on it */
        describe_status(status, what, sizeof what);
        if (p == &L->procs[SWITCH_SLOT]) {
            if (!p->signalled)
                note("switch (pid %d) %s %s", (int)pid, what,
                     L->nstarted ? "while ranks were running; they will time out"
                                 : "before reporting its port");
            else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
                     !(WIFSIGNALED(status) && WTERMSIG(status) == (p->killed ? SIGKILL : SIGTERM)))
                note("switch (pid %d) %s on shutdown", (int)pid, what);
        } else if (status != 0 && !p->signalled) {
            note("%s %s", p->name, what);
            stop(L, exit_code_of(status), now);
        }
    }
}

static void on_signal(struct launch *L, int sig, int64_t now)
{
    if (++L->signals_seen == 1) {
        note("got %s; stopping the job", signame(sig));
        stop(L, 128 + sig, now);
        terminate(&L->procs[SWITCH_SLOT], now);
        return;
    }
    /* A second signal means "now": SIGKILL at the next escalate(). */
    note("got %s again; killing every process it started", signame(sig));
    stop(L, 128 + sig, now);
    for (int i = 0; i < MAX_PROCS; i++) {
        struct proc *p = &L->procs[i];
        if (p->running && !p->killed) {
            terminate(p, now);
            p->term_at = now - KILL_GRACE_MS;
        }
    }
}

/* SIGKILL what outlived its grace period; give up on what outlived that.
 * Returns the next time something is due (INT64_MAX: nothing). */
static int64_t escalate(struct launch *L, int64_t now)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < MAX_PROCS; i++) {
        struct proc *p = &L->procs[i];
        if (!p->running || !p->signalled)
            continue;
        if (!p->killed && now >= p->term_at + KILL_GRACE_MS) {
            note("%s (pid %d) still running %d ms after SIGTERM; sending SIGKILL", p->name,
                 (int)p->pid, (int)(now - p->term_at));
            kill(p->pid, SIGKILL);
            p->killed = 1;
        }
        if (p->killed && now >= p->term_at + KILL_GRACE_MS + REAP_MAX_MS) {
            note("%s (pid %d) survived SIGKILL; giving up on it", p->name, (int)p->pid);
            p->running = 0;
            for (int k = 0; k < 2; k++)
                stream_close(p, &p->io[k]);
            continue;
        }
        int64_t due = p->term_at + KILL_GRACE_MS + (p->killed ? REAP_MAX_MS : 0);
        if (due < next)
            next = due;
    }
    if (L->deadline && !L->timed_out && L->deadline < next)
        next = L->deadline;
    return next;
}

/* Wait up to timeout_ms for output, signals or exits, and handle them. */
static void poll_once(struct launch *L, int timeout_ms)
{
    struct pollfd pfd[1 + 2 * MAX_PROCS];
    struct proc *owner[1 + 2 * MAX_PROCS];
    struct stream *stream[1 + 2 * MAX_PROCS];
    int n = 0;
    pfd[n++] = (struct pollfd){.fd = L->sigfd, .events = POLLIN};
    for (int i = 0; i < MAX_PROCS; i++)
        for (int k = 0; k < 2; k++)
            if (L->procs[i].io[k].fd >= 0) {
                owner[n] = &L->procs[i];
                stream[n] = &L->procs[i].io[k];
                pfd[n] = (struct pollfd){.fd = stream[n]->fd, .events = POLLIN};
                n++;
            }
    if (poll(pfd, (nfds_t)n, timeout_ms) < 0)
        return; /* EINTR: our signals are blocked, so a stop or resume */
    for (int i = 1; i < n; i++)
        if (pfd[i].revents)
            stream_read(owner[i], stream[i]);
    if (pfd[0].revents & POLLIN) {
        struct signalfd_siginfo si;
        while (read(L->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
            if (si.ssi_signo != SIGCHLD)
                on_signal(L, (int)si.ssi_signo, now_ms());
    }
    /* Reap on every pass: SIGCHLD coalesces, and waitpid is cheap. */
    reap(L, now_ms());
}

static void supervise(struct launch *L)
{
    for (;;) {
        int64_t now = now_ms();
        check_timeout(L, now);
        int64_t next = escalate(L, now);
        int ranks_left = 0;
        for (int r = 0; r < L->nstarted; r++)
            ranks_left += L->procs[1 + r].running;
        if (!ranks_left) {
            /* The switch outlives the ranks so their shutdown never races it. */
            if (!L->procs[SWITCH_SLOT].running)
                return;
            if (!L->procs[SWITCH_SLOT].signalled) {
                terminate(&L->procs[SWITCH_SLOT], now);
                next = escalate(L, now);
            }
        }
        int64_t wait = next == INT64_MAX ? 1000 : next - now;
        poll_once(L, (int)(wait < 0 ? 0 : wait > 1000 ? 1000 : wait));
    }
}

/* ---- The embedded switch ----------------------------------------------- */

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
    char path[PATH_MAX], port_file[PATH_MAX + 8], job[64];
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
    if (L->o.elems || L->o.slots)
        k += snprintf(job + k, sizeof job - (size_t)k, ":%d",
                      L->o.elems ? L->o.elems : (int)SR_WIRE_DEF_ELEMS);
    if (L->o.slots)
        snprintf(job + k, sizeof job - (size_t)k, ":%d", L->o.slots);

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

int main(int argc, char **argv)
{
    static struct launch launch; /* ~10 KiB of procs: static, not stack */
    struct launch *L = &launch;
    sigset_t block;

    /* Pipes must not land on 0..2 if we were started with them closed. */
    for (int fd = open("/dev/null", O_RDWR); fd >= 0 && fd <= 2; fd = open("/dev/null", O_RDWR))
        ;
    parse_opts(argc, argv, &L->o);
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
    else if (start_switch(L))
        stop(L, 1, now_ms());
    if (!L->stopping)
        start_ranks(L);
    supervise(L);

    /* Whatever grandchildren still hold open is cut off here. */
    for (int i = 0; i < MAX_PROCS; i++) {
        proc_drain(&L->procs[i]);
        for (int k = 0; k < 2; k++)
            stream_close(&L->procs[i], &L->procs[i].io[k]);
    }
    remove_port_dir(L);
    if (L->nstarted) {
        double secs = (double)(now_ms() - L->t_ranks) / 1000.0;
        if (L->exit_code)
            note("%d ranks finished in %.2f s (exit status %d)", L->nstarted, secs, L->exit_code);
        else
            note("%d ranks finished in %.2f s", L->nstarted, secs);
    }
    return L->exit_code;
}
