/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_sock.c - the control socket's I/O (see ctl_sock.h): create it with
 * its mode and group, accept with a peer-credential check, read one line
 * with a deadline, run it through sr_ctl_exec, reply, close. Every call is
 * non-blocking; the work per wake-up is bounded by the number of
 * connections, SR_CTLS_ACCEPT_BURST and the line length.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_sock.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13; older kernels answer ENOPROTOOPT */
#endif

/* Supplementary groups of a peer looked at; a peer in more is judged on
 * its primary group alone. */
#define PEER_GROUPS_MAX 1024

_Static_assert(SR_CTLS_PATH_MAX + 1 == sizeof(((struct sockaddr_un *)0)->sun_path),
               "SR_CTLS_PATH_MAX follows sockaddr_un");
_Static_assert(sizeof(((sr_ctls *)0)->path) == SR_CTLS_PATH_MAX + 1, "path holds any path");
_Static_assert(SR_CTLS_NFDS <= UINT16_MAX, "slot_of holds a slot");
_Static_assert(SR_CTLS_BACKLOG >= SR_CTLS_MAX_CONNS, "a full table's worth waits in the backlog");

static int make_addr(struct sockaddr_un *sa, const char *path)
{
    size_t len = strlen(path);

    if (len == 0 || len > SR_CTLS_PATH_MAX)
        return -ENAMETOOLONG;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, len);
    return 0;
}

/* Is something accepting connections at sa? */
static int alive(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), live;

    if (fd < 0)
        return 0;
    live = connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0;
    close(fd);
    return live;
}

/* Bind fd at sa with mode 0600 from the start (umask 0177 around bind:
 * nobody else can connect between bind and chmod), then give the file its
 * group and mode. The umask is the process's; the switch has one thread. */
static int bind_private(int fd, const struct sockaddr_un *sa, const sr_ctls_access *acc)
{
    mode_t old = umask(0177);
    int rc = bind(fd, (const struct sockaddr *)sa, sizeof *sa);

    umask(old);
    if (rc < 0)
        return -errno;
    if (acc->use_group && chown(sa->sun_path, (uid_t)-1, acc->group) < 0)
        rc = errno == EPERM ? -EPERM : -errno;
    else if (chmod(sa->sun_path, acc->use_group ? 0660 : 0600) < 0)
        rc = -errno;
    if (rc)
        unlink(sa->sun_path);
    return rc;
}

int sr_ctls_open(sr_ctls *c, const char *path, const sr_ctls_access *acc)
{
    static const sr_ctls_access owner_only = {0, 0};
    struct sockaddr_un sa;
    struct stat st;
    int fd, err;

    memset(c, 0, sizeof *c);
    c->lfd = -1;
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++)
        c->conn[i].fd = -1;
    c->acc = acc ? *acc : owner_only;
    c->owner = geteuid();
    err = make_addr(&sa, path);
    if (err)
        return err;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return -EEXIST;
        if (alive(&sa))
            return -EADDRINUSE;
        /* Left by a switch that is gone: ours to replace. */
        if (unlink(path) < 0 && errno != ENOENT)
            return -errno;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    err = bind_private(fd, &sa, &c->acc);
    if (!err && listen(fd, SR_CTLS_BACKLOG) < 0) {
        err = -errno;
        unlink(path);
    }
    if (err) {
        close(fd);
        return err;
    }
    c->lfd = fd;
    memcpy(c->path, sa.sun_path, sizeof c->path);
    c->active = 1;
    return 0;
}

static void conn_close(sr_ctls_conn *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    k->state = SR_CTLS_FREE;
    k->len = 0;
}

void sr_ctls_close(sr_ctls *c)
{
    if (!c || !c->active)
        return;
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++)
        conn_close(&c->conn[i]);
    close(c->lfd);
    c->lfd = -1;
    unlink(c->path);
    c->active = 0;
}

unsigned sr_ctls_pollfds(sr_ctls *c, struct pollfd *pfd)
{
    unsigned n = 0;

    c->n_pfd = 0;
    if (!c->active)
        return 0;
    /* Always: a newcomer evicts the oldest connection when all are taken. */
    c->slot_of[n] = 0;
    pfd[n++] = (struct pollfd){.fd = c->lfd, .events = POLLIN};
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++)
        if (c->conn[i].fd >= 0) {
            c->slot_of[n] = (uint16_t)i;
            pfd[n++] = (struct pollfd){.fd = c->conn[i].fd, .events = POLLIN};
        }
    c->n_pfd = n;
    return n;
}

uint64_t sr_ctls_next_due(const sr_ctls *c)
{
    uint64_t due = UINT64_MAX;

    if (!c->active)
        return due;
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++)
        if (c->conn[i].fd >= 0 && c->conn[i].deadline < due)
            due = c->conn[i].deadline;
    return due;
}

/* Write the reply and a newline in one go, without blocking or SIGPIPE;
 * a client that cannot take it now loses it. */
static void send_reply(sr_ctls_conn *k, const char *text, size_t len)
{
    char buf[SR_CTL_REPLY_MAX + 1];

    if (len > SR_CTL_REPLY_MAX)
        len = SR_CTL_REPLY_MAX;
    memcpy(buf, text, len);
    buf[len] = '\n';
    (void)!send(k->fd, buf, len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void reply_close(sr_ctls_conn *k, const char *text, size_t len)
{
    send_reply(k, text, len);
    conn_close(k);
}

/* Read and drop what a client still sends after an early reply, until it
 * closes, SR_CTLS_DRAIN_MAX bytes or the deadline: closing with unread
 * input would reset the connection and could lose the reply. */
static void conn_drain(sr_ctls_conn *k)
{
    for (int n = 0; n < 4; n++) {
        char junk[4096];
        ssize_t r = recv(k->fd, junk, sizeof junk, MSG_DONTWAIT);

        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (r <= 0 || (k->len += (size_t)r) >= SR_CTLS_DRAIN_MAX) {
            conn_close(k);
            return;
        }
    }
}

/* Reply now, before the client's input is all read: end our side, then
 * drop the rest of its input. */
static void reply_drain(sr_ctls_conn *k, const char *text, size_t len)
{
    send_reply(k, text, len);
    (void)shutdown(k->fd, SHUT_WR);
    k->state = SR_CTLS_DRAIN;
    k->len = 0;
    conn_drain(k);
}

static void run_line(sr_ctls *c, sr_ctls_conn *k, sr_pipe *p)
{
    char out[SR_CTL_REPLY_MAX];
    size_t n;

    k->line[k->len] = '\0';
    n = sr_ctl_exec(p, k->line, out, sizeof out);
    c->c.commands++;
    reply_close(k, out, n);
}

/* Read what is there. Runs the line once it has a newline or the client
 * shut down its side; refuses one that outgrows the buffer. */
static void conn_read(sr_ctls *c, sr_ctls_conn *k, sr_pipe *p)
{
    if (k->state == SR_CTLS_DRAIN) {
        conn_drain(k);
        return;
    }
    for (;;) {
        size_t room = SR_CTL_LINE_MAX - k->len;
        ssize_t r;
        char *nl;

        if (room == 0) {
            static const char msg[] = "error command longer than 255 bytes";

            _Static_assert(SR_CTL_LINE_MAX == 256, "the message spells out the limit");
            c->c.too_long++;
            reply_drain(k, msg, sizeof msg - 1);
            return;
        }
        r = recv(k->fd, k->line + k->len, room, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (r < 0) {
            conn_close(k);
            return;
        }
        if (r == 0) {
            if (k->len)
                run_line(c, k, p);
            else
                conn_close(k); /* connected and left: nothing to answer */
            return;
        }
        nl = memchr(k->line + k->len, '\n', (size_t)r);
        k->len += (size_t)r;
        if (nl) {
            k->len = (size_t)(nl - k->line); /* what follows the line is ignored */
            run_line(c, k, p);
            return;
        }
    }
}

/* May the peer on fd use the socket? Root, our uid, and with a group its
 * members (primary or supplementary group at connect time). */
static int peer_allowed(const sr_ctls *c, int fd, struct ucred *cr)
{
    gid_t groups[PEER_GROUPS_MAX];
    socklen_t len = sizeof *cr;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0 || len != sizeof *cr)
        return 0;
    if (cr->uid == 0 || cr->uid == c->owner)
        return 1;
    if (!c->acc.use_group)
        return 0;
    if (cr->gid == c->acc.group)
        return 1;
    len = sizeof groups;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
        return 0;
    for (size_t i = 0; i < len / sizeof *groups; i++)
        if (groups[i] == c->acc.group)
            return 1;
    return 0;
}

static int free_conn(const sr_ctls *c)
{
    for (int i = 0; i < SR_CTLS_MAX_CONNS; i++)
        if (c->conn[i].fd < 0)
            return i;
    return -1;
}

/* Make room: drop a connection that is only being drained, else answer
 * the oldest one (earliest deadline) "busy" and close it. Returns its slot. */
static int evict(sr_ctls *c)
{
    static const char msg[] = "error busy: all control connections taken; this one, the "
                              "oldest, was closed for a newer one";
    int old = 0;

    for (int i = 0; i < SR_CTLS_MAX_CONNS; i++) {
        if (c->conn[i].state == SR_CTLS_DRAIN) {
            old = i;
            break;
        }
        if (c->conn[i].deadline < c->conn[old].deadline)
            old = i;
    }
    c->c.evicted++;
    if (c->conn[old].state == SR_CTLS_DRAIN)
        conn_close(&c->conn[old]);
    else
        reply_close(&c->conn[old], msg, sizeof msg - 1);
    return old;
}

/* One connection from the listener; 0, or -1 when there is none. */
static int accept_one(sr_ctls *c, uint64_t now, sr_pipe *p)
{
    int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), i;
    struct ucred cr = {0, (uid_t)-1, (gid_t)-1};
    int ok;
    sr_ctls_conn *k;

    if (fd < 0)
        return -1; /* EAGAIN, or a client gone before we took it */
    c->c.accepted++;
    ok = peer_allowed(c, fd, &cr);
    i = free_conn(c);
    /* A refused peer never evicts anyone: it gets its answer and a close. */
    if (i < 0)
        i = ok ? evict(c) : -1;
    if (i < 0) {
        c->c.refused++;
        close(fd);
        return 0;
    }
    k = &c->conn[i];
    *k = (sr_ctls_conn){.fd = fd, .state = SR_CTLS_READ, .deadline = now + SR_CTLS_DEADLINE_NS};
    if (!ok) {
        char msg[128];
        int n = snprintf(msg, sizeof msg,
                         "error permission denied: uid %u may not use this control socket",
                         (unsigned)cr.uid);

        c->c.refused++;
        reply_drain(k, msg, (size_t)n);
        return 0;
    }
    /* Often the line is there already: no extra poll round. */
    conn_read(c, k, p);
    return 0;
}

void sr_ctls_service(sr_ctls *c, const struct pollfd *pfd, uint64_t now, sr_pipe *p)
{
    static const char late[] = "error timeout: no complete command line within 1 s";

    _Static_assert(SR_CTLS_DEADLINE_NS == 1000000000ull, "the message spells out the limit");
    if (!c->active)
        return;
    for (unsigned j = 1; j < c->n_pfd; j++) {
        sr_ctls_conn *k = &c->conn[c->slot_of[j]];

        if (k->fd >= 0 && pfd[j].fd == k->fd && (pfd[j].revents & (POLLIN | POLLHUP | POLLERR)))
            conn_read(c, k, p);
    }
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++) {
        sr_ctls_conn *k = &c->conn[i];

        if (k->fd < 0 || now < k->deadline)
            continue;
        if (k->state == SR_CTLS_DRAIN) {
            conn_close(k);
            continue;
        }
        c->c.timeouts++;
        reply_close(k, late, sizeof late - 1);
    }
    if (c->n_pfd && pfd[0].fd == c->lfd && (pfd[0].revents & POLLIN))
        for (unsigned n = 0; n < SR_CTLS_ACCEPT_BURST && accept_one(c, now, p) == 0; n++)
            ;
}
