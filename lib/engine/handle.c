/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handle.c - the context's region and its retirement (see handle.h).
 */
#include "engine/handle.h"

#include <sys/mman.h>
#include <unistd.h>

static size_t page_round(size_t size)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t p = pg > 0 ? (size_t)pg : 4096u;
    return (size + p - 1u) / p * p;
}

void *sr_region_map(size_t size)
{
    void *p = mmap(NULL, page_round(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void sr_region_retire(void *base, size_t size)
{
    size_t len = page_round(size);
    /* One call swaps the pages atomically: there is no moment at which the
     * range is unmapped and could be handed to another mapping. Nothing is
     * ever written to it, so it costs address space, not memory. */
    if (mmap(base, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
             0) == MAP_FAILED)
        munmap(base, len); /* a stale handle then faults: loud, not silent */
}
