/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_port.c - EAL start-up, port set-up and frame building shared by the
 * dpdk transport (dpdk.c) and serene-switch's DPDK mode (dpdk_io.c).
 * See dpdk_port.h for the contract.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "transport/dpdk/dpdk_port.h"

/* Byte offsets of the fields patched per packet (RFC 791, RFC 768). */
#define OFF_IP (SR_ETH_HLEN)
#define OFF_IP_TOTLEN (OFF_IP + 2)
#define OFF_IP_CSUM (OFF_IP + 10)
#define OFF_UDP (SR_ETH_HLEN + SR_IPV4_HLEN)
#define OFF_UDP_LEN (OFF_UDP + 4)
#define OFF_UDP_CSUM (OFF_UDP + 6)

#define RING_DESC 1024 /* RX and TX descriptors asked for (the driver adjusts) */
#define LINK_POLL_NS 10000000ull /* link-up polling period: 10 ms */

#define DATA_ROOM SR_DPDK_DATA_ROOM
_Static_assert(DATA_ROOM <= UINT16_MAX, "mbuf data room is a uint16_t");

__attribute__((format(printf, 2, 3))) static int fail(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, SR_DPDK_ERR_MAX, fmt, ap);
    va_end(ap);
    return -1;
}

uint64_t sr_dpdk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- EAL ------------------------------------------------------------------ */

int sr_dpdk_eal_is_up(void)
{
    /* The configuration is static and zeroed until rte_eal_init fills it. */
    return rte_lcore_count() > 0;
}

int sr_dpdk_eal_start(const char *args, const char *prog, char *err)
{
    if (sr_dpdk_eal_is_up())
        return 1;
    if (!args || !*args)
        return fail(err, "EAL is not initialized and no EAL arguments were given");
    char *copy = strdup(args);
    char *argv[SR_DPDK_MAX_ARGS + 2];
    int argc = 0;
    if (!copy)
        return fail(err, "out of memory");
    argv[argc++] = (char *)prog;
    for (char *save = NULL, *tok = strtok_r(copy, " \t\n", &save); tok;
         tok = strtok_r(NULL, " \t\n", &save)) {
        if (argc > SR_DPDK_MAX_ARGS) {
            free(copy);
            return fail(err, "more than %d EAL arguments", SR_DPDK_MAX_ARGS);
        }
        argv[argc++] = tok;
    }
    argv[argc] = NULL;
    cpu_set_t saved;
    int have_aff = pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;
    /* rte_eal_init may permute argv: it gets a copy of the pointers. */
    int rc = rte_eal_init(argc, argv);
    int e = rte_errno;
    if (have_aff)
        (void)pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    free(copy);
    if (rc < 0) {
        if (e == EALREADY)
            return 1;
        return fail(err, "rte_eal_init(\"%s\") failed: %s", args, rte_strerror(e));
    }
    return 0;
}

/* ---- ports ---------------------------------------------------------------- */

/* The memif driver's defaults and limit for its log2 ring size (rsize). */
#define MEMIF_RSIZE_DEFAULT 10
#define MEMIF_RSIZE_MAX 14

unsigned sr_dpdk_pool_size(uint16_t port, unsigned min, unsigned cache)
{
    char name[RTE_ETH_NAME_MAX_LEN];
    const struct rte_devargs *da;
    unsigned n = min;

    if (rte_eth_dev_get_name_by_port(port, name) != 0 || strncmp(name, "net_memif", 9) != 0)
        return n;
    RTE_EAL_DEVARGS_FOREACH("vdev", da)
    {
        if (strcmp(da->name, name) != 0 || !da->args)
            continue;
        /* The driver's own parser reads the same string. */
        struct rte_kvargs *kv = rte_kvargs_parse(da->args, NULL);
        const char *zc = kv ? rte_kvargs_get(kv, "zero-copy") : NULL;
        const char *rs = kv ? rte_kvargs_get(kv, "rsize") : NULL;
        long rsize = rs ? strtol(rs, NULL, 10) : MEMIF_RSIZE_DEFAULT;
        /* An rsize out of range: the driver refuses the port. */
        if (zc && !strcmp(zc, "yes") && rsize >= 0 && rsize <= MEMIF_RSIZE_MAX) {
            unsigned rings = 2u * (1u << rsize) + 2u * SR_DPDK_BURST + cache * 3u / 2u;
            if (rings > n)
                n = rings;
        }
        rte_kvargs_free(kv);
        break;
    }
    return n;
}

int sr_dpdk_port_find(const char *spec, uint16_t *port, int *probed, char *err)
{
    char name[RTE_DEV_NAME_MAX_LEN];
    size_t n = strcspn(spec, ",");
    *probed = 0;
    if (!*spec)
        return fail(err, "empty DPDK port");
    if (strspn(spec, "0123456789") == strlen(spec)) {
        unsigned long id = strtoul(spec, NULL, 10);
        if (id >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port((uint16_t)id))
            return fail(err, "DPDK port %s does not exist (%u ports available)", spec,
                        (unsigned)rte_eth_dev_count_avail());
        *port = (uint16_t)id;
        return 0;
    }
    if (n >= sizeof name)
        return fail(err, "DPDK device name in \"%s\" is too long", spec);
    memcpy(name, spec, n);
    name[n] = '\0';
    if (rte_eth_dev_get_port_by_name(name, port) == 0) {
        if (spec[n])
            return fail(err, "DPDK device %s exists already: give its name alone, not \"%s\"",
                        name, spec);
        return 0;
    }
    /* Not there: a virtual device to create now (hot-plug). */
    int rc = rte_dev_probe(spec);
    if (rc < 0)
        return fail(err, "DPDK device \"%s\" is neither a port nor a device that can be "
                         "probed: %s", spec, rte_strerror(-rc));
    if (rte_eth_dev_get_port_by_name(name, port) != 0)
        return fail(err, "probing \"%s\" created no ethdev port named %s", spec, name);
    *probed = 1;
    return 0;
}

static int wait_link(uint16_t port, uint64_t deadline_ns, sr_dpdk_port_info *info, char *err)
{
    for (;;) {
        struct rte_eth_link link;
        memset(&link, 0, sizeof link);
        int rc = rte_eth_link_get_nowait(port, &link);
        if (rc == 0 && link.link_status == RTE_ETH_LINK_UP) {
            info->link_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
            return 0;
        }
        if (rc < 0 && rc != -ENOTSUP)
            return fail(err, "%s: link status: %s", info->name, rte_strerror(-rc));
        if (rc == -ENOTSUP)
            return 0; /* the driver cannot tell: assume up */
        uint64_t now = sr_dpdk_now_ns();
        if (now >= deadline_ns)
            return fail(err, "%s: link still down at the deadline (is the peer running? "
                             "memif: is the server side up?)", info->name);
        uint64_t step = deadline_ns - now < LINK_POLL_NS ? deadline_ns - now : LINK_POLL_NS;
        struct timespec ts = {(time_t)(step / 1000000000ull), (long)(step % 1000000000ull)};
        nanosleep(&ts, NULL);
    }
}

/* 1 if a mempool driver called name is registered (asking for one that is
 * not makes DPDK log an error). */
static int have_pool_ops(const char *name)
{
    for (uint32_t i = 0; i < rte_mempool_ops_table.num_ops; i++)
        if (!strcmp(rte_mempool_ops_table.ops[i].name, name))
            return 1;
    return 0;
}

int sr_dpdk_port_start(uint16_t port, struct rte_mempool **pool, const char *pool_name,
                       unsigned nb_mbufs, int promisc, uint64_t deadline_ns,
                       sr_dpdk_port_info *info, char *err)
{
    struct rte_eth_dev_info di;
    struct rte_eth_conf conf;
    struct rte_ether_addr mac;
    uint16_t nrx = RING_DESC, ntx = RING_DESC;
    int socket = rte_eth_dev_socket_id(port), rc;

    memset(info, 0, sizeof *info);
    if (rte_eth_dev_get_name_by_port(port, info->name) != 0)
        snprintf(info->name, sizeof info->name, "port %u", port);
    if ((rc = rte_eth_dev_info_get(port, &di)) != 0)
        return fail(err, "%s: device info: %s", info->name, rte_strerror(-rc));
    if (socket < 0)
        socket = (int)SOCKET_ID_ANY;
    memset(&conf, 0, sizeof conf);
    const uint64_t csum = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    if ((di.tx_offload_capa & csum) == csum) {
        conf.txmode.offloads = csum;
        info->csum_offload = 1;
    }
    if (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    if ((rc = rte_eth_dev_configure(port, 1, 1, &conf)) != 0)
        return fail(err, "%s: configure: %s", info->name, rte_strerror(-rc));
    if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx)) != 0)
        return fail(err, "%s: descriptor counts: %s", info->name, rte_strerror(-rc));
    if (!*pool) {
        nb_mbufs = sr_dpdk_pool_size(port, nb_mbufs, 0);
        /* No per-lcore cache: the data-path thread is not an EAL lcore, and
         * a cache is all that hands an lcore back the mbuf it freed last.
         * Without one the default pool (a ring) hands out the mbuf freed
         * longest ago, cold in the cache; the "stack" mempool driver hands
         * out the one freed last, so a frame built or received is written
         * into memory still in the cache. Where that driver is not loaded,
         * the default. */
        if (have_pool_ops("stack"))
            *pool = rte_pktmbuf_pool_create_by_ops(pool_name, nb_mbufs, 0, 0, (uint16_t)DATA_ROOM,
                                                   socket, "stack");
        if (!*pool)
            *pool = rte_pktmbuf_pool_create(pool_name, nb_mbufs, 0, 0, (uint16_t)DATA_ROOM,
                                            socket);
        if (!*pool)
            return fail(err, "%s: mbuf pool of %u x %u bytes: %s (give EAL more memory: -m)",
                        info->name, nb_mbufs, (unsigned)DATA_ROOM, rte_strerror(rte_errno));
    }
    struct rte_eth_txconf txc = di.default_txconf;
    txc.offloads = conf.txmode.offloads;
    if ((rc = rte_eth_rx_queue_setup(port, 0, nrx, (unsigned)socket, NULL, *pool)) != 0 ||
        (rc = rte_eth_tx_queue_setup(port, 0, ntx, (unsigned)socket, &txc)) != 0)
        return fail(err, "%s: queue setup: %s", info->name, rte_strerror(-rc));
    /* A memif client cannot start before its server's socket exists:
     * retry until the deadline, so a worker may start before the switch. */
    while ((rc = rte_eth_dev_start(port)) != 0) {
        if (!deadline_ns || sr_dpdk_now_ns() + LINK_POLL_NS * 5 >= deadline_ns)
            return fail(err, "%s: start: %s (memif client: is the server up?)", info->name,
                        rte_strerror(-rc));
        struct timespec ts = {0, (long)(LINK_POLL_NS * 5)};
        nanosleep(&ts, NULL);
    }
    if (promisc)
        (void)rte_eth_promiscuous_enable(port); /* best effort: some drivers lack it */
    if ((rc = rte_eth_macaddr_get(port, &mac)) != 0) {
        (void)rte_eth_dev_stop(port);
        return fail(err, "%s: MAC address: %s", info->name, rte_strerror(-rc));
    }
    memcpy(info->mac, mac.addr_bytes, 6);
    if (deadline_ns && wait_link(port, deadline_ns, info, err)) {
        (void)rte_eth_dev_stop(port);
        return -1;
    }
    return 0;
}

void sr_dpdk_port_stop(uint16_t port)
{
    (void)rte_eth_dev_stop(port);
}

void sr_dpdk_port_remove(uint16_t port)
{
    struct rte_eth_dev_info di;
    (void)rte_eth_dev_stop(port);
    if (rte_eth_dev_info_get(port, &di) == 0 && di.device)
        (void)rte_dev_remove(di.device);
    else
        (void)rte_eth_dev_close(port);
}

/* ---- frames --------------------------------------------------------------- */

void sr_dpdk_tmpl_init(sr_dpdk_tmpl *t, const sr_frame_addr *a, int offload)
{
    (void)sr_frame_pack(t->hdr, sizeof t->hdr, a, 0);
    t->offload = offload;
}

struct rte_mbuf *sr_dpdk_frame_alloc(struct rte_mempool *pool, const sr_dpdk_tmpl *t, size_t plen,
                                     uint8_t **msg)
{
    size_t flen = SR_FRAME_HLEN + plen;
    if (flen > SR_DPDK_MAX_FRAME)
        return NULL;
    struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
    if (!m)
        return NULL;
    uint8_t *f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);
    if (!f) {
        rte_pktmbuf_free(m);
        return NULL;
    }
    memcpy(f, t->hdr, SR_FRAME_HLEN);
    *msg = f + SR_FRAME_HLEN;
    return m;
}

void sr_dpdk_frame_finish(struct rte_mbuf *m, const sr_dpdk_tmpl *t, size_t plen)
{
    uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *), *ip = f + OFF_IP;
    sr_put_be16(f + OFF_IP_TOTLEN, (uint16_t)(SR_IPV4_HLEN + SR_UDP_HLEN + plen));
    sr_put_be16(f + OFF_UDP_LEN, (uint16_t)(SR_UDP_HLEN + plen));
    if (t->offload) {
        m->l2_len = SR_ETH_HLEN;
        m->l3_len = SR_IPV4_HLEN;
        m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
        sr_put_be16(f + OFF_IP_CSUM, 0);
        /* The driver expects the pseudo-header sum in the UDP field. */
        uint16_t ph = rte_ipv4_phdr_cksum((const struct rte_ipv4_hdr *)(const void *)ip,
                                          m->ol_flags);
        memcpy(f + OFF_UDP_CSUM, &ph, 2); /* already in network order */
    } else {
        /* No UDP checksum (0: "none", which IPv4 allows, RFC 768): summing
         * every payload byte in software on each side would cost more
         * than the rest of the frame's handling, and the link's own CRC
         * guards it on the way. The IPv4 header keeps its checksum: 20
         * bytes, and mandatory. */
        sr_put_be16(f + OFF_IP_CSUM, sr_csum_ipv4(ip));
        sr_put_be16(f + OFF_UDP_CSUM, 0);
    }
}

struct rte_mbuf *sr_dpdk_frame(struct rte_mempool *pool, const sr_dpdk_tmpl *t,
                               const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    uint8_t *msg;
    struct rte_mbuf *m = sr_dpdk_frame_alloc(pool, t, alen + blen, &msg);
    if (!m)
        return NULL;
    if (alen)
        memcpy(msg, a, alen);
    if (blen)
        memcpy(msg + alen, b, blen);
    sr_dpdk_frame_finish(m, t, alen + blen);
    return m;
}

int sr_dpdk_frame_parse(struct rte_mbuf *m, uint8_t *scratch, sr_frame_addr *a,
                        const uint8_t **payload, size_t *len)
{
    uint32_t flen = rte_pktmbuf_pkt_len(m);
    if (flen > SR_DPDK_MAX_FRAME)
        return SR_FRAME_TRUNCATED;
    const uint8_t *f = rte_pktmbuf_read(m, 0, flen, scratch);
    if (!f)
        return SR_FRAME_TRUNCATED;
    return sr_frame_parse(f, flen, a, payload, len);
}
