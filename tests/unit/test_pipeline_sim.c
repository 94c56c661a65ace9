/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_sim.c - the streaming protocol between simulated workers and
 * the software switch's pipeline, over a lossy, reordering network with a
 * fixed seed. The packet-by-packet checks of the pipeline are in
 * test_pipeline.c; the fixture and helpers are shared through
 * pipeline_helpers.h.
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
 * pipeline.c). Workers retransmit what is outstanding whenever the network
 * is quiet, and now and then a packet early. Every result a worker
 * receives, shadow copies and late duplicates included, must carry its
 * chunk's exact sums, and each chunk must complete exactly once. */
enum { SIM_N = 4, SIM_S = 3, SIM_E = 4, SIM_CHUNKS = 90, SIM_Q = 4096, SIM_JOB = 9 };

typedef struct sim_pkt {
    uint8_t to_switch, skips;
    uint16_t w, len;
    uint8_t b[SR_WIRE_HDR_LEN + 4 * SIM_E];
} sim_pkt;

typedef struct sim {
    sim_pkt q[SIM_Q]; /* oldest first */
    unsigned nq;
    uint64_t rng;
    unsigned next[SIM_N][SIM_S]; /* chunk outstanding per worker and slot */
    uint8_t have[SIM_N][SIM_CHUNKS];
} sim;

static uint32_t sim_rand(sim *s, uint32_t mod)
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

static void sim_push(sim *s, int to_switch, unsigned w, const uint8_t *b, size_t len)
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

static void sim_send(sim *s, unsigned w, unsigned k)
{
    uint8_t b[SR_WIRE_HDR_LEN + 4 * SIM_E];
    sr_hdr h = ar_hdr(SIM_JOB, (uint16_t)(k % SIM_S), (uint8_t)((k / SIM_S) & 1u), 7,
                      k * SIM_E, SIM_E);

    h.worker = (uint16_t)w;
    h.next_exp = (int8_t)(k % 5u + w);
    sr_hdr_pack(b, &h);
    for (unsigned i = 0; i < SIM_E; i++)
        sr_put_be32(b + SR_WIRE_HDR_LEN + 4u * i, sim_val(w, k, i));
    sim_push(s, 1, w, b, sizeof b);
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
            sim_push(s, 0, a->dests[k].worker, f->rep, len);
            if (sim_rand(s, 100) < 5)
                sim_push(s, 0, a->dests[k].worker, f->rep, len);
        }
    }
}

static void sim_at_worker(sim *s, const sim_pkt *pk)
{
    const uint8_t *pl;
    sr_hdr h;
    unsigned k, w = pk->w;

    assert_int_equal(sr_msg_parse(pk->b, pk->len, &h, &pl), SR_PARSE_OK);
    assert_int_equal(h.op, SR_OP_AR_RESULT);
    assert_int_equal(h.worker, w);
    k = h.offset / SIM_E;
    assert_true(k < SIM_CHUNKS);
    assert_int_equal(h.slot, k % SIM_S);
    assert_int_equal(h.shadow, (k / SIM_S) & 1u);
    assert_int_equal(h.next_exp, (int)(k % 5u + SIM_N - 1));
    for (unsigned i = 0; i < SIM_E; i++) {
        uint32_t sum = 0;

        for (unsigned v = 0; v < SIM_N; v++)
            sum += sim_val(v, k, i);
        assert_int_equal(sr_get_be32(pl + 4u * i), sum);
    }
    assert_true(k <= s->next[w][h.slot]); /* never a chunk it has not sent */
    if (k != s->next[w][h.slot])
        return; /* a late duplicate */
    s->have[w][k] = 1;
    s->next[w][h.slot] += SIM_S;
    if (s->next[w][h.slot] < SIM_CHUNKS)
        sim_send(s, w, s->next[w][h.slot]);
}

/* Take the oldest packet overtaken 6 times, else one of the 6 oldest. */
static sim_pkt sim_pick(sim *s)
{
    unsigned win = s->nq < 6 ? s->nq : 6, i = 0;
    sim_pkt pk;

    while (i < win && s->q[i].skips < 6)
        i++;
    if (i == win)
        i = sim_rand(s, win);
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
    s->rng = 12345;
    for (unsigned w = 0; w < SIM_N; w++)
        for (unsigned sl = 0; sl < SIM_S; sl++) {
            s->next[w][sl] = sl;
            sim_send(s, w, sl);
        }
    for (unsigned iter = 0; iter < 1000000 && !done; iter++) {
        sim_pkt pk;

        if (s->nq == 0) { /* quiet: every worker retransmits what it waits for */
            done = 1;
            timeouts++;
            for (unsigned w = 0; w < SIM_N; w++)
                for (unsigned sl = 0; sl < SIM_S; sl++)
                    if (s->next[w][sl] < SIM_CHUNKS) {
                        sim_send(s, w, s->next[w][sl]);
                        done = 0;
                    }
            continue;
        }
        if (sim_rand(s, 100) < 3) { /* a spurious timeout */
            unsigned w = sim_rand(s, SIM_N), sl = sim_rand(s, SIM_S);

            if (s->next[w][sl] < SIM_CHUNKS)
                sim_send(s, w, s->next[w][sl]);
        }
        pk = sim_pick(s);
        if (sim_rand(s, 100) < 20)
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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lossy_network_sim, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
