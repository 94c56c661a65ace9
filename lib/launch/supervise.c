/* SPDX-License-Identifier: Apache-2.0 */
/*
 * supervise.c - serene-run's process handling: starting a child on fresh
 * pipes (spawn), relaying its output line by line behind its prefix, and
 * supervising the job: reaping, signals, --timeout and the SIGTERM ->
 * SIGKILL -> give-up escalation. It records how and when each rank ended,
 * so a failed job's report can name a rank that left early as the cause.
 * The invariants it keeps are listed at the top of serene_run.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

/* SIGTERM -> SIGKILL: long enough to flush logs and close sockets, short
 * enough that a failed job is reported while someone is still watching. */
#define KILL_GRACE_MS 3000
/* After SIGKILL only a process stuck in the kernel (D state) survives; we
 * report it and stop waiting rather than hang the launcher. */
#define REAP_MAX_MS 2000
/* Longest relayed line; longer ones are split so memory stays bounded. */
#define LINE_MAX_BYTES (64 * 1024)
/* Lines gathered into one writev (3 iovecs each, far below IOV_MAX). */
#define LINES_PER_WRITE 64

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

void stream_close(const struct proc *p, struct stream *s)
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
void proc_drain(struct proc *p)
{
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 64 && p->io[i].fd >= 0 && stream_read(p, &p->io[i]) > 0; k++)
            ;
}

/* ---- Starting processes ------------------------------------------------ */

/* Fork and exec file (PATH lookup if it has no '/') with its stdout and
 * stderr on fresh pipes. Returns 0, a positive errno the exec failed with,
 * or a negative errno from our own calls (malloc, pipe, fork). */
int spawn(struct launch *L, struct proc *p, const char *file, char *const argv[],
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
        /* Its own group, so what it starts is signalled with it. */
        setpgid(0, 0);
        if (keep_stdin && L->tty_fg) {
            /* A background group reading the terminal would be stopped
             * (SIGTTIN): hand it the terminal; SIGTTOU is blocked for the
             * call, as a background process must. */
            sigset_t ttou;
            sigemptyset(&ttou);
            sigaddset(&ttou, SIGTTOU);
            sigprocmask(SIG_BLOCK, &ttou, NULL);
            (void)tcsetpgrp(0, getpid());
        }
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
    if (pid > 0)
        setpgid(pid, pid); /* as the child does: whichever runs first; EACCES after its exec */
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
        p->group = 1;
    }
    return err;
}

void tty_take_back(struct launch *L)
{
    sigset_t ttou, old;

    if (!L->tty_fg)
        return;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    (void)tcsetpgrp(0, getpgrp());
    sigprocmask(SIG_SETMASK, &old, NULL);
    L->tty_fg = 0;
}

/* ---- Supervision ------------------------------------------------------- */

/* Does p's process group still have a member? Asked once its leader is
 * reaped. The answer cannot go stale before we signal it: the group's id
 * stays taken while it has a member, its orphans are our children (we are
 * their subreaper), and we reap nothing between asking and signalling.
 * Once empty, it is never signalled again. */
static int group_alive(struct proc *p)
{
    if (p->group && !p->running && kill(-p->pid, 0) < 0 && errno == ESRCH)
        p->group = 0;
    return p->group;
}

/* p, or what it started, still runs. */
static int proc_alive(struct proc *p)
{
    return p->running || group_alive(p);
}

/* Signal p's process group, or p alone if it left its group. */
static void signal_proc(struct proc *p, int sig)
{
    if (p->group && kill(-p->pid, sig) == 0)
        return;
    if (p->running)
        kill(p->pid, sig);
}

static void terminate(struct proc *p, int64_t now)
{
    if (p->signalled || !proc_alive(p))
        return;
    signal_proc(p, SIGTERM);
    p->signalled = 1;
    p->term_at = now;
}

/* Begin tearing the job down; the first reason decides the exit code. */
void stop(struct launch *L, int code, int64_t now)
{
    if (!L->stopping) {
        L->stopping = 1;
        L->exit_code = code;
    }
    for (int r = 0; r < L->nstarted; r++)
        terminate(&L->procs[1 + r], now);
}

int check_timeout(struct launch *L, int64_t now)
{
    if (!L->deadline || L->timed_out || now < L->deadline)
        return 0;
    L->timed_out = 1;
    note("timeout of %g s exceeded; stopping the job", (double)L->o.timeout_ms / 1000.0);
    stop(L, 124, now);
    terminate(&L->procs[SWITCH_SLOT], now);
    return 1;
}

_Static_assert(SR_WIRE_MAX_WORKERS <= 64, "first_end_others is one 64-bit word");

/* Remember how and when a rank ended; the first one to end while others
 * still run, unless we are already stopping the job, is kept as the
 * likely cause of a failure that follows. */
static void record_end(struct launch *L, struct proc *p, int status, int64_t now)
{
    int rank = (int)(p - &L->procs[1]);
    p->ended = 1;
    p->status = status;
    p->end_ms = now - L->t_ranks;
    if (L->first_end >= 0 || L->stopping)
        return;
    uint64_t others = 0;
    for (int r = 0; r < L->nstarted; r++)
        if (L->procs[1 + r].running)
            others |= UINT64_C(1) << r;
    if (others) {
        L->first_end = rank;
        L->first_end_others = others;
    }
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
        if (p == &L->procs[1]) /* rank 0: the terminal's, if anyone's */
            tty_take_back(L);
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
        } else {
            record_end(L, p, status, now);
            if (status != 0 && !p->signalled) {
                note("%s %s", p->name, what);
                stop(L, exit_code_of(status), now);
            }
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
        if (!p->killed && proc_alive(p)) {
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
        if (!p->signalled || !proc_alive(p))
            continue;
        if (!p->killed && now >= p->term_at + KILL_GRACE_MS) {
            note("%s (pid %d) %s %d ms after SIGTERM; sending SIGKILL", p->name, (int)p->pid,
                 p->running ? "still running" : "exited, but its process group still runs",
                 (int)(now - p->term_at));
            signal_proc(p, SIGKILL);
            p->killed = 1;
        }
        if (p->killed && now >= p->term_at + KILL_GRACE_MS + REAP_MAX_MS) {
            note("%s (pid %d) or its process group survived SIGKILL; giving up on it", p->name,
                 (int)p->pid);
            p->running = 0;
            p->group = 0;
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
void poll_once(struct launch *L, int timeout_ms)
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

void supervise(struct launch *L)
{
    for (;;) {
        int64_t now = now_ms();
        check_timeout(L, now);
        int64_t next = escalate(L, now);
        int ranks_left = 0, groups_left = 0;
        for (int r = 0; r < L->nstarted; r++)
            ranks_left += L->procs[1 + r].running;
        if (!ranks_left) {
            /* Nothing a rank started outlives the job: what is left in a
             * rank's group (a wrapper's worker, say) is stopped now. */
            for (int r = 0; r < L->nstarted; r++) {
                struct proc *p = &L->procs[1 + r];
                if (!p->signalled && group_alive(p))
                    note("%s (pid %d) exited and left processes in its group; stopping them",
                         p->name, (int)p->pid);
                terminate(p, now);
                groups_left += proc_alive(p);
            }
            /* The switch outlives the ranks so their shutdown never races it. */
            if (!groups_left && !proc_alive(&L->procs[SWITCH_SLOT]))
                return;
            if (!groups_left && !L->procs[SWITCH_SLOT].signalled)
                terminate(&L->procs[SWITCH_SLOT], now);
            next = escalate(L, now);
        }
        int64_t wait = next == INT64_MAX ? 1000 : next - now;
        poll_once(L, (int)(wait < 0 ? 0 : wait > 1000 ? 1000 : wait));
    }
}

/* ---- The report on a failed job ---------------------------------------- */

/* Append to buf (capacity cap, *len used). Four bytes always stay free so
 * that a piece that does not fit is replaced by "..."; *len = cap then
 * marks buf full, and later calls add nothing. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t cap, size_t *len,
                                                         const char *fmt, ...)
{
    if (*len >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n >= 0 && *len + (size_t)n + 4 <= cap) {
        *len += (size_t)n;
        return;
    }
    memcpy(buf + *len, "...", 4);
    *len = cap;
}

/* "rank 0 was" or "ranks 0,2-5 were". */
static void format_ranks(uint64_t set, char *buf, size_t cap)
{
    int count = __builtin_popcountll(set), first = 1;
    size_t len = 0;
    buf[0] = '\0';
    append(buf, cap, &len, "%s ", count > 1 ? "ranks" : "rank");
    for (int r = 0; r < 64; r++) {
        if (!(set >> r & 1) || (r > 0 && (set >> (r - 1) & 1)))
            continue; /* not in the set, or inside a run already written */
        int last = r;
        while (last < 63 && (set >> (last + 1) & 1))
            last++;
        if (last >= r + 2)
            append(buf, cap, &len, "%s%d-%d", first ? "" : ",", r, last);
        else if (last == r + 1)
            append(buf, cap, &len, "%s%d,%d", first ? "" : ",", r, last);
        else
            append(buf, cap, &len, "%s%d", first ? "" : ",", r);
        first = 0;
    }
    append(buf, cap, &len, " %s", count > 1 ? "were" : "was");
}

/* The exit we caused: SIGTERM from stop(), or SIGKILL from escalate(). */
static int stopped_by_us(const struct proc *p)
{
    return p->signalled && WIFSIGNALED(p->status) &&
           (WTERMSIG(p->status) == SIGTERM || (p->killed && WTERMSIG(p->status) == SIGKILL));
}

/* How the ranks other than `first` ended, in the order they ended: the
 * failures (their own exits) one by one, then a count of those we stopped. */
static void describe_others(const struct launch *L, int first, char *buf, size_t cap)
{
    int order[MAX_PROCS], n = 0, stopped = 0;
    for (int r = 0; r < L->nstarted; r++) {
        const struct proc *p = &L->procs[1 + r];
        if (r == first)
            continue;
        if (!p->ended || stopped_by_us(p)) {
            stopped++; /* signalled, or survived SIGKILL: already reported */
            continue;
        }
        int k = n++;
        for (; k > 0 && L->procs[1 + order[k - 1]].end_ms > p->end_ms; k--)
            order[k] = order[k - 1];
        order[k] = r;
    }
    size_t len = 0;
    char what[64];
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const struct proc *p = &L->procs[1 + order[i]];
        describe_status(p->status, what, sizeof what);
        append(buf, cap, &len, "%s%s %s after %.2f s", i ? ", " : "", p->name, what,
               (double)p->end_ms / 1000.0);
    }
    if (stopped)
        append(buf, cap, &len, "%s%d %s stopped by serene-run", n ? ", " : "", stopped,
               stopped > 1 ? "ranks" : "rank");
}

void report_first_end(const struct launch *L)
{
    if (!L->exit_code || L->first_end < 0)
        return;
    const struct proc *p = &L->procs[1 + L->first_end];
    if (p->status != 0)
        return; /* the first to end was the failure itself, reported as it ended */
    /* Sized so the whole note fits note()'s 1024-byte line; a longer list
     * ends in "..." (append) rather than being cut mid-word. */
    char what[64], running[256], rest[512];
    describe_status(p->status, what, sizeof what);
    format_ranks(L->first_end_others, running, sizeof running);
    describe_others(L, L->first_end, rest, sizeof rest);
    note("%s left first: it %s after %.2f s while %s still running, the likely cause of the "
         "failure%s%s",
         p->name, what, (double)p->end_ms / 1000.0, running, rest[0] ? "; then " : "", rest);
}
