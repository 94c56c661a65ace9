/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_pipeline.h - the fixtures of fuzz_pipeline.c (its jobs and peers)
 * and fuzz_tree.c (a leaf, its parent, a root) and their input format,
 * shared with gen_seeds.c so the seed corpora keep addressing the jobs the
 * targets set up; and the checks both targets make of every action.
 *
 * Input: a sequence of records, each
 *
 *   +--------+----------------+------------------------------+
 *   |  kind  | length (be16)  | length bytes                 |
 *   +--------+----------------+------------------------------+
 *
 * (a length beyond the end of the input is cut to what is left; a record
 * cut inside its first three bytes ends the input). kind & FZ_REC_CTL
 * clear: a message of those bytes from peer (kind & 3) to sr_pipe_process.
 * kind & FZ_REC_CTL set: a policy change through sr_pipe_set_policy, its
 * bytes read as FZ_CTL_LEN bytes (missing ones are 0):
 *   [0] job: FZ_JOB_A if even, else FZ_JOB_B
 *   [1] mode (any value: unknown modes must be refused)
 *   [2] s
 *   [3] want_from, as a signed delta from the barrier's current low
 *   [4] nonzero: want_from is instead big-endian bytes [5..8], absolute
 */
#ifndef SERENE_TESTS_FUZZ_PIPELINE_H
#define SERENE_TESTS_FUZZ_PIPELINE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pipeline.h"
#include "proto/wire.h"

#define FZ_REC_HDR 3u      /* kind + be16 length */
#define FZ_REC_CTL 0x80u   /* kind bit: a policy change, not a message */
#define FZ_CTL_LEN 9u
#define FZ_MAX_RECORDS 512 /* bounds the work per input */
#define FZ_NPEERS 4u

/* Peer k's address: 10.0.0.(k + 1), port 40000 + k. */
#define FZ_PEER_IP(k) (0x0a000001u + (uint32_t)(k))
#define FZ_PEER_PORT(k) ((uint16_t)(40000u + (k)))

/* Two small jobs, unlike each other where the code branches on it: A has
 * 3 workers, a partial last store row (10 words in rows of 4) and starts
 * in SSP; B has 2 workers, 1 slot, the smallest ring and starts in BSP. */
#define FZ_JOB_A 1u
#define FZ_JOB_A_WORKERS 3u
#define FZ_JOB_A_ELEMS 4u
#define FZ_JOB_A_SLOTS 2u
#define FZ_JOB_A_STORE 10u
#define FZ_JOB_A_RING 4u
#define FZ_JOB_A_S 1u /* SR_SYNC_SSP */

#define FZ_JOB_B 2u
#define FZ_JOB_B_WORKERS 2u
#define FZ_JOB_B_ELEMS 2u
#define FZ_JOB_B_SLOTS 1u
#define FZ_JOB_B_STORE 4u
#define FZ_JOB_B_RING 2u /* SR_SYNC_BSP */

/* ---- fuzz_tree.c's fixture: a leaf of an aggregation tree ---------------------
 *
 * The leaf's job FZ_TREE_JOB has the tree's FZ_TREE_N workers and serves
 * ids FZ_TREE_LOCAL_A .. FZ_TREE_LOCAL_B; its parent at FZ_TREE_PARENT_IP
 * holds job FZ_TREE_JOB (the root's: store and barrier) and job
 * FZ_TREE_UPJOB (the leaves), where this leaf is member FZ_TREE_MEMBER of
 * FZ_TREE_MEMBERS (member 0 of 1 with FZ_TREE_CFG_SOLO). Input: one
 * configuration byte (FZ_TREE_CFG_*), then records as above, whose kind
 * & 7 without FZ_REC_CTL is the source (FZ_TREE_SRC_*); with FZ_REC_CTL,
 * kind & 3 picks a control: FZ_TREE_CTL_TICK (and 3: time advances by
 * the record's first two bytes, big-endian, in ms), FZ_TREE_CTL_NET (with
 * a root: the record's first byte % FZ_TREE_NET_OPS is what the network
 * does with its oldest packet in flight: deliver, drop, move to the back,
 * duplicate, or deliver everything) or FZ_TREE_CTL_ECHO (the parent's
 * answer, forged from one of the leaf's last messages to it: fuzz_tree.c,
 * step_echo). */
#define FZ_TREE_JOB 1u
#define FZ_TREE_UPJOB 9u
#define FZ_TREE_N 4u
#define FZ_TREE_ELEMS 2u
#define FZ_TREE_SLOTS 2u
#define FZ_TREE_STORE 8u
#define FZ_TREE_RING 4u
#define FZ_TREE_LOCAL_A 1u
#define FZ_TREE_LOCAL_B 2u
#define FZ_TREE_MEMBER 1u
#define FZ_TREE_MEMBERS 2u
#define FZ_TREE_LEASE_MS 100u /* with FZ_TREE_CFG_LEASE */
#define FZ_TREE_TOKEN 0x5eedu /* the root's job of the leaves, with FZ_TREE_CFG_TOKEN */

#define FZ_TREE_LEAF_IP 0x0a010001u
#define FZ_TREE_PARENT_IP 0x0a020001u
#define FZ_TREE_PHANTOM_IP 0x0a030001u /* another leaf, or a stranger claiming to be one */
#define FZ_TREE_STRANGER_IP(k) (0x0a090001u + (uint32_t)(k))
#define FZ_TREE_SW_PORT 48200u

/* Configuration byte. */
#define FZ_TREE_CFG_ROOT 0x01u  /* a real root pipeline behind the leaf */
#define FZ_TREE_CFG_FLUSH 0x02u /* the network delivers everything after each record */
#define FZ_TREE_CFG_SOLO 0x04u  /* the root's job of the leaves has this leaf only */
#define FZ_TREE_CFG_MISFIT(c) (((c) >> 3) & 3u) /* 1: root job's packets, 2: upjob's, 3: its pool */
#define FZ_TREE_CFG_LEASE 0x20u /* leases of FZ_TREE_LEASE_MS at the leaf and the root */
#define FZ_TREE_CFG_TOKEN 0x40u /* the root's job of the leaves wants FZ_TREE_TOKEN */
#define FZ_TREE_CFG_PROOF 0x80u /* address proof on at the leaf and the root */

/* Sources: workers' addresses FZ_PEER_IP(0..3) (any may claim any id),
 * two strangers, the parent, and the phantom (with a root: to the root, as
 * another leaf; without: to the leaf, as a stranger posing as a parent). */
#define FZ_TREE_SRC_STRANGER 4u /* and 5 */
#define FZ_TREE_SRC_PARENT 6u
#define FZ_TREE_SRC_PHANTOM 7u

#define FZ_TREE_CTL_TICK 0u
#define FZ_TREE_CTL_NET 1u
#define FZ_TREE_CTL_ECHO 2u
#define FZ_TREE_NET_OPS 5u

/* ---- checks shared by the pipeline targets ------------------------------------ */

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static inline int fz_peer_eq(const sr_peer *a, const sr_peer *b)
{
    return a->ip == b->ip && a->port == b->port;
}

/* Ops that go worker to switch. */
static inline int fz_is_request(unsigned op)
{
    return op == SR_OP_JOIN || op == SR_OP_LEAVE || op == SR_OP_AR_DATA ||
           op == SR_OP_AR_PROBE || op == SR_OP_PUSH || op == SR_OP_PULL || op == SR_OP_CLOCK ||
           op == SR_OP_STEP || op == SR_OP_STEP_PROBE;
}

static inline void fz_check_hdr_eq(const sr_hdr *got, const sr_hdr *tmpl, uint16_t worker)
{
    FZ_CHECK(got->version == tmpl->version && got->op == tmpl->op && got->job == tmpl->job);
    FZ_CHECK(got->worker == worker && got->seq == tmpl->seq);
    FZ_CHECK(got->slot == tmpl->slot && got->shadow == tmpl->shadow &&
             got->count == tmpl->count);
    FZ_CHECK(got->exp == tmpl->exp && got->next_exp == tmpl->next_exp);
    FZ_CHECK(got->flags == tmpl->flags && got->status == tmpl->status);
    FZ_CHECK(got->offset == tmpl->offset && got->aux == tmpl->aux);
}

/* Replica k of a as wire bytes (header by sr_pipe_replica_hdr, then the
 * payload) into buf[SR_WIRE_MAX_MSG]; returns its length. */
static inline size_t fz_replica(const sr_pipe_action *a, unsigned k, uint8_t *buf)
{
    sr_pipe_replica_hdr(a, k, buf);
    sr_pipe_payload_write(a, buf + SR_WIRE_HDR_LEN);
    return SR_WIRE_HDR_LEN + a->payload_len;
}

/* Each replica as wire bytes parses back to the template with its worker. */
static inline void fz_check_replicas(const sr_pipe_action *a)
{
    static uint8_t rep[SR_WIRE_MAX_MSG];

    FZ_CHECK(a->payload_len == 4u * (size_t)a->hdr.count);
    for (unsigned k = 0; k < a->n_dests; k++) {
        sr_hdr h;
        const uint8_t *payload;
        size_t len = fz_replica(a, k, rep);

        FZ_CHECK(sr_msg_parse(rep, len, &h, &payload) == SR_PARSE_OK);
        sr_hdr tmpl = a->hdr;
        if (a->dest_seq) { /* a STEP_RESP copy: its receiver's clock and policy */
            tmpl.seq = a->dests[k].seq;
            tmpl.exp = (int8_t)a->dests[k].mode;
            tmpl.slot = a->dests[k].s;
        }
        fz_check_hdr_eq(&h, &tmpl, a->dests[k].worker);
    }
}

#endif /* SERENE_TESTS_FUZZ_PIPELINE_H */
