/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_port.h - the DPDK pieces the library's dpdk transport and the
 * software switch's DPDK mode share: EAL start-up, finding or probing a
 * port, starting it with one queue pair, and turning Serene messages into
 * Ethernet/IPv4/UDP mbufs and back.
 *
 * Frames are laid out by lib/proto/wire.c (sr_frame_pack builds the header
 * template, sr_frame_parse checks received frames): this file only patches
 * the two length fields and the checksums of a template per packet. A port
 * with checksum offload fills both checksums; otherwise the IPv4 header's
 * is computed here and the UDP checksum is 0 ("none", as IPv4 allows), so
 * no payload byte is summed in software on either side.
 *
 * Invariants:
 * - Nothing here logs: every failure writes one sentence into the caller's
 *   err buffer (SR_DPDK_ERR_MAX bytes) and returns a negative code.
 * - Every wait has a deadline (link-up).
 * - Single-threaded per port: the caller owns the port and its queue 0.
 */
#ifndef SERENE_TRANSPORT_DPDK_PORT_H
#define SERENE_TRANSPORT_DPDK_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

struct rte_mbuf;
struct rte_mempool;

#define SR_DPDK_ERR_MAX 256
#define SR_DPDK_BURST 32 /* mbufs per rx/tx burst */
#define SR_DPDK_MAX_ARGS 64 /* EAL arguments at most */
/* Largest frame: L2-L4 headers plus the largest Serene message. */
#define SR_DPDK_MAX_FRAME (SR_FRAME_HLEN + SR_WIRE_MAX_MSG)

/* Start EAL with args (split at blanks and tabs; no quoting), argv[0] being
 * prog. The calling thread's CPU affinity is restored afterwards: EAL pins
 * the thread that calls rte_eal_init to its main lcore, and every thread it
 * creates later would inherit that pin. Returns 0 when EAL was started
 * here, 1 when it was already running in this process (the application
 * owns it: EALREADY), or -1 with err filled. */
int sr_dpdk_eal_start(const char *args, const char *prog, char *err);

/* 1 if EAL is up in this process (started by anyone), else 0. */
int sr_dpdk_eal_is_up(void);

/* Find the port named by spec: a port id ("0"), the name of a device EAL
 * already probed ("net_memif0", a PCI address), or a virtual device with
 * arguments ("net_tap0,iface=sr0"), which is probed now. *probed is set to
 * 1 in that last case (the caller removes it with sr_dpdk_port_remove).
 * Returns 0 or -1 with err filled. */
int sr_dpdk_port_find(const char *spec, uint16_t *port, int *probed, char *err);

/* What sr_dpdk_port_start chose. */
typedef struct sr_dpdk_port_info {
    uint8_t mac[6];      /* the port's own Ethernet address */
    int csum_offload;    /* 1: IPv4 and UDP checksums are filled in by the port */
    uint32_t link_mbps;  /* 0 if the driver does not say */
    char name[64];       /* the device name */
} sr_dpdk_port_info;

/* Mbufs a pool for port needs: min (which covers its caches), or, where the
 * port keeps mbufs in its rings, more if they take more: a memif client in
 * zero-copy mode (`zero-copy=yes`) posts one in every descriptor of both
 * its rings (2^rsize each, default 2^10), so both rings full, a burst each
 * way in hand and 1.5 x cache, what the per-lcore caches may hold. A pool
 * smaller than the rings it must fill leaves the receive ring empty: the
 * peer drops every frame it sends. */
unsigned sr_dpdk_pool_size(uint16_t port, unsigned min, unsigned cache);

/* Configure port with one RX and one TX queue on *pool (created as
 * pool_name with sr_dpdk_pool_size(port, nb_mbufs, 0) mbufs when *pool is
 * NULL, else reused: a stopped
 * port keeps referring to its pool, so the pool lives as long as the port),
 * enable checksum offload when the port has both, optionally promiscuous
 * mode, start it and wait for link-up until deadline_ns (CLOCK_MONOTONIC;
 * 0: do not wait). Returns 0, or -1 with err filled (the port is then
 * stopped again). */
int sr_dpdk_port_start(uint16_t port, struct rte_mempool **pool, const char *pool_name,
                       unsigned nb_mbufs, int promisc, uint64_t deadline_ns,
                       sr_dpdk_port_info *info, char *err);

/* Stop the port (its pool stays referenced by its queues). */
void sr_dpdk_port_stop(uint16_t port);

/* Stop, close and remove a port that sr_dpdk_port_find probed. */
void sr_dpdk_port_remove(uint16_t port);

/* A frame header template for one flow (addresses fixed), built by
 * sr_frame_pack for an empty payload; lengths and checksums are patched per
 * packet. */
typedef struct sr_dpdk_tmpl {
    uint8_t hdr[SR_FRAME_HLEN];
    int offload; /* checksums left to the port */
} sr_dpdk_tmpl;

void sr_dpdk_tmpl_init(sr_dpdk_tmpl *t, const sr_frame_addr *a, int offload);

/* One frame from pool: the template, then a (alen bytes) and b (blen
 * bytes), either may be empty; checksums as said above. Returns NULL if the
 * pool is empty or the frame would exceed SR_DPDK_MAX_FRAME. */
struct rte_mbuf *sr_dpdk_frame(struct rte_mempool *pool, const sr_dpdk_tmpl *t,
                               const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* The same in two steps, for a caller that writes the message itself:
 * sr_dpdk_frame_alloc returns a frame of the template and room for plen
 * message bytes at *msg (NULL as sr_dpdk_frame), and sr_dpdk_frame_finish
 * patches its lengths and checksums once they are written. */
struct rte_mbuf *sr_dpdk_frame_alloc(struct rte_mempool *pool, const sr_dpdk_tmpl *t, size_t plen,
                                     uint8_t **msg);
void sr_dpdk_frame_finish(struct rte_mbuf *m, const sr_dpdk_tmpl *t, size_t plen);

/* Data room of an mbuf that holds the largest frame behind the headroom,
 * in whole cache lines: the size of every pool of Serene's frames. */
#define SR_DPDK_DATA_ROOM                                                                          \
    ((RTE_PKTMBUF_HEADROOM + SR_DPDK_MAX_FRAME + RTE_CACHE_LINE_SIZE - 1) /                        \
     RTE_CACHE_LINE_SIZE * RTE_CACHE_LINE_SIZE)

/* Parse a received frame: its bytes are made contiguous (in place, or
 * copied into scratch of SR_DPDK_MAX_FRAME bytes when the mbuf is a chain)
 * and checked by sr_frame_parse. Returns SR_FRAME_OK (filling *a, *payload,
 * *len), an sr_frame_result, or SR_FRAME_TRUNCATED for a frame longer than
 * SR_DPDK_MAX_FRAME. */
int sr_dpdk_frame_parse(struct rte_mbuf *m, uint8_t *scratch, sr_frame_addr *a,
                        const uint8_t **payload, size_t *len);

/* CLOCK_MONOTONIC in ns. */
uint64_t sr_dpdk_now_ns(void);

#endif /* SERENE_TRANSPORT_DPDK_PORT_H */
