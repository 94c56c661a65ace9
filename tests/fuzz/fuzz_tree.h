/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_tree.h - what fuzz_tree.c (the fixture, the network and the steps)
 * and fuzz_tree_check.c (the checks of what the leaf sends) share: the
 * harness's model of the leaf and the state it is kept in.
 */
#ifndef SERENE_TESTS_FUZZ_TREE_H
#define SERENE_TESTS_FUZZ_TREE_H

#include <stdint.h>

#include "fuzz_pipeline.h"
#include "pipeline.h"
#include "proto/wire.h"

#define CHECK FZ_CHECK

/* What the harness knows of the leaf's job: the bindings of the current
 * incarnation (from the JOINs and LEAVEs it relayed) and whether the
 * parent acknowledged the leaf's JOIN (from the parent's JOIN_ACKs). */
typedef struct leaf_model {
    uint32_t nonce;
    uint64_t bound, left;
    sr_peer peer[FZ_TREE_N];
    uint32_t token[FZ_TREE_N];
    uint8_t up;
    uint32_t up_nonce;
} leaf_model;

/* What the harness knows of a cell whose round completed at the leaf (its
 * partial up, or due once the parent acknowledges the leaf): the round's
 * header and, once it went up, the partial itself. */
typedef struct cell_model {
    uint8_t have, sent;
    sr_hdr h;
    uint8_t payload[4 * FZ_TREE_ELEMS];
} cell_model;

/* What one step at the leaf sent, by kind. */
typedef struct tally {
    unsigned relay_up, relay_join, relay_leave, self_join, self_leave, partials, probes,
        markers, down, misfits, mcast, errors;
} tally;

/* Kept by fuzz_tree.c: the parent's address, the leaf's member id in the
 * parent's job of the leaves, the model of its job and of its cells. */
extern const sr_peer g_parent;
extern uint16_t g_k;
extern leaf_model g_m;
extern cell_model g_cells[2 * FZ_TREE_SLOTS];

static inline int local(uint32_t w)
{
    return w >= FZ_TREE_LOCAL_A && w <= FZ_TREE_LOCAL_B;
}

static inline uint64_t live(const leaf_model *m)
{
    return m->bound & ~m->left;
}

static inline int member(const leaf_model *m, uint32_t w, const sr_peer *src)
{
    return w < FZ_TREE_N && (live(m) >> w & 1u) && fz_peer_eq(&m->peer[w], src);
}

static inline int up_bound(const leaf_model *m)
{
    return m->up && m->up_nonce == m->nonce;
}

/* The checks of one action the leaf sent in a step (fuzz_tree_check.c):
 * req and req_payload the message the step delivered, from src; was_member
 * whether it came from a worker bound here at its address; known whether
 * it named the leaf's job; before the model before the step. Each counts
 * what it saw in t. */
void check_up(const sr_pipe_action *a, const sr_hdr *req, const uint8_t *req_payload,
              const sr_peer *src, int was_member, const leaf_model *before, tally *t);
void check_answer(const sr_pipe_action *a, const sr_hdr *req, const uint8_t *req_payload,
                  const sr_peer *src, int was_member, int known, const leaf_model *before,
                  tally *t);
void check_mcast(const sr_pipe_action *a, const sr_hdr *req, const uint8_t *req_payload,
                 const sr_peer *src, tally *t);

#endif
