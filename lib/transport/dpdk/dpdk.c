/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk.c - the dpdk transport: Serene messages in Ethernet/IPv4/UDP frames
 * on one DPDK port, bypassing the kernel.
 *
 * - EAL: started by the first context from cfg->dpdk_eal_args, or found
 *   running because the application started it (then the library never
 *   cleans it up). EAL cannot start twice in a process, so this is the one
 *   piece of process-wide state in the library: which side owns EAL, and
 *   which ports are in use by a context (a port serves one context at a
 *   time: its queue pair 0 and its mempool are that context's).
 * - Addressing comes from the config, with no ARP: IPv4 and UDP from
 *   switch_addr and bind_addr, Ethernet from dpdk_mac and dpdk_peer_mac.
 *   Received frames count only if they come from the switch's IPv4:port
 *   to ours, like a connected UDP socket.
 * - send copies each message into an mbuf (the caller keeps its buffers)
 *   and bursts the queue; what the port cannot take at once is retried for
 *   TX_HOLD_NS (the timed flush), then dropped and counted: the
 *   retransmission engine above recovers it.
 * - recv copies each message out of its mbuf; recv_lend hands the engine
 *   the message inside its mbuf and frees the burst at release (a frame
 *   in several segments is copied, as by recv).
 * - wait has no descriptor to sleep on: it polls the RX queue, then sleeps
 *   in ppoll on the wake descriptor with a period that doubles from
 *   IDLE_MIN_NS up to BUSY_MAX_NS while an answer is due (a timer is set
 *   or a frame came in the last RECENT_NS), else up to IDLE_MAX_NS: an
 *   idle context costs little CPU, a busy one reacts within tens of
 *   microseconds without spinning a core away from the other processes.
 * - Only the context's data-path thread calls send/recv/wait; open and
 *   close run in the thread that creates or destroys the context.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "transport/dpdk/dpdk_port.h"
#include "transport/transport.h"

#define NB_MBUFS 2047u          /* per context: RX ring + TX ring + bursts in hand */
#define TX_HOLD_NS 200000ull    /* how long a burst the port refused is retried */
#define IDLE_MIN_NS 5000ull     /* first sleep of an idle wait */
#define BUSY_MAX_NS 50000ull    /* longest sleep while an answer is due */
#define IDLE_MAX_NS 1000000ull  /* longest sleep of a context with nothing to do */
#define RECENT_NS 10000000ull   /* "an answer is due": a timer is set, or rx in the last 10 ms */
#define ARGS_MAX 4096           /* EAL argument string after %r expansion */
#define CLOSE_FLUSH_NS 100000000ull /* close: time to hand the last frames over */
#define CLOSE_GRACE_NS 20000000ull  /* close: time for the peer to read them (memif) */

/* ---- process-wide: EAL owner and ports in use ---------------------------- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static enum { EAL_DOWN, EAL_OURS, EAL_APP, EAL_FAILED } g_eal;
static struct {
    uint8_t in_use;
    uint8_t probed;          /* removed (with its pool) when its context ends */
    struct rte_mempool *pool; /* referenced by the stopped port: kept for reuse */
} g_port[RTE_MAX_ETHPORTS];
static unsigned g_pool_seq;

/* At exit, when the library started EAL and no context is left (a live
 * context's thread may still be polling its port): close the ports it
 * left configured, free their pools, and clean EAL up. */
__attribute__((destructor)) static void dpdk_fini(void)
{
    pthread_mutex_lock(&g_mu);
    int live = 0;
    for (unsigned p = 0; p < RTE_MAX_ETHPORTS; p++)
        live |= g_port[p].in_use;
    if (g_eal == EAL_OURS && !live) {
        for (unsigned p = 0; p < RTE_MAX_ETHPORTS; p++) {
            if (!g_port[p].pool)
                continue;
            (void)rte_eth_dev_close((uint16_t)p);
            rte_mempool_free(g_port[p].pool);
            g_port[p].pool = NULL;
        }
        rte_eal_cleanup();
        g_eal = EAL_DOWN;
    }
    pthread_mutex_unlock(&g_mu);
}

/* ---- per context ------------------------------------------------------ */

typedef struct dpdk_state {
    uint16_t port;
    uint8_t probed;
    const sr_log *log;
    struct rte_mempool *pool;
    sr_dpdk_tmpl tmpl;
    uint32_t local_ip, peer_ip; /* host order; local 0: any */
    uint16_t local_port, peer_port;
    /* Received mbufs not yet handed up (wait looks ahead into the queue). */
    struct rte_mbuf *rx[SR_DPDK_BURST];
    unsigned rx_head, rx_n;
    /* Frames the port did not take yet, oldest first. */
    struct rte_mbuf *tx[SR_DPDK_BURST];
    unsigned tx_n;
    uint64_t tx_since; /* when tx[0] was first refused */
    uint64_t last_rx;  /* when a frame last arrived */
    /* Frames whose messages recv_lend lent, freed by release. */
    struct rte_mbuf *lent[SR_TP_BURST];
    unsigned lent_n;
    int slack_set;
    struct {
        uint64_t tx, tx_dropped, rx, rx_foreign, rx_bad, rx_truncated, idle_sleeps;
    } c;
    uint8_t scratch[SR_DPDK_MAX_FRAME];
} __attribute__((aligned(64))) dpdk_state;

/* Copy s into out, replacing %r by rank and %% by %. Returns 0 or -1. */
static int expand(char *out, size_t cap, const char *s, int rank)
{
    size_t o = 0;
    for (; *s; s++) {
        char num[16];
        const char *add = num;
        if (*s == '%' && s[1] == 'r') {
            snprintf(num, sizeof num, "%d", rank);
            s++;
        } else if (*s == '%' && s[1] == '%') {
            num[0] = '%', num[1] = '\0';
            s++;
        } else {
            num[0] = *s, num[1] = '\0';
        }
        size_t n = strlen(add);
        if (o + n >= cap)
            return -1;
        memcpy(out + o, add, n);
        o += n;
    }
    out[o] = '\0';
    return 0;
}

static void tx_push(dpdk_state *d, uint64_t now)
{
    if (!d->tx_n)
        return;
    uint16_t k = rte_eth_tx_burst(d->port, 0, d->tx, (uint16_t)d->tx_n);
    d->c.tx += k;
    if (k < d->tx_n) {
        memmove(d->tx, d->tx + k, (d->tx_n - k) * sizeof d->tx[0]);
        d->tx_n -= k;
        if (k || !d->tx_since)
            d->tx_since = now;
        else if (now - d->tx_since > TX_HOLD_NS) {
            /* The port has been full for too long: these count as lost. */
            rte_pktmbuf_free_bulk(d->tx, d->tx_n);
            d->c.tx_dropped += d->tx_n;
            d->tx_n = 0;
            d->tx_since = 0;
        }
    } else {
        d->tx_n = 0;
        d->tx_since = 0;
    }
}

static void dpdk_close(void *state)
{
    dpdk_state *d = state;
    if (!d)
        return;
    uint64_t give_up = sr_dpdk_now_ns() + CLOSE_FLUSH_NS;
    while (d->tx_n && sr_dpdk_now_ns() < give_up)
        tx_push(d, sr_dpdk_now_ns());
    if (d->tx_n) {
        rte_pktmbuf_free_bulk(d->tx, d->tx_n);
        d->c.tx_dropped += d->tx_n;
    }
    /* Frames handed to a memif ring are still in this context's memory
     * until the peer reads them, and stopping the port unmaps it: the
     * last ones (the LEAVE) get a moment, or the switch keeps the binding
     * until its lease runs out and the job's next run is refused. */
    if (d->c.tx) {
        struct timespec ts = {0, (long)CLOSE_GRACE_NS};
        nanosleep(&ts, NULL);
    }
    if (d->lent_n) /* a caller that never released */
        rte_pktmbuf_free_bulk(d->lent, d->lent_n);
    for (unsigned i = d->rx_head; i < d->rx_n; i++)
        rte_pktmbuf_free(d->rx[i]);
    struct rte_eth_stats st;
    memset(&st, 0, sizeof st);
    (void)rte_eth_stats_get(d->port, &st);
    SR_INFO(d->log,
            "dpdk: port %u: tx=%" PRIu64 " tx_dropped=%" PRIu64 " rx=%" PRIu64
            " rx_foreign=%" PRIu64 " rx_bad=%" PRIu64 " rx_truncated=%" PRIu64
            " idle_sleeps=%" PRIu64 "; port ipackets=%" PRIu64 " opackets=%" PRIu64
            " imissed=%" PRIu64 " ierrors=%" PRIu64 " oerrors=%" PRIu64 " rx_nombuf=%" PRIu64,
            d->port, d->c.tx, d->c.tx_dropped, d->c.rx, d->c.rx_foreign, d->c.rx_bad,
            d->c.rx_truncated, d->c.idle_sleeps, st.ipackets, st.opackets, st.imissed,
            st.ierrors, st.oerrors, st.rx_nombuf);
    pthread_mutex_lock(&g_mu);
    if (d->probed) {
        sr_dpdk_port_remove(d->port);
        rte_mempool_free(d->pool);
        g_port[d->port].pool = NULL;
        g_port[d->port].probed = 0;
    } else {
        sr_dpdk_port_stop(d->port);
    }
    g_port[d->port].in_use = 0;
    pthread_mutex_unlock(&g_mu);
    free(d);
}

/* Start EAL or find it running. Called with g_mu held. */
static int eal_acquire(const serene_config *cfg, const sr_log *log)
{
    char args[ARGS_MAX], err[SR_DPDK_ERR_MAX];
    if (g_eal == EAL_OURS || g_eal == EAL_APP)
        return 0;
    if (g_eal == EAL_FAILED) {
        SR_ERR(log, "dpdk: EAL failed to start earlier in this process; it cannot be retried");
        return SERENE_ERR_TRANSPORT;
    }
    if (sr_dpdk_eal_is_up()) {
        g_eal = EAL_APP;
        SR_INFO(log, "dpdk: EAL already initialized by the application; using it");
        return 0;
    }
    const char *a = cfg->dpdk_eal_args ? cfg->dpdk_eal_args : "";
    if (!*a) {
        SR_ERR(log, "dpdk: EAL is not initialized: set dpdk_eal_args (SERENE_DPDK_EAL_ARGS), "
                    "or call rte_eal_init before serene_ctx_create");
        return SERENE_ERR_CONFIG;
    }
    if (expand(args, sizeof args, a, cfg->rank)) {
        SR_ERR(log, "dpdk: dpdk_eal_args is longer than %d bytes", ARGS_MAX - 1);
        return SERENE_ERR_CONFIG;
    }
    int rc = sr_dpdk_eal_start(args, "serene", err);
    if (rc < 0) {
        g_eal = EAL_FAILED;
        SR_ERR(log, "dpdk: %s", err);
        return SERENE_ERR_TRANSPORT;
    }
    g_eal = rc == 0 ? EAL_OURS : EAL_APP;
    SR_INFO(log, "dpdk: EAL %s with \"%s\"", rc == 0 ? "started" : "was already running", args);
    return 0;
}

static int addrs_from_cfg(dpdk_state *d, const serene_config *cfg, const sr_log *log)
{
    struct sockaddr_in peer, local;
    int rc = sr_parse_hostport(cfg->switch_addr, -1, &peer, log);
    if (rc)
        return rc;
    if (peer.sin_port == 0) {
        SR_ERR(log, "switch address \"%s\": port 0 is not a valid destination", cfg->switch_addr);
        return SERENE_ERR_CONFIG;
    }
    /* No kernel to pick a port: the default is distinct per rank. */
    char defbind[32];
    snprintf(defbind, sizeof defbind, ":%u", SR_WIRE_UDP_PORT + 1u + (unsigned)cfg->rank);
    if ((rc = sr_parse_hostport(cfg->bind_addr[0] ? cfg->bind_addr : defbind,
                                (int)(SR_WIRE_UDP_PORT + 1u + (unsigned)cfg->rank), &local, log)))
        return rc;
    if (local.sin_port == 0)
        local.sin_port = htons((uint16_t)(SR_WIRE_UDP_PORT + 1u + (unsigned)cfg->rank));
    d->peer_ip = ntohl(peer.sin_addr.s_addr);
    d->peer_port = ntohs(peer.sin_port);
    d->local_ip = ntohl(local.sin_addr.s_addr);
    d->local_port = ntohs(local.sin_port);
    return 0;
}

static int dpdk_open(void **state, const serene_config *cfg, const sr_log *log)
{
    char spec[ARGS_MAX], err[SR_DPDK_ERR_MAX], pool_name[32];
    const char *p = cfg->dpdk_port && *cfg->dpdk_port ? cfg->dpdk_port : "0";
    dpdk_state *d;
    if (expand(spec, sizeof spec, p, cfg->rank)) {
        SR_ERR(log, "dpdk: dpdk_port is longer than %d bytes", ARGS_MAX - 1);
        return SERENE_ERR_CONFIG;
    }
    d = aligned_alloc(64, sizeof *d);
    if (!d)
        return SERENE_ERR_NOMEM;
    memset(d, 0, sizeof *d);
    d->log = log;
    int rc = addrs_from_cfg(d, cfg, log);
    if (rc) {
        free(d);
        return rc;
    }
    pthread_mutex_lock(&g_mu);
    if ((rc = eal_acquire(cfg, log))) {
        pthread_mutex_unlock(&g_mu);
        free(d);
        return rc;
    }
    int probed = 0;
    if (sr_dpdk_port_find(spec, &d->port, &probed, err)) {
        pthread_mutex_unlock(&g_mu);
        SR_ERR(log, "dpdk: %s", err);
        free(d);
        return SERENE_ERR_CONFIG;
    }
    if (g_port[d->port].in_use) {
        pthread_mutex_unlock(&g_mu);
        SR_ERR(log, "dpdk: port %u (\"%s\") is used by another context of this process", d->port,
               spec);
        free(d);
        return SERENE_ERR_CONFIG;
    }
    g_port[d->port].in_use = 1;
    g_port[d->port].probed = (uint8_t)probed;
    d->probed = (uint8_t)probed;
    snprintf(pool_name, sizeof pool_name, "serene_%u_%u", d->port, g_pool_seq++);
    pthread_mutex_unlock(&g_mu);

    static const uint8_t zero[6], bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    int own_mac = memcmp(cfg->dpdk_mac, zero, 6) != 0;
    sr_dpdk_port_info info;
    uint64_t deadline = sr_dpdk_now_ns() + (uint64_t)cfg->timeout_ms * 1000000ull;
    /* The pool outlives a stopped port: reuse the one it refers to. */
    d->pool = g_port[d->port].pool;
    if (sr_dpdk_port_start(d->port, &d->pool, pool_name, NB_MBUFS, own_mac, deadline, &info,
                           err)) {
        SR_ERR(log, "dpdk: %s", err);
        g_port[d->port].pool = d->pool;
        dpdk_close(d);
        return SERENE_ERR_TRANSPORT;
    }
    g_port[d->port].pool = d->pool;
    sr_frame_addr a;
    memset(&a, 0, sizeof a);
    memcpy(a.src_mac, own_mac ? cfg->dpdk_mac : info.mac, 6);
    memcpy(a.dst_mac, memcmp(cfg->dpdk_peer_mac, zero, 6) ? cfg->dpdk_peer_mac : bcast, 6);
    a.src_ip = d->local_ip;
    a.dst_ip = d->peer_ip;
    a.src_port = d->local_port;
    a.dst_port = d->peer_port;
    sr_dpdk_tmpl_init(&d->tmpl, &a, info.csum_offload);
    SR_INFO(log,
            "dpdk: port %u (%s) up, %" PRIu32 " Mbps, checksums %s; %02x:%02x:%02x:%02x:%02x:%02x "
            "-> %02x:%02x:%02x:%02x:%02x:%02x, udp port %u -> %u, mbuf pool %s",
            d->port, info.name, info.link_mbps, info.csum_offload ? "offloaded" : "IPv4 in software, UDP none",
            a.src_mac[0], a.src_mac[1], a.src_mac[2], a.src_mac[3], a.src_mac[4], a.src_mac[5],
            a.dst_mac[0], a.dst_mac[1], a.dst_mac[2], a.dst_mac[3], a.dst_mac[4], a.dst_mac[5],
            d->local_port, d->peer_port, rte_mempool_get_ops(d->pool->ops_index)->name);
    *state = d;
    return 0;
}

static int dpdk_send(void *state, const struct iovec *msgs, unsigned n)
{
    dpdk_state *d = state;
    uint64_t now = sr_dpdk_now_ns();
    unsigned done = 0;
    if (n > SR_TP_BURST)
        n = SR_TP_BURST;
    tx_push(d, now);
    while (done < n && d->tx_n < SR_DPDK_BURST) {
        struct rte_mbuf *m = sr_dpdk_frame(d->pool, &d->tmpl, msgs[done].iov_base,
                                           msgs[done].iov_len, NULL, 0);
        if (!m)
            break; /* no mbuf (or too long): the rest count as lost */
        d->tx[d->tx_n++] = m;
        done++;
    }
    tx_push(d, now);
    return (int)done;
}

/* Take up to SR_DPDK_BURST frames from the port when none is in hand. */
static unsigned rx_fill(dpdk_state *d)
{
    if (d->rx_head == d->rx_n) {
        d->rx_head = 0;
        d->rx_n = rte_eth_rx_burst(d->port, 0, d->rx, SR_DPDK_BURST);
        if (d->rx_n)
            d->last_rx = sr_dpdk_now_ns();
    }
    return d->rx_n - d->rx_head;
}

/* Receive into bufs, or lend (msgs != NULL): a contiguous frame's message
 * stays in its mbuf, kept in d->lent until dpdk_release. */
static int rx_take(dpdk_state *d, uint8_t *const *bufs, const uint8_t **msgs, uint32_t *lens,
                   unsigned n, uint32_t cap, uint64_t *truncated)
{
    unsigned got = 0;
    tx_push(d, sr_dpdk_now_ns());
    if (n > SR_TP_BURST)
        n = SR_TP_BURST;
    while (got < n && rx_fill(d)) {
        struct rte_mbuf *m = d->rx[d->rx_head++];
        sr_frame_addr a;
        const uint8_t *pl;
        size_t len;
        int r = sr_dpdk_frame_parse(m, d->scratch, &a, &pl, &len);
        if (msgs)
            msgs[got] = bufs[got];
        if (rte_pktmbuf_pkt_len(m) > SR_DPDK_MAX_FRAME) {
            /* Longer than any Serene message: counted as the udp transport
             * counts a datagram longer than its buffer. */
            d->c.rx_truncated++;
            (*truncated)++;
            lens[got++] = 0;
        } else if (r == SR_FRAME_NOT_IPV4 || r == SR_FRAME_NOT_UDP) {
            d->c.rx_foreign++; /* other traffic on the link (ARP, IPv6, ...) */
        } else if (r != SR_FRAME_OK) {
            d->c.rx_bad++;
        } else if (a.dst_port != d->local_port || a.src_port != d->peer_port ||
                   a.src_ip != d->peer_ip || (d->local_ip && a.dst_ip != d->local_ip)) {
            d->c.rx_foreign++;
        } else if (len > cap) {
            d->c.rx_truncated++;
            (*truncated)++;
            lens[got++] = 0;
        } else {
            if (msgs && pl != d->scratch) { /* in the mbuf itself: lend it */
                msgs[got] = pl;
                d->lent[d->lent_n++] = m;
                m = NULL;
            } else {
                memcpy(bufs[got], pl, len);
            }
            lens[got++] = (uint32_t)len;
            d->c.rx++;
        }
        if (m)
            rte_pktmbuf_free(m);
    }
    return (int)got;
}

static int dpdk_recv(void *state, uint8_t *const *bufs, uint32_t *lens, unsigned n, uint32_t cap,
                     uint64_t *truncated)
{
    return rx_take(state, bufs, NULL, lens, n, cap, truncated);
}

static void dpdk_release(void *state)
{
    dpdk_state *d = state;
    if (d->lent_n)
        rte_pktmbuf_free_bulk(d->lent, d->lent_n);
    d->lent_n = 0;
}

static int dpdk_recv_lend(void *state, uint8_t *const *bufs, const uint8_t **msgs,
                          uint32_t *lens, unsigned n, uint32_t cap, uint64_t *truncated)
{
    dpdk_release(state); /* a caller that forgot: nothing leaks */
    return rx_take(state, bufs, msgs, lens, n, cap, truncated);
}

static int dpdk_wait(void *state, int64_t timeout_ns, int wake_fd)
{
    dpdk_state *d = state;
    uint64_t now = sr_dpdk_now_ns(), step = 0;
    uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;
    uint64_t cap = timeout_ns >= 0 || now - d->last_rx < RECENT_NS ? BUSY_MAX_NS : IDLE_MAX_NS;
    if (!d->slack_set) {
        /* Microsecond sleeps need a timer slack below the default 50 us;
         * this thread is the context's own. */
        (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
        d->slack_set = 1;
    }
    for (;;) {
        tx_push(d, now);
        if (rx_fill(d))
            return 0;
        if (now >= deadline)
            return 0;
        uint64_t left = deadline - now;
        if (step > left)
            step = left;
        struct timespec ts = {(time_t)(step / 1000000000ull), (long)(step % 1000000000ull)};
        struct pollfd p = {.fd = wake_fd, .events = POLLIN};
        int k = ppoll(&p, wake_fd >= 0 ? 1 : 0, &ts, NULL);
        if (k > 0)
            return 0;
        if (k < 0 && errno != EINTR)
            return -errno;
        if (step)
            d->c.idle_sleeps++;
        step = step ? (step * 2 > cap ? cap : step * 2) : IDLE_MIN_NS;
        now = sr_dpdk_now_ns();
    }
}

static int dpdk_addrs(void *state, struct sockaddr_in *local, struct sockaddr_in *peer)
{
    dpdk_state *d = state;
    memset(local, 0, sizeof *local);
    memset(peer, 0, sizeof *peer);
    local->sin_family = peer->sin_family = AF_INET;
    local->sin_addr.s_addr = htonl(d->local_ip);
    local->sin_port = htons(d->local_port);
    peer->sin_addr.s_addr = htonl(d->peer_ip);
    peer->sin_port = htons(d->peer_port);
    return 0;
}

const sr_transport sr_transport_dpdk = {
    .name = "dpdk",
    .open = dpdk_open,
    .close = dpdk_close,
    .send = dpdk_send,
    .recv = dpdk_recv,
    .recv_lend = dpdk_recv_lend,
    .release = dpdk_release,
    .wait = dpdk_wait,
    .addrs = dpdk_addrs,
};
