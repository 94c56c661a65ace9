/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chaos.h - fault injection for serene-switch (--loss, --dup, --reorder).
 *
 * Tests use it to make the workers' retransmission and the pipeline's
 * duplicate and shadow-copy paths run on loopback, where nothing is ever
 * lost. Every decision comes from one seeded PRNG (splitmix64), so a run is
 * reproducible for a given seed and packet order. Probabilities of 0 draw
 * nothing, so enabling one fault does not change the others' sequence
 * beyond its own draws.
 *
 * - Each received datagram is dropped with P_loss before processing.
 * - Each copy to send is dropped with P_loss; else sent twice with P_dup;
 *   and held back with P_reorder: a held copy goes out right after the next
 *   copy that is sent, or after SR_CHAOS_HOLD_NS if none comes.
 * Held copies are stored in a buffer allocated once at init (no allocation
 * per packet); when it is full a copy is sent in order instead (counted).
 * The module does no I/O itself: copies leave through a caller's callback,
 * and time is passed in, never read.
 */
#ifndef SERENE_SWSWITCH_CHAOS_H
#define SERENE_SWSWITCH_CHAOS_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

#define SR_CHAOS_HOLD_MAX 64           /* copies held back at once */
#define SR_CHAOS_HOLD_NS 5000000ull    /* a held copy waits at most 5 ms */

typedef struct sr_chaos_counters {
    uint64_t rx_dropped;    /* received datagrams dropped before processing */
    uint64_t tx_dropped;    /* copies not sent */
    uint64_t tx_duplicated; /* copies sent twice */
    uint64_t tx_delayed;    /* copies held back */
    uint64_t hold_full;     /* copies sent in order because the hold buffer was full */
} sr_chaos_counters;

/* Sends one datagram: header (hlen bytes) then payload (plen bytes). */
typedef void (*sr_chaos_send_fn)(void *cookie, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                                 const uint8_t *payload, size_t plen);

typedef struct sr_chaos_held sr_chaos_held;

typedef struct sr_chaos {
    double p_loss, p_dup, p_reorder;
    uint64_t rng;
    sr_chaos_held *held; /* SR_CHAOS_HOLD_MAX entries when p_reorder > 0 */
    unsigned n_held;
    sr_chaos_send_fn send;
    void *cookie;
    sr_chaos_counters c;
} sr_chaos;

/* Set up with probabilities in [0, 1] and a seed; copies go out through
 * send(cookie, ...). Returns 0, -EINVAL (a probability outside [0, 1] or
 * NaN, or send NULL) or -ENOMEM. */
int sr_chaos_init(sr_chaos *c, double p_loss, double p_dup, double p_reorder, uint64_t seed,
                  sr_chaos_send_fn send, void *cookie);

/* Free the hold buffer; held copies are discarded. Accepts NULL. */
void sr_chaos_fini(sr_chaos *c);

/* 1 if the received datagram must be dropped, else 0. */
int sr_chaos_drop_rx(sr_chaos *c);

/* Send one copy, subject to the faults above; hdr and payload are copied
 * if held. now_ns: a monotonic clock. */
void sr_chaos_tx(sr_chaos *c, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                 const uint8_t *payload, size_t plen, uint64_t now_ns);

/* Send the held copies whose time is up (all of them if all != 0). */
void sr_chaos_release(sr_chaos *c, uint64_t now_ns, int all);

/* When the next held copy is due (monotonic ns), or UINT64_MAX if none. */
uint64_t sr_chaos_next_due(const sr_chaos *c);

#endif /* SERENE_SWSWITCH_CHAOS_H */
