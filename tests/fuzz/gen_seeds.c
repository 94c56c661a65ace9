/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen_seeds.c - writes the binary seed corpora of fuzz_pipeline, fuzz_tree
 * and (in part) fuzz_wire, so they can be regenerated when the wire format or the
 * fixture of fuzz_pipeline.h changes:
 *
 *   ninja -C BUILD tests/fuzz/fuzz_gen_seeds
 *   BUILD/tests/fuzz/fuzz_gen_seeds tests/fuzz/corpus
 *
 * Each pipeline seed is a short scenario of valid packets (records as in
 * fuzz_pipeline.h) that reaches one area deep: JOIN binding, allreduce
 * rounds and the shadow copy, the store, the barrier with policy changes,
 * isolation, a new incarnation. The fuzzer mutates from there. The wire
 * corpus also holds tests/vectors' golden packets, converted by hand:
 *   sed 's/#.*$//' X.hex | grep -v = | xxd -r -p > X
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_pipeline.h"
#include "proto/wire.h"

static uint8_t g_buf[1u << 16];
static size_t g_len;

static void put_rec(uint8_t kind, const uint8_t *bytes, size_t n)
{
    g_buf[g_len] = kind;
    sr_put_be16(g_buf + g_len + 1, (uint16_t)n);
    memcpy(g_buf + g_len + FZ_REC_HDR, bytes, n);
    g_len += FZ_REC_HDR + n;
}

/* A message from peer k; count payload words v, v + 1, ... */
static void msg(unsigned k, uint8_t op, uint16_t job, uint16_t w, uint32_t seq, uint16_t slot,
                uint8_t shadow, uint16_t count, uint32_t offset, uint32_t aux, uint32_t v)
{
    uint8_t m[SR_WIRE_HDR_LEN + 64 * 4];
    sr_hdr h = {.version = SR_WIRE_VERSION, .op = op, .job = job, .worker = w, .seq = seq,
                .slot = slot, .shadow = shadow, .count = count, .offset = offset, .aux = aux};

    sr_hdr_pack(m, &h);
    for (unsigned i = 0; i < count; i++)
        sr_put_be32(m + SR_WIRE_HDR_LEN + 4 * i, v + i);
    put_rec((uint8_t)k, m, SR_WIRE_HDR_LEN + 4u * count);
}

static void join(unsigned k, uint16_t job, uint16_t w, uint32_t nonce)
{
    msg(k, SR_OP_JOIN, job, w, 1000u + w, 0, 0, 0, 0, nonce, 0);
}

static void join_all(uint16_t job, unsigned n, uint32_t nonce)
{
    for (unsigned w = 0; w < n; w++)
        join(w, job, (uint16_t)w, nonce);
}

static void clock_(unsigned k, uint16_t job, uint16_t w, uint32_t c)
{
    msg(k, SR_OP_CLOCK, job, w, c, 0, 0, 0, 0, 0, 0);
}

/* A policy record: job A or B, mode, s, from = low + delta. */
static void policy(unsigned job_b, uint8_t mode, uint8_t s, int8_t delta)
{
    uint8_t c[FZ_CTL_LEN] = {(uint8_t)job_b, mode, s, (uint8_t)delta};

    put_rec(FZ_REC_CTL, c, sizeof c);
}

static void save(const char *dir, const char *name)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(g_buf, 1, g_len, f) != g_len || fclose(f)) {
        perror(path);
        exit(1);
    }
    g_len = 0;
}

/* JOIN: both jobs, a retransmission, and every refusal. */
static void seed_join(const char *dir)
{
    const uint16_t A = FZ_JOB_A, B = FZ_JOB_B;

    join_all(A, FZ_JOB_A_WORKERS, 0);
    join(2, B, 0, 0);
    join(3, B, 1, 0);
    join(0, A, 0, 0);                                   /* retransmitted: ACK again */
    join(3, A, 0, 0);                                   /* same token, other address */
    msg(0, SR_OP_JOIN, A, 0, 77, 0, 0, 0, 0, 0, 0);     /* new token: STALE */
    join(3, A, 5, 0);                                   /* not a member */
    save(dir, "join");
}

/* Allreduce: a full round in each version of slot 0, a lost result,
 * slot 1, then a mismatch, a bad slot and a bad count. */
static void seed_allreduce(const char *dir)
{
    const uint16_t A = FZ_JOB_A;

    join_all(A, FZ_JOB_A_WORKERS, 0);
    for (uint16_t w = 0; w < FZ_JOB_A_WORKERS; w++)
        msg(w, SR_OP_AR_DATA, A, w, 1, 0, 0, FZ_JOB_A_ELEMS, 0, 0, 10u * w);
    msg(0, SR_OP_AR_DATA, A, 0, 1, 0, 0, FZ_JOB_A_ELEMS, 0, 0, 0); /* shadow reply */
    for (uint16_t w = 0; w < FZ_JOB_A_WORKERS; w++)
        msg(w, SR_OP_AR_DATA, A, w, 1, 0, 1, FZ_JOB_A_ELEMS, 8, 0, 0xfffffff0u);
    msg(1, SR_OP_AR_DATA, A, 1, 1, 1, 0, 2, 4, 0, 7);
    msg(2, SR_OP_AR_DATA, A, 2, 1, 1, 0, 3, 4, 0, 7);                /* mismatch */
    msg(0, SR_OP_AR_DATA, A, 0, 1, FZ_JOB_A_SLOTS, 0, 1, 0, 0, 1);   /* bad slot */
    msg(0, SR_OP_AR_DATA, A, 0, 1, 0, 0, FZ_JOB_A_ELEMS + 1, 0, 0, 1); /* bad count */
    save(dir, "allreduce");
}

/* Probes: held while the round waits, not held for a worker whose copy
 * is missing and after completion, on a poisoned round, and refused
 * (with a payload, beyond the pool); a resend to the open round. */
static void seed_probe(const char *dir)
{
    const uint16_t A = FZ_JOB_A;

    join_all(A, FZ_JOB_A_WORKERS, 0);
    msg(0, SR_OP_AR_DATA, A, 0, 3, 1, 0, FZ_JOB_A_ELEMS, 0, 9, 5);
    msg(0, SR_OP_AR_PROBE, A, 0, 3, 1, 0, 0, 0, 9, 0);               /* held */
    msg(0, SR_OP_AR_DATA, A, 0, 3, 1, 0, FZ_JOB_A_ELEMS, 0, 9, 5);   /* held */
    msg(1, SR_OP_AR_PROBE, A, 1, 3, 1, 0, 0, 0, 9, 0);               /* not held */
    for (uint16_t w = 1; w < FZ_JOB_A_WORKERS; w++)
        msg(w, SR_OP_AR_DATA, A, w, 3, 1, 0, FZ_JOB_A_ELEMS, 0, 9, w);
    msg(1, SR_OP_AR_PROBE, A, 1, 3, 1, 0, 0, 0, 9, 0);               /* complete */
    msg(0, SR_OP_AR_DATA, A, 0, 3, 0, 1, 2, 4, 9, 7);
    msg(1, SR_OP_AR_DATA, A, 1, 3, 0, 1, 2, 5, 9, 7);                /* mismatch */
    msg(0, SR_OP_AR_PROBE, A, 0, 3, 0, 1, 0, 4, 9, 0);               /* poisoned */
    msg(0, SR_OP_AR_PROBE, A, 0, 3, 1, 1, 1, 0, 9, 0);               /* a payload */
    msg(0, SR_OP_AR_PROBE, A, 0, 3, FZ_JOB_A_SLOTS, 0, 0, 0, 9, 0);  /* bad slot */
    save(dir, "probe");
}

/* Store: pushes, a duplicate, the partial last row, pulls, refusals. */
static void seed_store(const char *dir)
{
    const uint16_t A = FZ_JOB_A;

    join_all(A, FZ_JOB_A_WORKERS, 0);
    msg(0, SR_OP_PUSH, A, 0, 1, 0, 0, FZ_JOB_A_ELEMS, 0, 0, 5);
    msg(0, SR_OP_PUSH, A, 0, 1, 0, 0, FZ_JOB_A_ELEMS, 0, 0, 5);      /* duplicate */
    msg(1, SR_OP_PUSH, A, 1, 1, 0, 0, 2, 8, 0, 0x7fffffffu);          /* last row */
    msg(1, SR_OP_PUSH, A, 1, 2, 0, 0, 2, 3, 0, 1);                    /* across rows */
    msg(2, SR_OP_PUSH, A, 2, 1, 0, 0, 1, FZ_JOB_A_STORE, 0, 1);       /* beyond */
    msg(0, SR_OP_PULL, A, 0, 1, 0, 0, 0, 0, FZ_JOB_A_ELEMS, 0);
    msg(2, SR_OP_PULL, A, 2, 1, 0, 0, 0, 8, 2, 0);
    msg(2, SR_OP_PULL, A, 2, 2, 0, 0, 0, 8, 3, 0);                    /* beyond */
    msg(2, SR_OP_PULL, A, 2, 3, 0, 0, 0, 0, 0, 0);                    /* count 0 */
    save(dir, "store");
}

/* Barrier: SSP(1) holds and releases, a CLOCK beyond the ring, and
 * policy changes now, ahead and refused. */
static void seed_barrier(const char *dir)
{
    const uint16_t A = FZ_JOB_A;

    join_all(A, FZ_JOB_A_WORKERS, 0);
    clock_(0, A, 0, 0);
    clock_(0, A, 0, 1);                                 /* HOLD: 1 - low(-1) > 1 */
    clock_(1, A, 1, 0);
    clock_(2, A, 2, 0);                                 /* low 0: RELEASE */
    clock_(0, A, 0, 1);                                 /* duplicate */
    policy(0, SR_SYNC_BSP, 0, 0);
    policy(0, SR_SYNC_ASP, 0, 3);
    policy(0, SR_SYNC_SSP, 2, 2);
    policy(0, SR_SYNC_SSP, 9, 0);                       /* s beyond the ring */
    policy(0, 3, 0, 0);                                 /* no such mode */
    clock_(1, A, 1, 1);
    clock_(2, A, 2, 1);
    clock_(0, A, 0, 9);                                 /* beyond the ring */
    clock_(0, A, 0, 2);
    save(dir, "barrier");
}

/* Isolation: B's workers and a stranger at A, unknown job, answers and
 * junk sent to the switch. */
static void seed_isolation(const char *dir)
{
    const uint16_t A = FZ_JOB_A, B = FZ_JOB_B;

    join_all(A, 2, 0);
    join(2, B, 0, 0);
    join(3, B, 1, 0);
    msg(3, SR_OP_AR_DATA, A, 1, 1, 0, 0, 1, 0, 0, 1);   /* w1 of A, from B's peer */
    msg(3, SR_OP_PUSH, A, 2, 1, 0, 0, 1, 0, 0, 1);      /* unbound worker */
    msg(2, SR_OP_PULL, A, 0, 1, 0, 0, 0, 0, 1, 0);      /* B's peer as A's w0 */
    clock_(3, A, 1, 0);
    msg(0, SR_OP_AR_DATA, 9, 0, 1, 0, 0, 1, 0, 0, 1);   /* unknown job */
    msg(0, SR_OP_AR_RESULT, A, 0, 1, 0, 0, 1, 0, 0, 1); /* an answer, dropped */
    put_rec(1, (const uint8_t *)"\x53\x45\x02", 3);     /* truncated */
    save(dir, "isolation");
}

/* A new incarnation in the middle of everything. */
static void seed_reset(const char *dir)
{
    const uint16_t A = FZ_JOB_A;

    join_all(A, FZ_JOB_A_WORKERS, 0);
    msg(0, SR_OP_PUSH, A, 0, 1, 0, 0, 1, 0, 0, 3);
    msg(0, SR_OP_AR_DATA, A, 0, 1, 0, 0, 1, 0, 0, 1);
    clock_(0, A, 0, 0);
    policy(0, SR_SYNC_BSP, 0, 1);
    join(1, A, 1, 42);                                  /* reset: only w1 bound */
    msg(0, SR_OP_PUSH, A, 0, 2, 0, 0, 1, 0, 0, 3);      /* w0 dropped now */
    join(0, A, 0, 42);
    join(2, A, 2, 42);
    clock_(0, A, 0, 0);
    msg(1, SR_OP_PULL, A, 1, 1, 0, 0, 0, 0, 1, 0);
    save(dir, "reset");
}

/* Job B: 2 workers, 1 slot, ring 2 under BSP. */
static void seed_job_b(const char *dir)
{
    const uint16_t B = FZ_JOB_B;

    join(2, B, 0, 0);
    join(3, B, 1, 0);
    msg(2, SR_OP_AR_DATA, B, 0, 1, 0, 0, 2, 0, 0, 1);
    msg(3, SR_OP_AR_DATA, B, 1, 1, 0, 0, 2, 0, 0, 2);
    msg(2, SR_OP_PUSH, B, 0, 1, 0, 0, 2, 2, 0, 9);
    msg(3, SR_OP_PULL, B, 1, 1, 0, 0, 0, 2, 2, 0);
    clock_(2, B, 0, 0);
    clock_(2, B, 0, 1);
    clock_(3, B, 1, 0);
    clock_(3, B, 1, 1);
    policy(1, SR_SYNC_SSP, 0, 5);
    save(dir, "job_b");
}

static void pipeline_seeds(const char *dir)
{
    seed_join(dir);
    seed_allreduce(dir);
    seed_probe(dir);
    seed_store(dir);
    seed_barrier(dir);
    seed_isolation(dir);
    seed_reset(dir);
    seed_job_b(dir);
}

/* ---- fuzz_tree: a leaf, forged parent answers, or a root behind it ---------- */

/* A message with every header field, from source k (fuzz_pipeline.h,
 * FZ_TREE_SRC_*), and count payload words w[]. */
static void tmsg(unsigned k, sr_hdr h, const uint32_t *w)
{
    uint8_t m[SR_WIRE_HDR_LEN + 64 * 4];

    h.version = SR_WIRE_VERSION;
    sr_hdr_pack(m, &h);
    for (unsigned i = 0; i < h.count; i++)
        sr_put_be32(m + SR_WIRE_HDR_LEN + 4 * i, w[i]);
    put_rec((uint8_t)k, m, SR_WIRE_HDR_LEN + 4u * h.count);
}

static void tcfg(uint8_t cfg)
{
    g_buf[g_len++] = cfg;
}

static void ttick(uint16_t ms)
{
    uint8_t b[2];

    sr_put_be16(b, ms);
    put_rec(FZ_REC_CTL | FZ_TREE_CTL_TICK, b, 2);
}

/* What the network does with its oldest packet (fuzz_pipeline.h). */
enum { NET_DELIVER, NET_DROP, NET_LATER, NET_DUP, NET_ALL };
static void tnet(uint8_t op)
{
    put_rec(FZ_REC_CTL | FZ_TREE_CTL_NET, &op, 1);
}

/* Local workers 1 and 2 join from their own addresses (peers 1 and 2). */
static void tjoin_all(uint32_t nonce)
{
    for (uint16_t w = FZ_TREE_LOCAL_A; w <= FZ_TREE_LOCAL_B; w++)
        tmsg(w, (sr_hdr){.op = SR_OP_JOIN, .job = FZ_TREE_JOB, .worker = w, .seq = 500u + w,
                         .aux = nonce},
             NULL);
}

static void tar(unsigned k, uint8_t op, uint16_t w, uint16_t slot, uint8_t v, uint32_t seq,
                uint16_t count, int8_t exp, int8_t nexp)
{
    uint32_t vals[FZ_TREE_ELEMS] = {10u * w + 1u, 0xfffffff0u + w};

    tmsg(k, (sr_hdr){.op = op, .job = FZ_TREE_JOB, .worker = w, .seq = seq, .slot = slot,
                     .shadow = v, .count = op == SR_OP_AR_PROBE ? 0 : count, .exp = exp,
                     .next_exp = nexp, .aux = FZ_TREE_ELEMS},
         vals);
}

static void tround(uint16_t slot, uint8_t v, uint32_t seq, int8_t exp)
{
    for (uint16_t w = FZ_TREE_LOCAL_A; w <= FZ_TREE_LOCAL_B; w++)
        tar(w, SR_OP_AR_DATA, w, slot, v, seq, FZ_TREE_ELEMS, exp, (int8_t)w);
}

/* A JOIN_ACK from the parent: for one of the root job's workers, or for
 * the leaf itself (job FZ_TREE_UPJOB, member k). */
static void tack(uint16_t job, uint16_t w, uint32_t seq, uint32_t nonce, uint32_t n,
                 uint32_t elems, uint32_t slots)
{
    uint8_t b[4 * SR_JOIN_PARAMS_WORDS];
    uint32_t words[SR_JOIN_PARAMS_WORDS];
    sr_join_params jp = {.n_workers = n, .elems_per_pkt = elems, .pool_slots = slots,
                         .store_capacity = FZ_TREE_STORE};

    sr_join_params_pack(b, &jp);
    for (unsigned i = 0; i < SR_JOIN_PARAMS_WORDS; i++)
        words[i] = sr_get_be32(b + 4 * i);
    tmsg(FZ_TREE_SRC_PARENT,
         (sr_hdr){.op = SR_OP_JOIN_ACK, .job = job, .worker = w, .seq = seq, .aux = nonce,
                  .count = SR_JOIN_PARAMS_WORDS},
         words);
}

/* The parent's answer to the leaf (member k) about a round: its header,
 * count words of payload. */
static void tup(uint8_t op, uint16_t k, uint16_t slot, uint8_t v, uint32_t seq, uint16_t count,
                int8_t exp, uint8_t status, uint32_t aux)
{
    uint32_t vals[FZ_TREE_ELEMS] = {42, 0x80000000u};

    tmsg(FZ_TREE_SRC_PARENT,
         (sr_hdr){.op = op, .job = FZ_TREE_UPJOB, .worker = k, .seq = seq, .slot = slot,
                  .shadow = v, .count = count, .exp = exp, .next_exp = 5, .status = status,
                  .aux = aux},
         vals);
}

/* With a root (this leaf its only member): JOIN, two rounds, the store
 * and the barrier through the leaf, a lost result, then LEAVE. */
static void seed_tree_root(const char *dir)
{
    const uint16_t J = FZ_TREE_JOB;
    uint32_t one[1] = {5};

    tcfg(FZ_TREE_CFG_ROOT | FZ_TREE_CFG_FLUSH | FZ_TREE_CFG_SOLO);
    tjoin_all(7);
    tround(0, 0, 1, 3);
    tround(1, 0, 1, 3);
    tar(1, SR_OP_AR_DATA, 1, 0, 0, 1, FZ_TREE_ELEMS, 3, 1); /* shadow copy */
    tround(0, 1, 2, 4);
    for (uint16_t w = FZ_TREE_LOCAL_A; w <= FZ_TREE_LOCAL_B; w++) {
        tmsg(w, (sr_hdr){.op = SR_OP_PUSH, .job = J, .worker = w, .seq = 1, .count = 1}, one);
        tmsg(w, (sr_hdr){.op = SR_OP_CLOCK, .job = J, .worker = w, .seq = 0}, NULL);
    }
    tmsg(1, (sr_hdr){.op = SR_OP_PULL, .job = J, .worker = 1, .seq = 1, .aux = 1}, NULL);
    tmsg(2, (sr_hdr){.op = SR_OP_CLOCK, .job = J, .worker = 2, .seq = 1}, NULL);
    for (uint16_t w = FZ_TREE_LOCAL_A; w <= FZ_TREE_LOCAL_B; w++)
        tmsg(w, (sr_hdr){.op = SR_OP_LEAVE, .job = J, .worker = w, .seq = 500u + w}, NULL);
    save(dir, "root");
}

/* With a root whose job of the leaves has another leaf (the phantom,
 * member 0) and a network that loses, reorders and duplicates. */
static void seed_tree_pair(const char *dir)
{
    uint32_t req[SR_JOIN_REQ_WORDS] = {0};

    tcfg(FZ_TREE_CFG_ROOT);
    tmsg(FZ_TREE_SRC_PHANTOM,
         (sr_hdr){.op = SR_OP_JOIN, .job = FZ_TREE_UPJOB, .worker = 0, .seq = 7, .aux = 7,
                  .count = SR_JOIN_REQ_WORDS},
         req);
    tjoin_all(7);
    tnet(NET_ALL);
    tnet(NET_ALL);
    tround(0, 0, 1, 3);
    tnet(NET_DROP); /* the partial lost */
    ttick(10);
    tar(1, SR_OP_AR_PROBE, 1, 0, 0, 1, 0, 3, 0);
    tnet(NET_DUP);
    tnet(NET_LATER);
    tnet(NET_ALL);
    tmsg(FZ_TREE_SRC_PHANTOM,
         (sr_hdr){.op = SR_OP_AR_DATA, .job = FZ_TREE_UPJOB, .worker = 0, .seq = 1,
                  .count = FZ_TREE_ELEMS, .exp = 3, .next_exp = 9, .aux = FZ_TREE_ELEMS},
         req);
    tnet(NET_ALL);
    tround(1, 0, 1, 3);
    tnet(NET_ALL);
    ttick(10);
    tar(2, SR_OP_AR_PROBE, 2, 1, 0, 1, 0, 3, 0);
    tnet(NET_DELIVER);
    tnet(NET_ALL);
    save(dir, "pair");
}

/* Without a root: the parent's answers forged, right and wrong. */
static void seed_tree_forged(const char *dir)
{
    const uint16_t J = FZ_TREE_JOB, K = FZ_TREE_MEMBER;

    tcfg(0);
    tjoin_all(7);
    tack(J, 1, 501, 7, FZ_TREE_N, FZ_TREE_ELEMS, FZ_TREE_SLOTS);
    tack(J, 2, 502, 7, FZ_TREE_N, FZ_TREE_ELEMS + 1, FZ_TREE_SLOTS); /* misfit */
    tack(J, 3, 503, 7, FZ_TREE_N, FZ_TREE_ELEMS, FZ_TREE_SLOTS);     /* not here */
    tack(FZ_TREE_UPJOB, K, 7, 7, 2, FZ_TREE_ELEMS, FZ_TREE_SLOTS);   /* the leaf bound */
    tround(0, 0, 1, 3);                                              /* a partial up */
    tup(SR_OP_AR_HELD, K, 0, 0, 1, 0, 3, 0, FZ_TREE_ELEMS);
    tup(SR_OP_AR_NAK, K, 0, 0, 1, 0, 3, 0, FZ_TREE_ELEMS);           /* again */
    tup(SR_OP_AR_RESULT, K, 0, 0, 1, FZ_TREE_ELEMS, 3, 0, FZ_TREE_ELEMS);
    tup(SR_OP_AR_RESULT, K, 0, 0, 1, FZ_TREE_ELEMS, 3, 0, FZ_TREE_ELEMS); /* duplicate */
    tround(1, 0, 1, 3);
    tup(SR_OP_ERROR, K, 1, 0, 1, 0, 3, SR_ST_MISMATCH, SR_OP_AR_DATA);
    ttick(10);
    tar(1, SR_OP_AR_PROBE, 1, 1, 0, 1, 0, 3, 0);                     /* MISMATCH, marker */
    tup(SR_OP_AR_RESULT, 0, 0, 0, 1, FZ_TREE_ELEMS, 3, 0, FZ_TREE_ELEMS); /* not member K */
    tmsg(FZ_TREE_SRC_PHANTOM,
         (sr_hdr){.op = SR_OP_AR_RESULT, .job = FZ_TREE_UPJOB, .worker = K, .seq = 1}, NULL);
    tmsg(FZ_TREE_SRC_PARENT, (sr_hdr){.op = SR_OP_PROCEED, .job = J, .worker = 1, .seq = 0},
         NULL);
    tmsg(FZ_TREE_SRC_STRANGER, (sr_hdr){.op = SR_OP_CLOCK, .job = J, .worker = 1}, NULL);
    tar(FZ_TREE_SRC_STRANGER + 1, SR_OP_AR_DATA, 2, 0, 1, 2, 1, 0, 0);
    tmsg(0, (sr_hdr){.op = SR_OP_JOIN, .job = J, .worker = 0, .seq = 9, .aux = 7}, NULL);
    tmsg(3, (sr_hdr){.op = SR_OP_JOIN, .job = J, .worker = 2, .seq = 502, .aux = 7}, NULL);
    tmsg(FZ_TREE_SRC_PARENT, (sr_hdr){.op = SR_OP_JOIN, .job = J, .worker = 1, .aux = 8}, NULL);
    tmsg(1, (sr_hdr){.op = SR_OP_LEAVE, .job = J, .worker = 1, .seq = 501}, NULL);
    tmsg(2, (sr_hdr){.op = SR_OP_LEAVE, .job = J, .worker = 2, .seq = 502}, NULL);
    tmsg(2, (sr_hdr){.op = SR_OP_LEAVE, .job = J, .worker = 2, .seq = 502}, NULL);
    tjoin_all(8);                                                    /* a new incarnation */
    save(dir, "forged");
}

/* Without a root: the parent refuses the leaf; the workers learn it. */
static void seed_tree_refused(const char *dir)
{
    tcfg(FZ_TREE_CFG_LEASE);
    tjoin_all(7);
    tmsg(FZ_TREE_SRC_PARENT,
         (sr_hdr){.op = SR_OP_ERROR, .job = FZ_TREE_UPJOB, .worker = FZ_TREE_MEMBER, .seq = 7,
                  .aux = SR_OP_JOIN, .status = SR_ST_DENIED},
         NULL);
    tround(0, 0, 1, 3);
    ttick(10);
    tar(1, SR_OP_AR_PROBE, 1, 0, 0, 1, 0, 3, 0);
    tar(2, SR_OP_AR_DATA, 2, 0, 0, 1, FZ_TREE_ELEMS, 3, 2);
    ttick(500);
    tjoin_all(9);                                                    /* leases lapsed */
    save(dir, "refused");
}

/* With a root: workers of the leaf disagree, the marker goes up. */
static void seed_tree_mismatch(const char *dir)
{
    tcfg(FZ_TREE_CFG_ROOT | FZ_TREE_CFG_FLUSH);
    tjoin_all(7);
    tar(1, SR_OP_AR_DATA, 1, 0, 0, 1, FZ_TREE_ELEMS, 3, 0);
    tar(2, SR_OP_AR_DATA, 2, 0, 0, 1, 1, 3, 0);
    ttick(10);
    tar(1, SR_OP_AR_PROBE, 1, 0, 0, 1, 0, 3, 0);
    tar(2, SR_OP_AR_PROBE, 2, 0, 0, 1, 0, 3, 0);
    save(dir, "mismatch");
}

/* With a root that does not fit: its job's packets, its job of the
 * leaves' packets or pool, or its admission token; and with address
 * proof (a CLOCK before the proof: UNPROVEN from the root). */
static void seed_tree_misfit(const char *dir)
{
    static const uint8_t cfgs[] = {1u << 3, 2u << 3, 3u << 3, FZ_TREE_CFG_TOKEN,
                                   FZ_TREE_CFG_PROOF | FZ_TREE_CFG_SOLO};
    static const char *const names[] = {"misfit_job", "misfit_upjob", "misfit_pool", "token",
                                         "proof"};

    for (unsigned i = 0; i < 5; i++) {
        tcfg(FZ_TREE_CFG_ROOT | FZ_TREE_CFG_FLUSH | cfgs[i]);
        tjoin_all(7);
        tround(0, 0, 1, 3);
        ttick(10);
        tar(1, SR_OP_AR_PROBE, 1, 0, 0, 1, 0, 3, 0);
        tmsg(2, (sr_hdr){.op = SR_OP_CLOCK, .job = FZ_TREE_JOB, .worker = 2, .seq = 0}, NULL);
        save(dir, names[i]);
    }
}

/* Without a root: the workers open a new round in a cell whose partial is
 * up, and poison it; the parent's NAK names it (the finding fixed with
 * test_pipeline_tree's test_new_round_not_awaited). */
static void seed_tree_new_round(const char *dir)
{
    tcfg(0);
    tjoin_all(7);
    tack(FZ_TREE_UPJOB, FZ_TREE_MEMBER, 7, 7, 2, FZ_TREE_ELEMS, FZ_TREE_SLOTS);
    tround(0, 0, 1, 3);
    tround(0, 1, 2, 3);
    tar(1, SR_OP_AR_DATA, 1, 0, 0, 3, FZ_TREE_ELEMS, 3, 0);
    tup(SR_OP_AR_NAK, FZ_TREE_MEMBER, 0, 0, 3, 0, 3, 0, FZ_TREE_ELEMS);
    tar(2, SR_OP_AR_DATA, 2, 0, 0, 3, 1, 3, 0);
    tup(SR_OP_AR_NAK, FZ_TREE_MEMBER, 0, 0, 3, 0, 3, 0, FZ_TREE_ELEMS);
    save(dir, "new_round");
}

/* The parent's answer forged from the leaf's last message up (echo). */
static void techo(uint8_t op, uint8_t vary, uint8_t back)
{
    uint8_t c[3] = {op, vary, back};

    put_rec(FZ_REC_CTL | FZ_TREE_CTL_ECHO, c, sizeof c);
}

/* Without a root: a parent made of echoes. */
static void seed_tree_echo(const char *dir)
{
    tcfg(0);
    tjoin_all(7);
    techo(4, 0, 0);                                 /* JOIN_ACK to the leaf's JOIN */
    techo(4, 0, 2);                                 /* to worker 1's JOIN */
    techo(4, 1, 1);                                 /* to worker 2's: misfit */
    tround(0, 0, 1, 3);
    techo(2, 0, 0);                                 /* HELD */
    techo(0, 0, 0);                                 /* NAK: the partial again */
    techo(1, 0, 0);                                 /* the result */
    tround(1, 0, 1, 3);
    techo(3, 0, 0);                                 /* MISMATCH */
    ttick(10);
    tar(1, SR_OP_AR_PROBE, 1, 1, 0, 1, 0, 3, 0);
    tround(0, 1, 2, 3);
    ttick(10);
    tar(2, SR_OP_AR_PROBE, 2, 0, 1, 2, 0, 3, 0);
    techo(0, 0, 0);
    techo(1, 9, 1);
    save(dir, "echo");
}

static void tree_seeds(const char *dir)
{
    seed_tree_echo(dir);
    seed_tree_new_round(dir);
    seed_tree_root(dir);
    seed_tree_pair(dir);
    seed_tree_forged(dir);
    seed_tree_refused(dir);
    seed_tree_mismatch(dir);
    seed_tree_misfit(dir);
}

static void one_msg(const char *dir, const char *name, uint8_t op, uint16_t count)
{
    msg(0, op, 0x0102, 3, 0xdeadbeefu, 5, 1, count, 64, 0x0badcafeu, 0x80000000u);
    /* Drop the record header: fuzz_wire takes the bare message. */
    memmove(g_buf, g_buf + FZ_REC_HDR, g_len - FZ_REC_HDR);
    g_len -= FZ_REC_HDR;
    save(dir, name);
}

static void wire_seeds(const char *dir)
{
    static const struct {
        const char *name;
        uint8_t op;
        uint16_t count;
    } ops[] = {
        {"gen_push", SR_OP_PUSH, 3},          {"gen_push_ack", SR_OP_PUSH_ACK, 0},
        {"gen_pull", SR_OP_PULL, 0},          {"gen_pull_resp", SR_OP_PULL_RESP, 2},
        {"gen_clock", SR_OP_CLOCK, 0},        {"gen_proceed", SR_OP_PROCEED, 2},
        {"gen_release", SR_OP_RELEASE, 0},    {"gen_hold", SR_OP_HOLD, 2},
        {"gen_join_ack", SR_OP_JOIN_ACK, 4},
    };
    sr_frame_addr a = {{2, 0, 0, 0, 0, 0xfe}, {2, 0, 0, 0, 0, 2}, 0x0a000002u, 0x0a0000feu,
                       40002, SR_WIRE_UDP_PORT};
    uint8_t frame[SR_FRAME_HLEN + SR_WIRE_HDR_LEN + 4 * 4];

    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        one_msg(dir, ops[i].name, ops[i].op, ops[i].count);

    /* A CLOCK in a frame, the way the dpdk transport will see it. */
    msg(0, SR_OP_CLOCK, 1, 2, 7, 0, 0, 0, 0, 0, 0);
    memcpy(frame + SR_FRAME_HLEN, g_buf + FZ_REC_HDR, SR_WIRE_HDR_LEN);
    g_len = sr_frame_pack(frame, sizeof frame, &a, SR_WIRE_HDR_LEN);
    memcpy(g_buf, frame, g_len);
    save(dir, "gen_frame_clock");
}

int main(int argc, char **argv)
{
    char dir[4096];

    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS-DIR (tests/fuzz/corpus)\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s/fuzz_pipeline", argv[1]);
    pipeline_seeds(dir);
    snprintf(dir, sizeof dir, "%s/fuzz_wire", argv[1]);
    wire_seeds(dir);
    snprintf(dir, sizeof dir, "%s/fuzz_tree", argv[1]);
    tree_seeds(dir);
    return 0;
}
