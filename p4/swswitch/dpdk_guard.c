/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dpdk_guard.c - no memif region is unmapped under a burst of the switch's
 * loop (without it serene-switch --dpdk died of a segmentation fault as
 * memif clients left).
 *
 * Who touches a memif region, and when: the switch's loop copies frames
 * out of a client's memory in rte_eth_rx_burst and into it in
 * rte_eth_tx_burst. DPDK's memif driver (22.11) handles its control
 * channel in EAL's interrupt thread; when a client leaves (it stops its
 * port, or dies and the kernel closes its socket), that thread runs
 * memif_disconnect, which clears the port's "connected" flag and then
 * munmaps the client's regions, with no lock and no wait for a burst in
 * progress. A burst that checked the flag just before copies from (or
 * into) unmapped memory: SIGSEGV in eth_memif_rx or eth_memif_tx, the
 * stacks test_memif_churn.sh reproduces (a client that leaves with its
 * ring full of frames the switch is still copying). The driver offers no
 * event before it unmaps and no lock to take.
 *
 * So the unmap waits for the loop: this file defines munmap for the
 * process (the executable's definition comes first for every library,
 * DPDK's drivers included) and passes each call on to the next definition
 * (libc's, or a sanitizer's) after, while the guard is armed and the
 * caller is not the loop's thread, a grace period: if a burst is in
 * progress (sw_dpdk_guard_seq odd), until it ends. Bursts that begin after
 * the check see the flag cleared (the driver wrote it before it called
 * munmap, and both sides order that with a full barrier): they return at
 * once and touch no region. A grace period is one burst at most (tens of
 * microseconds), and costs the loop nothing: it only waits in the other
 * thread. Other threads' munmaps (rare, outside the data path) wait the
 * same way, harmlessly.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dpdk_guard.h"

typedef int (*munmap_fn)(void *, size_t);

_Atomic uint64_t sw_dpdk_guard_seq;
static atomic_int armed;
static pthread_t loop_thread;
static _Atomic uint64_t waits;
static _Atomic(munmap_fn) next_munmap;

void sw_dpdk_guard_arm(void)
{
    loop_thread = pthread_self();
    atomic_store(&armed, 1);
}

void sw_dpdk_guard_disarm(void)
{
    atomic_store(&armed, 0);
}

uint64_t sw_dpdk_guard_waits(void)
{
    return atomic_load_explicit(&waits, memory_order_relaxed);
}

/* Wait until no burst that may have begun before this call is in
 * progress. The fence orders the caller's earlier writes (the driver's
 * flag) before the read of the sequence, as the loop's enter orders its
 * increment before the burst reads the flag. */
static void grace(void)
{
    uint64_t s;

    atomic_thread_fence(memory_order_seq_cst);
    s = atomic_load(&sw_dpdk_guard_seq);
    if (!(s & 1u))
        return;
    atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
    while (atomic_load(&sw_dpdk_guard_seq) == s)
        sched_yield();
}

/* Default visibility (the project builds with -fvisibility=hidden) and
 * exported by the link (meson.build): DPDK's libraries and the drivers EAL
 * loads as plugins bind to it. */
__attribute__((visibility("default"))) int munmap(void *addr, size_t len)
{
    munmap_fn next = atomic_load_explicit(&next_munmap, memory_order_acquire);

    if (atomic_load(&armed) && !pthread_equal(pthread_self(), loop_thread))
        grace();
    if (!next) {
        /* libc's, or a sanitizer's in front of it (copied: ISO C has no
         * cast from dlsym's void * to a function pointer). */
        void *sym = dlsym(RTLD_NEXT, "munmap");

        memcpy(&next, &sym, sizeof next);
        if (next)
            atomic_store_explicit(&next_munmap, next, memory_order_release);
    }
    if (next)
        return next(addr, len);
    return (int)syscall(SYS_munmap, addr, len);
}
