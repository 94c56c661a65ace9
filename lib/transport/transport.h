/* SPDX-License-Identifier: Apache-2.0 */
/*
 * transport.h - the table every transport fills (udp; dpdk and rdma when built).
 *
 * A transport moves whole Serene messages (header + payload) between this
 * worker and the switch. It is unreliable by contract: it may drop, and the
 * one retransmission engine above it (lib/reliab) recovers. Only the
 * context's data-path thread calls send/recv/wait; open and close run in the
 * thread that creates or destroys the context.
 */
#ifndef SERENE_TRANSPORT_TRANSPORT_H
#define SERENE_TRANSPORT_TRANSPORT_H

#include <stdint.h>
#include <sys/uio.h>

#include "common/log.h"
#include "serene/serene.h"

#define SR_TP_BURST 32 /* messages per send/recv call at most */

struct sockaddr_in;

typedef struct sr_transport {
    const char *name;
    /* Open toward cfg->switch_addr. Blocks only on local setup (name
     * resolution, socket options). *state is owned by the transport until
     * close. Returns 0, SERENE_ERR_CONFIG (bad address) or
     * SERENE_ERR_TRANSPORT. */
    int (*open)(void **state, const serene_config *cfg, const sr_log *log);
    /* Release everything; accepts NULL. */
    void (*close)(void *state);
    /* Hand up to n (<= SR_TP_BURST) messages to the network without
     * blocking. The buffers stay the caller's; the transport copies what it
     * needs before returning. Returns how many were taken (a short count
     * means the queue is full: the rest count as lost), or a negative
     * error code for a hard failure. */
    int (*send)(void *state, const struct iovec *msgs, unsigned n);
    /* Receive up to n (<= SR_TP_BURST) messages without blocking into the
     * caller's buffers bufs[i] of cap bytes each; lens[i] gets each length.
     * A message longer than cap gets lens[i] = 0 and is counted in
     * *truncated (no valid message is empty, so the caller skips it).
     * Returns the number received (0 if none) or a negative error code. */
    int (*recv)(void *state, uint8_t *const *bufs, uint32_t *lens, unsigned n, uint32_t cap,
                uint64_t *truncated);
    /* Optional (NULL: only recv). As recv, but lending instead of copying
     * where it can: msgs[i] gets message i inside the transport's own
     * receive buffer, or bufs[i] where it had to copy (a frame in several
     * segments) or the message is empty. The lent messages stay valid
     * until release, which the caller calls once done with them and
     * before it calls recv or recv_lend again. */
    int (*recv_lend)(void *state, uint8_t *const *bufs, const uint8_t **msgs, uint32_t *lens,
                     unsigned n, uint32_t cap, uint64_t *truncated);
    /* Give back what the last recv_lend lent. Idempotent. */
    void (*release)(void *state);
    /* Block until a message may be readable, wake_fd is readable, or
     * timeout_ns passes (< 0: no timeout). Spurious returns are allowed.
     * Returns 0 or a negative error code. */
    int (*wait)(void *state, int64_t timeout_ns, int wake_fd);
    /* Optional (NULL: the transport has no IPv4 endpoint of its own). The
     * local and peer address and port of the open transport, for the
     * packet trace (lib/trace), which rebuilds frames around the messages.
     * Called by the creating thread after open; does not block. Returns 0
     * or a negative error code. */
    int (*addrs)(void *state, struct sockaddr_in *local, struct sockaddr_in *peer);
    /* Optional (NULL: the transport never sends trains). Engine thread:
     * from now on, send a run of messages of one length as one train (UDP
     * GSO: on = 1) or each as its own datagram (on = 0). Returns 1 if the
     * transport can send trains here (then the setting holds), else 0
     * (no trains, whatever on says: no kernel support, SERENE_UDP_GSO=0,
     * or the kernel refused one). */
    int (*trains)(void *state, int on);
} sr_transport;

extern const sr_transport sr_transport_udp;
#ifdef SERENE_HAVE_DPDK
extern const sr_transport sr_transport_dpdk; /* transport/dpdk/dpdk.c */
#endif
#ifdef SERENE_HAVE_RDMA
extern const sr_transport sr_transport_rdma; /* transport/rdma/rdma.c */
#endif

/* The transport called name, or NULL if this build has none of that name.
 * What follows a ':' in name is the transport's own (rdma: the device). */
const sr_transport *sr_transport_find(const char *name);

/* Parse "host:port" (host: IPv4 literal or a name resolved to IPv4) into a
 * sockaddr_in. default_port applies when ":port" is missing and is >= 0.
 * Returns 0 or SERENE_ERR_CONFIG after logging why. */
int sr_parse_hostport(const char *s, int default_port, struct sockaddr_in *out, const sr_log *log);

#endif /* SERENE_TRANSPORT_TRANSPORT_H */
