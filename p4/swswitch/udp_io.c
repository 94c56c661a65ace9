/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp_io.c - serene-switch's UDP socket, the I/O sw_io_udp (see sw_io.h):
 * bursts in with recvmmsg, bursts out with sendmmsg.
 *
 * One IPv4 socket. Every buffer is allocated when the socket is opened; no
 * call allocates afterwards. Receiving never blocks (the loop polls the
 * descriptor); sending may block briefly while the kernel's send buffer is
 * full, which paces the switch instead of dropping.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sw_io.h"

#define BURST 32 /* datagrams per recvmmsg / sendmmsg */

/* One byte more than the largest valid message: a longer datagram still
 * arrives too long, so the parser rejects it instead of accepting a
 * truncated prefix. */
#define RX_BUF_LEN (SR_WIRE_MAX_MSG + 1u)

/* Socket buffers for bursts of a few windows of jumbo messages; the kernel
 * caps the request at net.core.[rw]mem_max, which is fine. */
#define SOCK_BUF_BYTES (8 << 20)

typedef struct udp_counters {
    uint64_t rx;          /* datagrams received */
    uint64_t rx_oversize; /* of which longer than SR_WIRE_MAX_MSG (truncated, then rejected) */
    uint64_t rx_errors;   /* recvmmsg failures other than "nothing to read" */
    uint64_t tx;          /* datagrams handed to the kernel */
    uint64_t tx_errors;   /* datagrams the kernel refused */
} udp_counters;

typedef struct sr_udp {
    int fd;
    uint32_t ip; /* bound address and port, host byte order */
    uint16_t port;

    struct mmsghdr rx_msg[BURST];
    struct iovec rx_iov[BURST];
    struct sockaddr_in rx_addr[BURST];
    uint8_t rx_buf[BURST][RX_BUF_LEN];

    unsigned n_tx;
    struct mmsghdr tx_msg[BURST];
    struct iovec tx_iov[BURST];
    struct sockaddr_in tx_addr[BURST];
    uint8_t tx_buf[BURST][SR_WIRE_MAX_MSG];

    udp_counters c;
} sr_udp;

static void udp_flush(void *state);

/* Bind, then read back the address (the kernel's pick for port 0). */
static int udp_bind(sr_udp *u, uint32_t ip, uint16_t port, const char *listen, char *why)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(ip);
    sa.sin_port = htons(port);
    if (bind(u->fd, (const struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(why, SW_IO_WHY_MAX, "cannot bind udp %s: %s", listen, strerror(errno));
        return -1;
    }
    if (getsockname(u->fd, (struct sockaddr *)&sa, &len) < 0) {
        snprintf(why, SW_IO_WHY_MAX, "getsockname: %s", strerror(errno));
        return -1;
    }
    u->ip = ntohl(sa.sin_addr.s_addr);
    u->port = ntohs(sa.sin_port);
    return 0;
}

static int udp_open(void **state, const sw_io_params *par, char *why)
{
    int buf = SOCK_BUF_BYTES;
    sr_udp *u;

    u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(why, SW_IO_WHY_MAX, "cannot bind udp %s: %s", par->listen, strerror(ENOMEM));
        return -1;
    }
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        snprintf(why, SW_IO_WHY_MAX, "cannot bind udp %s: %s", par->listen, strerror(errno));
        free(u);
        return -1;
    }
    /* Best effort: a smaller buffer only means earlier drops under load. */
    (void)setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    (void)setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    if (udp_bind(u, par->ip, par->port, par->listen, why) < 0) {
        close(u->fd);
        free(u);
        return -1;
    }

    /* The headers point at the fixed buffers once and for all. */
    for (unsigned i = 0; i < BURST; i++) {
        u->rx_iov[i].iov_base = u->rx_buf[i];
        u->rx_iov[i].iov_len = RX_BUF_LEN;
        u->rx_msg[i].msg_hdr.msg_iov = &u->rx_iov[i];
        u->rx_msg[i].msg_hdr.msg_iovlen = 1;
        u->tx_iov[i].iov_base = u->tx_buf[i];
        u->tx_msg[i].msg_hdr.msg_iov = &u->tx_iov[i];
        u->tx_msg[i].msg_hdr.msg_iovlen = 1;
        u->tx_msg[i].msg_hdr.msg_name = &u->tx_addr[i];
        u->tx_msg[i].msg_hdr.msg_namelen = sizeof u->tx_addr[i];
    }
    *state = u;
    return 0;
}

static void udp_close(void *state)
{
    sr_udp *u = state;

    if (!u)
        return;
    udp_flush(u);
    close(u->fd);
    free(u);
}

static int udp_fd(const void *state)
{
    const sr_udp *u = state;

    return u->fd;
}

static void udp_local(const void *state, uint32_t *ip, uint16_t *port)
{
    const sr_udp *u = state;

    *ip = u->ip;
    *port = u->port;
}

static int udp_recv(void *state)
{
    sr_udp *u = state;
    int n;

    /* recvmmsg writes msg_namelen and msg_flags back: reset per call. */
    for (unsigned i = 0; i < BURST; i++) {
        u->rx_msg[i].msg_hdr.msg_name = &u->rx_addr[i];
        u->rx_msg[i].msg_hdr.msg_namelen = sizeof u->rx_addr[i];
        u->rx_msg[i].msg_hdr.msg_flags = 0;
    }
    do
        n = recvmmsg(u->fd, u->rx_msg, BURST, MSG_DONTWAIT, NULL);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        u->c.rx_errors++;
        return -errno;
    }
    u->c.rx += (uint64_t)n;
    for (int i = 0; i < n; i++)
        if (u->rx_msg[i].msg_hdr.msg_flags & MSG_TRUNC)
            u->c.rx_oversize++;
    return n;
}

static const uint8_t *udp_rx(const void *state, unsigned i, size_t *len, sr_peer *src)
{
    const sr_udp *u = state;
    const struct sockaddr_in *sa = &u->rx_addr[i];

    *len = u->rx_msg[i].msg_len;
    if (u->rx_msg[i].msg_hdr.msg_namelen >= sizeof *sa && sa->sin_family == AF_INET) {
        src->ip = ntohl(sa->sin_addr.s_addr);
        src->port = ntohs(sa->sin_port);
    } else {
        src->ip = 0;
        src->port = 0;
    }
    return u->rx_buf[i];
}

/* A datagram longer than SR_WIRE_MAX_MSG is refused and counted in
 * tx_errors. */
static void udp_send(void *state, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                     const uint8_t *payload, size_t plen)
{
    sr_udp *u = state;
    unsigned k;

    if (hlen + plen > SR_WIRE_MAX_MSG) {
        u->c.tx_errors++;
        return;
    }
    if (u->n_tx == BURST)
        udp_flush(u);
    k = u->n_tx++;
    if (hlen)
        memcpy(u->tx_buf[k], hdr, hlen);
    if (plen)
        memcpy(u->tx_buf[k] + hlen, payload, plen);
    u->tx_iov[k].iov_len = hlen + plen;
    memset(&u->tx_addr[k], 0, sizeof u->tx_addr[k]);
    u->tx_addr[k].sin_family = AF_INET;
    u->tx_addr[k].sin_addr.s_addr = htonl(dst->ip);
    u->tx_addr[k].sin_port = htons(dst->port);
}

static void udp_flush(void *state)
{
    sr_udp *u = state;
    unsigned i = 0;

    while (i < u->n_tx) {
        int n = sendmmsg(u->fd, u->tx_msg + i, u->n_tx - i, 0);

        if (n > 0) {
            u->c.tx += (uint64_t)n;
            i += (unsigned)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            /* sendmmsg reports an error only for the first datagram: skip
             * it (a peer without a route, say) and go on with the rest. */
            u->c.tx_errors++;
            i++;
        }
    }
    u->n_tx = 0;
}

static void udp_counters_format(const void *state, char *buf, size_t len)
{
    const udp_counters *c = &((const sr_udp *)state)->c;

    snprintf(buf, len,
             " udp_rx=%" PRIu64 " udp_rx_oversize=%" PRIu64 " udp_rx_errors=%" PRIu64
             " udp_tx=%" PRIu64 " udp_tx_errors=%" PRIu64,
             c->rx, c->rx_oversize, c->rx_errors, c->tx, c->tx_errors);
}

static void udp_describe(const void *state, char *buf, size_t len)
{
    const sr_udp *u = state;
    char addr[32];

    sw_io_addr_format(u->ip, u->port, addr, sizeof addr);
    snprintf(buf, len, "on udp %s", addr);
}

const sw_io_ops sw_io_udp = {
    .name = "udp",
    .burst = BURST,
    .open = udp_open,
    .close = udp_close,
    .fd = udp_fd,
    .local = udp_local,
    .recv = udp_recv,
    .rx = udp_rx,
    .send = udp_send,
    .flush = udp_flush,
    .counters = udp_counters_format,
    .describe = udp_describe,
};
