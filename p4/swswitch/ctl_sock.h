/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_sock.h - serene-switch's control socket (--control PATH): a Unix
 * stream socket serviced from the daemon's poll loop.
 *
 * Each connection carries one command line (control.h) and gets one reply
 * line, then the switch closes it. Everything is non-blocking and bounded,
 * so the data path never waits on a client:
 * - at most SR_CTLS_MAX_CONNS connections at once; more wait in the
 *   listen backlog (the listening socket is not polled while all are busy);
 * - a connection must deliver its line within SR_CTLS_DEADLINE_NS of being
 *   accepted, else it gets "error timeout ..." and is closed;
 * - a line longer than SR_CTL_LINE_MAX gets an error and a close; a line
 *   ended by EOF instead of a newline is run too;
 * - the reply (at most SR_CTL_REPLY_MAX bytes) is written once without
 *   blocking: a client that does not read loses it, never the switch.
 * Single-threaded; no allocation after sr_ctls_open.
 */
#ifndef SERENE_SWSWITCH_CTL_SOCK_H
#define SERENE_SWSWITCH_CTL_SOCK_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "pipeline.h"

#define SR_CTLS_MAX_CONNS 4
#define SR_CTLS_DEADLINE_NS 1000000000ull /* 1 s per connection */
#define SR_CTLS_NFDS (1 + SR_CTLS_MAX_CONNS) /* pollfds: listener, then connections */

typedef struct sr_ctls_counters {
    uint64_t accepted; /* connections */
    uint64_t commands; /* lines run (ok or error replies) */
    uint64_t timeouts; /* connections closed at their deadline */
    uint64_t too_long; /* lines over SR_CTL_LINE_MAX */
} sr_ctls_counters;

typedef struct sr_ctls_conn {
    int fd;            /* -1: free */
    uint64_t deadline; /* monotonic ns */
    size_t len;
    char line[SR_CTL_LINE_MAX + 1];
} sr_ctls_conn;

typedef struct sr_ctls {
    int active; /* opened and not closed: lfd, conn[] and path are valid */
    int lfd;
    char path[108];
    sr_ctls_conn conn[SR_CTLS_MAX_CONNS];
    sr_ctls_counters c;
} sr_ctls;

/* Longest path accepted (sockaddr_un's sun_path, NUL included). */
#define SR_CTLS_PATH_MAX 107

/* Listen on path. A socket file left there by a process that is gone is
 * replaced; a live one (a connect succeeds), or a file that is not a
 * socket, is left alone. Returns 0, -ENAMETOOLONG, -EADDRINUSE (live),
 * -EEXIST (not a socket) or another -errno; on error c holds nothing to
 * close (sr_ctls_close is still safe). */
int sr_ctls_open(sr_ctls *c, const char *path);

/* Close every connection and the listener, and remove the socket file.
 * Safe on a zeroed struct after a failed open, and twice. */
void sr_ctls_close(sr_ctls *c);

/* Fill pfd[SR_CTLS_NFDS] for poll: fd -1 (ignored by poll) where nothing
 * is to be watched. */
void sr_ctls_pollfds(const sr_ctls *c, struct pollfd *pfd);

/* The earliest connection deadline, UINT64_MAX if none. */
uint64_t sr_ctls_next_due(const sr_ctls *c);

/* After poll: accept, read, run commands on p, reply and close, and expire
 * connections past their deadline at now. pfd as filled by
 * sr_ctls_pollfds, with revents from poll (all zero: only expire). */
void sr_ctls_service(sr_ctls *c, const struct pollfd *pfd, uint64_t now, sr_pipe *p);

#endif /* SERENE_SWSWITCH_CTL_SOCK_H */
