/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handle.h - why a stale or misused handle fails cleanly instead of hanging
 * or corrupting memory.
 *
 * - A context and its op descriptors live in one anonymous mapping (the
 *   region). serene_ctx_destroy does not unmap it: it maps a read-only
 *   zero page range in its place, so a later call through a stale copy of
 *   the context or of an op handle reads magic 0 and returns
 *   SERENE_ERR_INVAL. The address range stays reserved for the process's
 *   life (no memory behind it), so no later context can take the address
 *   and be reached through the stale handle.
 * - Op descriptors are SR_OP_STRIDE-aligned; a handle is the descriptor's
 *   address plus the low bits of its allocation count (generation). A
 *   handle whose op was already waited for, or whose descriptor has been
 *   reused since, no longer matches and is refused. The check can be fooled
 *   only when the descriptor was reused a multiple of SR_OP_STRIDE times.
 */
#ifndef SERENE_ENGINE_HANDLE_H
#define SERENE_ENGINE_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#define SR_CTX_MAGIC 0x53524358u /* "SRCX": a live context */
#define SR_OP_MAGIC 0x5352504fu  /* "SRPO": an op descriptor */
#define SR_OP_STRIDE 256u        /* bytes per op descriptor, a power of two */

/* A zeroed, writable region of size bytes (rounded up to pages), aligned
 * to a page; NULL on failure. */
void *sr_region_map(size_t size);

/* Put a read-only range of zeros in place of the region (see above). */
void sr_region_retire(void *base, size_t size);

/* Handle <-> descriptor. */
static inline void *sr_handle_encode(void *desc, uint32_t gen)
{
    return (char *)desc + (gen & (SR_OP_STRIDE - 1u));
}
static inline void *sr_handle_desc(const void *handle)
{
    return (void *)((uintptr_t)handle & ~(uintptr_t)(SR_OP_STRIDE - 1u));
}
static inline uint32_t sr_handle_tag(const void *handle)
{
    return (uint32_t)((uintptr_t)handle & (SR_OP_STRIDE - 1u));
}

#endif /* SERENE_ENGINE_HANDLE_H */
