/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memif_flood.c - a DPDK client that fills a switch port's receive ring
 * with the largest frames and then disconnects at once, for
 * test_memif_churn.sh: the switch is still copying this client's frames out
 * of the memif ring when its memif server hears that the client left
 * (the crash dpdk_guard.c prevents: EAL's interrupt thread unmapped the
 * client's memory under a burst of the switch's loop).
 *
 *   memif_flood EAL_ARGS PORT SWITCH_IP:PORT SRC_IP:PORT MS [ROUNDS]
 *
 * EAL_ARGS as SERENE_DPDK_EAL_ARGS (a net_memif client vdev, say), PORT
 * the port to use (as SERENE_DPDK_PORT). Once the link is up it sends
 * bursts of SR_DPDK_BURST frames of SR_WIRE_MAX_MSG bytes of zeros (not a
 * Serene header: the switch rejects each after reading it) from SRC to the
 * switch's address, draining whatever comes back, for MS milliseconds
 * (1..600000) and then until the port refuses part of a burst (its ring
 * is full); then it stops the port without waiting for the switch to
 * drain the ring (a memif client's stop closes its control channel).
 * ROUNDS times (default 1, at most 1000): a memif client's start connects
 * it again. A ring that does not fill within 5 s of MS is left as it is.
 *
 * Exit status: 0 flooded and stopped; 1 a setup step failed, or the port
 * took no frame; 2 bad usage.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "transport/dpdk/dpdk_port.h"

#define NB_MBUFS 4095u
#define LINK_WAIT_NS 5000000000ull /* the switch's memif server is up already */
#define FILL_WAIT_NS 5000000000ull /* a ring not full this long after MS: give up */

/* "a.b.c.d:port" into *ip and *port (host order). Returns 0 or -1. */
static int parse_addr(const char *s, uint32_t *ip, uint16_t *port)
{
    char host[32];
    const char *colon = strrchr(s, ':');
    struct in_addr a;
    char *end;
    unsigned long p;

    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    p = strtoul(colon + 1, &end, 10);
    if (inet_pton(AF_INET, host, &a) != 1 || *end || p == 0 || p > 65535)
        return -1;
    *ip = ntohl(a.s_addr);
    *port = (uint16_t)p;
    return 0;
}

/* Send the same SR_DPDK_BURST frames (b, each holding one reference of
 * ours) again and again until deadline_ns, then on until the port refuses
 * part of a burst (its ring is full), FILL_WAIT_NS at most. Returns how
 * many frames it took. */
static uint64_t flood(uint16_t port, struct rte_mbuf *const *b, uint64_t deadline_ns)
{
    struct rte_mbuf *tx[SR_DPDK_BURST], *rx[SR_DPDK_BURST];
    uint64_t sent = 0;

    for (;;) {
        uint16_t k, got;

        /* memif copies a frame into its ring and frees the mbuf: a
         * reference per send keeps ours, so no frame is built twice. */
        for (unsigned i = 0; i < SR_DPDK_BURST; i++) {
            rte_mbuf_refcnt_update(b[i], 1);
            tx[i] = b[i];
        }
        k = rte_eth_tx_burst(port, 0, tx, SR_DPDK_BURST);
        for (unsigned i = k; i < SR_DPDK_BURST; i++)
            rte_mbuf_refcnt_update(b[i], -1);
        sent += k;
        got = rte_eth_rx_burst(port, 0, rx, SR_DPDK_BURST);
        if (got)
            rte_pktmbuf_free_bulk(rx, got);
        uint64_t now = sr_dpdk_now_ns();
        if (now >= deadline_ns && (k < SR_DPDK_BURST || now >= deadline_ns + FILL_WAIT_NS))
            return sent;
    }
}

int main(int argc, char **argv)
{
    static uint8_t zeros[SR_WIRE_MAX_MSG];
    struct rte_mbuf *b[SR_DPDK_BURST];
    char err[SR_DPDK_ERR_MAX];
    sr_dpdk_port_info info;
    struct rte_mempool *pool = NULL;
    sr_frame_addr a;
    sr_dpdk_tmpl t;
    uint16_t port;
    int probed;
    long ms, rounds;

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&a, 0, sizeof a);
    ms = argc >= 6 ? strtol(argv[5], NULL, 10) : 0;
    rounds = argc == 7 ? strtol(argv[6], NULL, 10) : 1;
    if (argc < 6 || argc > 7 || parse_addr(argv[3], &a.dst_ip, &a.dst_port) ||
        parse_addr(argv[4], &a.src_ip, &a.src_port) || ms < 1 || ms > 600000 || rounds < 1 ||
        rounds > 1000) {
        fprintf(stderr,
                "usage: memif_flood EAL_ARGS PORT SWITCH_IP:PORT SRC_IP:PORT MS [ROUNDS]\n");
        return 2;
    }
    if (sr_dpdk_eal_start(argv[1], "memif_flood", err) < 0 ||
        sr_dpdk_port_find(argv[2], &port, &probed, err) ||
        sr_dpdk_port_start(port, &pool, "flood_pool", NB_MBUFS, 0, sr_dpdk_now_ns() + LINK_WAIT_NS,
                           &info, err)) {
        fprintf(stderr, "memif_flood: %s\n", err);
        return 1;
    }
    /* Broadcast to the switch: it takes any destination MAC. */
    memset(a.dst_mac, 0xff, 6);
    memcpy(a.src_mac, info.mac, 6);
    sr_dpdk_tmpl_init(&t, &a, info.csum_offload);
    for (unsigned i = 0; i < SR_DPDK_BURST; i++)
        if (!(b[i] = sr_dpdk_frame(pool, &t, zeros, SR_WIRE_MAX_MSG, NULL, 0))) {
            fprintf(stderr, "memif_flood: no mbuf for frame %u\n", i);
            return 1;
        }
    uint64_t sent = 0;
    for (long r = 0; r < rounds; r++) {
        /* Again on the same pool: the frames in b stay ours. */
        if (r && sr_dpdk_port_start(port, &pool, "flood_pool", NB_MBUFS, 0,
                                    sr_dpdk_now_ns() + LINK_WAIT_NS, &info, err)) {
            fprintf(stderr, "memif_flood: round %ld: %s\n", r, err);
            return 1;
        }
        sent += flood(port, b, sr_dpdk_now_ns() + (uint64_t)ms * 1000000ull);
        /* At once, the receive ring full: no drain, no goodbye. */
        sr_dpdk_port_stop(port);
    }
    if (probed)
        sr_dpdk_port_remove(port);
    printf("memif_flood: %llu frames of %u bytes in %ld rounds of %ld ms, each ended with a "
           "stop\n",
           (unsigned long long)sent, (unsigned)(SR_FRAME_HLEN + SR_WIRE_MAX_MSG), rounds, ms);
    return sent ? 0 : 1;
}
