/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_sim.c - the streaming allreduce and the SSP loop (push,
 * clock, pull) between simulated workers and the software switch's
 * pipeline, over a lossy, reordering network with a fixed seed. The
 * packet-by-packet checks are in test_pipeline.c and test_pipeline_ssp.c;
 * the fixture and helpers are shared through pipeline_helpers.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline.h"
#include "pipeline_helpers.h"
#include "proto/wire.h"

/* ---- the whole protocol over a lossy network ---------------------------------- */

/* N workers stream CHUNKS packets through S slots (chunk k: slot k % S,
 * version (k / S) & 1, as a worker's window does) to the pipeline over a
 * network that loses 20% of packets both ways, duplicates 5% of results and
 * reorders: each step delivers one of the 6 oldest packets, and no packet is
 * overtaken more than 6 times. A copy must be overtaken at least 8 times
 * (3 later packets of its worker, 2 results to it, and the 3 others'
 * contributions to the third round after it) before it can arrive three
 * rounds late, beyond what the pipeline's stale-copy tests cover (see
 * pipeline.c). Whenever the network is quiet, and now and then early, a
 * worker's timer expires for what is outstanding: it probes (and resends
 * in full on AR_NAK) or resends in full at once, at random, so that both
 * kinds of recovery meet. Every result a worker receives, shadow copies
 * and late duplicates included, must carry its chunk's exact sums, and
 * each chunk must complete exactly once. */
enum { SIM_N = 4, SIM_S = 3, SIM_E = 4, SIM_CHUNKS = 90, SIM_Q = 4096, SIM_JOB = 9 };

typedef struct sim_pkt {
    uint8_t to_switch, skips;
    uint16_t w, len;
    uint8_t b[SR_WIRE_HDR_LEN + 4 * SIM_E];
} sim_pkt;

/* The network: packets in flight, oldest first, and the seeded PRNG of
 * every random choice. */
typedef struct net {
    sim_pkt q[SIM_Q];
    unsigned nq;
    uint64_t rng;
} net;

typedef struct sim {
    net n;
    unsigned next[SIM_N][SIM_S]; /* chunk outstanding per worker and slot */
    uint8_t have[SIM_N][SIM_CHUNKS];
} sim;

static uint32_t net_rand(net *s, uint32_t mod)
{
    uint64_t z = (s->rng += UINT64_C(0x9e3779b97f4a7c15)); /* splitmix64 */

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return (uint32_t)((z ^ (z >> 31)) % mod);
}

static uint32_t sim_val(unsigned w, unsigned k, unsigned i)
{
    return (w + 1u) * 2654435761u ^ k * 40503u ^ i * 977u;
}

static void net_push(net *s, int to_switch, unsigned w, const uint8_t *b, size_t len)
{
    sim_pkt *p = &s->q[s->nq++];

    assert_true(s->nq <= SIM_Q);
    assert_true(len <= sizeof p->b);
    p->to_switch = (uint8_t)to_switch;
    p->skips = 0;
    p->w = (uint16_t)w;
    p->len = (uint16_t)len;
    memcpy(p->b, b, len);
}

/* Worker w's contribution of chunk k, or its header-only probe. */
static void sim_send(sim *s, unsigned w, unsigned k, int probe)
{
    uint8_t b[SR_WIRE_HDR_LEN + 4 * SIM_E];
    sr_hdr h = ar_hdr(SIM_JOB, (uint16_t)(k % SIM_S), (uint8_t)((k / SIM_S) & 1u), 7,
                      k * SIM_E, SIM_E);

    h.worker = (uint16_t)w;
    h.next_exp = (int8_t)(k % 5u + w);
    if (probe) {
        h.op = SR_OP_AR_PROBE;
        h.count = 0;
    }
    sr_hdr_pack(b, &h);
    unsigned n = probe ? 0u : SIM_E; /* h.count, in a form GCC -O3 can bound */
    for (unsigned i = 0; i < n; i++)
        sr_put_be32(b + SR_WIRE_HDR_LEN + 4u * i, sim_val(w, k, i));
    net_push(&s->n, 1, w, b, SR_WIRE_HDR_LEN + 4u * n);
}

/* A timer of worker w expired for chunk k: a probe or, as a worker of the
 * old protocol would, the whole packet again (both must be safe). */
static void sim_expire(sim *s, unsigned w, unsigned k)
{
    sim_send(s, w, k, net_rand(&s->n, 2) == 0);
}

static void sim_at_switch(fx *f, sim *s, const sim_pkt *pk)
{
    sr_peer src = peer_of(SIM_JOB, pk->w);

    sr_pipe_process(f->p, &src, pk->b, pk->len, f->out);
    for (unsigned i = 0; i < f->out->n; i++) {
        const sr_pipe_action *a = &f->out->act[i];

        for (unsigned k = 0; k < a->n_dests; k++) {
            sr_peer want = peer_of(SIM_JOB, a->dests[k].worker);
            size_t len = SR_WIRE_HDR_LEN + a->payload_len;

            expect_peer(&a->dests[k].peer, &want);
            sr_pipe_replica_hdr(a, k, f->rep);
            memcpy(f->rep + SR_WIRE_HDR_LEN, a->payload, a->payload_len);
            net_push(&s->n, 0, a->dests[k].worker, f->rep, len);
            if (net_rand(&s->n, 100) < 5)
                net_push(&s->n, 0, a->dests[k].worker, f->rep, len);
        }
    }
}

static void sim_at_worker(sim *s, const sim_pkt *pk)
{
    const uint8_t *pl;
    sr_hdr h;
    unsigned k, w = pk->w;

    assert_int_equal(sr_msg_parse(pk->b, pk->len, &h, &pl), SR_PARSE_OK);
    assert_int_equal(h.worker, w);
    k = h.offset / SIM_E;
    assert_true(k < SIM_CHUNKS);
    assert_int_equal(h.slot, k % SIM_S);
    assert_int_equal(h.shadow, (k / SIM_S) & 1u);
    assert_true(k <= s->next[w][h.slot]); /* never a chunk it has not sent */
    if (h.op == SR_OP_AR_HELD || h.op == SR_OP_AR_NAK) {
        assert_int_equal(h.count, 0);
        /* Not held: resend it in full, if it is still outstanding. */
        if (h.op == SR_OP_AR_NAK && k == s->next[w][h.slot])
            sim_send(s, w, k, 0);
        return;
    }
    assert_int_equal(h.op, SR_OP_AR_RESULT);
    assert_int_equal(h.next_exp, (int)(k % 5u + SIM_N - 1));
    for (unsigned i = 0; i < SIM_E; i++) {
        uint32_t sum = 0;

        for (unsigned v = 0; v < SIM_N; v++)
            sum += sim_val(v, k, i);
        assert_int_equal(sr_get_be32(pl + 4u * i), sum);
    }
    if (k != s->next[w][h.slot])
        return; /* a late duplicate */
    s->have[w][k] = 1;
    s->next[w][h.slot] += SIM_S;
    if (s->next[w][h.slot] < SIM_CHUNKS)
        sim_send(s, w, s->next[w][h.slot], 0);
}

/* Take the oldest packet overtaken 6 times, else one of the 6 oldest. */
static sim_pkt net_pick(net *s)
{
    unsigned win = s->nq < 6 ? s->nq : 6, i = 0;
    sim_pkt pk;

    while (i < win && s->q[i].skips < 6)
        i++;
    if (i == win)
        i = net_rand(s, win);
    for (unsigned k = 0; k < i; k++)
        s->q[k].skips++;
    pk = s->q[i];
    memmove(&s->q[i], &s->q[i + 1], (s->nq - i - 1) * sizeof s->q[0]);
    s->nq--;
    return pk;
}

static void test_lossy_network_sim(void **state)
{
    fx *f = *state;
    sim *s = f->extra = calloc(1, sizeof(sim));
    unsigned timeouts = 0;
    int done = 0;

    assert_non_null(s);
    add_joined(f, SIM_JOB, SIM_N, SIM_E, SIM_S);
    s->n.rng = 12345;
    for (unsigned w = 0; w < SIM_N; w++)
        for (unsigned sl = 0; sl < SIM_S; sl++) {
            s->next[w][sl] = sl;
            sim_send(s, w, sl, 0);
        }
    for (unsigned iter = 0; iter < 1000000 && !done; iter++) {
        sim_pkt pk;

        if (s->n.nq == 0) { /* quiet: every worker retransmits what it waits for */
            done = 1;
            timeouts++;
            for (unsigned w = 0; w < SIM_N; w++)
                for (unsigned sl = 0; sl < SIM_S; sl++)
                    if (s->next[w][sl] < SIM_CHUNKS) {
                        sim_expire(s, w, s->next[w][sl]);
                        done = 0;
                    }
            continue;
        }
        if (net_rand(&s->n, 100) < 3) { /* a spurious timeout */
            unsigned w = net_rand(&s->n, SIM_N), sl = net_rand(&s->n, SIM_S);

            if (s->next[w][sl] < SIM_CHUNKS)
                sim_expire(s, w, s->next[w][sl]);
        }
        pk = net_pick(&s->n);
        if (net_rand(&s->n, 100) < 20)
            continue;
        if (pk.to_switch)
            sim_at_switch(f, s, &pk);
        else
            sim_at_worker(s, &pk);
    }
    assert_true(done);
    for (unsigned w = 0; w < SIM_N; w++)
        for (unsigned k = 0; k < SIM_CHUNKS; k++)
            assert_int_equal(s->have[w][k], 1);
    assert_int_equal(jc(f, SIM_JOB).results, SIM_CHUNKS);
    assert_int_equal(jc(f, SIM_JOB).mismatches, 0);
    /* The network really exercised every recovery path. */
    assert_true(timeouts > 10);
    assert_true(jc(f, SIM_JOB).shadow_replies > 0);
    assert_true(jc(f, SIM_JOB).dup_dropped > 0);
    assert_true(jc(f, SIM_JOB).stale_dropped > 0);
    assert_true(jc(f, SIM_JOB).held > jc(f, SIM_JOB).dup_dropped); /* probes held too */
    assert_true(jc(f, SIM_JOB).naks > 0);
}

/* ---- SSP: push, clock and pull over the same network ------------------------- */

/* N workers run CLOCKS iterations c of the SSP loop, as the library does:
 * push 1 to their own counter word (row 0, word w), push E values to data
 * row 1 + c % 2, CLOCK(c) (held until PROCEED, or a RELEASE with
 * c - low <= the s of its HOLD), then pull row 0. Each request is
 * retransmitted, same number, until its answer comes; answers that match no
 * outstanding request (late duplicates) are ignored. Meanwhile the policy is
 * changed at random moments through sr_pipe_set_policy (BSP, SSP(1),
 * SSP(3), ASP). The network loses 10% of packets both ways, duplicates 5% of
 * answers and reorders as in the allreduce simulation. Checked:
 * - every answer for clock c, to any worker, carries the same policy;
 * - when a worker goes on past c, every worker has sent CLOCK(c - s) (the
 *   barrier's bound), and its next pull counts, for every worker v, at
 *   least c - s + 1 and at most all of v's pushes (the SSP read guarantee);
 * - in the end the store holds the exact modular sums of every push. */
enum { SS_N = 4, SS_E = 4, SS_CLOCKS = 60, SS_RING = 16, SS_JOB = 11 };
enum { SS_PUSH_CNT, SS_PUSH_DATA, SS_CLOCK, SS_PULL, SS_DONE };

typedef struct ss_worker {
    uint32_t c;        /* the iteration it is in */
    int phase;         /* SS_PUSH_CNT .. SS_DONE */
    uint32_t push_no;  /* number of the last push (outstanding while pushing) */
    uint32_t pull_no;
    int held;
    uint32_t held_s, go_s; /* s of the HOLD; s it went on with */
    int32_t clock_sent;    /* largest clock whose CLOCK it has sent, -1 before */
    uint32_t pushes;       /* counter pushes made */
    uint32_t data[SS_E];   /* values of the outstanding data push */
} ss_worker;

typedef struct ssim {
    net n;
    ss_worker w[SS_N];
    uint32_t ref[3 * SS_E]; /* the store as it must end */
    int8_t pol_mode[SS_CLOCKS];
    uint32_t pol_s[SS_CLOCKS];
    unsigned modes_seen; /* bit per mode seen in answers */
    unsigned changes;    /* successful policy changes */
} ssim;

/* (Re)send worker w's outstanding request. */
static void ss_send(ssim *s, unsigned w)
{
    const ss_worker *k = &s->w[w];
    uint8_t b[SR_WIRE_HDR_LEN + 4 * SS_E];
    sr_hdr h = mk(SR_OP_PUSH, SS_JOB, (uint16_t)w, k->push_no, k->c);

    switch (k->phase) {
    case SS_PUSH_CNT:
        h.offset = w;
        h.count = 1;
        sr_put_be32(b + SR_WIRE_HDR_LEN, 1);
        break;
    case SS_PUSH_DATA:
        h.offset = (1 + k->c % 2) * SS_E;
        h.count = SS_E;
        for (unsigned i = 0; i < SS_E; i++)
            sr_put_be32(b + SR_WIRE_HDR_LEN + 4 * i, k->data[i]);
        break;
    case SS_CLOCK: h = mk(SR_OP_CLOCK, SS_JOB, (uint16_t)w, k->c, 0); break;
    case SS_PULL: h = mk(SR_OP_PULL, SS_JOB, (uint16_t)w, k->pull_no, SS_N); break;
    default: return;
    }
    sr_hdr_pack(b, &h);
    net_push(&s->n, 1, w, b, SR_WIRE_HDR_LEN + 4u * h.count);
}

/* Start worker w's next request after its current one was answered. */
static void ss_next(ssim *s, unsigned w)
{
    ss_worker *k = &s->w[w];

    switch (k->phase) {
    case SS_PUSH_CNT: /* a new iteration */
        k->push_no++;
        k->pushes++;
        break;
    case SS_PUSH_DATA:
        k->push_no++;
        for (unsigned i = 0; i < SS_E; i++) {
            k->data[i] = net_rand(&s->n, UINT32_MAX) * 2654435761u;
            s->ref[(1 + k->c % 2) * SS_E + i] += k->data[i];
        }
        break;
    case SS_CLOCK:
        k->held = 0;
        k->clock_sent = (int32_t)k->c;
        break;
    case SS_PULL: k->pull_no++; break;
    default: return;
    }
    ss_send(s, w);
}

/* Worker w goes on past its clock c with the s of clock c. */
static void ss_go(ssim *s, unsigned w, uint32_t sc)
{
    ss_worker *k = &s->w[w];

    for (unsigned v = 0; v < SS_N; v++)
        assert_true(s->w[v].clock_sent >= (int32_t)k->c - (int32_t)sc);
    k->go_s = sc;
    k->phase = SS_PULL;
    ss_next(s, w);
}

/* The policy of an answer for clock c must be the one every answer for c
 * carried. */
static void ss_policy(ssim *s, uint32_t c, const uint8_t *pl)
{
    uint32_t mode = sr_get_be32(pl), sc = sr_get_be32(pl + 4);

    assert_true(c < SS_CLOCKS && mode <= SR_SYNC_ASP);
    if (s->pol_mode[c] < 0) {
        s->pol_mode[c] = (int8_t)mode;
        s->pol_s[c] = sc;
        s->modes_seen |= 1u << mode;
    }
    assert_int_equal(mode, s->pol_mode[c]);
    assert_int_equal(sc, s->pol_s[c]);
}

static void ss_at_worker(ssim *s, const sim_pkt *pk)
{
    ss_worker *k = &s->w[pk->w];
    const uint8_t *pl;
    sr_hdr h;

    assert_int_equal(sr_msg_parse(pk->b, pk->len, &h, &pl), SR_PARSE_OK);
    assert_int_equal(h.worker, pk->w);
    switch (h.op) {
    case SR_OP_PUSH_ACK:
        if ((k->phase == SS_PUSH_CNT || k->phase == SS_PUSH_DATA) && h.seq == k->push_no) {
            k->phase++;
            ss_next(s, pk->w);
        }
        break;
    case SR_OP_PROCEED:
    case SR_OP_HOLD:
        ss_policy(s, h.seq, pl);
        if (k->phase != SS_CLOCK || h.seq != k->c)
            break;
        if (h.op == SR_OP_PROCEED) {
            ss_go(s, pk->w, sr_get_be32(pl + 4));
        } else {
            k->held = 1;
            k->held_s = sr_get_be32(pl + 4);
        }
        break;
    case SR_OP_RELEASE:
        if (k->phase == SS_CLOCK && k->held && sr_barrier_released(k->c, k->held_s, h.aux))
            ss_go(s, pk->w, k->held_s);
        break;
    case SR_OP_PULL_RESP:
        if (k->phase != SS_PULL || h.seq != k->pull_no)
            break;
        assert_int_equal(h.count, SS_N);
        for (unsigned v = 0; v < SS_N; v++) {
            int64_t got = sr_get_be32(pl + 4 * v);

            assert_true(got >= (int64_t)k->c - (int64_t)k->go_s + 1);
            assert_true(got <= (int64_t)s->w[v].pushes);
        }
        k->c++;
        k->phase = k->c == SS_CLOCKS ? SS_DONE : SS_PUSH_CNT;
        ss_next(s, pk->w);
        break;
    default: fail_msg("unexpected %s (status %s)", sr_op_name(h.op), sr_status_name(h.status));
    }
}

static void ss_at_switch(fx *f, ssim *s, const sim_pkt *pk)
{
    sr_peer src = peer_of(SS_JOB, pk->w);

    sr_pipe_process(f->p, &src, pk->b, pk->len, f->out);
    for (unsigned i = 0; i < f->out->n; i++) {
        const sr_pipe_action *a = &f->out->act[i];

        for (unsigned k = 0; k < a->n_dests; k++) {
            size_t len = SR_WIRE_HDR_LEN + a->payload_len;

            sr_pipe_replica_hdr(a, k, f->rep);
            memcpy(f->rep + SR_WIRE_HDR_LEN, a->payload, a->payload_len);
            net_push(&s->n, 0, a->dests[k].worker, f->rep, len);
            if (net_rand(&s->n, 100) < 5)
                net_push(&s->n, 0, a->dests[k].worker, f->rep, len);
        }
    }
}

/* Now and then, a policy change, as soon as possible or a little later. */
static void ss_swap(fx *f, ssim *s)
{
    static const struct {
        enum sr_sync_mode mode;
        uint32_t s;
    } pols[] = {{SR_SYNC_BSP, 0}, {SR_SYNC_SSP, 1}, {SR_SYNC_SSP, 3}, {SR_SYNC_ASP, 0}};
    sr_pipe_sync_state st;
    unsigned k = net_rand(&s->n, 4);
    uint32_t from, e;

    assert_int_equal(sr_pipe_sync_get(f->p, SS_JOB, &st), 0);
    from = net_rand(&s->n, 2) ? st.low : st.high + 1 + net_rand(&s->n, 4);
    if (sr_pipe_set_policy(f->p, SS_JOB, pols[k].mode, pols[k].s, from, &e) == 0) {
        assert_true((int32_t)(e - st.high) > 0);
        s->changes++;
    }
}

static void test_ssp_network_sim(void **state)
{
    fx *f = *state;
    ssim *s = f->extra = calloc(1, sizeof(ssim));
    sr_pipe_job_params jp;
    sr_pipe_job_counters c;
    sr_peer src0 = peer_of(SS_JOB, 0);
    sr_hdr h;
    const uint8_t *pl;
    int done = 0;

    assert_non_null(s);
    sr_pipe_job_params_init(&jp);
    jp.n_workers = SS_N;
    jp.elems_per_pkt = SS_E;
    jp.store_words = 3 * SS_E;
    jp.ring = SS_RING;
    assert_int_equal(sr_pipe_job_add(f->p, SS_JOB, &jp), 0);
    for (unsigned w = 0; w < SS_N; w++)
        join(f, SS_JOB, (uint16_t)w, 3000u + w, 0);
    s->n.rng = 777;
    memset(s->pol_mode, -1, sizeof s->pol_mode);
    for (unsigned w = 0; w < SS_N; w++) {
        s->w[w].clock_sent = -1;
        ss_next(s, w);
    }
    for (unsigned iter = 0; iter < 2000000 && !done; iter++) {
        sim_pkt pk;

        if (s->n.nq == 0) { /* quiet: every worker retransmits what it waits for */
            done = 1;
            for (unsigned w = 0; w < SS_N; w++)
                if (s->w[w].phase != SS_DONE) {
                    ss_send(s, w);
                    done = 0;
                }
            continue;
        }
        if (net_rand(&s->n, 100) < 3) /* a spurious timeout */
            ss_send(s, net_rand(&s->n, SS_N));
        if (net_rand(&s->n, 100) < 1)
            ss_swap(f, s);
        pk = net_pick(&s->n);
        if (net_rand(&s->n, 100) < 10)
            continue;
        if (pk.to_switch)
            ss_at_switch(f, s, &pk);
        else
            ss_at_worker(s, &pk);
    }
    assert_true(done);

    /* The store: every push exactly once. */
    for (unsigned v = 0; v < SS_N; v++)
        s->ref[v] = SS_CLOCKS;
    for (uint32_t off = 0; off < 3 * SS_E; off += SS_E) {
        h = mk(SR_OP_PULL, SS_JOB, 0, 1u << 30, SS_E);
        h.offset = off;
        feed(f, &src0, &h, NULL);
        assert_int_equal(f->out->n, 1);
        h = replica(f, &f->out->act[0], 0, &pl);
        assert_int_equal(h.op, SR_OP_PULL_RESP);
        for (unsigned i = 0; i < SS_E; i++)
            assert_int_equal(sr_get_be32(pl + 4 * i), s->ref[off + i]);
    }
    /* The run went through every path. */
    c = jc(f, SS_JOB);
    assert_int_equal(c.pushes, 2 * SS_N * SS_CLOCKS);
    assert_true(c.push_dups > 0);
    assert_true(c.holds > 0);
    assert_true(c.releases > 0);
    assert_int_equal(c.clock_ahead + c.errors_sent + c.dropped_unbound, 0);
    assert_true(s->changes > 3);
    assert_int_equal(s->modes_seen, 7); /* BSP, SSP and ASP all answered */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lossy_network_sim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_network_sim, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
