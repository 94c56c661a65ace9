/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp_io.c - serene-switch's UDP socket, the I/O sw_io_udp (see sw_io.h):
 * bursts in with recvmmsg, bursts out with sendmmsg, with the kernel's UDP
 * offloads where it has them.
 *
 * - Receive, GRO (UDP_GRO): one datagram the kernel hands up may carry
 *   several messages of one size from one source (a worker's GSO train on
 *   loopback, or what a NIC coalesced); recv splits it back into messages.
 * - Send, replicas: a multicast's payload is written once into the send
 *   arena, and each replica is its own header followed by that one copy,
 *   joined by iovecs: no replica is built by copying the payload again.
 * - Send, GSO (UDP_SEGMENT): flush sends the queued messages destination by
 *   destination, each destination's in the order queued, and a run of
 *   equal-length messages to one destination (the last may be shorter)
 *   goes as one GSO datagram train: one trip through the stack. All of it
 *   is one sendmmsg per flush.
 * A kernel without these options is detected at open, and a GSO send the
 * kernel refuses (a device without checksum offload, a path MTU below the
 * message) is sent again datagram by datagram and turns GSO off for the
 * socket; both are counted. The datagrams on the wire are the same either
 * way.
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
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/udp_gso.h"
#include "sw_io.h"

#define RX_BATCH 32 /* datagrams per recvmmsg */

/* Without GRO, one byte more than the largest valid message: a longer
 * datagram still arrives too long, so the parser rejects it instead of
 * accepting a truncated prefix. With GRO, any UDP payload fits. */
#define RX_PLAIN_LEN (SR_WIRE_MAX_MSG + 1u)
#define RX_GRO_LEN 65535u
/* Messages one recv returns: a coalesced datagram carries at most 128
 * (UDP_MAX_SEGMENTS of recent kernels; GRO itself stops at 64). */
#define RX_MSGS_MAX (RX_BATCH * 128u)

#define TXQ_MAX 1024u          /* queued copies; also sendmmsg's limit (UIO_MAXIOV) */
#define TX_ARENA (2u << 20)    /* bytes the queued copies point into */
#define GSO_SEGS_MAX 64u       /* datagrams per GSO send: UDP_MAX_SEGMENTS of older kernels */
#define GSO_BYTES_MAX 65000u   /* bytes per GSO send, below the 65507 of one datagram */
#define DST_HASH 2048u         /* destination table: a power of 2, twice TXQ_MAX */

/* Socket buffers for bursts of a few windows of jumbo messages; the kernel
 * caps the request at net.core.[rw]mem_max, which is fine. */
#define SOCK_BUF_BYTES (8 << 20)

_Static_assert(SR_WIRE_MAX_MSG <= GSO_BYTES_MAX, "one message fits a GSO send");
_Static_assert((DST_HASH & (DST_HASH - 1)) == 0 && DST_HASH >= 2 * TXQ_MAX, "hash size");

typedef struct udp_counters {
    uint64_t rx;           /* messages received */
    uint64_t rx_oversize;  /* of which longer than SR_WIRE_MAX_MSG (rejected) */
    uint64_t rx_errors;    /* recvmmsg failures other than "nothing to read" */
    uint64_t rx_gro;       /* datagrams that carried more than one message */
    uint64_t rx_overflow;  /* messages dropped: more in one recv than RX_MSGS_MAX */
    uint64_t tx;           /* datagrams handed to the kernel */
    uint64_t tx_errors;    /* datagrams the kernel refused, or too long */
    uint64_t tx_gso;       /* GSO sends (each several datagrams) */
    uint64_t gso_refused;  /* GSO sends refused, then sent datagram by datagram */
} udp_counters;

/* One received message: a whole datagram, or one segment of a GRO one. */
typedef struct rx_msg {
    const uint8_t *data;
    uint32_t len;
    uint32_t dgram; /* index into rx_hdr / rx_addr: its source */
} rx_msg;

/* One queued copy: a then b (b may be empty), at offsets into the arena. */
typedef struct tx_ent {
    uint32_t a_off, a_len;
    uint32_t b_off, b_len;
    int32_t next; /* the next copy queued to the same destination, or -1 */
} tx_ent;

/* The copies queued to one destination, in order. */
typedef struct tx_dst {
    sr_peer peer;
    int32_t first, last;
} tx_dst;

typedef union cmsg_buf {
    char buf[CMSG_SPACE(sizeof(int))]; /* UDP_GRO gives an int, UDP_SEGMENT takes a u16 */
    size_t align; /* a cmsghdr's alignment */
} cmsg_buf;

typedef struct sr_udp {
    int fd;
    uint32_t ip; /* bound address and port, host byte order */
    uint16_t port;
    uint8_t gro, gso; /* offloads in use */
    uint32_t rx_len;  /* bytes per receive buffer */

    struct mmsghdr rx_hdr[RX_BATCH];
    struct iovec rx_iov[RX_BATCH];
    struct sockaddr_in rx_addr[RX_BATCH];
    cmsg_buf rx_ctl[RX_BATCH];
    uint8_t *rx_buf; /* RX_BATCH * rx_len bytes */
    unsigned n_rx;
    rx_msg rx[RX_MSGS_MAX];

    /* The queue: entries, their bytes, and their destinations in the order
     * first seen, found through a hash of the address whose slots are
     * valid only when stamped with the current flush generation. */
    unsigned n_tx, n_dst;
    uint32_t arena_used;
    uint32_t gen;
    tx_ent tx[TXQ_MAX];
    tx_dst dst[TXQ_MAX];
    uint32_t hash_gen[DST_HASH];
    uint16_t hash_dst[DST_HASH];
    uint8_t *arena; /* TX_ARENA bytes */

    /* What flush hands to sendmmsg: per message its first queued copy and
     * how many copies (datagrams) it carries. */
    struct mmsghdr tx_hdr[TXQ_MAX];
    struct iovec tx_iov[2 * TXQ_MAX];
    struct sockaddr_in tx_addr[TXQ_MAX];
    cmsg_buf tx_ctl[TXQ_MAX];
    int32_t msg_first[TXQ_MAX];
    uint16_t msg_segs[TXQ_MAX];

    udp_counters c;
} sr_udp;

static void udp_flush(void *state);

/* ---- open and close --------------------------------------------------------- */

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

/* Ask the kernel for the offloads par allows; what it refuses stays off. */
static void udp_offloads(sr_udp *u, const sw_io_params *par)
{
    int one = 1, zero = 0;

    /* UDP_SEGMENT 0 is "no GSO by default", a no-op that a kernel without
     * GSO refuses: the probe. Each send then asks with a control message. */
    u->gso = !(par->flags & SW_IO_NO_GSO) &&
             setsockopt(u->fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof zero) == 0;
    u->gro = !(par->flags & SW_IO_NO_GRO) &&
             setsockopt(u->fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
    u->rx_len = u->gro ? RX_GRO_LEN : RX_PLAIN_LEN;
}

static void udp_free(sr_udp *u)
{
    if (u->fd >= 0)
        close(u->fd);
    free(u->rx_buf);
    free(u->arena);
    free(u);
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
        udp_free(u);
        return -1;
    }
    udp_offloads(u, par);
    u->rx_buf = malloc((size_t)RX_BATCH * u->rx_len);
    u->arena = malloc(TX_ARENA);
    if (!u->rx_buf || !u->arena) {
        snprintf(why, SW_IO_WHY_MAX, "cannot bind udp %s: %s", par->listen, strerror(ENOMEM));
        udp_free(u);
        return -1;
    }
    /* The receive headers point at the fixed buffers once and for all. */
    for (unsigned i = 0; i < RX_BATCH; i++) {
        u->rx_iov[i].iov_base = u->rx_buf + (size_t)i * u->rx_len;
        u->rx_iov[i].iov_len = u->rx_len;
        u->rx_hdr[i].msg_hdr.msg_iov = &u->rx_iov[i];
        u->rx_hdr[i].msg_hdr.msg_iovlen = 1;
    }
    u->gen = 1;
    *state = u;
    return 0;
}

static void udp_close(void *state)
{
    sr_udp *u = state;

    if (!u)
        return;
    udp_flush(u);
    udp_free(u);
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

/* ---- receive ---------------------------------------------------------------- */

/* The segment size of a GRO datagram, or 0 for a plain one. */
static size_t gro_size(struct msghdr *mh)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
            int v;

            memcpy(&v, CMSG_DATA(cm), sizeof v);
            return v > 0 ? (size_t)v : 0;
        }
    }
    return 0;
}

/* Datagram d (len bytes) into messages: one, or its GRO segments. */
static void split_dgram(sr_udp *u, unsigned d, size_t len)
{
    struct msghdr *mh = &u->rx_hdr[d].msg_hdr;
    const uint8_t *p = u->rx_iov[d].iov_base;
    size_t seg = u->gro ? gro_size(mh) : 0, off = 0;

    if (seg == 0 || seg >= len)
        seg = len ? len : 1; /* one message; an empty datagram is one too */
    else
        u->c.rx_gro++;
    do {
        size_t l = len - off < seg ? len - off : seg;

        if (u->n_rx == RX_MSGS_MAX) {
            u->c.rx_overflow++;
        } else {
            /* Longer than any message (or cut short by a plain buffer):
             * handed on as RX_PLAIN_LEN bytes, which the parser rejects,
             * whichever buffer it arrived in. */
            if (l > SR_WIRE_MAX_MSG || (mh->msg_flags & MSG_TRUNC)) {
                u->c.rx_oversize++;
                l = l > RX_PLAIN_LEN ? RX_PLAIN_LEN : l;
            }
            u->rx[u->n_rx++] = (rx_msg){p + off, (uint32_t)l, d};
            u->c.rx++;
        }
        off += seg;
    } while (off < len);
}

static int udp_recv(void *state, int *full)
{
    sr_udp *u = state;
    int n;

    /* recvmmsg writes msg_namelen, msg_controllen and msg_flags back:
     * reset them per call. */
    for (unsigned i = 0; i < RX_BATCH; i++) {
        struct msghdr *mh = &u->rx_hdr[i].msg_hdr;

        mh->msg_name = &u->rx_addr[i];
        mh->msg_namelen = sizeof u->rx_addr[i];
        mh->msg_control = u->gro ? u->rx_ctl[i].buf : NULL;
        mh->msg_controllen = u->gro ? sizeof u->rx_ctl[i].buf : 0;
        mh->msg_flags = 0;
    }
    u->n_rx = 0;
    *full = 0;
    do
        n = recvmmsg(u->fd, u->rx_hdr, RX_BATCH, MSG_DONTWAIT, NULL);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        u->c.rx_errors++;
        return -errno;
    }
    for (int i = 0; i < n; i++)
        split_dgram(u, (unsigned)i, u->rx_hdr[i].msg_len);
    *full = n == RX_BATCH;
    return (int)u->n_rx;
}

static const uint8_t *udp_rx(const void *state, unsigned i, size_t *len, sr_peer *src)
{
    const sr_udp *u = state;
    const rx_msg *m = &u->rx[i];
    const struct sockaddr_in *sa = &u->rx_addr[m->dgram];

    *len = m->len;
    if (u->rx_hdr[m->dgram].msg_hdr.msg_namelen >= sizeof *sa && sa->sin_family == AF_INET) {
        src->ip = ntohl(sa->sin_addr.s_addr);
        src->port = ntohs(sa->sin_port);
    } else {
        src->ip = 0;
        src->port = 0;
    }
    return m->data;
}

/* ---- queue ------------------------------------------------------------------ */

/* Room for n copies and bytes more, after a flush if need be. */
static void tx_reserve(sr_udp *u, unsigned n, size_t bytes)
{
    if (u->n_tx + n > TXQ_MAX || u->arena_used + bytes > TX_ARENA)
        udp_flush(u);
}

/* len bytes of the arena (room reserved), valid until the next flush;
 * returns their offset. */
static uint32_t arena_take(sr_udp *u, size_t len)
{
    uint32_t off = u->arena_used;

    u->arena_used += (uint32_t)len;
    return off;
}

/* a then b (either may be empty) copied into the arena. */
static uint32_t arena_put(sr_udp *u, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    uint32_t off = arena_take(u, alen + blen);

    if (alen)
        memcpy(u->arena + off, a, alen);
    if (blen)
        memcpy(u->arena + off + alen, b, blen);
    return off;
}

/* The destination entry of peer, new if this flush has not seen it. */
static tx_dst *dst_of(sr_udp *u, const sr_peer *peer)
{
    uint32_t h = (peer->ip * 0x9e3779b1u) ^ ((uint32_t)peer->port * 0x85ebca6bu);

    for (h = (h ^ (h >> 15)) & (DST_HASH - 1);; h = (h + 1) & (DST_HASH - 1)) {
        tx_dst *d;

        if (u->hash_gen[h] != u->gen) {
            u->hash_gen[h] = u->gen;
            u->hash_dst[h] = (uint16_t)u->n_dst;
            d = &u->dst[u->n_dst++];
            d->peer = *peer;
            d->first = d->last = -1;
            return d;
        }
        d = &u->dst[u->hash_dst[h]];
        if (d->peer.ip == peer->ip && d->peer.port == peer->port)
            return d;
    }
}

/* Queue one copy to peer (room reserved). */
static void tx_add(sr_udp *u, const sr_peer *peer, uint32_t a_off, size_t a_len, uint32_t b_off,
                   size_t b_len)
{
    tx_dst *d = dst_of(u, peer);
    int32_t k = (int32_t)u->n_tx++;

    u->tx[k] = (tx_ent){a_off, (uint32_t)a_len, b_off, (uint32_t)b_len, -1};
    if (d->last >= 0)
        u->tx[d->last].next = k;
    else
        d->first = k;
    d->last = k;
}

/* A datagram longer than SR_WIRE_MAX_MSG is refused and counted in
 * tx_errors. */
static void udp_send(void *state, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                     const uint8_t *payload, size_t plen)
{
    sr_udp *u = state;

    if (hlen + plen > SR_WIRE_MAX_MSG) {
        u->c.tx_errors++;
        return;
    }
    tx_reserve(u, 1, hlen + plen);
    tx_add(u, dst, arena_put(u, hdr, hlen, payload, plen), hlen + plen, 0, 0);
}

static void udp_send_replicas(void *state, const sr_pipe_action *a)
{
    sr_udp *u = state;
    uint32_t pl;

    if (a->n_dests == 0)
        return;
    if (SR_WIRE_HDR_LEN + a->payload_len > SR_WIRE_MAX_MSG) {
        u->c.tx_errors += a->n_dests;
        return;
    }
    tx_reserve(u, a->n_dests, a->payload_len + (size_t)a->n_dests * SR_WIRE_HDR_LEN);
    pl = arena_take(u, a->payload_len);
    sr_pipe_payload_write(a, u->arena + pl);
    for (unsigned k = 0; k < a->n_dests; k++) {
        uint32_t h = arena_take(u, SR_WIRE_HDR_LEN);

        sr_pipe_replica_hdr(a, k, u->arena + h);
        tx_add(u, &a->dests[k].peer, h, SR_WIRE_HDR_LEN, pl, a->payload_len);
    }
}

/* ---- flush ------------------------------------------------------------------ */

static size_t ent_len(const tx_ent *e)
{
    return (size_t)e->a_len + e->b_len;
}

/* Point iov at entry e's bytes; returns how many iovecs (1 or 2). */
static unsigned ent_iov(const sr_udp *u, const tx_ent *e, struct iovec *iov)
{
    unsigned n = 0;

    iov[n++] = (struct iovec){u->arena + e->a_off, e->a_len};
    if (e->b_len)
        iov[n++] = (struct iovec){u->arena + e->b_off, e->b_len};
    return n;
}

/* Message m: from entry *k on, the run of copies to d that GSO may send
 * as one (or that one copy without GSO); *k moves past the run and *niov
 * past its iovecs. */
static void build_msg(sr_udp *u, unsigned m, const tx_dst *d, int32_t *k, unsigned *niov)
{
    struct msghdr *mh = &u->tx_hdr[m].msg_hdr;
    size_t seg = ent_len(&u->tx[*k]), bytes = 0, last = seg;
    unsigned segs = 0;

    memset(mh, 0, sizeof *mh);
    mh->msg_name = &u->tx_addr[m];
    mh->msg_namelen = sizeof u->tx_addr[m];
    u->tx_addr[m] = (struct sockaddr_in){.sin_family = AF_INET,
                                         .sin_port = htons(d->peer.port),
                                         .sin_addr.s_addr = htonl(d->peer.ip)};
    mh->msg_iov = &u->tx_iov[*niov];
    u->msg_first[m] = *k;
    /* A run continues while every copy so far had the run's length and
     * the next is no longer: GSO cuts at that length, the last may be
     * short. */
    do {
        const tx_ent *e = &u->tx[*k];

        *niov += ent_iov(u, e, &u->tx_iov[*niov]);
        last = ent_len(e);
        bytes += last;
        segs++;
        *k = e->next;
    } while (u->gso && *k >= 0 && seg > 0 && last == seg && segs < GSO_SEGS_MAX &&
             ent_len(&u->tx[*k]) <= seg && bytes + ent_len(&u->tx[*k]) <= GSO_BYTES_MAX);
    mh->msg_iovlen = (size_t)(&u->tx_iov[*niov] - mh->msg_iov);
    u->msg_segs[m] = (uint16_t)segs;
    if (segs > 1) {
        struct cmsghdr *cm;
        uint16_t gs = (uint16_t)seg;

        mh->msg_control = u->tx_ctl[m].buf;
        mh->msg_controllen = CMSG_SPACE(sizeof gs);
        cm = CMSG_FIRSTHDR(mh);
        cm->cmsg_level = SOL_UDP;
        cm->cmsg_type = UDP_SEGMENT;
        cm->cmsg_len = CMSG_LEN(sizeof gs);
        memcpy(CMSG_DATA(cm), &gs, sizeof gs);
    }
}

/* Message m's copies one by one, without GSO. */
static void send_plain(sr_udp *u, unsigned m)
{
    int32_t k = u->msg_first[m];

    for (unsigned s = 0; s < u->msg_segs[m]; s++, k = u->tx[k].next) {
        struct iovec iov[2];
        struct msghdr mh = {.msg_name = &u->tx_addr[m], .msg_namelen = sizeof u->tx_addr[m],
                            .msg_iov = iov};
        ssize_t r;

        mh.msg_iovlen = ent_iov(u, &u->tx[k], iov);
        do
            r = sendmsg(u->fd, &mh, 0);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            u->c.tx_errors++;
        else
            u->c.tx++;
    }
}

/* Messages [0, n) through sendmmsg, as many per call as it takes. */
static void send_msgs(sr_udp *u, unsigned n)
{
    unsigned i = 0;

    while (i < n) {
        int k;

        if (!u->gso && u->msg_segs[i] > 1) {
            send_plain(u, i++); /* built before GSO was refused */
            continue;
        }
        k = sendmmsg(u->fd, u->tx_hdr + i, n - i, 0);

        if (k > 0) {
            for (unsigned j = i; j < i + (unsigned)k; j++) {
                u->c.tx += u->msg_segs[j];
                u->c.tx_gso += u->msg_segs[j] > 1;
            }
            i += (unsigned)k;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (u->msg_segs[i] > 1) {
            /* GSO refused (no checksum offload on the route's device, a
             * segment above its MTU): send the run plainly, and no GSO on
             * this socket from now on. */
            u->c.gso_refused++;
            u->gso = 0;
            send_plain(u, i++);
        } else {
            /* sendmmsg reports an error only for the first datagram: skip
             * it (a peer without a route, say) and go on with the rest. */
            u->c.tx_errors++;
            i++;
        }
    }
}

static void udp_flush(void *state)
{
    sr_udp *u = state;
    unsigned m = 0, niov = 0;

    if (!u->n_tx)
        return;
    for (unsigned d = 0; d < u->n_dst; d++)
        for (int32_t k = u->dst[d].first; k >= 0; m++)
            build_msg(u, m, &u->dst[d], &k, &niov);
    send_msgs(u, m);
    u->n_tx = 0;
    u->n_dst = 0;
    u->arena_used = 0;
    if (++u->gen == 0) { /* wrapped: stale stamps could match again */
        memset(u->hash_gen, 0, sizeof u->hash_gen);
        u->gen = 1;
    }
}

/* ---- reports ---------------------------------------------------------------- */

static void udp_counters_format(const void *state, char *buf, size_t len)
{
    const sr_udp *u = state;
    const udp_counters *c = &u->c;

    snprintf(buf, len,
             " udp_rx=%" PRIu64 " udp_rx_oversize=%" PRIu64 " udp_rx_errors=%" PRIu64
             " udp_rx_gro=%" PRIu64 " udp_rx_overflow=%" PRIu64 " udp_tx=%" PRIu64
             " udp_tx_errors=%" PRIu64 " udp_tx_gso=%" PRIu64 " udp_gso_refused=%" PRIu64
             " udp_gro=%s udp_gso=%s",
             c->rx, c->rx_oversize, c->rx_errors, c->rx_gro, c->rx_overflow, c->tx, c->tx_errors,
             c->tx_gso, c->gso_refused, u->gro ? "on" : "off", u->gso ? "on" : "off");
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
    .open = udp_open,
    .close = udp_close,
    .fd = udp_fd,
    .local = udp_local,
    .recv = udp_recv,
    .rx = udp_rx,
    .send = udp_send,
    .send_replicas = udp_send_replicas,
    .flush = udp_flush,
    .counters = udp_counters_format,
    .describe = udp_describe,
};
