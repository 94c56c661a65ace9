/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_io.c - serene-switch's DPDK ports, the I/O sw_io_dpdk (see sw_io.h):
 * the same role as the UDP socket (bursts of messages in, replicas out)
 * for frames on DPDK ports, so the same loop and the same pipeline serve
 * both. EAL start-up, port set-up and the frame layout come from
 * lib/transport/dpdk/dpdk_port.c, shared with the library's dpdk transport.
 *
 * - One port per worker (a memif, af_packet or tap device, or a NIC port);
 *   several workers may also share one port (a NIC behind a switch).
 * - Addresses: a frame counts if it is IPv4/UDP to the switch's address
 *   (IPv4 0.0.0.0 matches any) and UDP port. Its source IPv4:port is the
 *   worker's sr_peer, as in UDP mode; the port it came in on and its source
 *   Ethernet address are learnt for that peer, and answers to the peer go
 *   out of that port to that address (no ARP).
 * - RoCEv2 frames (UDP port 4791 to the switch's address, as a worker's
 *   rdma transport sends them) go through the RoCE port (roce.h) into the
 *   same pipeline; answers to a worker bound over RoCE leave as RoCEv2
 *   SENDs built there, whole frames copied into an mbuf.
 * - Every buffer (mbuf pools, the peer table, frame scratch) is allocated
 *   at open; nothing allocates per packet.
 * - No descriptor to poll: the loop calls recv, which takes one burst from
 *   the next port that has frames.
 * - Every rx and tx burst is bracketed by dpdk_guard.h's enter and leave:
 *   a memif driver's unmap of a leaving client's rings (in EAL's interrupt
 *   thread) waits until no burst is in progress.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dpdk_guard.h"
#include "roce.h"
#include "sw_io.h"
#include "transport/dpdk/dpdk_port.h"

#define MAX_PORTS 64         /* one per worker of the largest job */
#define MAX_PEERS 256        /* learnt worker addresses (least recently heard replaced) */
#define NB_MBUFS 2047u       /* per port */
#define TX_HOLD_NS 200000ull /* a port refusing frames longer than this drops them */
/* Per-lcore mbuf cache of each port's pool. The cache is a stack: the
 * frame freed last (a burst just received, or sent and copied by memif) is
 * the next one taken, still in the core's cache, where the pool's ring
 * alone hands out the one freed longest ago (NB_MBUFS frames, ~19 MiB,
 * back: a cold line for every byte the switch writes). The switch's loop
 * runs on EAL's main lcore; a thread that is none gets no cache, as
 * before. */
#define POOL_CACHE 256u
#define DATA_ROOM SR_DPDK_DATA_ROOM /* as lib/transport/dpdk sizes its pools */
_Static_assert(DATA_ROOM <= UINT16_MAX, "mbuf data room is a uint16_t");
_Static_assert(POOL_CACHE <= RTE_MEMPOOL_CACHE_MAX_SIZE && POOL_CACHE * 3u / 2u <= NB_MBUFS,
               "a mempool cache fits the pool");

typedef struct io_port {
    uint16_t id;
    uint8_t probed;
    uint8_t started;
    struct rte_mempool *pool;
    sr_dpdk_port_info info;
    struct rte_mbuf *tx[SR_DPDK_BURST];
    unsigned tx_n;
} __attribute__((aligned(64))) io_port;

/* A learnt worker address: where its answers go. */
typedef struct io_peer {
    sr_peer peer;
    unsigned port; /* index into ports[] */
    uint64_t used; /* when last heard (learn_seq), for replacement */
    sr_dpdk_tmpl tmpl;
} io_peer;

typedef struct io_msg {
    const uint8_t *data;
    size_t len;
    sr_peer src;
    int roce; /* a RoCEv2 frame: its request is rreq[] of the same index */
} io_msg;

typedef struct dpdk_counters {
    uint64_t rx;          /* messages received for the switch */
    uint64_t rx_foreign;  /* frames for someone else (not IPv4/UDP to our address) */
    uint64_t rx_bad;      /* frames with a bad checksum or length */
    uint64_t tx;          /* frames the ports took */
    uint64_t tx_no_route; /* replicas for a peer never heard from */
    uint64_t tx_dropped;  /* frames a port refused for too long, or no mbuf */
    uint64_t learnt;      /* peer table updates (new peer, moved port or MAC) */
    uint64_t roce_rx;     /* RoCEv2 frames handed to the pipeline */
    uint64_t roce_bad;    /* RoCEv2 frames the RoCE port refused (ICRC, opcode, binding) */
    uint64_t roce_tx;     /* RoCEv2 frames the ports took */
} dpdk_counters;

typedef struct sr_dpdk_io {
    uint32_t ip;
    uint16_t udp_port;
    int eal_ours;
    unsigned n_ports, next_port;
    io_port ports[MAX_PORTS];
    io_peer peers[MAX_PEERS];
    unsigned n_peers;
    uint64_t learn_seq;
    /* The last burst: mbufs kept until the next recv, and their messages. */
    struct rte_mbuf *rx[SR_DPDK_BURST];
    unsigned rx_n;
    io_msg msgs[SR_DPDK_BURST];
    dpdk_counters c;
    uint8_t scratch[SR_DPDK_BURST][SR_DPDK_MAX_FRAME]; /* chained frames made flat */
    /* RoCEv2: the port, the last burst's requests and their messages, the
     * request being answered (NULL: a UDP one), a frame being built. */
    sr_roce_sw *roce;
    const sr_roce_req *cur;
    sr_roce_req rreq[SR_DPDK_BURST];
    uint8_t roce_msg[SR_DPDK_BURST][SR_WIRE_MAX_MSG];
    uint8_t roce_frame[SR_ROCE_FRAME_MAX];
    uint8_t tx_msg[SR_WIRE_MAX_MSG]; /* a held copy's message, for the RoCE port */
} sr_dpdk_io;

static void flush_port(sr_dpdk_io *d, io_port *p)
{
    unsigned off = 0;
    uint64_t start = 0;

    while (off < p->tx_n) {
        uint16_t k;

        sw_dpdk_guard_enter();
        k = rte_eth_tx_burst(p->id, 0, p->tx + off, (uint16_t)(p->tx_n - off));
        sw_dpdk_guard_leave();
        off += k;
        d->c.tx += k;
        if (off == p->tx_n || k)
            continue;
        /* Full: wait for the port briefly (pacing, as a full socket
         * buffer does in UDP mode), then count the rest as lost. */
        uint64_t now = sr_dpdk_now_ns();
        if (!start)
            start = now;
        else if (now - start > TX_HOLD_NS) {
            rte_pktmbuf_free_bulk(p->tx + off, p->tx_n - off);
            d->c.tx_dropped += p->tx_n - off;
            break;
        }
    }
    p->tx_n = 0;
}

static void dpdk_flush(void *state)
{
    sr_dpdk_io *d = state;

    for (unsigned i = 0; i < d->n_ports; i++)
        if (d->ports[i].tx_n)
            flush_port(d, &d->ports[i]);
}

static io_peer *find_peer(sr_dpdk_io *d, const sr_peer *p)
{
    for (unsigned i = 0; i < d->n_peers; i++)
        if (d->peers[i].peer.ip == p->ip && d->peers[i].peer.port == p->port)
            return &d->peers[i];
    return NULL;
}

/* Remember that peer a->src is behind port pi at a->src_mac; rebuild its
 * answer template when that is new. */
static void learn(sr_dpdk_io *d, unsigned pi, const sr_frame_addr *a, const sr_peer *src)
{
    io_peer *e = find_peer(d, src);

    if (e && e->port == pi && !memcmp(e->tmpl.hdr, a->src_mac, 6)) {
        e->used = ++d->learn_seq; /* heard now: the last to be replaced */
        return;
    }
    if (!e) {
        if (d->n_peers < MAX_PEERS) {
            e = &d->peers[d->n_peers++];
        } else {
            e = &d->peers[0];
            for (unsigned i = 1; i < d->n_peers; i++)
                if (d->peers[i].used < e->used)
                    e = &d->peers[i];
        }
    }
    sr_frame_addr r;
    memcpy(r.dst_mac, a->src_mac, 6);
    memcpy(r.src_mac, d->ports[pi].info.mac, 6);
    r.src_ip = a->dst_ip;
    r.dst_ip = a->src_ip;
    r.src_port = a->dst_port;
    r.dst_port = a->src_port;
    e->peer = *src;
    e->port = pi;
    e->used = ++d->learn_seq;
    sr_dpdk_tmpl_init(&e->tmpl, &r, d->ports[pi].info.csum_offload);
    d->c.learnt++;
}

static int dpdk_recv(void *state, int *full)
{
    sr_dpdk_io *d = state;
    unsigned got = 0;

    if (d->rx_n)
        rte_pktmbuf_free_bulk(d->rx, d->rx_n);
    d->rx_n = 0;
    /* One burst from the first port in turn that has frames. */
    for (unsigned t = 0; t < d->n_ports && !d->rx_n; t++) {
        unsigned pi = d->next_port;

        d->next_port = (d->next_port + 1) % d->n_ports;
        sw_dpdk_guard_enter();
        d->rx_n = rte_eth_rx_burst(d->ports[pi].id, 0, d->rx, SR_DPDK_BURST);
        sw_dpdk_guard_leave();
        for (unsigned i = 0; i < d->rx_n; i++) {
            sr_frame_addr a;
            const uint8_t *pl;
            size_t len;
            int r = sr_dpdk_frame_parse(d->rx[i], d->scratch[i], &a, &pl, &len);

            if (r == SR_FRAME_NOT_IPV4 || r == SR_FRAME_NOT_UDP) {
                d->c.rx_foreign++;
                continue;
            }
            if (r != SR_FRAME_OK) {
                d->c.rx_bad++;
                continue;
            }
            if (a.dst_port == SR_ROCE_UDP_PORT && (!d->ip || a.dst_ip == d->ip)) {
                io_msg *m = &d->msgs[got];
                int n = sr_roce_sw_ingress(d->roce, pl - SR_FRAME_HLEN, SR_FRAME_HLEN + len,
                                           d->roce_msg[got], &m->src, &d->rreq[got]);
                if (n < 0) {
                    d->c.roce_bad++;
                    continue;
                }
                m->data = d->roce_msg[got];
                m->len = (size_t)n;
                m->roce = 1;
                got++;
                learn(d, pi, &a, &m->src);
                d->c.rx++;
                d->c.roce_rx++;
                continue;
            }
            if (a.dst_port != d->udp_port || (d->ip && a.dst_ip != d->ip)) {
                d->c.rx_foreign++;
                continue;
            }
            io_msg *m = &d->msgs[got++];
            m->data = pl;
            m->len = len;
            m->src.ip = a.src_ip;
            m->src.port = a.src_port;
            m->roce = 0;
            learn(d, pi, &a, &m->src);
            d->c.rx++;
        }
    }
    *full = d->rx_n == SR_DPDK_BURST;
    return (int)got;
}

static const uint8_t *dpdk_rx(const void *state, unsigned i, size_t *len, sr_peer *src)
{
    const sr_dpdk_io *d = state;

    *len = d->msgs[i].len;
    *src = d->msgs[i].src;
    return d->msgs[i].data;
}

/* msg is one of the last burst's: the replicas that follow answer its
 * RoCE request, if it was one (d->cur). */
static void dpdk_learn(void *state, const uint8_t *msg, const sr_pipe_out *out)
{
    sr_dpdk_io *d = state;

    d->cur = NULL;
    for (unsigned i = 0; i < SR_DPDK_BURST && !d->cur; i++)
        if (d->msgs[i].roce && d->msgs[i].data == msg)
            d->cur = &d->rreq[i];
    sr_roce_sw_learn(d->roce, d->cur, out);
}

/* The addresses of a peer's answer template. */
static void tmpl_addr(const sr_dpdk_tmpl *t, sr_frame_addr *a)
{
    memcpy(a->dst_mac, t->hdr, 6);
    memcpy(a->src_mac, t->hdr + 6, 6);
    a->src_ip = sr_get_be32(t->hdr + SR_ETH_HLEN + 12);
    a->dst_ip = sr_get_be32(t->hdr + SR_ETH_HLEN + 16);
    a->src_port = sr_get_be16(t->hdr + SR_ETH_HLEN + SR_IPV4_HLEN);
    a->dst_port = sr_get_be16(t->hdr + SR_ETH_HLEN + SR_IPV4_HLEN + 2);
}

/* Queue m on port p; a port's queue is sent when it holds SR_DPDK_BURST
 * frames. */
static void queue_frame(sr_dpdk_io *d, io_port *p, struct rte_mbuf *m)
{
    p->tx[p->tx_n++] = m;
    if (p->tx_n == SR_DPDK_BURST)
        flush_port(d, p);
}

/* A whole frame of n bytes (d->roce_frame, built by the RoCE port) queued
 * on e's port; counted. */
static void queue_raw(sr_dpdk_io *d, const io_peer *e, size_t n)
{
    io_port *p = &d->ports[e->port];
    struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
    char *data;

    if (!m) {
        flush_port(d, p);
        m = rte_pktmbuf_alloc(p->pool);
    }
    if (!m || !(data = rte_pktmbuf_append(m, (uint16_t)n))) {
        if (m)
            rte_pktmbuf_free(m);
        d->c.tx_dropped++;
        return;
    }
    memcpy(data, d->roce_frame, n);
    d->c.roce_tx++;
    queue_frame(d, p, m);
}

/* One frame to the learnt peer e: its template, then hdr and payload. */
static void send_frame(sr_dpdk_io *d, const io_peer *e, const uint8_t *hdr, size_t hlen,
                       const uint8_t *payload, size_t plen)
{
    io_port *p = &d->ports[e->port];
    struct rte_mbuf *m = sr_dpdk_frame(p->pool, &e->tmpl, hdr, hlen, payload, plen);

    if (!m) {
        /* Empty pool: free what is queued by sending it, then retry once. */
        flush_port(d, p);
        m = sr_dpdk_frame(p->pool, &e->tmpl, hdr, hlen, payload, plen);
        if (!m) {
            d->c.tx_dropped++;
            return;
        }
    }
    queue_frame(d, p, m);
}

/* A frame from p's pool for template t: t, then hdr (SR_WIRE_HDR_LEN
 * bytes), then a's payload written in place by sr_pipe_payload_write.
 * An empty pool is freed by sending what p has queued, once. NULL if
 * there is still no mbuf or the frame would be too long. */
static struct rte_mbuf *payload_frame(sr_dpdk_io *d, io_port *p, const sr_dpdk_tmpl *t,
                                      const uint8_t *hdr, const sr_pipe_action *a)
{
    size_t plen = SR_WIRE_HDR_LEN + a->payload_len;
    uint8_t *msg;
    struct rte_mbuf *m = sr_dpdk_frame_alloc(p->pool, t, plen, &msg);

    if (!m && SR_FRAME_HLEN + plen <= SR_DPDK_MAX_FRAME) {
        flush_port(d, p);
        m = sr_dpdk_frame_alloc(p->pool, t, plen, &msg);
    }
    if (!m)
        return NULL;
    memcpy(msg, hdr, SR_WIRE_HDR_LEN);
    sr_pipe_payload_write(a, msg + SR_WIRE_HDR_LEN);
    sr_dpdk_frame_finish(m, t, plen);
    return m;
}

static void dpdk_send(void *state, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                      const uint8_t *payload, size_t plen)
{
    sr_dpdk_io *d = state;
    const io_peer *e = find_peer(d, dst);

    if (!e) {
        d->c.tx_no_route++;
        return;
    }
    if (hlen + plen <= SR_WIRE_MAX_MSG) {
        /* A copy held by the fault injector: RoCE when its binding has a
         * QP from dst (the request it answers is gone by now). */
        uint8_t *msg = d->tx_msg;
        sr_frame_addr addr;
        size_t n;

        memcpy(msg, hdr, hlen);
        memcpy(msg + hlen, payload, plen);
        tmpl_addr(&e->tmpl, &addr);
        n = sr_roce_sw_egress_msg(d->roce, dst, msg, hlen + plen, &addr, d->roce_frame,
                                  sizeof d->roce_frame);
        if (n) {
            queue_raw(d, e, n);
            return;
        }
    }
    send_frame(d, e, hdr, hlen, payload, plen);
}

/* Each replica is one copy of its frame: memif (and any port without
 * zero-copy transmit) copies every frame into its ring anyway, so a
 * shared mbuf would only add a segment and a reference count per replica.
 * The first replica's payload is written by the pipeline straight into
 * its frame (a result's sums converted from the slot, no staging copy);
 * the others copy it from there, the frame held by a reference until
 * they have (its port may send and free it meanwhile). */
static void dpdk_send_replicas(void *state, const sr_pipe_action *a)
{
    sr_dpdk_io *d = state;
    uint8_t hdr[SR_WIRE_HDR_LEN];
    struct rte_mbuf *first = NULL;
    const uint8_t *pl = NULL; /* the payload, in first */

    for (unsigned k = 0; k < a->n_dests; k++) {
        const io_peer *e = find_peer(d, &a->dests[k].peer);
        struct rte_mbuf *m;

        if (!e) {
            d->c.tx_no_route++;
            continue;
        }
        if (sr_roce_sw_is_roce(d->roce, d->cur, a, k)) {
            sr_frame_addr addr;
            size_t n;

            tmpl_addr(&e->tmpl, &addr);
            n = sr_roce_sw_egress(d->roce, d->cur, a, k, &addr, d->roce_frame,
                                  sizeof d->roce_frame);
            if (n)
                queue_raw(d, e, n);
            continue;
        }
        sr_pipe_replica_hdr(a, k, hdr);
        if (pl) {
            send_frame(d, e, hdr, sizeof hdr, pl, a->payload_len);
            continue;
        }
        m = payload_frame(d, &d->ports[e->port], &e->tmpl, hdr, a);
        if (!m) {
            d->c.tx_dropped++;
            continue;
        }
        if (k + 1 < a->n_dests) {
            rte_mbuf_refcnt_update(m, 1);
            first = m;
            pl = rte_pktmbuf_mtod_offset(m, const uint8_t *, SR_FRAME_HLEN + SR_WIRE_HDR_LEN);
        }
        queue_frame(d, &d->ports[e->port], m);
    }
    if (first)
        rte_pktmbuf_free(first);
}

static int dpdk_fd(const void *state)
{
    (void)state;
    return -1;
}

static void dpdk_local(const void *state, uint32_t *ip, uint16_t *port)
{
    const sr_dpdk_io *d = state;

    *ip = d->ip;
    *port = d->udp_port;
}

static void dpdk_counters_format(const void *state, char *buf, size_t len)
{
    const dpdk_counters *c = &((const sr_dpdk_io *)state)->c;

    snprintf(buf, len,
             " dpdk_rx=%" PRIu64 " dpdk_rx_foreign=%" PRIu64 " dpdk_rx_bad=%" PRIu64
             " dpdk_tx=%" PRIu64 " dpdk_tx_no_route=%" PRIu64 " dpdk_tx_dropped=%" PRIu64
             " dpdk_learnt=%" PRIu64 " dpdk_roce_rx=%" PRIu64 " dpdk_roce_bad=%" PRIu64
             " dpdk_roce_tx=%" PRIu64 " dpdk_unmap_waits=%" PRIu64,
             c->rx, c->rx_foreign, c->rx_bad, c->tx, c->tx_no_route, c->tx_dropped, c->learnt,
             c->roce_rx, c->roce_bad, c->roce_tx, sw_dpdk_guard_waits());
}

/* "as ADDR:PORT on dpdk NAME (port ID), ...". */
static void dpdk_describe(const void *state, char *buf, size_t len)
{
    const sr_dpdk_io *d = state;
    char addr[32];
    size_t used;
    int k;

    sw_io_addr_format(d->ip, d->udp_port, addr, sizeof addr);
    k = snprintf(buf, len, "as %s on dpdk ", addr);
    used = k < 0 ? len : (size_t)k;
    for (unsigned i = 0; i < d->n_ports && used < len; i++) {
        k = snprintf(buf + used, len - used, "%s%s (port %u)", i ? ", " : "",
                     d->ports[i].info.name, d->ports[i].id);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

static void dpdk_close(void *state)
{
    sr_dpdk_io *d = state;

    if (!d)
        return;
    if (d->rx_n)
        rte_pktmbuf_free_bulk(d->rx, d->rx_n);
    dpdk_flush(d);
    /* No burst from here on: closing a port unmaps on this thread. */
    sw_dpdk_guard_disarm();
    for (unsigned i = 0; i < d->n_ports; i++) {
        io_port *p = &d->ports[i];

        if (p->probed)
            sr_dpdk_port_remove(p->id);
        else if (p->started || p->pool) {
            sr_dpdk_port_stop(p->id);
            (void)rte_eth_dev_close(p->id);
        }
        rte_mempool_free(p->pool);
    }
    if (d->eal_ours)
        rte_eal_cleanup();
    sr_roce_sw_destroy(&d->roce);
    free(d);
}

/* p's mbuf pool, with a per-lcore cache (POOL_CACHE), on the port's NUMA
 * node. sr_dpdk_port_start then uses it as is. Returns 0 or -1 with err. */
static int pool_create(io_port *p, const char *name, char *err)
{
    int socket = rte_eth_dev_socket_id(p->id);
    unsigned n = sr_dpdk_pool_size(p->id, NB_MBUFS, POOL_CACHE);

    p->pool = rte_pktmbuf_pool_create(name, n, POOL_CACHE, 0, (uint16_t)DATA_ROOM,
                                      socket < 0 ? (int)SOCKET_ID_ANY : socket);
    if (!p->pool) {
        snprintf(err, SR_DPDK_ERR_MAX, "mbuf pool of %u x %u bytes: %s (give EAL more memory: -m)",
                 n, (unsigned)DATA_ROOM, rte_strerror(rte_errno));
        return -1;
    }
    return 0;
}

/* Start EAL with eal_args (unless already running), then start the n
 * ports named in ports (port id, device name, or vdev spec to probe; n == 0:
 * every port EAL found), each with one queue pair, in promiscuous mode.
 * Links are not waited for: a worker's memif or cable may come later.
 * Returns 0, or -1 with err (SR_DPDK_ERR_MAX bytes) filled. */
static int ports_open(sr_dpdk_io **out, const char *eal_args, const char *const *ports,
                      unsigned n, uint32_t ip, uint16_t udp_port, char *err)
{
    sr_dpdk_io *d = calloc(1, sizeof *d);
    char pool[32];
    int rc;

    if (d && !(d->roce = sr_roce_sw_create())) {
        free(d);
        d = NULL;
    }
    if (!d) {
        snprintf(err, SR_DPDK_ERR_MAX, "out of memory");
        return -1;
    }
    d->ip = ip;
    d->udp_port = udp_port;
    rc = sr_dpdk_eal_start(eal_args, "serene-switch", err);
    if (rc < 0) {
        sr_roce_sw_destroy(&d->roce);
        free(d);
        return -1;
    }
    d->eal_ours = rc == 0;
    /* Before any port starts: from now on a memif client's regions are
     * unmapped (by EAL's interrupt thread) only between bursts. */
    sw_dpdk_guard_arm();
    if (n == 0) {
        uint16_t id;

        RTE_ETH_FOREACH_DEV(id)
        {
            if (d->n_ports == MAX_PORTS)
                break;
            d->ports[d->n_ports++].id = id;
        }
        if (d->n_ports == 0) {
            snprintf(err, SR_DPDK_ERR_MAX,
                     "EAL found no ports: add --vdev=... to the EAL arguments, or bind a NIC");
            goto fail;
        }
    } else if (n > MAX_PORTS) {
        snprintf(err, SR_DPDK_ERR_MAX, "more than %u ports", MAX_PORTS);
        goto fail;
    }
    for (unsigned i = 0; i < n; i++) {
        int probed;

        if (sr_dpdk_port_find(ports[i], &d->ports[i].id, &probed, err))
            goto fail;
        d->ports[i].probed = (uint8_t)probed;
        d->n_ports = i + 1;
        for (unsigned k = 0; k < i; k++)
            if (d->ports[k].id == d->ports[i].id) {
                snprintf(err, SR_DPDK_ERR_MAX, "port \"%s\" given twice", ports[i]);
                goto fail;
            }
    }
    /* No wait for links: a memif server's link comes up only when its
     * client (a worker, started after the switch) connects. */
    for (unsigned i = 0; i < d->n_ports; i++) {
        io_port *p = &d->ports[i];

        snprintf(pool, sizeof pool, "sw_pool_%u", p->id);
        if (pool_create(p, pool, err))
            goto fail;
        /* Promiscuous: workers may address the switch by broadcast or by
         * any MAC their configuration gives. */
        if (sr_dpdk_port_start(p->id, &p->pool, pool, NB_MBUFS, 1, 0, &p->info, err))
            goto fail;
        p->started = 1;
    }
    *out = d;
    return 0;
fail:
    dpdk_close(d);
    return -1;
}

static int dpdk_open(void **state, const sw_io_params *par, char *why)
{
    /* No kernel to pick a port: 0 means the wire's. */
    uint16_t port = par->port ? par->port : (uint16_t)SR_WIRE_UDP_PORT;
    char err[SR_DPDK_ERR_MAX];
    sr_dpdk_io *d;

    if (ports_open(&d, par->dpdk_eal, par->dpdk_ports, par->n_dpdk_ports, par->ip, port, err)) {
        snprintf(why, SW_IO_WHY_MAX, "--dpdk: %s", err);
        return -1;
    }
    *state = d;
    return 0;
}

const sw_io_ops sw_io_dpdk = {
    .name = "dpdk",
    .open = dpdk_open,
    .close = dpdk_close,
    .fd = dpdk_fd,
    .local = dpdk_local,
    .recv = dpdk_recv,
    .rx = dpdk_rx,
    .send = dpdk_send,
    .send_replicas = dpdk_send_replicas,
    .learn = dpdk_learn,
    .flush = dpdk_flush,
    .counters = dpdk_counters_format,
    .describe = dpdk_describe,
};
