/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sw_io.h - serene-switch's I/O: one table of operations, filled by the UDP
 * socket (udp_io.c) and by the DPDK ports (dpdk_io.c), as the library's
 * transports fill sr_transport (lib/transport/transport.h). The daemon
 * picks one at start-up (sw_io_find) and its loop only calls the table.
 *
 * An I/O moves whole Serene messages (header + payload) between the
 * workers and the pipeline, in bursts. It is as unreliable as the network
 * under it: the workers retransmit. Every buffer is allocated by open;
 * nothing allocates afterwards.
 *
 * serene-switch has one thread of its own: the one that runs main and the
 * loop calls every member, so the I/O needs no locking. With DPDK, EAL
 * adds its interrupt thread, where drivers handle their control channels
 * (memif's unmaps a leaving client's memory there: dpdk_guard.h).
 */
#ifndef SERENE_SWSWITCH_SW_IO_H
#define SERENE_SWSWITCH_SW_IO_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

#define SW_IO_WHY_MAX 320 /* bytes of an open error, NUL included */

/* sw_io_params.flags: offloads not to use even where the kernel has them
 * (the tests force the plain paths with them). */
#define SW_IO_NO_GSO 0x1u /* UDP: no UDP_SEGMENT; every datagram sent alone */
#define SW_IO_NO_GRO 0x2u /* UDP: no UDP_GRO; every datagram received alone */

/* Where and how to listen, from the command line. */
typedef struct sw_io_params {
    uint32_t ip;        /* --listen address, host byte order (0.0.0.0: any) */
    uint16_t port;      /* --listen UDP port; 0: the I/O's choice */
    const char *listen; /* --listen as given, for messages */
    const char *dpdk_eal;               /* DPDK: the EAL arguments */
    const char *const *dpdk_ports;      /* DPDK: the ports to use (n == 0: all) */
    unsigned n_dpdk_ports;
    unsigned flags;                     /* SW_IO_NO_*; 0: every offload the kernel has */
} sw_io_params;

typedef struct sw_io_ops {
    const char *name; /* "udp" or "dpdk" */
    /* Open the I/O for par (only read during the call). Called once,
     * before the loop. UDP binds a socket and does not block; DPDK starts
     * EAL (unless the process already did) and the ports, which may take
     * a while but does not wait for links. Allocates every buffer; *state
     * is the I/O's until close. Returns 0, or -1 with why (SW_IO_WHY_MAX
     * bytes) filled in with a sentence for the log; *state is set on
     * success only. */
    int (*open)(void **state, const sw_io_params *par, char *why);
    /* Send what is queued (waiting as flush does), then release every
     * buffer, port and descriptor. Called once, after the loop. Accepts
     * NULL. */
    void (*close)(void *state);
    /* A descriptor that polls readable (POLLIN) when messages wait, or -1
     * when there is none: the loop then calls recv in turns with short
     * sleeps. Does not block. */
    int (*fd)(const void *state);
    /* The address messages are received at (host byte order), as bound:
     * UDP reports the port the kernel picked for port 0. Does not block. */
    void (*local)(const void *state, uint32_t *ip, uint16_t *port);
    /* Receive one burst into the I/O's own buffers without blocking: up to
     * 32 datagrams or frames, each one message or, when the kernel
     * coalesced them (UDP GRO), several. Returns how many messages (0 if
     * none waits) or -errno; *full is set to 1 when the burst was full, so
     * that more may wait, else 0. The messages of the previous call are
     * gone. */
    int (*recv)(void *state, int *full);
    /* Message i (< the last recv's result): its length, its source and
     * its bytes, which the I/O owns until the next recv. Does not block. */
    const uint8_t *(*rx)(const void *state, unsigned i, size_t *len, sr_peer *src);
    /* Queue one message to dst: hdr then payload (either may be empty),
     * both the caller's and copied before the call returns. Does not
     * block, except that a full queue is first sent as flush sends it. A
     * message the I/O cannot send (too long, no route to dst) is counted
     * and dropped. */
    void (*send)(void *state, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                 const uint8_t *payload, size_t plen);
    /* Queue every replica of a: to a->dests[k].peer, the header
     * sr_pipe_replica_hdr(a, k) then the payload (sr_pipe_payload_write:
     * a lazy one is converted from the pipeline's slot), as send would
     * queue each, but with the payload written once for all of them (DPDK:
     * into the first replica's frame, the others copying it from there).
     * a is only read during the call. Blocks and drops as send does. */
    void (*send_replicas)(void *state, const sr_pipe_action *a);
    /* Optional (NULL: none). What the pipeline answered (out) to msg, a
     * message of the last recv as rx returned it, before its replicas are
     * sent: an I/O that keeps state per binding from the answers learns it
     * here, and which request the replicas answer (DPDK: the RoCEv2 QP a
     * JOIN_ACK binds, p4/swswitch/roce.h). Both are only read. */
    void (*learn)(void *state, const uint8_t *msg, const sr_pipe_out *out);
    /* Send every queued message. May wait briefly, which paces the switch
     * instead of dropping: UDP while the kernel's send buffer is full; DPDK
     * while a port's queue is full, at most 200 us, then it drops. */
    void (*flush)(void *state);
    /* Write the I/O's counters to buf (NUL-terminated, truncated to len),
     * " key=value" each, keys prefixed with the name: udp_rx=... Does not
     * block. */
    void (*counters)(const void *state, char *buf, size_t len);
    /* Write where it listens, for the start-up line "listening ...", to buf
     * (NUL-terminated, truncated to len): "on udp ADDR:PORT", or "as
     * ADDR:PORT on dpdk" and the ports. Does not block. */
    void (*describe)(const void *state, char *buf, size_t len);
} sw_io_ops;

extern const sw_io_ops sw_io_udp; /* udp_io.c */
#ifdef SERENE_HAVE_DPDK
extern const sw_io_ops sw_io_dpdk; /* dpdk_io.c */
#endif

/* The I/O called name, or NULL if this build has none of that name. */
const sw_io_ops *sw_io_find(const char *name);

/* "ADDR:PORT" of ip and port (host byte order) into buf[len]. */
void sw_io_addr_format(uint32_t ip, uint16_t port, char *buf, size_t len);

#endif /* SERENE_SWSWITCH_SW_IO_H */
