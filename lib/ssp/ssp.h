/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ssp.h - the SSP modules: the clock (clock.c: the barrier and the worker's
 * view of it) and the parameter store (store.c: push and pull). Each has
 * its state and its op class here; their public calls (serene_clock*,
 * serene_get_clock_info, serene_push*, serene_pull*, serene_store_capacity)
 * live in their files.
 */
#ifndef SERENE_SSP_SSP_H
#define SERENE_SSP_SSP_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/engine.h"

/* The worker's view of the barrier: written by the engine, read by anyone. */
typedef struct sr_sync_view {
    _Atomic uint32_t clock, low, high, mode, staleness;
} sr_sync_view;

typedef struct sr_clock {
    sr_sync_view sync;
    /* --- engine only ------------------------------------------------------ */
    int held; /* the current CLOCK was answered HOLD */
    uint32_t held_s;
} sr_clock;

/* Worker-side state of one request in flight (slot j mod window). */
typedef struct sr_req_slot {
    uint8_t busy;     /* a request is in flight */
    uint16_t count;   /* words it moves */
    uint32_t offset;  /* its store word */
    uint32_t req_seq; /* its push / pull number */
} sr_req_slot;

typedef struct sr_store {
    _Atomic uint32_t words; /* capacity, from JOIN_ACK; any thread reads it */
    const sr_clock *clock;  /* the clock module's state: a push carries the clock */
    /* --- engine only ------------------------------------------------------ */
    uint32_t push_seq; /* last push number used; the switch dedups on it */
    uint32_t pull_seq; /* last pull request number */
    uint32_t req_base, n_req, req_done; /* requests of the current push/pull */
    uint32_t *pulled;  /* per store word: value at this worker's last pull */
    sr_req_slot *slots; /* the engine's window of slots */
} sr_store;

extern const sr_op_class sr_clock_class;
/* Plug it after the clock: its init finds the clock's state. */
extern const sr_op_class sr_store_class;

#endif /* SERENE_SSP_SSP_H */
