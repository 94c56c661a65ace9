/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp.c - the udp transport: one kernel UDP socket connected to the switch.
 *
 * connect() makes the kernel drop datagrams from any other source, so only
 * the switch can reach the engine. Sends and receives are batched with
 * sendmmsg/recvmmsg; the socket is non-blocking and waits use poll() on it
 * and the context's wake descriptor. Socket buffers are enlarged because a
 * full window of packets, and its multicast answer, arrive in one burst.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/transport.h"

#define UDP_SOCKBUF (8 << 20)

typedef struct udp_state {
    int fd;
    const sr_log *log;
    struct mmsghdr rx[SR_TP_BURST];
    struct iovec rxiov[SR_TP_BURST];
    struct mmsghdr tx[SR_TP_BURST];
} udp_state;

static void udp_close(void *state)
{
    udp_state *u = state;
    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    free(u);
}

static int udp_open(void **state, const serene_config *cfg, const sr_log *log)
{
    struct sockaddr_in peer, local;
    int rc = sr_parse_hostport(cfg->switch_addr, -1, &peer, log);
    if (rc)
        return rc;
    if (peer.sin_port == 0) {
        SR_ERR(log, "switch address \"%s\": port 0 is not a valid destination", cfg->switch_addr);
        return SERENE_ERR_CONFIG;
    }
    if ((rc = sr_parse_hostport(cfg->bind_addr[0] ? cfg->bind_addr : ":0", 0, &local, log)))
        return rc;
    udp_state *u = calloc(1, sizeof *u);
    if (!u)
        return SERENE_ERR_NOMEM;
    u->log = log;
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        SR_ERR(log, "udp: socket: %s", strerror(errno));
        free(u);
        return SERENE_ERR_TRANSPORT;
    }
    int sz = UDP_SOCKBUF;
    /* Best effort: the kernel caps these at rmem_max/wmem_max. */
    (void)setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    (void)setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    if (bind(u->fd, (struct sockaddr *)&local, sizeof local) ||
        connect(u->fd, (struct sockaddr *)&peer, sizeof peer)) {
        SR_ERR(log, "udp: cannot bind %s / connect to %s: %s",
               cfg->bind_addr[0] ? cfg->bind_addr : "any", cfg->switch_addr, strerror(errno));
        udp_close(u);
        return SERENE_ERR_TRANSPORT;
    }
    *state = u;
    return 0;
}

static int udp_send(void *state, const struct iovec *msgs, unsigned n)
{
    udp_state *u = state;
    if (n > SR_TP_BURST)
        n = SR_TP_BURST;
    for (unsigned i = 0; i < n; i++) {
        memset(&u->tx[i].msg_hdr, 0, sizeof u->tx[i].msg_hdr);
        u->tx[i].msg_hdr.msg_iov = (struct iovec *)&msgs[i];
        u->tx[i].msg_hdr.msg_iovlen = 1;
    }
    unsigned done = 0;
    while (done < n) {
        int k = sendmmsg(u->fd, u->tx + done, n - done, MSG_DONTWAIT);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            /* A full queue, or an ICMP error from an earlier datagram (the
             * switch is not up yet): the packets count as lost. */
            if (errno == EAGAIN || errno == ECONNREFUSED || errno == ENOBUFS)
                return (int)done;
            return -errno;
        }
        done += (unsigned)k;
    }
    return (int)done;
}

static int udp_recv(void *state, uint8_t *const *bufs, uint32_t *lens, unsigned n, uint32_t cap,
                    uint64_t *truncated)
{
    udp_state *u = state;
    if (n > SR_TP_BURST)
        n = SR_TP_BURST;
    for (unsigned i = 0; i < n; i++) {
        u->rxiov[i].iov_base = bufs[i];
        u->rxiov[i].iov_len = cap;
        memset(&u->rx[i].msg_hdr, 0, sizeof u->rx[i].msg_hdr);
        u->rx[i].msg_hdr.msg_iov = &u->rxiov[i];
        u->rx[i].msg_hdr.msg_iovlen = 1;
    }
    for (;;) {
        int k = recvmmsg(u->fd, u->rx, n, MSG_DONTWAIT, NULL);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == ECONNREFUSED)
                return 0;
            return -errno;
        }
        for (int i = 0; i < k; i++) {
            lens[i] = u->rx[i].msg_len;
            if (u->rx[i].msg_hdr.msg_flags & MSG_TRUNC) {
                (*truncated)++;
                lens[i] = 0;
            }
        }
        return k;
    }
}

static int udp_wait(void *state, int64_t timeout_ns, int wake_fd)
{
    udp_state *u = state;
    struct pollfd p[2] = {{.fd = u->fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
    int ms;
    if (timeout_ns < 0)
        ms = -1;
    else
        ms = (int)((timeout_ns + 999999) / 1000000); /* round up: never spin early */
    int k = poll(p, wake_fd >= 0 ? 2 : 1, ms);
    if (k < 0 && errno != EINTR)
        return -errno;
    return 0;
}

/* After connect() the kernel has chosen the source address even for a
 * socket bound to INADDR_ANY, so these are the addresses on the wire. */
static int udp_addrs(void *state, struct sockaddr_in *local, struct sockaddr_in *peer)
{
    udp_state *u = state;
    socklen_t ll = sizeof *local, pl = sizeof *peer;
    if (getsockname(u->fd, (struct sockaddr *)local, &ll) ||
        getpeername(u->fd, (struct sockaddr *)peer, &pl))
        return -errno;
    return 0;
}

const sr_transport sr_transport_udp = {
    .name = "udp",
    .open = udp_open,
    .close = udp_close,
    .send = udp_send,
    .recv = udp_recv,
    .wait = udp_wait,
    .addrs = udp_addrs,
};
