/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp_io.h - serene-switch's UDP socket: bursts in with recvmmsg, bursts
 * out with sendmmsg.
 *
 * One IPv4 socket. Every buffer is allocated when the socket is opened; no
 * call allocates afterwards. Receiving never blocks (the caller polls the
 * descriptor); sending may block briefly while the kernel's send buffer is
 * full, which paces the switch instead of dropping. Single-threaded.
 */
#ifndef SERENE_SWSWITCH_UDP_IO_H
#define SERENE_SWSWITCH_UDP_IO_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

#define SR_UDP_BURST 32 /* datagrams per recvmmsg / sendmmsg */

typedef struct sr_udp_counters {
    uint64_t rx;          /* datagrams received */
    uint64_t rx_oversize; /* of which longer than SR_WIRE_MAX_MSG (truncated, then rejected) */
    uint64_t rx_errors;   /* recvmmsg failures other than "nothing to read" */
    uint64_t tx;          /* datagrams handed to the kernel */
    uint64_t tx_errors;   /* datagrams the kernel refused */
} sr_udp_counters;

typedef struct sr_udp sr_udp;

/* Open a socket bound to ip:port (host byte order; port 0: ephemeral).
 * Returns 0 or -errno; *out is set on success only. */
int sr_udp_open(sr_udp **out, uint32_t ip, uint16_t port);

/* Flush, close and free. Accepts NULL and *u == NULL; sets *u to NULL. */
void sr_udp_close(sr_udp **u);

/* The descriptor, to poll for POLLIN. */
int sr_udp_fd(const sr_udp *u);

/* The bound address (host byte order). Returns 0 or -errno. */
int sr_udp_local(const sr_udp *u, uint32_t *ip, uint16_t *port);

/* Receive up to SR_UDP_BURST datagrams without blocking. Returns how many
 * (0 if none was waiting) or -errno. They stay valid until the next call. */
int sr_udp_recv(sr_udp *u);

/* Datagram i (< the last sr_udp_recv result): its bytes, length and source. */
const uint8_t *sr_udp_rx(const sr_udp *u, unsigned i, size_t *len, sr_peer *src);

/* Queue one datagram, hdr then payload (either may be empty), both copied;
 * sends the queue when it holds SR_UDP_BURST. A datagram longer than
 * SR_WIRE_MAX_MSG is refused and counted in tx_errors. */
void sr_udp_send(sr_udp *u, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                 const uint8_t *payload, size_t plen);

/* Send everything queued. */
void sr_udp_flush(sr_udp *u);

void sr_udp_counters_get(const sr_udp *u, sr_udp_counters *c);

#endif /* SERENE_SWSWITCH_UDP_IO_H */
