/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp_io.c - recvmmsg/sendmmsg bursts over one preallocated socket (see
 * udp_io.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "udp_io.h"

/* One byte more than the largest valid message: a longer datagram still
 * arrives too long, so the parser rejects it instead of accepting a
 * truncated prefix. */
#define RX_BUF_LEN (SR_WIRE_MAX_MSG + 1u)

/* Socket buffers for bursts of a few windows of jumbo messages; the kernel
 * caps the request at net.core.[rw]mem_max, which is fine. */
#define SOCK_BUF_BYTES (8 << 20)

struct sr_udp {
    int fd;

    struct mmsghdr rx_msg[SR_UDP_BURST];
    struct iovec rx_iov[SR_UDP_BURST];
    struct sockaddr_in rx_addr[SR_UDP_BURST];
    uint8_t rx_buf[SR_UDP_BURST][RX_BUF_LEN];

    unsigned n_tx;
    struct mmsghdr tx_msg[SR_UDP_BURST];
    struct iovec tx_iov[SR_UDP_BURST];
    struct sockaddr_in tx_addr[SR_UDP_BURST];
    uint8_t tx_buf[SR_UDP_BURST][SR_WIRE_MAX_MSG];

    sr_udp_counters c;
};

int sr_udp_open(sr_udp **out, uint32_t ip, uint16_t port)
{
    struct sockaddr_in sa;
    int buf = SOCK_BUF_BYTES;
    sr_udp *u;
    int err;

    u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (u->fd < 0) {
        err = -errno;
        free(u);
        return err;
    }
    /* Best effort: a smaller buffer only means earlier drops under load. */
    (void)setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    (void)setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);

    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(ip);
    sa.sin_port = htons(port);
    if (bind(u->fd, (const struct sockaddr *)&sa, sizeof sa) < 0) {
        err = -errno;
        close(u->fd);
        free(u);
        return err;
    }

    /* The headers point at the fixed buffers once and for all. */
    for (unsigned i = 0; i < SR_UDP_BURST; i++) {
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
    *out = u;
    return 0;
}

void sr_udp_close(sr_udp **pu)
{
    sr_udp *u;

    if (!pu || !*pu)
        return;
    u = *pu;
    sr_udp_flush(u);
    close(u->fd);
    free(u);
    *pu = NULL;
}

int sr_udp_fd(const sr_udp *u)
{
    return u->fd;
}

int sr_udp_local(const sr_udp *u, uint32_t *ip, uint16_t *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    if (getsockname(u->fd, (struct sockaddr *)&sa, &len) < 0)
        return -errno;
    *ip = ntohl(sa.sin_addr.s_addr);
    *port = ntohs(sa.sin_port);
    return 0;
}

int sr_udp_recv(sr_udp *u)
{
    int n;

    /* recvmmsg writes msg_namelen and msg_flags back: reset per call. */
    for (unsigned i = 0; i < SR_UDP_BURST; i++) {
        u->rx_msg[i].msg_hdr.msg_name = &u->rx_addr[i];
        u->rx_msg[i].msg_hdr.msg_namelen = sizeof u->rx_addr[i];
        u->rx_msg[i].msg_hdr.msg_flags = 0;
    }
    do
        n = recvmmsg(u->fd, u->rx_msg, SR_UDP_BURST, MSG_DONTWAIT, NULL);
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

const uint8_t *sr_udp_rx(const sr_udp *u, unsigned i, size_t *len, sr_peer *src)
{
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

void sr_udp_send(sr_udp *u, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                 const uint8_t *payload, size_t plen)
{
    unsigned k;

    if (hlen + plen > SR_WIRE_MAX_MSG) {
        u->c.tx_errors++;
        return;
    }
    if (u->n_tx == SR_UDP_BURST)
        sr_udp_flush(u);
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

void sr_udp_flush(sr_udp *u)
{
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

void sr_udp_counters_get(const sr_udp *u, sr_udp_counters *c)
{
    *c = u->c;
}
