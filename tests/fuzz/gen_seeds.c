/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen_seeds.c - writes the binary seed corpora of fuzz_pipeline and (in
 * part) fuzz_wire, so they can be regenerated when the wire format or the
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
    return 0;
}
