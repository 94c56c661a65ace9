/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp.c - the udp transport: one kernel UDP socket connected to the switch.
 *
 * connect() makes the kernel drop datagrams from any other source, so only
 * the switch can reach the engine. The socket is non-blocking and waits
 * use poll() on it and the context's wake descriptor. Socket buffers are
 * enlarged because a full window of packets, and its multicast answer,
 * arrive in one burst.
 *
 * Fewer trips through the kernel per packet, where it has the options:
 * - Send: consecutive messages of one length (a window of slots; the last
 *   may be shorter) go as one UDP GSO train (UDP_SEGMENT: the kernel cuts
 *   it into datagrams), and the whole burst as one sendmmsg. Without GSO,
 *   one datagram per message in one sendmmsg.
 * - Receive: with UDP GRO, a train the switch sent (or a NIC coalesced)
 *   arrives as one datagram with its segment size, into the transport's
 *   own buffers, and is handed out message by message (copied into the
 *   caller's buffers). Without GRO, recvmmsg straight into them.
 * A kernel without these options is detected at open; a GSO send the
 * kernel refuses (a route through a device without checksum offload, an
 * MTU below the message) turns GSO off for the socket and is sent again
 * datagram by datagram. Both are counted and logged at close. The
 * datagrams on the wire are the same either way.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/udp_gso.h"
#include "transport/transport.h"

#define UDP_SOCKBUF (8 << 20)
#define GSO_SEGS_MAX 64u     /* datagrams per GSO send: UDP_MAX_SEGMENTS of older kernels */
#define GSO_BYTES_MAX 65000u /* bytes per GSO send, below the 65507 of one datagram */
#define GRO_LEN 65535u       /* a receive buffer with GRO: any UDP payload fits */

typedef union cmsg_buf {
    char buf[CMSG_SPACE(sizeof(int))]; /* UDP_GRO gives an int, UDP_SEGMENT takes a u16 */
    size_t align; /* a cmsghdr's alignment */
} cmsg_buf;

typedef struct udp_counters {
    uint64_t tx;          /* datagrams sent */
    uint64_t tx_gso;      /* GSO sends (each several datagrams) */
    uint64_t gso_refused; /* GSO sends the kernel refused (then GSO off) */
    uint64_t rx;          /* datagrams received (GRO segments each count) */
    uint64_t rx_gro;      /* received datagrams that carried several */
} udp_counters;

typedef struct udp_state {
    int fd;
    const sr_log *log;
    int gso, gro; /* offloads in use */
    int gso_ok;   /* GSO may be used (kernel, config, never refused) */
    struct mmsghdr rx[SR_TP_BURST];
    struct iovec rxiov[SR_TP_BURST];
    cmsg_buf rxctl[SR_TP_BURST];
    struct mmsghdr tx[SR_TP_BURST];
    cmsg_buf txctl[SR_TP_BURST];
    unsigned txsegs[SR_TP_BURST]; /* messages in tx[i] */
    /* GRO: SR_TP_BURST buffers of GRO_LEN; of the last recvmmsg, n_dg
     * datagrams, each of dg_len bytes cut at dg_seg, handed out up to
     * datagram cur_dg, byte cur_off. */
    uint8_t *gro_buf;
    unsigned n_dg, cur_dg;
    size_t cur_off;
    size_t dg_len[SR_TP_BURST], dg_seg[SR_TP_BURST];
    udp_counters c;
} udp_state;

static void udp_free(udp_state *u)
{
    if (u->fd >= 0)
        close(u->fd);
    free(u->gro_buf);
    free(u);
}

static void udp_close(void *state)
{
    udp_state *u = state;
    if (!u)
        return;
    SR_INFO(u->log,
            "udp: gso %s, gro %s; tx=%" PRIu64 " tx_gso=%" PRIu64 " gso_refused=%" PRIu64
            " rx=%" PRIu64 " rx_gro=%" PRIu64,
            u->gso ? "on" : "off", u->gro ? "on" : "off", u->c.tx, u->c.tx_gso, u->c.gso_refused,
            u->c.rx, u->c.rx_gro);
    udp_free(u);
}

/* Ask for the offloads; what the kernel refuses stays off. UDP_SEGMENT 0
 * ("no GSO by default") is a no-op that a kernel without GSO refuses: the
 * probe; each send asks for GSO with a control message. */
static void udp_offloads(udp_state *u)
{
    int one = 1, zero = 0;
    u->gso = setsockopt(u->fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof zero) == 0;
    u->gro = setsockopt(u->fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
    if (u->gro && !(u->gro_buf = malloc((size_t)SR_TP_BURST * GRO_LEN))) {
        /* Turn it off again: the kernel must not coalesce into buffers we lack. */
        (void)setsockopt(u->fd, SOL_UDP, UDP_GRO, &zero, sizeof zero);
        u->gro = 0;
    }
    SR_DEBUG(u->log, "udp: gso %s, gro %s", u->gso ? "on" : "off", u->gro ? "on" : "off");
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
        udp_free(u);
        return SERENE_ERR_TRANSPORT;
    }
    udp_offloads(u);
    if (cfg->udp_gso_off)
        u->gso = 0;
    u->gso_ok = u->gso;
    *state = u;
    return 0;
}

static int udp_trains(void *state, int on)
{
    udp_state *u = state;
    if (!u->gso_ok)
        return 0;
    u->gso = on;
    return 1;
}

/* ---- send ------------------------------------------------------------------- */

/* tx[] for msgs[0, n): one entry per GSO train (a run of messages of one
 * length, the last of it possibly shorter) or, without GSO, per message.
 * Returns the number of entries. */
static unsigned build_tx(udp_state *u, const struct iovec *msgs, unsigned n)
{
    unsigned m = 0;
    for (unsigned i = 0; i < n; m++) {
        size_t seg = msgs[i].iov_len, bytes = 0, last = seg;
        unsigned k = 0;
        do {
            last = msgs[i + k].iov_len;
            bytes += last;
            k++;
        } while (u->gso && i + k < n && seg > 0 && last == seg && k < GSO_SEGS_MAX &&
                 msgs[i + k].iov_len <= seg && bytes + msgs[i + k].iov_len <= GSO_BYTES_MAX);
        struct msghdr *mh = &u->tx[m].msg_hdr;
        memset(mh, 0, sizeof *mh);
        mh->msg_iov = (struct iovec *)&msgs[i];
        mh->msg_iovlen = k;
        u->txsegs[m] = k;
        if (k > 1) {
            uint16_t gs = (uint16_t)seg;
            mh->msg_control = u->txctl[m].buf;
            mh->msg_controllen = CMSG_SPACE(sizeof gs);
            struct cmsghdr *cm = CMSG_FIRSTHDR(mh);
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof gs);
            memcpy(CMSG_DATA(cm), &gs, sizeof gs);
        }
        i += k;
    }
    return m;
}

static int udp_send(void *state, const struct iovec *msgs, unsigned n)
{
    udp_state *u = state;
    if (n > SR_TP_BURST)
        n = SR_TP_BURST;
    unsigned done = 0;
    while (done < n) {
        unsigned m = build_tx(u, msgs + done, n - done);
        int k = sendmmsg(u->fd, u->tx, m, MSG_DONTWAIT);
        if (k < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            /* A full queue, or an ICMP error from an earlier datagram (the
             * switch is not up yet): the packets count as lost. */
            if (e == EAGAIN || e == EWOULDBLOCK || e == ECONNREFUSED || e == ENOBUFS)
                return (int)done;
            if (u->txsegs[0] > 1) {
                /* The kernel or the route's device cannot segment: the
                 * same datagrams again, one by one, from now on. */
                u->c.gso_refused++;
                u->gso = u->gso_ok = 0;
                SR_DEBUG(u->log, "udp: GSO refused (%s): off", strerror(e));
                continue;
            }
            return -e;
        }
        for (int j = 0; j < k; j++) {
            done += u->txsegs[j];
            u->c.tx += u->txsegs[j];
            u->c.tx_gso += u->txsegs[j] > 1;
        }
    }
    return (int)done;
}

/* ---- receive ---------------------------------------------------------------- */

/* recvmmsg into bufs (no GRO). */
static int recv_plain(udp_state *u, uint8_t *const *bufs, uint32_t *lens, unsigned n, uint32_t cap,
                      uint64_t *truncated)
{
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
        u->c.rx += (uint64_t)k;
        return k;
    }
}

/* The segment size of a GRO datagram, or its length for a plain one. */
static size_t gro_seg(struct msghdr *mh, size_t len)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
            int v;
            memcpy(&v, CMSG_DATA(cm), sizeof v);
            if (v > 0 && (size_t)v < len)
                return (size_t)v;
        }
    return len;
}

/* One recvmmsg into the GRO buffers. Returns the datagrams (0: none) or a
 * negative error code. */
static int gro_fill(udp_state *u)
{
    for (unsigned i = 0; i < SR_TP_BURST; i++) {
        u->rxiov[i].iov_base = u->gro_buf + (size_t)i * GRO_LEN;
        u->rxiov[i].iov_len = GRO_LEN;
        memset(&u->rx[i].msg_hdr, 0, sizeof u->rx[i].msg_hdr);
        u->rx[i].msg_hdr.msg_iov = &u->rxiov[i];
        u->rx[i].msg_hdr.msg_iovlen = 1;
        u->rx[i].msg_hdr.msg_control = u->rxctl[i].buf;
        u->rx[i].msg_hdr.msg_controllen = sizeof u->rxctl[i].buf;
    }
    int k;
    do
        k = recvmmsg(u->fd, u->rx, SR_TP_BURST, MSG_DONTWAIT, NULL);
    while (k < 0 && errno == EINTR);
    if (k < 0)
        return errno == EAGAIN || errno == ECONNREFUSED ? 0 : -errno;
    for (int i = 0; i < k; i++) {
        u->dg_len[i] = u->rx[i].msg_len;
        u->dg_seg[i] = gro_seg(&u->rx[i].msg_hdr, u->dg_len[i]);
        u->c.rx_gro += u->dg_seg[i] < u->dg_len[i];
    }
    u->n_dg = (unsigned)k;
    u->cur_dg = 0;
    u->cur_off = 0;
    return k;
}

/* Hand out the received messages, one recvmmsg at most per call. */
static int recv_gro(udp_state *u, uint8_t *const *bufs, uint32_t *lens, unsigned n, uint32_t cap,
                    uint64_t *truncated)
{
    unsigned got = 0;
    int filled = 0;
    while (got < n) {
        if (u->cur_dg == u->n_dg) {
            if (filled)
                break;
            int k = gro_fill(u);
            if (k <= 0)
                return got ? (int)got : k;
            filled = 1;
        }
        size_t len = u->dg_len[u->cur_dg], seg = u->dg_seg[u->cur_dg];
        size_t l = len - u->cur_off < seg ? len - u->cur_off : seg;
        if (l > cap) {
            (*truncated)++;
            lens[got] = 0;
        } else {
            memcpy(bufs[got], u->gro_buf + (size_t)u->cur_dg * GRO_LEN + u->cur_off, l);
            lens[got] = (uint32_t)l;
        }
        got++;
        u->c.rx++;
        u->cur_off += seg ? seg : 1; /* an empty datagram is one (empty) message */
        if (u->cur_off >= len) {
            u->cur_dg++;
            u->cur_off = 0;
        }
    }
    return (int)got;
}

static int udp_recv(void *state, uint8_t *const *bufs, uint32_t *lens, unsigned n, uint32_t cap,
                    uint64_t *truncated)
{
    udp_state *u = state;
    if (n > SR_TP_BURST)
        n = SR_TP_BURST;
    if (u->gro)
        return recv_gro(u, bufs, lens, n, cap, truncated);
    return recv_plain(u, bufs, lens, n, cap, truncated);
}

static int udp_wait(void *state, int64_t timeout_ns, int wake_fd)
{
    udp_state *u = state;
    struct pollfd p[2] = {{.fd = u->fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
    int ms;
    /* Messages already received and not handed out yet: no wait. */
    if (u->cur_dg < u->n_dg)
        return 0;
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
    .trains = udp_trains,
};
