/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_guard.h - serene-switch's DPDK ports against memory that a driver
 * unmaps from another thread (dpdk_guard.c says why and how).
 *
 * The loop's thread brackets each rx and tx burst with enter and leave.
 * While the guard is armed, an munmap called by any other thread (EAL's
 * interrupt thread, where the memif driver unmaps a client's regions when
 * the client leaves) first waits until no burst is in progress: a grace
 * period of at most one burst. Bursts that begin afterwards see the port
 * disconnected (the driver clears its flag before it unmaps) and touch
 * nothing.
 */
#ifndef SERENE_SWSWITCH_DPDK_GUARD_H
#define SERENE_SWSWITCH_DPDK_GUARD_H

#include <stdatomic.h>
#include <stdint.h>

/* Odd while the loop's thread is inside a burst. The one piece of
 * process-wide state of the switch's I/O: munmap is process-wide. */
extern _Atomic uint64_t sw_dpdk_guard_seq;

/* Arm the guard, from the thread that will run the bursts (the loop's);
 * before the ports start. Disarm once no burst can run any more (before
 * the ports are closed); the guard then costs nothing. */
void sw_dpdk_guard_arm(void);
void sw_dpdk_guard_disarm(void);

/* Around each rte_eth_rx_burst / rte_eth_tx_burst: a full barrier each,
 * so a burst that begins after a waiting munmap's check sees what the
 * driver wrote before it called munmap (its "disconnected" flag). */
static inline void sw_dpdk_guard_enter(void)
{
    atomic_fetch_add_explicit(&sw_dpdk_guard_seq, 1, memory_order_seq_cst);
}

static inline void sw_dpdk_guard_leave(void)
{
    atomic_fetch_add_explicit(&sw_dpdk_guard_seq, 1, memory_order_release);
}

/* Grace periods an munmap waited for (a burst was in progress). */
uint64_t sw_dpdk_guard_waits(void);

#endif
