/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_sock.c - the control socket's I/O (see ctl_sock.h): accept, read one
 * line with a deadline, run it through sr_ctl_exec, reply, close. Every
 * call is non-blocking; the work per wake-up is bounded by the number of
 * connections and the line length.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_sock.h"

_Static_assert(SR_CTLS_PATH_MAX + 1 == sizeof(((struct sockaddr_un *)0)->sun_path),
               "SR_CTLS_PATH_MAX follows sockaddr_un");
_Static_assert(sizeof(((sr_ctls *)0)->path) == SR_CTLS_PATH_MAX + 1, "path holds any path");

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

int sr_ctls_open(sr_ctls *c, const char *path)
{
    struct sockaddr_un sa;
    struct stat st;
    int fd, err;

    memset(c, 0, sizeof *c);
    c->lfd = -1;
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++)
        c->conn[i].fd = -1;
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
    if (bind(fd, (const struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(fd, SR_CTLS_MAX_CONNS * 2) < 0) {
        err = -errno;
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

static int free_conn(const sr_ctls *c)
{
    for (int i = 0; i < SR_CTLS_MAX_CONNS; i++)
        if (c->conn[i].fd < 0)
            return i;
    return -1;
}

void sr_ctls_pollfds(const sr_ctls *c, struct pollfd *pfd)
{
    memset(pfd, 0, SR_CTLS_NFDS * sizeof *pfd);
    for (unsigned i = 0; i < SR_CTLS_NFDS; i++)
        pfd[i].fd = -1;
    if (!c->active)
        return;
    /* All busy: leave newcomers in the backlog rather than spin on them. */
    if (free_conn(c) >= 0) {
        pfd[0].fd = c->lfd;
        pfd[0].events = POLLIN;
    }
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++) {
        pfd[1 + i].fd = c->conn[i].fd;
        pfd[1 + i].events = POLLIN;
    }
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
 * a client that cannot take it now loses it. Then close. */
static void reply_close(sr_ctls_conn *k, const char *text, size_t len)
{
    char buf[SR_CTL_REPLY_MAX + 1];

    if (len > SR_CTL_REPLY_MAX)
        len = SR_CTL_REPLY_MAX;
    memcpy(buf, text, len);
    buf[len] = '\n';
    (void)!send(k->fd, buf, len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    conn_close(k);
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
    for (;;) {
        size_t room = SR_CTL_LINE_MAX - k->len;
        ssize_t r;
        char *nl;

        if (room == 0) {
            static const char msg[] = "error command longer than 255 bytes";

            _Static_assert(SR_CTL_LINE_MAX == 256, "the message spells out the limit");
            c->c.too_long++;
            reply_close(k, msg, sizeof msg - 1);
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

void sr_ctls_service(sr_ctls *c, const struct pollfd *pfd, uint64_t now, sr_pipe *p)
{
    if (!c->active)
        return;
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++) {
        sr_ctls_conn *k = &c->conn[i];

        if (k->fd < 0 || pfd[1 + i].fd != k->fd)
            continue;
        if (pfd[1 + i].revents & (POLLIN | POLLHUP | POLLERR))
            conn_read(c, k, p);
    }
    for (unsigned i = 0; i < SR_CTLS_MAX_CONNS; i++) {
        sr_ctls_conn *k = &c->conn[i];
        static const char msg[] = "error timeout: no complete command line within 1 s";

        _Static_assert(SR_CTLS_DEADLINE_NS == 1000000000ull, "the message spells out the limit");
        if (k->fd >= 0 && now >= k->deadline) {
            c->c.timeouts++;
            reply_close(k, msg, sizeof msg - 1);
        }
    }
    if (pfd[0].fd >= 0 && (pfd[0].revents & POLLIN)) {
        int i;

        /* At most SR_CTLS_MAX_CONNS accepts per wake-up, even when each
         * line is answered at once and frees its connection again. */
        for (unsigned n = 0; n < SR_CTLS_MAX_CONNS && (i = free_conn(c)) >= 0; n++) {
            int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

            if (fd < 0)
                break; /* EAGAIN, or a client gone before we took it */
            c->conn[i].fd = fd;
            c->conn[i].len = 0;
            c->conn[i].deadline = now + SR_CTLS_DEADLINE_NS;
            c->c.accepted++;
            /* Often the line is there already: no extra poll round. */
            conn_read(c, &c->conn[i], p);
        }
    }
}
