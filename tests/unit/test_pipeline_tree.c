/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_tree.c - an aggregation tree of three pipelines (upstream.c)
 * wired by an in-memory network: a root with job 1 (4 workers: store and
 * barrier) and job 101 (its 2 members, the leaves), and two leaves with job
 * 1 serving workers 0-1 and 2-3. Workers are packets built here; every
 * packet a switch sends is delivered by the network (to a switch, which
 * processes it, or to a worker's inbox), except those a test drops.
 *
 * Covers: JOIN through the leaves; a round summed across leaves (exponent
 * max, shadow copy), also with leaves of 3 and 1 workers; a partial lost
 * up and a result lost down, recovered from a probe; mismatches between
 * and within leaves; a refusing parent, a root that does not fit; a new
 * round in a cell whose partial is up; SSP through the leaves; the job
 * spec's tree options.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job_spec.h"
#include "pipeline.h"
#include "proto/wire.h"

#define N 4
#define JOB 1
#define UPJOB 101
#define QCAP 256
#define INBOX 64

typedef struct pkt {
    sr_peer src, dst;
    size_t len;
    uint8_t b[SR_WIRE_MAX_MSG];
} pkt;

typedef struct net {
    sr_pipe *sw[3]; /* 0 root, 1 leaf 0, 2 leaf 1 */
    sr_peer addr[3];
    sr_pipe_out *out;
    pkt *q;
    unsigned qn;
    pkt *inbox[N];
    unsigned in_n[N];
    /* Drop the next packet from sw[drop_from] (0..2) whose op is drop_op. */
    int drop_from;
    uint8_t drop_op;
    unsigned dropped;
    unsigned split; /* leaf 0 serves workers 0 .. split - 1, leaf 1 the rest */
} net;

/* The switch index (1 or 2) of worker w's leaf. */
static unsigned leaf_sw(const net *n, unsigned w)
{
    return w < n->split ? 1u : 2u;
}

static sr_peer worker_addr(unsigned w)
{
    sr_peer p = {0x0a030000u | w, (uint16_t)(40000u + w)};
    return p;
}

static int peer_eq(const sr_peer *a, const sr_peer *b)
{
    return a->ip == b->ip && a->port == b->port;
}

static void leaf_params(sr_pipe_job_params *jp, const net *n, unsigned l)
{
    sr_pipe_job_params_init(jp);
    jp->n_workers = N;
    jp->elems_per_pkt = 8;
    jp->pool_slots = 4;
    jp->store_words = 0;
    jp->local_first = l ? n->split : 0;
    jp->local_n = l ? N - n->split : n->split;
    jp->up = 1;
    jp->up_peer = n->addr[0];
    jp->up_job = UPJOB;
    jp->up_member = (uint16_t)l;
}

static int setup_split(void **state, unsigned split)
{
    net *n = calloc(1, sizeof *n);
    sr_pipe_job_params jp;

    assert_non_null(n);
    n->split = split;
    n->out = calloc(1, sizeof *n->out);
    n->q = calloc(QCAP, sizeof *n->q);
    assert_non_null(n->out);
    assert_non_null(n->q);
    for (unsigned w = 0; w < N; w++)
        assert_non_null(n->inbox[w] = calloc(INBOX, sizeof *n->inbox[w]));
    for (unsigned i = 0; i < 3; i++) {
        n->addr[i] = (sr_peer){0x0a010001u + (i << 8), 48200};
        assert_int_equal(sr_pipe_create(&n->sw[i]), 0);
        sr_pipe_tick(n->sw[i], 1000);
    }
    sr_pipe_job_params_init(&jp);
    jp.n_workers = N;
    jp.elems_per_pkt = 8;
    jp.pool_slots = 4;
    jp.store_words = 64;
    assert_int_equal(sr_pipe_job_add(n->sw[0], JOB, &jp), 0);
    jp.n_workers = 2;
    jp.store_words = 0;
    assert_int_equal(sr_pipe_job_add(n->sw[0], UPJOB, &jp), 0);
    for (unsigned l = 0; l < 2; l++) {
        leaf_params(&jp, n, l);
        assert_int_equal(sr_pipe_job_add(n->sw[1 + l], JOB, &jp), 0);
    }
    n->drop_from = -1;
    *state = n;
    return 0;
}

static int setup(void **state)
{
    return setup_split(state, 2);
}

/* 3 workers under leaf 0, 1 under leaf 1. */
static int setup_3_1(void **state)
{
    return setup_split(state, 3);
}

static int teardown(void **state)
{
    net *n = *state;

    for (unsigned i = 0; i < 3; i++)
        sr_pipe_destroy(&n->sw[i]);
    for (unsigned w = 0; w < N; w++)
        free(n->inbox[w]);
    free(n->q);
    free(n->out);
    free(n);
    return 0;
}

static void enqueue(net *n, const sr_peer *src, const sr_peer *dst, const uint8_t *b, size_t len)
{
    pkt *p;

    assert_true(n->qn < QCAP);
    p = &n->q[n->qn++];
    p->src = *src;
    p->dst = *dst;
    p->len = len;
    memcpy(p->b, b, len);
}

/* What switch i sends for its last sr_pipe_process, onto the network. */
static void emit(net *n, unsigned i)
{
    for (unsigned k = 0; k < n->out->n; k++) {
        const sr_pipe_action *a = &n->out->act[k];

        for (unsigned d = 0; d < a->n_dests; d++) {
            uint8_t b[SR_WIRE_MAX_MSG];

            sr_pipe_replica_hdr(a, d, b);
            sr_pipe_payload_write(a, b + SR_WIRE_HDR_LEN);
            if (n->drop_from == (int)i && a->hdr.op == n->drop_op) {
                n->drop_from = -1;
                n->dropped++;
                continue;
            }
            enqueue(n, &n->addr[i], &a->dests[d].peer, b, SR_WIRE_HDR_LEN + a->payload_len);
        }
    }
}

/* Deliver until the network is quiet (bounded). */
static void run(net *n)
{
    for (unsigned steps = 0; n->qn && steps < 10000; steps++) {
        pkt p = n->q[0];
        unsigned i;

        memmove(n->q, n->q + 1, (n->qn - 1) * sizeof *n->q);
        n->qn--;
        for (i = 0; i < 3 && !peer_eq(&p.dst, &n->addr[i]); i++)
            ;
        if (i < 3) {
            sr_pipe_process(n->sw[i], &p.src, p.b, p.len, n->out);
            emit(n, i);
            continue;
        }
        for (i = 0; i < N; i++) {
            sr_peer wa = worker_addr(i);

            if (peer_eq(&p.dst, &wa))
                break;
        }
        assert_true(i < N);
        assert_true(n->in_n[i] < INBOX);
        n->inbox[i][n->in_n[i]++] = p;
    }
    assert_int_equal(n->qn, 0);
}

/* Worker w's message h (job and worker id set) with count values vals,
 * packed into b; returns its length. */
static size_t pack_w(uint8_t *b, unsigned w, sr_hdr h, const int32_t *vals)
{
    h.version = SR_WIRE_VERSION;
    h.job = JOB;
    h.worker = (uint16_t)w;
    sr_hdr_pack(b, &h);
    for (unsigned i = 0; i < h.count; i++)
        sr_put_be32(b + SR_WIRE_HDR_LEN + 4u * i, (uint32_t)vals[i]);
    return SR_WIRE_HDR_LEN + 4u * h.count;
}

/* Worker w sends h (worker id set) with count values vals to its leaf. */
static void send_w(net *n, unsigned w, sr_hdr h, const int32_t *vals)
{
    uint8_t b[SR_WIRE_MAX_MSG];
    sr_peer src = worker_addr(w);
    size_t len = pack_w(b, w, h, vals);

    enqueue(n, &src, &n->addr[leaf_sw(n, w)], b, len);
}

/* Worker w's inbox: the number of messages of op, the last one parsed. */
static unsigned got(net *n, unsigned w, uint8_t op, sr_hdr *last, const uint8_t **payload)
{
    unsigned k = 0;

    for (unsigned i = 0; i < n->in_n[w]; i++) {
        sr_hdr h;
        const uint8_t *pl;

        assert_int_equal(sr_msg_parse(n->inbox[w][i].b, n->inbox[w][i].len, &h, &pl),
                         SR_PARSE_OK);
        assert_int_equal(h.worker, w);
        assert_true(peer_eq(&n->inbox[w][i].src, &n->addr[leaf_sw(n, w)]));
        if (h.op != op)
            continue;
        k++;
        if (last)
            *last = h;
        if (payload)
            *payload = n->inbox[w][i].b + SR_WIRE_HDR_LEN;
    }
    return k;
}

static void clear_inboxes(net *n)
{
    memset(n->in_n, 0, sizeof n->in_n);
}

static sr_pipe_job_counters cnt(net *n, unsigned sw, uint16_t job)
{
    sr_pipe_job_counters c;

    assert_int_equal(sr_pipe_job_counters_get(n->sw[sw], job, &c), 0);
    return c;
}

static void join_all(net *n)
{
    uint8_t rq[4 * SR_JOIN_REQ_WORDS];
    int32_t words[SR_JOIN_REQ_WORDS];

    sr_join_req_pack(rq, &(sr_join_req){.token = 0, .cookie = 0});
    for (unsigned i = 0; i < SR_JOIN_REQ_WORDS; i++)
        words[i] = (int32_t)sr_get_be32(rq + 4 * i);
    for (unsigned w = 0; w < N; w++) {
        sr_hdr h = {.op = SR_OP_JOIN, .seq = 500 + w, .aux = 77, .count = SR_JOIN_REQ_WORDS};

        send_w(n, w, h, words);
    }
    run(n);
    for (unsigned w = 0; w < N; w++) {
        sr_hdr h;
        const uint8_t *pl;
        sr_join_params jp;

        assert_int_equal(got(n, w, SR_OP_JOIN_ACK, &h, &pl), 1);
        sr_join_params_unpack(pl, &jp);
        assert_int_equal(jp.n_workers, N); /* the tree's total: B counts every worker */
        assert_int_equal(jp.elems_per_pkt, 8);
        assert_int_equal(jp.store_capacity, 64); /* the root's store */
        assert_int_equal(h.aux, 77);
    }
    clear_inboxes(n);
}

static sr_hdr ar(uint16_t slot, uint8_t v, uint32_t seq, uint16_t count, int8_t exp, int8_t nexp)
{
    sr_hdr h = {.op = SR_OP_AR_DATA, .slot = slot, .shadow = v, .seq = seq, .count = count,
                .exp = exp, .next_exp = nexp, .offset = 0, .aux = count};
    return h;
}

static void vals_of(unsigned w, int32_t *v)
{
    for (unsigned i = 0; i < 8; i++)
        v[i] = (int32_t)((w + 1) * 1000 + i) * (w & 1 ? -1 : 1);
}

/* Every worker has exactly one AR_RESULT equal to the sum of all four. */
static void expect_results(net *n, int8_t nexp)
{
    int32_t sum[8] = {0}, v[8];

    for (unsigned w = 0; w < N; w++) {
        vals_of(w, v);
        for (unsigned i = 0; i < 8; i++)
            sum[i] += v[i];
    }
    for (unsigned w = 0; w < N; w++) {
        sr_hdr h;
        const uint8_t *pl;

        assert_int_equal(got(n, w, SR_OP_AR_RESULT, &h, &pl), 1);
        assert_int_equal(h.count, 8);
        assert_int_equal(h.next_exp, nexp);
        for (unsigned i = 0; i < 8; i++)
            assert_int_equal((int32_t)sr_get_be32(pl + 4 * i), sum[i]);
    }
}

/* ---- tests ------------------------------------------------------------------ */

static void test_join(void **state)
{
    net *n = *state;
    sr_pipe_job_info info;

    join_all(n);
    assert_int_equal(sr_pipe_job_info_get(n->sw[0], JOB, &info), 0);
    assert_int_equal(info.n_bound, N); /* every worker, at its leaf's address */
    assert_int_equal(sr_pipe_job_info_get(n->sw[0], UPJOB, &info), 0);
    assert_int_equal(info.n_bound, 2); /* both leaves */
    assert_int_equal(info.nonce, 77);
    assert_int_equal(cnt(n, 1, JOB).up_relayed, 2);
    assert_int_equal(cnt(n, 1, JOB).down_relayed, 2);
    /* A LEAVE goes up only with the binding's token, a repeat too. */
    for (unsigned k = 0; k < 4; k++) {
        send_w(n, 0, (sr_hdr){.op = SR_OP_LEAVE, .seq = k % 2 ? 500 : 9}, NULL);
        run(n);
        assert_int_equal(cnt(n, 1, JOB).up_relayed, 2 + (k + 1) / 2);
    }
}

static void test_not_member(void **state)
{
    net *n = *state;
    sr_hdr h = {.op = SR_OP_JOIN, .seq = 9, .aux = 77};
    uint8_t b[SR_WIRE_HDR_LEN];
    sr_peer w2 = worker_addr(2);
    sr_hdr e;

    /* Worker 2 belongs to leaf 1: leaf 0 refuses it itself. */
    h.version = SR_WIRE_VERSION;
    h.job = JOB;
    h.worker = 2;
    sr_hdr_pack(b, &h);
    sr_pipe_process(n->sw[1], &w2, b, sizeof b, n->out);
    assert_int_equal(n->out->n, 1);
    assert_int_equal(n->out->act[0].hdr.op, SR_OP_ERROR);
    assert_int_equal(n->out->act[0].hdr.status, SR_ST_NOT_MEMBER);
    /* An answer from anyone but the parent is dropped. */
    e = h;
    e.op = SR_OP_AR_RESULT;
    e.job = UPJOB;
    e.worker = 0;
    sr_hdr_pack(b, &e);
    sr_pipe_process(n->sw[1], &w2, b, sizeof b, n->out);
    assert_int_equal(n->out->n, 0);
}

static void test_round(void **state)
{
    net *n = *state;
    int32_t v[8];
    sr_hdr h;
    sr_pipe_job_counters up;

    join_all(n);
    up = cnt(n, 0, UPJOB);
    for (unsigned w = 0; w < N; w++) {
        vals_of(w, v);
        send_w(n, w, ar(0, 0, 1, 8, 3, (int8_t)(w == 3 ? 9 : (int8_t)w)), v);
    }
    run(n);
    expect_results(n, 9); /* next_exp: max over both leaves */
    assert_int_equal(cnt(n, 0, UPJOB).results, 1);
    assert_int_equal(cnt(n, 1, JOB).up_partials, 1);
    assert_int_equal(cnt(n, 2, JOB).up_results, 1);
    /* ~1x the payload each way on a leaf-parent link: one partial, one result. */
    assert_int_equal(cnt(n, 0, UPJOB).rx - up.rx, 2);
    assert_int_equal(cnt(n, 0, UPJOB).tx - up.tx, 2);
    /* A worker that lost its result: the leaf's shadow copy, nothing up. */
    clear_inboxes(n);
    vals_of(1, v);
    send_w(n, 1, ar(0, 0, 1, 8, 3, 1), v);
    run(n);
    assert_int_equal(got(n, 1, SR_OP_AR_RESULT, &h, NULL), 1);
    assert_int_equal(h.next_exp, 9);
    assert_int_equal(cnt(n, 1, JOB).shadow_replies, 1);
    assert_int_equal(cnt(n, 0, UPJOB).rx - up.rx, 2); /* still the two partials */
}

/* Leaves of 3 and 1 workers: each still sends one partial per round up and
 * gets one result down, whatever the number of workers under it. */
static void test_round_uneven(void **state)
{
    net *n = *state;
    int32_t v[8];
    sr_pipe_job_counters up, l0, l1;

    join_all(n);
    up = cnt(n, 0, UPJOB);
    l0 = cnt(n, 1, JOB);
    l1 = cnt(n, 2, JOB);
    for (unsigned r = 0; r < 3; r++) {
        for (unsigned w = 0; w < N; w++) {
            vals_of(w, v);
            send_w(n, w, ar((uint16_t)r, 0, 1, 8, 3, 4), v);
        }
        run(n);
    }
    assert_int_equal(cnt(n, 0, UPJOB).rx - up.rx, 3 * 2); /* one partial per leaf and round */
    assert_int_equal(cnt(n, 0, UPJOB).tx - up.tx, 3 * 2); /* one result per leaf and round */
    assert_int_equal(cnt(n, 1, JOB).up_partials - l0.up_partials, 3);
    assert_int_equal(cnt(n, 2, JOB).up_partials - l1.up_partials, 3);
    assert_int_equal(cnt(n, 1, JOB).tx - l0.tx, 3 * (1 + 3)); /* up, and to its 3 workers */
    assert_int_equal(cnt(n, 2, JOB).tx - l1.tx, 3 * (1 + 1));
    for (unsigned w = 0; w < N; w++)
        assert_int_equal(got(n, w, SR_OP_AR_RESULT, NULL, NULL), 3);
}

static void probe(net *n, unsigned w, uint16_t slot, uint8_t v, uint32_t seq)
{
    sr_hdr h = ar(slot, v, seq, 0, 3, 0);

    h.op = SR_OP_AR_PROBE;
    h.aux = 8;
    send_w(n, w, h, NULL);
}

static void tick(net *n, uint64_t ms)
{
    for (unsigned i = 0; i < 3; i++)
        sr_pipe_tick(n->sw[i], ms);
}

static void test_lost_partial_and_result(void **state)
{
    net *n = *state;
    int32_t v[8];

    join_all(n);
    /* Leaf 0's partial is lost on the way up. */
    n->drop_from = 1;
    n->drop_op = SR_OP_AR_DATA;
    for (unsigned w = 0; w < N; w++) {
        vals_of(w, v);
        send_w(n, w, ar(0, 0, 1, 8, 3, 2), v);
    }
    run(n);
    assert_int_equal(n->dropped, 1);
    assert_int_equal(got(n, 0, SR_OP_AR_RESULT, NULL, NULL), 0);
    /* Worker 0's timer: its probe is answered HELD (leaf 0 holds its
     * contribution), and the leaf asks the root, which says NAK: the
     * partial goes again and completes the round for everyone. */
    tick(n, 2000);
    probe(n, 0, 0, 0, 1);
    run(n);
    assert_int_equal(got(n, 0, SR_OP_AR_HELD, NULL, NULL), 1);
    expect_results(n, 2);
    assert_int_equal(cnt(n, 0, UPJOB).naks, 1);
    assert_int_equal(cnt(n, 1, JOB).up_resends, 1);

    /* Round 2 on slot 1: the root's result to leaf 1 is lost. */
    clear_inboxes(n);
    n->drop_from = 0;
    n->drop_op = SR_OP_AR_RESULT;
    for (unsigned w = 0; w < N; w++) {
        vals_of(w, v);
        send_w(n, w, ar(1, 0, 1, 8, 3, 2), v);
    }
    run(n);
    assert_int_equal(n->dropped, 2);
    /* Which leaf lost it: the one whose workers have no result. */
    unsigned lost = got(n, 0, SR_OP_AR_RESULT, NULL, NULL) ? 1 : 0;
    assert_int_equal(got(n, 2 * lost, SR_OP_AR_RESULT, NULL, NULL), 0);
    tick(n, 4000);
    probe(n, 2 * lost + 1, 1, 0, 1);
    run(n);
    /* NAK (the root's round is complete), the partial again, the root's
     * shadow copy, and the leaf's multicast: each of its workers has it once. */
    for (unsigned w = 2 * lost; w < 2 * lost + 2; w++)
        assert_int_equal(got(n, w, SR_OP_AR_RESULT, NULL, NULL), 1);
    assert_int_equal(cnt(n, 0, UPJOB).shadow_replies, 1);
}

/* The root's job of the leaves wants another admission token: it refuses
 * the leaves' JOIN, and the workers learn DENIED from their next probe
 * instead of waiting for their deadline. */
static void test_parent_refuses(void **state)
{
    net *n = *state;
    sr_pipe_job_params jp;
    int32_t v[8];
    sr_hdr e;

    assert_int_equal(sr_pipe_job_remove(n->sw[0], UPJOB), 0);
    sr_pipe_job_params_init(&jp);
    jp.n_workers = 2;
    jp.elems_per_pkt = 8;
    jp.pool_slots = 4;
    jp.store_words = 0;
    jp.token = 0x5eed;
    assert_int_equal(sr_pipe_job_add(n->sw[0], UPJOB, &jp), 0);
    join_all(n); /* the workers' own JOINs: the root's job 1 takes any */
    for (unsigned w = 0; w < N; w++) {
        vals_of(w, v);
        send_w(n, w, ar(0, 0, 1, 8, 3, 2), v);
    }
    run(n);
    tick(n, 2000);
    probe(n, 0, 0, 0, 1);
    run(n);
    assert_int_equal(got(n, 0, SR_OP_ERROR, &e, NULL), 1);
    assert_int_equal(e.status, SR_ST_DENIED);
    assert_int_equal(got(n, 0, SR_OP_AR_RESULT, NULL, NULL), 0);
}

/* The root's job of the workers has other packets than the leaves': each
 * worker's JOIN is refused (BAD_COUNT) by its leaf, not left to time out. */
static void test_root_misfit(void **state)
{
    net *n = *state;
    sr_pipe_job_params jp;
    uint8_t rq[4 * SR_JOIN_REQ_WORDS];
    int32_t words[SR_JOIN_REQ_WORDS];
    sr_hdr e;

    assert_int_equal(sr_pipe_job_remove(n->sw[0], JOB), 0);
    sr_pipe_job_params_init(&jp);
    jp.n_workers = N;
    jp.elems_per_pkt = 16;
    jp.pool_slots = 4;
    jp.store_words = 64;
    assert_int_equal(sr_pipe_job_add(n->sw[0], JOB, &jp), 0);
    sr_join_req_pack(rq, &(sr_join_req){.token = 0, .cookie = 0});
    for (unsigned i = 0; i < SR_JOIN_REQ_WORDS; i++)
        words[i] = (int32_t)sr_get_be32(rq + 4 * i);
    for (unsigned w = 0; w < N; w++) {
        sr_hdr h = {.op = SR_OP_JOIN, .seq = 500 + w, .aux = 77, .count = SR_JOIN_REQ_WORDS};

        send_w(n, w, h, words);
    }
    run(n);
    for (unsigned w = 0; w < N; w++) {
        assert_int_equal(got(n, w, SR_OP_JOIN_ACK, NULL, NULL), 0);
        assert_int_equal(got(n, w, SR_OP_ERROR, &e, NULL), 1);
        assert_int_equal(e.status, SR_ST_BAD_COUNT);
        assert_int_equal(e.aux, SR_OP_JOIN);
    }
}

/* Every worker probes slot 0 twice (its timer, then its backoff): each
 * learns MISMATCH and none gets a result. */
static void all_learn_mismatch(net *n)
{
    for (unsigned t = 2000; t <= 4000; t += 2000) {
        tick(n, t);
        for (unsigned w = 0; w < N; w++)
            probe(n, w, 0, 0, 1);
        run(n);
    }
    for (unsigned w = 0; w < N; w++) {
        sr_hdr e;

        assert_true(got(n, w, SR_OP_ERROR, &e, NULL) >= 1);
        assert_int_equal(e.status, SR_ST_MISMATCH);
        assert_int_equal(got(n, w, SR_OP_AR_RESULT, NULL, NULL), 0);
    }
}

/* Leaf 0's workers send 8 values, leaf 1's 7: the root poisons the round,
 * and every worker learns MISMATCH from its resend or probe. */
static void test_mismatch_between_leaves(void **state)
{
    net *n = *state;
    int32_t v[8];

    join_all(n);
    for (unsigned w = 0; w < N; w++) {
        vals_of(w, v);
        send_w(n, w, ar(0, 0, 1, w < 2 ? 8 : 7, 3, 2), v);
    }
    run(n);
    for (unsigned w = 0; w < N; w++)
        assert_int_equal(got(n, w, SR_OP_AR_RESULT, NULL, NULL), 0);
    assert_int_equal(cnt(n, 0, UPJOB).mismatches, 1);
    all_learn_mismatch(n);
}

/* Worker 1 disagrees with worker 0 inside leaf 0: leaf 0's marker poisons
 * the root's round, and leaf 1's workers learn MISMATCH too. */
static void test_mismatch_within_leaf(void **state)
{
    net *n = *state;
    int32_t v[8];

    join_all(n);
    for (unsigned w = 0; w < N; w++) {
        vals_of(w, v);
        send_w(n, w, ar(0, 0, 1, w == 1 ? 7 : 8, 3, 2), v);
    }
    run(n);
    assert_int_equal(cnt(n, 1, JOB).mismatches, 1);
    all_learn_mismatch(n);
}

/* h (worker id w, count values vals) from worker w straight to its leaf:
 * what the leaf sends is left in n->out, not put on the network. */
static void direct(net *n, unsigned w, sr_hdr h, const int32_t *vals)
{
    uint8_t b[SR_WIRE_MAX_MSG];
    sr_peer src = worker_addr(w);
    size_t len = pack_w(b, w, h, vals);

    sr_pipe_process(n->sw[leaf_sw(n, w)], &src, b, len, n->out);
}

/* The parent's AR_NAK to leaf 0 (member 0) about (slot 0, version 0, seq). */
static void nak_leaf0(net *n, uint32_t seq)
{
    sr_hdr h = ar(0, 0, seq, 0, 3, 0);
    uint8_t b[SR_WIRE_HDR_LEN];

    h.version = SR_WIRE_VERSION;
    h.op = SR_OP_AR_NAK;
    h.job = UPJOB;
    h.worker = 0;
    h.aux = 8;
    sr_hdr_pack(b, &h);
    sr_pipe_process(n->sw[1], &n->addr[0], b, sizeof b, n->out);
}

/* Leaf 0's workers complete a round (its partial lost on the way up), move
 * on to the slot's other version without its result and open a new round
 * in the first one: the parent's answers about the old round, or naming
 * the new one, no longer match a cell awaiting them. Found by fuzz_tree:
 * the parent's NAK sent the open round's partial sums up, and once the
 * new round was poisoned, its count (SR_WIRE_COUNT_POISON words) overran
 * the action's payload and the cell. */
static void test_new_round_not_awaited(void **state)
{
    net *n = *state;
    int32_t v[8];
    uint64_t dropped;

    join_all(n);
    for (unsigned w = 0; w < 2; w++) {
        vals_of(w, v);
        direct(n, w, ar(0, 0, 1, 8, 3, 2), v);
    }
    assert_int_equal(n->out->n, 1); /* the partial up, lost */
    assert_int_equal(n->out->act[0].hdr.op, SR_OP_AR_DATA);
    for (unsigned w = 0; w < 2; w++) {
        vals_of(w, v);
        direct(n, w, ar(0, 1, 2, 8, 3, 2), v);
    }
    vals_of(0, v);
    direct(n, 0, ar(0, 0, 3, 8, 3, 2), v); /* a new round, open */
    assert_int_equal(n->out->n, 0);
    dropped = cnt(n, 1, JOB).up_dropped;
    nak_leaf0(n, 3);
    assert_int_equal(n->out->n, 0);
    assert_int_equal(cnt(n, 1, JOB).up_dropped, dropped + 1);
    vals_of(1, v);
    direct(n, 1, ar(0, 0, 3, 7, 3, 2), v); /* poisons it */
    assert_int_equal(n->out->act[0].hdr.op, SR_OP_ERROR);
    assert_int_equal(n->out->act[0].hdr.status, SR_ST_MISMATCH);
    nak_leaf0(n, 3);
    assert_int_equal(n->out->n, 0);
    assert_int_equal(cnt(n, 1, JOB).up_dropped, dropped + 2);
}

static void test_ssp(void **state)
{
    net *n = *state;
    int32_t one[1] = {5};
    sr_hdr h;
    const uint8_t *pl;

    join_all(n);
    /* Each worker pushes 5 into word 0, twice the same push: applied once. */
    for (unsigned r = 0; r < 2; r++)
        for (unsigned w = 0; w < N; w++)
            send_w(n, w, (sr_hdr){.op = SR_OP_PUSH, .seq = 1, .offset = 0, .count = 1}, one);
    run(n);
    for (unsigned w = 0; w < N; w++)
        assert_int_equal(got(n, w, SR_OP_PUSH_ACK, NULL, NULL), 2);
    assert_int_equal(cnt(n, 0, JOB).pushes, N);
    assert_int_equal(cnt(n, 0, JOB).push_dups, N);
    clear_inboxes(n);
    send_w(n, 3, (sr_hdr){.op = SR_OP_PULL, .seq = 1, .offset = 0, .aux = 1}, NULL);
    run(n);
    assert_int_equal(got(n, 3, SR_OP_PULL_RESP, &h, &pl), 1);
    assert_int_equal(sr_get_be32(pl), 4 * 5);
    /* BSP: clock 0 holds the first three; the fourth releases them all. */
    clear_inboxes(n);
    for (unsigned w = 0; w < N; w++)
        send_w(n, w, (sr_hdr){.op = SR_OP_CLOCK, .seq = 0}, NULL);
    run(n);
    for (unsigned w = 0; w < N; w++)
        assert_int_equal(got(n, w, SR_OP_RELEASE, &h, NULL), 1);
    assert_int_equal(h.aux, 0); /* low = 0 */
    assert_int_equal(cnt(n, 0, JOB).releases, 1);
    /* A worker that is not bound at the leaf is not relayed. */
    sr_hdr c = {.version = SR_WIRE_VERSION, .op = SR_OP_CLOCK, .job = JOB, .worker = 0, .seq = 1};
    uint8_t b[SR_WIRE_HDR_LEN];
    sr_peer spoof = worker_addr(1);

    sr_hdr_pack(b, &c);
    sr_pipe_process(n->sw[1], &spoof, b, sizeof b, n->out);
    assert_int_equal(n->out->n, 0);
    assert_int_equal(cnt(n, 1, JOB).dropped_unbound, 1);
}

static void test_spec(void **state)
{
    char why[SW_JOB_SPEC_WHY_MAX];
    sr_pipe_job_params jp;
    uint16_t id;

    (void)state;
    assert_int_equal(sw_job_spec_parse("1:4:256:64,store=0,local=2-3,up=10.0.0.1:48200,"
                                       "upjob=101,member=1",
                                       NULL, &id, &jp, why, sizeof why),
                     0);
    assert_int_equal(jp.local_first, 2);
    assert_int_equal(jp.local_n, 2);
    assert_int_equal(jp.up, 1);
    assert_int_equal(jp.up_peer.ip, 0x0a000001u);
    assert_int_equal(jp.up_peer.port, 48200);
    assert_int_equal(jp.up_job, 101);
    assert_int_equal(jp.up_member, 1);
    static const struct {
        const char *spec, *why;
    } bad[] = {
        {"1:4,local=3-2", "local '3-2' in '1:4,local=3-2' is not A-B, worker ids with A <= B <= 63"},
        {"1:4,local=2-5", "'1:4,local=2-5': local workers must be a range within the job's workers"},
        {"1:4,up=10.0.0.1", "up '10.0.0.1' in '1:4,up=10.0.0.1' is not ADDR:PORT (IPv4, port 1..65535)"},
        {"1:4,up=host:1,upjob=2,member=0",
         "up 'host:1' in '1:4,up=host:1,upjob=2,member=0' is not ADDR:PORT (IPv4, port 1..65535)"},
        {"1:4,up=10.0.0.1:5", "a leaf ('1:4,up=10.0.0.1:5') needs upjob=J and member=K with up="},
        {"1:4,member=1", "upjob= and member= in '1:4,member=1' need up=ADDR:PORT"},
        {"1:4,up=10.0.0.1:5,upjob=1,member=0",
         "upjob in '1:4,up=10.0.0.1:5,upjob=1,member=0' must differ from the job's id (the root "
         "holds both)"},
        {"1:4,up=10.0.0.1:5,upjob=2,member=64",
         "member '64' in '1:4,up=10.0.0.1:5,upjob=2,member=64' is not a member id in 0..63"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sw_job_spec_parse(bad[i].spec, NULL, &id, &jp, why, sizeof why), -22);
        assert_string_equal(why, bad[i].why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_join, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_uneven, setup_3_1, teardown),
        cmocka_unit_test_setup_teardown(test_lost_partial_and_result, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parent_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_root_misfit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mismatch_between_leaves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mismatch_within_leaf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_round_not_awaited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp, setup, teardown),
        cmocka_unit_test(test_spec),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
