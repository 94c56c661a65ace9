/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_tree_check.c - fuzz_tree's checks of each message a leaf sends in a
 * step: requests to its parent (check_up), answers to one address
 * (check_answer) and the parent's results multicast to its workers
 * (check_mcast); the rules are listed in fuzz_tree.c's header comment.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_tree.h"

/* ---- the leaf ------------------------------------------------------------------ */

/* The root's JOIN_ACK must announce the leaf's job (upstream.c): 0, or the
 * status the leaf refuses the worker with. */
static unsigned ack_misfit(const sr_hdr *h, const uint8_t *payload)
{
    sr_join_params jp;

    if (h->count != SR_JOIN_PARAMS_WORDS)
        return SR_ST_BAD_COUNT;
    sr_join_params_unpack(payload, &jp);
    return jp.n_workers != FZ_TREE_N            ? SR_ST_NOT_MEMBER
           : jp.elems_per_pkt != FZ_TREE_ELEMS  ? SR_ST_BAD_COUNT
           : jp.pool_slots != FZ_TREE_SLOTS     ? SR_ST_BAD_SLOT
                                                : 0;
}

/* The leaf's partial, probe or marker up (member K's AR_DATA, AR_PROBE). */
static void check_up_round(const sr_pipe_action *a, const sr_hdr *req, const sr_peer *src,
                           int was_member, tally *t)
{
    const sr_hdr *h = &a->hdr;

    CHECK(up_bound(&g_m));
    CHECK(h->slot < FZ_TREE_SLOTS && h->count <= FZ_TREE_ELEMS);
    /* Driven by a local worker's contribution or probe, or by the
     * parent's NAK of this very round. */
    if (fz_is_request(req->op)) {
        CHECK(was_member && req->job == FZ_TREE_JOB);
        CHECK(req->op == SR_OP_AR_DATA || req->op == SR_OP_AR_PROBE);
        CHECK(h->slot == req->slot && h->shadow == req->shadow);
    } else {
        CHECK(fz_peer_eq(src, &g_parent) && req->job == FZ_TREE_UPJOB);
        CHECK(req->op == SR_OP_AR_NAK && h->op == SR_OP_AR_DATA);
        CHECK(h->seq == req->seq && h->slot == req->slot && h->shadow == req->shadow);
        CHECK(h->offset == req->offset && h->exp == req->exp && h->aux == req->aux);
    }
    if (h->op == SR_OP_AR_PROBE || !fz_is_request(req->op)) {
        /* A probe or a resend is about the round that completed in
         * the cell and awaits the parent: the partial again is the
         * same partial. */
        cell_model *c = &g_cells[2u * h->slot + h->shadow];

        CHECK(c->have);
        CHECK(h->seq == c->h.seq && h->offset == c->h.offset && h->exp == c->h.exp &&
              h->aux == c->h.aux);
        if (h->op == SR_OP_AR_DATA) {
            CHECK(h->count == c->h.count);
            if (c->sent) {
                CHECK(h->next_exp == c->h.next_exp);
                CHECK(memcmp(a->payload, c->payload, a->payload_len) == 0);
            } else {
                c->sent = 1;
                c->h = *h;
                memcpy(c->payload, a->payload, a->payload_len);
            }
        }
    }
    if (h->op == SR_OP_AR_PROBE) {
        CHECK(h->count == 0 && a->payload_len == 0);
        t->probes++;
    } else if (h->exp == SR_WIRE_EXP_NONE && h->count == 0) {
        t->markers++; /* a poisoned round */
    } else {
        t->partials++;
    }
}

/* The leaf's own message to its parent's job of the leaves, as member K. */
static void check_up_self(const sr_pipe_action *a, const sr_hdr *req, const sr_peer *src,
                          int was_member, const leaf_model *before, tally *t)
{
    const sr_hdr *h = &a->hdr;

    /* The leaf itself, as member K (the replica's worker: the marker's
     * template leaves it to the destination). */
    CHECK(a->dests[0].worker == g_k);
    switch (h->op) {
    case SR_OP_JOIN: {
        sr_join_req rq;

        CHECK(!up_bound(&g_m));
        CHECK(h->seq == g_m.nonce && h->aux == g_m.nonce);
        CHECK(sr_join_req_unpack(a->payload, h->count, &rq) == 0 && h->count != 0);
        CHECK(rq.token == 0 && rq.cookie == 0);
        t->self_join++;
        break;
    }
    case SR_OP_LEAVE:
        /* The last local worker left: once, while bound. */
        CHECK(up_bound(before) && h->count == 0);
        CHECK(h->seq == g_m.nonce && h->aux == g_m.nonce);
        CHECK(req->op == SR_OP_LEAVE && g_m.bound && !live(&g_m));
        g_m.up = 0;
        t->self_leave++;
        break;
    case SR_OP_AR_DATA:
    case SR_OP_AR_PROBE:
        check_up_round(a, req, src, was_member, t);
        break;
    default:
        CHECK(!"the leaf sends its parent's job of the leaves another op");
    }
}

/* A message the leaf sent to its parent (a request op). */
void check_up(const sr_pipe_action *a, const sr_hdr *req, const uint8_t *req_payload,
              const sr_peer *src, int was_member, const leaf_model *before, tally *t)
{
    const sr_hdr *h = &a->hdr;

    CHECK(fz_peer_eq(&a->dests[0].peer, &g_parent));
    if (h->job == FZ_TREE_UPJOB) {
        check_up_self(a, req, src, was_member, before, t);
        return;
    }
    /* A worker's own request, relayed unchanged to the root's job. */
    CHECK(h->job == FZ_TREE_JOB && a->dests[0].worker == h->worker);
    CHECK(fz_is_request(req->op) && req->job == FZ_TREE_JOB && h->op == req->op);
    fz_check_hdr_eq(h, req, req->worker);
    CHECK(a->payload_len == 4u * (size_t)req->count);
    CHECK(a->payload_len == 0 || memcmp(a->payload, req_payload, a->payload_len) == 0);
    CHECK(local(req->worker));
    t->relay_up++;
    switch (h->op) {
    case SR_OP_JOIN: {
        uint16_t w = req->worker;
        uint64_t bit = UINT64_C(1) << w;

        /* The leaf accepted it: the worker is bound here, at src. */
        if (g_m.bound & bit) {
            CHECK(fz_peer_eq(&g_m.peer[w], src) && g_m.token[w] == req->seq);
            CHECK(!(g_m.left & bit));
        } else {
            g_m.bound |= bit;
            g_m.peer[w] = *src;
            g_m.token[w] = req->seq;
        }
        t->relay_join++;
        break;
    }
    case SR_OP_LEAVE: {
        uint16_t w = req->worker;
        uint64_t bit = UINT64_C(1) << w;

        /* From the binding's address, with its token; it ends the binding
         * (a second LEAVE of a worker that left goes up as well: the
         * root may have lost the first). */
        CHECK((g_m.bound & bit) && fz_peer_eq(&g_m.peer[w], src) && g_m.token[w] == req->seq);
        if (was_member)
            g_m.left |= bit;
        CHECK(g_m.left & bit);
        t->relay_leave++;
        break;
    }
    case SR_OP_PUSH:
    case SR_OP_PULL:
    case SR_OP_CLOCK:
    case SR_OP_STEP:
    case SR_OP_STEP_PROBE:
        CHECK(was_member);
        break;
    default:
        CHECK(!"a worker's AR_DATA or AR_PROBE relayed to the root's job");
    }
}

/* A message the leaf sent to one address (an answer op). */
void check_answer(const sr_pipe_action *a, const sr_hdr *req, const uint8_t *req_payload,
                  const sr_peer *src, int was_member, int known, const leaf_model *before,
                  tally *t)
{
    const sr_hdr *h = &a->hdr;
    const sr_pipe_dest *d = &a->dests[0];

    if (!fz_is_request(req->op)) {
        /* The root's answer to one of the leaf's workers, passed down. */
        uint16_t w = req->worker;
        unsigned misfit = req->op == SR_OP_JOIN_ACK ? ack_misfit(req, req_payload) : 0;

        CHECK(fz_peer_eq(src, &g_parent) && req->job == FZ_TREE_JOB);
        CHECK(w < FZ_TREE_N && local(w) && (live(before) >> w & 1u));
        CHECK(fz_peer_eq(&d->peer, &before->peer[w]) && d->worker == w);
        if (misfit) {
            CHECK(h->op == SR_OP_ERROR && h->status == misfit && h->aux == SR_OP_JOIN);
            CHECK(h->count == 0 && h->offset == 0 && h->seq == req->seq && h->job == req->job);
            t->misfits++;
        } else {
            fz_check_hdr_eq(h, req, w);
            CHECK(a->payload_len == 0 || memcmp(a->payload, req_payload, a->payload_len) == 0);
        }
        t->down++;
        return;
    }
    /* The answer to a request: to its sender, for the worker it named. */
    CHECK(fz_peer_eq(&d->peer, src) && d->worker == req->worker);
    CHECK(h->job == req->job && h->slot == req->slot && h->shadow == req->shadow);
    /* Every answer but the shadow copy echoes the request's seq. */
    CHECK(h->seq == req->seq || h->op == SR_OP_AR_RESULT);
    /* Anyone but a bound worker at its address gets an ERROR at most. */
    CHECK(was_member || h->op == SR_OP_ERROR);
    switch (h->op) {
    case SR_OP_ERROR:
        CHECK(h->count == 0 && h->aux == req->op && h->offset == req->offset);
        CHECK(h->status >= SR_ST_UNKNOWN_JOB && h->status <= SR_ST_DENIED);
        if (!known) {
            CHECK(h->status == SR_ST_UNKNOWN_JOB);
        } else if (req->op == SR_OP_JOIN) {
            CHECK(h->status == SR_ST_NOT_MEMBER || h->status == SR_ST_STALE ||
                  h->status == SR_ST_JOB_IN_USE || h->status == SR_ST_DENIED);
            /* The leaf's job has no admission token: only a malformed one. */
            CHECK(h->status != SR_ST_DENIED ||
                  (req->count != 0 && req->count != SR_JOIN_REQ_WORDS));
            CHECK(h->status != SR_ST_NOT_MEMBER || !local(req->worker) ||
                  (before->bound >> req->worker & 1u));
        } else {
            /* Refusals of the round, or the parent's refusal of the leaf. */
            CHECK(req->op == SR_OP_AR_DATA || req->op == SR_OP_AR_PROBE);
            CHECK(h->status != SR_ST_STALE && h->status != SR_ST_UNSUPPORTED &&
                  h->status != SR_ST_RANGE && h->status != SR_ST_CLOCK_AHEAD);
        }
        t->errors += known;
        break;
    case SR_OP_AR_HELD:
    case SR_OP_AR_NAK:
        CHECK(req->op == SR_OP_AR_PROBE || (req->op == SR_OP_AR_DATA && h->op == SR_OP_AR_HELD));
        CHECK(h->count == 0 && h->flags == 0 && h->status == 0);
        CHECK(h->offset == req->offset && h->exp == req->exp && h->aux == req->aux);
        CHECK(h->slot < FZ_TREE_SLOTS);
        break;
    case SR_OP_AR_RESULT:
        /* The leaf's shadow copy of the tree's result. */
        CHECK(req->op == SR_OP_AR_DATA && h->count <= FZ_TREE_ELEMS);
        CHECK(h->slot < FZ_TREE_SLOTS);
        break;
    default:
        CHECK(!"the leaf answers a request with an op it never sends (JOIN_ACK: the root's)");
    }
}

/* The parent's result of a round, multicast to the leaf's workers. */
void check_mcast(const sr_pipe_action *a, const sr_hdr *req, const uint8_t *req_payload,
                 const sr_peer *src, tally *t)
{
    const sr_hdr *h = &a->hdr;

    CHECK(h->op == SR_OP_AR_RESULT && h->job == FZ_TREE_JOB);
    CHECK(fz_peer_eq(src, &g_parent) && req->op == SR_OP_AR_RESULT);
    CHECK(req->job == FZ_TREE_UPJOB && req->worker == g_k);
    CHECK(h->seq == req->seq && h->slot == req->slot && h->shadow == req->shadow);
    CHECK(h->count == req->count && h->exp == req->exp && h->next_exp == req->next_exp);
    CHECK(h->offset == req->offset && h->aux == req->aux);
    CHECK(a->payload_len == 0 || memcmp(a->payload, req_payload, a->payload_len) == 0);
    CHECK(a->n_dests == (unsigned)__builtin_popcountll(live(&g_m)));
    for (unsigned k = 0; k < a->n_dests; k++) {
        uint16_t w = a->dests[k].worker;

        CHECK(w < FZ_TREE_N && local(w) && (live(&g_m) >> w & 1u));
        CHECK(fz_peer_eq(&a->dests[k].peer, &g_m.peer[w]));
        CHECK(k == 0 || w > a->dests[k - 1].worker);
    }
    t->mcast++;
}
