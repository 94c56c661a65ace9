/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_probe.c - a raw client of serene-switch's control socket for
 * test_ctl_sock.sh: it talks to the socket the way a careless or hostile
 * client would, which libserene-ctl's client never does.
 *
 *   ctl_probe send PATH LINE
 *       connect, send LINE, then (50 ms later) its newline as a second
 *       write, read the reply line; LINE "@N" is N bytes of 'x'. Prints
 *       "reply: ..." and exits 0, or prints what failed ("connect: ...",
 *       "send: ...", "recv: ...", "no reply") and exits 1.
 *   ctl_probe idle PATH K LINE
 *       open K connections that send nothing and hold them, then time LINE
 *       on one more connection. Prints "connected=C reply: ... ms=M" and
 *       exits 0 when a reply came, 1 otherwise. K at most 1000.
 *
 * Every step is bounded (2 s per connect, send and reply).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define STEP_MS 2000
#define MAX_IDLE 1000

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A connected socket, or -1 after printing why. A full backlog (EAGAIN)
 * is retried until STEP_MS has passed. */
static int dial(const char *path)
{
    struct sockaddr_un sa;
    long long give_up = now_ms() + STEP_MS;

    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        printf("connect: path too long\n");
        return -1;
    }
    strcpy(sa.sun_path, path);
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (fd < 0) {
            printf("socket: %s\n", strerror(errno));
            return -1;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        int e = errno;

        close(fd);
        if (e != EAGAIN || now_ms() >= give_up) {
            printf("connect: %s\n", strerror(e));
            return -1;
        }
        usleep(1000);
    }
}

static int send_all(int fd, const char *buf, size_t len)
{
    long long give_up = now_ms() + STEP_MS;

    while (len) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);

        if (w > 0) {
            buf += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
            printf("send: %s\n", strerror(errno));
            return -1;
        }
        if (now_ms() >= give_up) {
            printf("send: timed out\n");
            return -1;
        }
        poll(&(struct pollfd){.fd = fd, .events = POLLOUT}, 1, 10);
    }
    return 0;
}

/* Read up to the newline or EOF into out[cap]; 0, or -1 after printing why. */
static int read_reply(int fd, char *out, size_t cap)
{
    long long give_up = now_ms() + STEP_MS;
    size_t got = 0;

    for (;;) {
        char c;
        ssize_t r = recv(fd, &c, 1, 0);

        if (r == 1 && c != '\n') {
            if (got + 1 < cap)
                out[got++] = c;
            continue;
        }
        if (r == 1 || r == 0)
            break;
        if (errno != EAGAIN && errno != EINTR) {
            printf("recv: %s\n", strerror(errno));
            return -1;
        }
        if (now_ms() >= give_up) {
            printf("recv: timed out\n");
            return -1;
        }
        poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, 10);
    }
    out[got] = '\0';
    if (!got) {
        printf("no reply\n");
        return -1;
    }
    return 0;
}

static int cmd_send(const char *path, const char *arg)
{
    char reply[4200], *line;
    int fd, rc = 1;

    if (arg[0] == '@') {
        size_t n = strtoul(arg + 1, NULL, 10);

        if (!(line = malloc(n + 1)))
            return 1;
        memset(line, 'x', n);
        line[n] = '\0';
    } else if (!(line = strdup(arg))) {
        return 1;
    }
    fd = dial(path);
    if (fd >= 0 && send_all(fd, line, strlen(line)) == 0) {
        usleep(50 * 1000); /* the switch sees the line before its end */
        if (send_all(fd, "\n", 1) == 0 && read_reply(fd, reply, sizeof reply) == 0) {
            printf("reply: %s\n", reply);
            rc = 0;
        }
    }
    if (fd >= 0)
        close(fd);
    free(line);
    return rc;
}

static int cmd_idle(const char *path, int k, const char *line)
{
    static int fds[MAX_IDLE];
    char reply[4200];
    int n = 0, fd, rc = 1;
    long long t0;

    for (; n < k; n++)
        if ((fds[n] = dial(path)) < 0)
            break;
    t0 = now_ms();
    fd = dial(path);
    if (fd >= 0 && send_all(fd, line, strlen(line)) == 0 && send_all(fd, "\n", 1) == 0 &&
        read_reply(fd, reply, sizeof reply) == 0) {
        printf("connected=%d reply: %s ms=%lld\n", n, reply, now_ms() - t0);
        rc = 0;
    }
    if (fd >= 0)
        close(fd);
    while (n > 0)
        close(fds[--n]);
    return rc;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[1], "send"))
        return cmd_send(argv[2], argv[3]);
    if (argc == 5 && !strcmp(argv[1], "idle") && atoi(argv[3]) >= 0 &&
        atoi(argv[3]) <= MAX_IDLE)
        return cmd_idle(argv[2], atoi(argv[3]), argv[4]);
    fprintf(stderr, "usage: ctl_probe send PATH LINE|@N\n"
                    "       ctl_probe idle PATH K LINE\n");
    return 2;
}
