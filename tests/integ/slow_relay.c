/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slow_relay.c - a slow switch stand-in for the pacing tests
 * (tests/integ/test_pace.sh): a UDP relay on loopback between workers and
 * serene-switch that serves at most --pps packets per second, both
 * directions together, from one FIFO queue of --queue packets, dropping
 * what arrives while the queue is full, as a software switch such as BMv2
 * serves a few thousand packets per second with a short queue. With
 * --drop-trains it also drops every UDP GSO train whole (it reads them
 * coalesced, UDP_GRO), as simple_switch's packet socket drops an uncut
 * train that crossed a veth pair.
 *
 *   slow_relay --to 127.0.0.1:PORT --port-file FILE [--pps N] [--queue N]
 *              [--drop-trains] [--max-seconds S]
 *
 * Workers send to the relay's port (written to --port-file once it
 * listens); each worker's address gets its own upstream socket, so the
 * switch sees one address per worker and its answers come back through
 * the relay to the worker they are for. On SIGTERM or SIGINT, or after
 * --max-seconds (default 300), it prints one line of counters
 *   relay: forwarded=F dropped_full=D dropped_trains=T workers=W
 * and exits 0. Exit status: 0; 1 a socket error; 2 bad usage.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "common/udp_gso.h"

#define MAX_PEERS 64
#define MAX_QUEUE 4096
#define MAX_DGRAM 65536

typedef struct pkt {
    int fd;                 /* the socket it leaves by */
    struct sockaddr_in dst; /* where it goes */
    uint32_t len;
    uint8_t *data;
} pkt;

typedef struct relay {
    int lfd;                       /* the workers' side */
    struct sockaddr_in sw;         /* the switch */
    int n;                         /* workers seen */
    struct sockaddr_in peer[MAX_PEERS];
    int ufd[MAX_PEERS];            /* each worker's upstream socket */
    pkt q[MAX_QUEUE];
    unsigned head, count, cap;
    double pps;
    int drop_trains;
    uint64_t forwarded, dropped_full, dropped_trains;
} relay;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    return *end || port < 1 || port > 65535 || inet_pton(AF_INET, host, &a->sin_addr) != 1 ? -1
                                                                                          : 0;
}

static int udp_socket(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("slow_relay: socket");
        exit(1);
    }
    return fd;
}

static void enqueue(relay *r, int fd, const struct sockaddr_in *dst, const uint8_t *data,
                    size_t len)
{
    if (r->count == r->cap) {
        r->dropped_full++;
        return;
    }
    pkt *p = &r->q[(r->head + r->count++) % r->cap];
    p->fd = fd;
    p->dst = *dst;
    p->len = (uint32_t)len;
    memcpy(p->data, data, len);
}

static int same(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/* One datagram from fd: with UDP_GRO, *segs > 1 means a coalesced train. */
static ssize_t recv_one(int fd, uint8_t *buf, struct sockaddr_in *from, int *segs)
{
    char ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {buf, MAX_DGRAM};
    struct msghdr mh = {.msg_name = from, .msg_namelen = sizeof *from, .msg_iov = &iov,
                        .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    ssize_t n = recvmsg(fd, &mh, 0);
    *segs = 1;
    if (n <= 0)
        return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int seg;
            memcpy(&seg, CMSG_DATA(c), sizeof seg);
            if (seg > 0 && n > seg)
                *segs = (int)((n + seg - 1) / seg);
        }
    }
    return n;
}

/* Everything readable now, into the queue. */
static void drain_inputs(relay *r, const struct pollfd *pf, uint8_t *buf)
{
    struct sockaddr_in from;
    int segs;
    ssize_t n;
    if (pf[0].revents & POLLIN) {
        while ((n = recv_one(r->lfd, buf, &from, &segs)) > 0) {
            if (r->drop_trains && segs > 1) {
                r->dropped_trains++;
                continue;
            }
            int k;
            for (k = 0; k < r->n && !same(&r->peer[k], &from); k++)
                ;
            if (k == r->n) {
                if (r->n == MAX_PEERS)
                    continue;
                r->peer[k] = from;
                r->ufd[k] = udp_socket();
                r->n++;
            }
            /* A train read whole (no --drop-trains) goes on as its datagrams. */
            size_t seg = segs > 1 ? ((size_t)n + (size_t)segs - 1) / (size_t)segs : (size_t)n;
            for (size_t off = 0; off < (size_t)n; off += seg)
                enqueue(r, r->ufd[k], &r->sw, buf + off,
                        (size_t)n - off < seg ? (size_t)n - off : seg);
        }
    }
    for (int k = 0; k < r->n; k++) {
        if (!(pf[1 + k].revents & POLLIN))
            continue;
        while ((n = recv_one(r->ufd[k], buf, &from, &segs)) > 0)
            enqueue(r, r->lfd, &r->peer[k], buf, (size_t)n);
    }
}

int main(int argc, char **argv)
{
    relay r = {.pps = 3000, .cap = 64};
    const char *port_file = NULL;
    double max_s = 300;
    int have_to = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--drop-trains")) {
            r.drop_trains = 1;
            continue;
        }
        if (!v)
            goto usage;
        i++;
        if (!strcmp(a, "--to"))
            have_to = parse_addr(v, &r.sw) == 0;
        else if (!strcmp(a, "--port-file"))
            port_file = v;
        else if (!strcmp(a, "--pps"))
            r.pps = atof(v);
        else if (!strcmp(a, "--queue"))
            r.cap = (unsigned)atoi(v);
        else if (!strcmp(a, "--max-seconds"))
            max_s = atof(v);
        else
            goto usage;
    }
    if (!have_to || !port_file || !(r.pps >= 1) || r.cap < 1 || r.cap > MAX_QUEUE || !(max_s > 0))
        goto usage;
    for (unsigned i = 0; i < r.cap; i++)
        if (!(r.q[i].data = malloc(MAX_DGRAM)))
            return 1;
    uint8_t *buf = malloc(MAX_DGRAM);
    if (!buf)
        return 1;
    r.lfd = udp_socket();
    int one = 1;
    /* Coalesced trains are what --drop-trains must see; without GRO the
     * kernel would cut them before we read. */
    if (setsockopt(r.lfd, SOL_UDP, UDP_GRO, &one, sizeof one) < 0 && r.drop_trains) {
        perror("slow_relay: UDP_GRO");
        return 1;
    }
    struct sockaddr_in me;
    socklen_t ml = sizeof me;
    getsockname(r.lfd, (struct sockaddr *)&me, &ml);
    FILE *pf = fopen(port_file, "w");
    if (!pf || fprintf(pf, "%u\n", ntohs(me.sin_port)) < 0 || fclose(pf)) {
        perror("slow_relay: port file");
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    double t_end = now_s() + max_s, next_tx = now_s(), gap = 1.0 / r.pps;
    struct pollfd fds[1 + MAX_PEERS];
    while (!stop && now_s() < t_end) {
        /* Serve the queue at pps: one packet per gap, no bursts. */
        double t = now_s();
        while (r.count && t >= next_tx) {
            pkt *p = &r.q[r.head];
            if (sendto(p->fd, p->data, p->len, 0, (struct sockaddr *)&p->dst, sizeof p->dst) >= 0)
                r.forwarded++;
            r.head = (r.head + 1) % r.cap;
            r.count--;
            next_tx = (next_tx > t - gap ? next_tx : t - gap) + gap;
        }
        if (!r.count && next_tx < t)
            next_tx = t;
        double wait = r.count ? next_tx - t : 0.05;
        if (wait < 0)
            wait = 0;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        fds[0] = (struct pollfd){.fd = r.lfd, .events = POLLIN};
        for (int k = 0; k < r.n; k++)
            fds[1 + k] = (struct pollfd){.fd = r.ufd[k], .events = POLLIN};
        if (ppoll(fds, (nfds_t)(1 + r.n), &ts, NULL) < 0 && errno != EINTR) {
            perror("slow_relay: poll");
            return 1;
        }
        drain_inputs(&r, fds, buf);
    }
    printf("relay: forwarded=%llu dropped_full=%llu dropped_trains=%llu workers=%d\n",
           (unsigned long long)r.forwarded, (unsigned long long)r.dropped_full,
           (unsigned long long)r.dropped_trains, r.n);
    return 0;
usage:
    fprintf(stderr, "usage: slow_relay --to HOST:PORT --port-file FILE [--pps N] [--queue N] "
                    "[--drop-trains] [--max-seconds S]\n");
    return 2;
}
