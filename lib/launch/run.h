/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run.h - serene-run's private interface between its two halves:
 * serene_run.c (options, the embedded switch, the ranks, main) and
 * supervise.c (starting processes, relaying their output, supervising
 * them until the job ends). Nothing here is installed or linked elsewhere.
 */
#ifndef SERENE_LAUNCH_RUN_H
#define SERENE_LAUNCH_RUN_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/wire.h"
#include "serene/serene.h"

/* Largest --store: the switch's own limit (2^28 words, SR_PIPE_STORE_MAX). */
#define SR_RUN_STORE_MAX (1L << 28)

/* Slot 0 of launch.procs is the switch; rank r is procs[1 + r]. */
#define SWITCH_SLOT 0
#define MAX_PROCS (1 + (int)SR_WIRE_MAX_WORKERS)

struct stream {
    int fd;     /* read end of the child's pipe; -1 once closed */
    int out;    /* where its lines go: STDOUT_FILENO or STDERR_FILENO */
    size_t len; /* bytes of an unfinished line at the start of buf */
    char *buf;  /* LINE_MAX_BYTES */
};

struct proc {
    pid_t pid;           /* 0: never started */
    int running;         /* started, not yet reaped nor given up */
    int group;           /* its process group (id = pid) may have members */
    int signalled;       /* we sent SIGTERM: its exit is then expected */
    int killed;          /* we sent SIGKILL */
    int64_t term_at;     /* when SIGTERM went out (monotonic ms) */
    int ended;           /* reaped: status and end_ms say how and when */
    int status;          /* its wait status, once ended */
    int64_t end_ms;      /* when it was reaped, ms after the ranks started */
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
    int slots; /* -1: the switch's default; 0: no allreduce slots */
    long store; /* words of the job's store; -1: the switch's default */
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
    int tty_fg;         /* stdin is our terminal, we are its foreground: rank 0's
                         * group takes it over, and we take it back */
    int stopping;       /* the job is being torn down */
    int exit_code;      /* valid once stopping, or 0 */
    int timed_out;
    int signals_seen;
    int64_t deadline;   /* --timeout, monotonic ms; 0: none */
    int64_t t_ranks;    /* when the first rank started */
    /* The first rank to end while others still ran and before any stop,
     * and the ranks still running then: when the job later fails, the
     * likely cause (a rank that returns early leaves its peers waiting
     * until they time out, and the first of them is what stops the job).
     * -1: none yet. */
    int first_end;
    uint64_t first_end_others;
    uint32_t nonce;
    char port_dir[PATH_MAX]; /* private temp dir holding the port file */
    char switch_addr[SERENE_ADDR_MAX];
};

/* ---- serene_run.c ------------------------------------------------------ */

/* "serene-run: MESSAGE\n" on stderr, in one write. */
__attribute__((format(printf, 1, 2))) void note(const char *fmt, ...);

/* ---- supervise.c ------------------------------------------------------- */

/* CLOCK_MONOTONIC in milliseconds. */
int64_t now_ms(void);

/* Relay what is left in s, close it and free its buffer; no-op if closed. */
void stream_close(const struct proc *p, struct stream *s);
/* Relay what a reaped child left in its pipes (bounded). */
void proc_drain(struct proc *p);

/* Fork and exec file (PATH lookup if it has no '/') with its stdout and
 * stderr on fresh pipes, in a process group of its own (id = its pid),
 * which keep_stdin with L->tty_fg makes the terminal's foreground group.
 * Returns 0, a positive errno the exec failed with, or a negative errno
 * from our own calls (malloc, pipe, fork). */
int spawn(struct launch *L, struct proc *p, const char *file, char *const argv[],
          char *const envp[], int keep_stdin);

/* Begin tearing the job down; the first reason decides the exit code. */
void stop(struct launch *L, int code, int64_t now);
/* Stop the job if --timeout has passed; returns 1 the first time it does. */
int check_timeout(struct launch *L, int64_t now);
/* Wait up to timeout_ms for output, signals or exits, and handle them. */
void poll_once(struct launch *L, int timeout_ms);
/* Give the terminal back to our own process group (L->tty_fg). */
void tty_take_back(struct launch *L);
/* Relay and supervise until every started process is reaped or given up,
 * and every process group we started is empty or given up. */
void supervise(struct launch *L);
/* After a failed job: if its first rank to end did so with status 0 while
 * others still ran, name it as the likely cause, then how the others ended. */
void report_first_end(const struct launch *L);

#endif /* SERENE_LAUNCH_RUN_H */
