/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctx.h - the context as the API layer builds it: the engine (lib/engine)
 * first, then the state of each operation module it plugs into the engine,
 * then what only the API side keeps. The context and its op descriptors
 * share one region (engine/handle.h).
 */
#ifndef SERENE_CORE_CTX_H
#define SERENE_CORE_CTX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "allreduce/allreduce.h"
#include "engine/engine.h"
#include "serene/serene.h"
#include "ssp/ssp.h"

/* The join module (join.c): joins the job when the context is created, and
 * leaves it when the context is destroyed. */
typedef struct sr_join {
    uint32_t token;     /* this context's identity in JOIN */
    uint64_t admission; /* the job's admission token (SERENE_JOB_TOKEN; 0: none) */
    _Atomic int joined; /* the switch bound this worker: LEAVE at destroy */
} sr_join;
extern const sr_op_class sr_join_class;

struct serene_ctx {
    sr_engine eng; /* first: a context handle is also its engine's address */
    /* Operation modules, plugged into eng. */
    sr_join join;
    sr_ar ar;
    sr_clock clock;
    sr_store store;
    sr_step step;
    /* API side only. */
    size_t region_size;  /* bytes of the mapping that holds this and the ops */
    char *dpdk_eal_args; /* copies of the caller's strings (NULL if none) */
    char *dpdk_port;
};

#endif /* SERENE_CORE_CTX_H */
