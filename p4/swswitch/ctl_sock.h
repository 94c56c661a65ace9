/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_sock.h - serene-switch's control socket (--control PATH): a Unix
 * stream socket serviced from the daemon's poll loop.
 *
 * Who may use it (the socket changes jobs' policies and resets jobs, so it
 * is for the switch's owner only):
 * - the socket file is created with mode 0600, or 0660 and the group given
 *   (--ctl-group), never wider whatever the umask;
 * - each connection's peer credentials (SO_PEERCRED, taken at connect) are
 *   checked on accept: root, the switch's effective uid, and with a group
 *   the peers whose primary or supplementary groups (SO_PEERGROUPS) hold
 *   it. Anyone else gets "error permission denied ..." and a close (only
 *   the close when every connection slot is taken: a refused peer never
 *   evicts anyone).
 *
 * Each connection carries one command line (control.h) and gets one reply
 * line, then the switch closes it. Everything is non-blocking and bounded,
 * so the data path never waits on a client and no client starves another:
 * - every open connection is polled; at most SR_CTLS_MAX_CONNS are open at
 *   once, and a newcomer that finds them all taken evicts the oldest one
 *   ("error busy ..."), so idle clients cannot keep others out;
 * - at most SR_CTLS_ACCEPT_BURST accepts per wake-up;
 * - a connection must deliver its line within SR_CTLS_DEADLINE_NS of being
 *   accepted, else it gets "error timeout ..." and is closed;
 * - a line of SR_CTL_LINE_MAX bytes or more without its newline gets
 *   "error command longer than 255 bytes"; the rest of it is then read and
 *   dropped (at most SR_CTLS_DRAIN_MAX bytes, until the deadline) so that
 *   closing with unread input does not reset the connection and lose the
 *   reply. A line ended by EOF instead of a newline is run too;
 * - the reply (at most SR_CTL_REPLY_MAX bytes) is written once without
 *   blocking: a client that does not read loses it, never the switch.
 * Single-threaded; no allocation after sr_ctls_open.
 */
#ifndef SERENE_SWSWITCH_CTL_SOCK_H
#define SERENE_SWSWITCH_CTL_SOCK_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control.h"
#include "pipeline.h"

#define SR_CTLS_MAX_CONNS 128
#define SR_CTLS_ACCEPT_BURST 32
#define SR_CTLS_BACKLOG 256
#define SR_CTLS_DEADLINE_NS 1000000000ull /* 1 s per connection */
#define SR_CTLS_DRAIN_MAX 65536u /* input dropped after an early reply */
#define SR_CTLS_NFDS (1 + SR_CTLS_MAX_CONNS) /* pollfds: listener, then connections */

typedef struct sr_ctls_counters {
    uint64_t accepted; /* connections taken from the listener */
    uint64_t commands; /* lines run (ok or error replies) */
    uint64_t timeouts; /* connections closed at their deadline */
    uint64_t too_long; /* lines over SR_CTL_LINE_MAX */
    uint64_t refused;  /* peers whose credentials are not allowed */
    uint64_t evicted;  /* connections closed to make room for a newcomer */
} sr_ctls_counters;

enum { SR_CTLS_FREE, SR_CTLS_READ, SR_CTLS_DRAIN };

typedef struct sr_ctls_conn {
    int fd;            /* -1: free */
    int state;         /* SR_CTLS_* */
    uint64_t deadline; /* monotonic ns */
    size_t len;        /* READ: bytes in line; DRAIN: bytes dropped */
    char line[SR_CTL_LINE_MAX + 1];
} sr_ctls_conn;

/* Who may connect besides root and the switch's effective uid. */
typedef struct sr_ctls_access {
    int use_group; /* 0: nobody else, mode 0600 */
    gid_t group;   /* with use_group: its members too, mode 0660 */
} sr_ctls_access;

typedef struct sr_ctls {
    int active; /* opened and not closed: lfd, conn[] and path are valid */
    int lfd;
    char path[108];
    uid_t owner; /* the switch's effective uid at open */
    sr_ctls_access acc;
    unsigned n_pfd;                    /* entries of the last sr_ctls_pollfds */
    uint16_t slot_of[SR_CTLS_NFDS];    /* pollfd index -> conn (index 0: listener) */
    sr_ctls_conn conn[SR_CTLS_MAX_CONNS];
    sr_ctls_counters c;
} sr_ctls;

/* Longest path accepted (sockaddr_un's sun_path, NUL included). */
#define SR_CTLS_PATH_MAX 107

/* Listen on path with the file mode and peer rule of acc (NULL: owner
 * only, 0600). A socket file left there by a process that is gone is
 * replaced; a live one (a connect succeeds), or a file that is not a
 * socket, is left alone. Returns 0, -ENAMETOOLONG, -EADDRINUSE (live),
 * -EEXIST (not a socket), -EPERM (the group cannot be given to the file)
 * or another -errno; on error c holds nothing to close (sr_ctls_close is
 * still safe) and no socket file is left. */
int sr_ctls_open(sr_ctls *c, const char *path, const sr_ctls_access *acc);

/* Close every connection and the listener, and remove the socket file.
 * Safe on a zeroed struct after a failed open, and twice. */
void sr_ctls_close(sr_ctls *c);

/* Fill pfd[SR_CTLS_NFDS] for poll with the listener and every open
 * connection, packed; returns how many entries (0 when inactive). */
unsigned sr_ctls_pollfds(sr_ctls *c, struct pollfd *pfd);

/* The earliest connection deadline, UINT64_MAX if none. */
uint64_t sr_ctls_next_due(const sr_ctls *c);

/* After poll: accept, read, run commands on p, reply and close, and expire
 * connections past their deadline at now. pfd as filled by the last
 * sr_ctls_pollfds, with revents from poll (all zero: only expire). */
void sr_ctls_service(sr_ctls *c, const struct pollfd *pfd, uint64_t now, sr_pipe *p);

#endif /* SERENE_SWSWITCH_CTL_SOCK_H */
