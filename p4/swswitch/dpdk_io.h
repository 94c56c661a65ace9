/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_io.h - serene-switch's DPDK ports: the same role as udp_io.h (bursts
 * of messages in, replicas out) for frames on DPDK ports, so the same loop
 * and the same pipeline serve both modes.
 *
 * - One port per worker (a memif, af_packet or tap device, or a NIC port);
 *   several workers may also share one port (a NIC behind a switch).
 * - Addresses: a frame counts if it is IPv4/UDP to the switch's address
 *   (IPv4 0.0.0.0 matches any) and UDP port. Its source IPv4:port is the
 *   worker's sr_peer, as in UDP mode; the port it came in on and its source
 *   Ethernet address are learnt for that peer, and answers to the peer go
 *   out of that port to that address (no ARP).
 * - Every buffer (mbuf pools, the peer table, frame scratch) is allocated
 *   at open; nothing allocates per packet. Single-threaded.
 */
#ifndef SERENE_SWSWITCH_DPDK_IO_H
#define SERENE_SWSWITCH_DPDK_IO_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"
#include "transport/dpdk/dpdk_port.h"

#define SR_DPDK_IO_MAX_PORTS 64 /* one per worker of the largest job */
#define SR_DPDK_IO_PEERS 256    /* learnt worker addresses (oldest replaced) */

typedef struct sr_dpdk_io_counters {
    uint64_t rx;          /* messages received for the switch */
    uint64_t rx_foreign;  /* frames for someone else (not IPv4/UDP to our address) */
    uint64_t rx_bad;      /* frames with a bad checksum or length */
    uint64_t tx;          /* frames the ports took */
    uint64_t tx_no_route; /* replicas for a peer never heard from */
    uint64_t tx_dropped;  /* frames a port refused for too long, or no mbuf */
    uint64_t learnt;      /* peer table updates (new peer, moved port or MAC) */
} sr_dpdk_io_counters;

typedef struct sr_dpdk_io sr_dpdk_io;

/* Start EAL with eal_args (unless already running), then start the n
 * ports named in ports (port id, device name, or vdev spec to probe; n == 0:
 * every port EAL found), each with one queue pair, in promiscuous mode.
 * Links are not waited for: a worker's memif or cable may come later.
 * ip:udp_port (host order) is the switch's address. Returns 0, or -1 with
 * err (SR_DPDK_ERR_MAX bytes) filled; *out is set on success only. */
int sr_dpdk_io_open(sr_dpdk_io **out, const char *eal_args, const char *const *ports, unsigned n,
                    uint32_t ip, uint16_t udp_port, char *err);

/* Flush, stop and close the ports, free the pools, clean EAL up. Accepts
 * NULL and *d == NULL; sets *d to NULL. */
void sr_dpdk_io_close(sr_dpdk_io **d);

/* Receive up to SR_DPDK_BURST messages from the ports (taking turns)
 * without blocking. Returns how many (0 if none). They stay valid until
 * the next call. */
int sr_dpdk_io_recv(sr_dpdk_io *d);

/* Message i (< the last sr_dpdk_io_recv result): bytes, length, source. */
const uint8_t *sr_dpdk_io_rx(const sr_dpdk_io *d, unsigned i, size_t *len, sr_peer *src);

/* Queue one frame to dst (hdr then payload, copied); a port's queue is
 * sent when it holds SR_DPDK_BURST frames. */
void sr_dpdk_io_send(sr_dpdk_io *d, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                     const uint8_t *payload, size_t plen);

/* Send everything queued (retrying a full port briefly, then dropping). */
void sr_dpdk_io_flush(sr_dpdk_io *d);

void sr_dpdk_io_counters_get(const sr_dpdk_io *d, sr_dpdk_io_counters *c);

/* The ports' names, ", "-separated, into buf (for the start-up line). */
void sr_dpdk_io_describe(const sr_dpdk_io *d, char *buf, size_t len);

#endif /* SERENE_SWSWITCH_DPDK_IO_H */
