/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_step.c - the pipeline's Step control (p4/swswitch/step.c):
 * STEP and STEP_PROBE on the store's rows, answered with the row once it
 * holds every worker's steps of clocks <= c - s(c); waiting pieces and the
 * workers a row's new low releases; duplicates, probes, refusals, the
 * barrier records of last pieces, policy changes and new incarnations.
 */
#include "pipeline_helpers.h"

#define JOB 3
#define ELEMS 4

/* A STEP of worker w at clock c on `count` words at offset. */
static sr_hdr step_hdr(unsigned w, uint32_t c, uint32_t offset, uint16_t count, uint32_t aux)
{
    sr_hdr h = mk(SR_OP_STEP, JOB, (uint16_t)w, c, aux);

    h.offset = offset;
    h.count = count;
    return h;
}

static void step(fx *f, unsigned w, uint32_t c, uint32_t offset, uint16_t count, uint32_t aux,
                 const int32_t *vals)
{
    sr_hdr h = step_hdr(w, c, offset, count, aux);

    ar(f, &h, w, vals);
}

static void probe(fx *f, unsigned w, uint32_t c, uint32_t offset)
{
    sr_hdr h = step_hdr(w, c, offset, 0, 0);

    h.op = SR_OP_STEP_PROBE;
    ar(f, &h, w, NULL);
}

/* Action k is a STEP_RESP of row `row` (ELEMS words, low clock `low`) to
 * exactly the workers in `to`, each replica's seq its receiver's clock. */
static void expect_row(fx *f, unsigned k, uint32_t row, uint32_t low, uint64_t to,
                       const uint32_t *clock_of, const uint32_t *words)
{
    const sr_pipe_action *a = &f->out->act[k];
    unsigned d = 0;

    assert_true(k < f->out->n);
    for (unsigned w = 0; w < 64; w++) {
        const uint8_t *pl;
        sr_hdr h;

        if (!(to & (UINT64_C(1) << w)))
            continue;
        assert_true(d < a->n_dests);
        h = replica(f, a, d, &pl);
        sr_peer pe = peer_of(JOB, w);
        expect_peer(&a->dests[d].peer, &pe);
        assert_int_equal(h.op, SR_OP_STEP_RESP);
        assert_int_equal(h.worker, w);
        assert_int_equal(h.seq, clock_of[w]);
        assert_int_equal(h.offset, row * ELEMS);
        assert_int_equal(h.count, ELEMS);
        assert_int_equal(h.aux, low);
        for (unsigned i = 0; i < ELEMS; i++)
            assert_int_equal(sr_get_be32(pl + 4u * i), words[i]);
        d++;
    }
    assert_int_equal(a->n_dests, d);
}

/* A header-only answer (STEP_HELD, STEP_NAK) to the request as sent. */
static void expect_short(fx *f, unsigned w, uint32_t c, uint32_t offset, uint16_t count,
                         uint8_t req_op, uint8_t op, uint32_t low)
{
    sr_hdr req = step_hdr(w, c, offset, count, low);

    req.op = req_op;
    req.count = count;
    expect_answer(f, &req, op); /* aux carries the row's low clock */
}

static void add_job(fx *f, unsigned n, enum sr_sync_mode mode, uint32_t s)
{
    sr_pipe_job_params jp;

    sr_pipe_job_params_init(&jp);
    jp.n_workers = n;
    jp.elems_per_pkt = ELEMS;
    jp.store_words = 16;
    jp.mode = mode;
    jp.s = s;
    assert_int_equal(sr_pipe_job_add(f->p, JOB, &jp), 0);
    for (unsigned w = 0; w < n; w++)
        join(f, JOB, (uint16_t)w, 1000u + w, 0);
}

/* BSP: a row is an allreduce round; its last worker releases it to all. */
static void test_bsp_row(void **state)
{
    fx *f = *state;
    const int32_t v[3][ELEMS] = {{1, 2, 3, 4}, {10, 20, 30, 40}, {-100, 0, 100, 7}};
    uint32_t sum[ELEMS] = {-89, 22, 133, 51}, clk[3] = {0, 0, 0};

    add_job(f, 3, SR_SYNC_BSP, 0);
    step(f, 0, 0, 4, ELEMS, 1, v[0]);
    expect_nothing(f);
    step(f, 1, 0, 4, ELEMS, 1, v[1]);
    expect_nothing(f);
    /* A repeat of a waiting piece: held, not added again. */
    step(f, 1, 0, 4, ELEMS, 1, v[1]);
    expect_short(f, 1, 0, 4, ELEMS, SR_OP_STEP, SR_OP_STEP_HELD, UINT32_MAX);
    step(f, 2, 0, 4, ELEMS, 1, v[2]);
    /* The row to all, and RELEASE(0): every worker's one-piece step of
     * clock 0 is complete. */
    assert_int_equal(f->out->n, 2);
    expect_row(f, 0, 1, 0, 7, clk, sum);
    assert_int_equal(f->out->act[1].hdr.op, SR_OP_RELEASE);
    /* A repeat after the row was sent: the row again, to it alone. */
    step(f, 0, 0, 4, ELEMS, 1, v[0]);
    expect_row(f, 0, 1, 0, 1, clk, sum);
    sr_pipe_job_counters c = jc(f, JOB);
    assert_int_equal(c.steps, 3);
    assert_int_equal(c.step_dups, 2);
    assert_int_equal(c.step_waits, 2);
    assert_int_equal(c.step_answers, 4);
    assert_int_equal(c.step_held, 1);
    /* The next clock adds on top. */
    clk[0] = clk[1] = clk[2] = 1;
    for (unsigned w = 0; w < 3; w++)
        step(f, w, 1, 4, ELEMS, 1, v[w]);
    for (unsigned i = 0; i < ELEMS; i++)
        sum[i] *= 2;
    expect_row(f, 0, 1, 1, 7, clk, sum);
}

/* A piece in part of a row gets the whole row. */
static void test_partial_row(void **state)
{
    fx *f = *state;
    const int32_t a[2] = {5, 6}, b[1] = {9};
    uint32_t row[ELEMS] = {0, 5, 6 + 9, 0}, clk[2] = {0, 0};

    add_job(f, 2, SR_SYNC_BSP, 0);
    step(f, 0, 0, 1, 2, 1, a);
    expect_nothing(f);
    step(f, 1, 0, 2, 1, 1, b);
    expect_row(f, 0, 0, 0, 3, clk, row);
}

/* SSP(1): a worker within 1 clock of the row's slowest gets the row at once;
 * a faster one waits until the slowest steps, then both are answered. */
static void test_ssp_release(void **state)
{
    fx *f = *state;
    const int32_t one[ELEMS] = {1, 1, 1, 1};
    uint32_t clk[2], row[ELEMS];

    add_job(f, 2, SR_SYNC_SSP, 1);
    /* w0 at clock 0: the row's low is -1, 0 - (-1) = 1 <= 1. */
    step(f, 0, 0, 0, ELEMS, 1, one);
    clk[0] = 0;
    for (unsigned i = 0; i < ELEMS; i++)
        row[i] = 1;
    expect_row(f, 0, 0, UINT32_MAX, 1, clk, row);
    /* w0 at clock 1: 1 - (-1) = 2 > 1, waits; its probe says held. */
    step(f, 0, 1, 0, ELEMS, 1, one);
    expect_nothing(f);
    probe(f, 0, 1, 0);
    expect_short(f, 0, 1, 0, 0, SR_OP_STEP_PROBE, SR_OP_STEP_HELD, UINT32_MAX);
    /* A piece of clock 2 before its clock 1 was answered would be beyond
     * what the library sends; clock 3 skips one: refused. */
    sr_hdr skip = step_hdr(0, 3, 0, ELEMS, 1);
    ar(f, &skip, 0, one);
    expect_error_w(f, &skip, SR_ST_MISMATCH);
    /* w1 at clock 0: the row's low becomes 0; w1 (0 - 0 <= 1) and the
     * waiting w0 (1 - 0 <= 1) get the row, each with its own clock. */
    step(f, 1, 0, 0, ELEMS, 1, one);
    clk[0] = 1;
    clk[1] = 0;
    for (unsigned i = 0; i < ELEMS; i++)
        row[i] = 3;
    expect_row(f, 0, 0, 0, 3, clk, row);
    /* Nobody waits any more: a probe of a ready piece gets STEP_NAK. */
    probe(f, 0, 1, 0);
    expect_short(f, 0, 1, 0, 0, SR_OP_STEP_PROBE, SR_OP_STEP_NAK, 0);
    /* A late copy of an older piece is dropped. */
    step(f, 0, 0, 0, ELEMS, 1, one);
    expect_nothing(f);
    assert_int_equal(jc(f, JOB).stale_dropped, 1);
}

/* Probes: not applied (NAK), applied and waiting (HELD). Refusals: a worker
 * that starts a row at another clock than the others, ranges, counts, an
 * unbound sender. */
static void test_probes_and_refusals(void **state)
{
    fx *f = *state;
    const int32_t one[ELEMS] = {1, 1, 1, 1};
    sr_peer stranger = {0x0b000001u, 999};

    add_job(f, 2, SR_SYNC_BSP, 0);
    probe(f, 0, 0, 8);
    expect_short(f, 0, 0, 8, 0, SR_OP_STEP_PROBE, SR_OP_STEP_NAK, 0);
    step(f, 0, 0, 8, ELEMS, 1, one);
    expect_nothing(f);
    probe(f, 0, 0, 8);
    expect_short(f, 0, 0, 8, 0, SR_OP_STEP_PROBE, SR_OP_STEP_HELD, UINT32_MAX);
    /* w1 starts the row at clock 1 while the others started at 0. */
    sr_hdr late = step_hdr(1, 1, 8, ELEMS, 1);
    ar(f, &late, 1, one);
    expect_error_w(f, &late, SR_ST_MISMATCH);
    sr_hdr across = step_hdr(1, 0, 6, 4, 1);
    ar(f, &across, 1, one);
    expect_error_w(f, &across, SR_ST_RANGE);
    sr_hdr beyond = step_hdr(1, 0, 16, 1, 1);
    ar(f, &beyond, 1, one);
    expect_error_w(f, &beyond, SR_ST_RANGE);
    sr_hdr big = step_hdr(1, 0, 8, ELEMS + 1, 1);
    ar(f, &big, 1, NULL);
    expect_error_w(f, &big, SR_ST_BAD_COUNT);
    sr_hdr none = step_hdr(1, 0, 8, 0, 1);
    ar(f, &none, 1, NULL);
    expect_error_w(f, &none, SR_ST_BAD_COUNT);
    sr_hdr no_pieces = step_hdr(1, 0, 8, ELEMS, 0);
    ar(f, &no_pieces, 1, one);
    expect_error_w(f, &no_pieces, SR_ST_BAD_COUNT);
    sr_hdr h = step_hdr(1, 0, 8, ELEMS, 1);
    feed(f, &stranger, &h, one);
    expect_nothing(f);
    assert_int_equal(jc(f, JOB).steps, 1);
    assert_int_equal(jc(f, JOB).mismatches, 1);
}

/* The piece that completes a worker's step (aux: its pieces) records its
 * clock in the barrier: RELEASE when low moves; every piece moves high, so
 * a policy change starts after it. */
static void test_last_piece_and_policy(void **state)
{
    fx *f = *state;
    const int32_t one[ELEMS] = {1, 1, 1, 1};
    sr_pipe_sync_state st;
    uint32_t e;

    add_job(f, 2, SR_SYNC_BSP, 0);
    step(f, 0, 0, 0, ELEMS, 2, one);
    assert_int_equal(sr_pipe_sync_get(f->p, JOB, &st), 0);
    assert_int_equal(st.high, 0);
    assert_int_equal(st.low, UINT32_MAX);
    /* A change asked for now takes effect after clock 0, already decided. */
    assert_int_equal(sr_pipe_set_policy(f->p, JOB, SR_SYNC_SSP, 2, 0, &e), 0);
    assert_int_equal(e, 1);
    step(f, 0, 0, 4, ELEMS, 2, one);
    /* w1's pieces come the other way round: its step is complete with
     * its second applied piece, whichever row that is. */
    step(f, 1, 0, 4, ELEMS, 2, one);
    assert_int_equal(f->out->n, 1); /* row 1 to both */
    step(f, 1, 0, 0, ELEMS, 2, one);
    assert_int_equal(f->out->n, 2); /* row 0 to both, and RELEASE(0) */
    assert_int_equal(f->out->act[1].hdr.op, SR_OP_RELEASE);
    assert_int_equal(f->out->act[1].hdr.seq, 0);
    assert_int_equal(f->out->act[1].n_dests, 2);
    assert_int_equal(sr_pipe_sync_get(f->p, JOB, &st), 0);
    assert_int_equal(st.low, 0);
    assert_int_equal(jc(f, JOB).clocks, 2);
    /* Clock 1 runs SSP(2): w0 goes on alone. */
    step(f, 0, 1, 0, ELEMS, 1, one);
    assert_int_equal(f->out->n, 1);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_STEP_RESP);
}

/* A new incarnation: the rows read as never stepped. */
static void test_incarnation(void **state)
{
    fx *f = *state;
    const int32_t one[ELEMS] = {1, 1, 1, 1};
    uint32_t clk[2] = {0, 0}, row[ELEMS] = {1, 1, 1, 1};

    add_job(f, 2, SR_SYNC_BSP, 0);
    step(f, 0, 0, 0, ELEMS, 1, one);
    step(f, 1, 0, 0, ELEMS, 1, one);
    step(f, 0, 1, 0, ELEMS, 1, one);
    leave(f, JOB, 0, 1000);
    leave(f, JOB, 1, 1001);
    join(f, JOB, 0, 2000, 7);
    join(f, JOB, 1, 2001, 7);
    /* Clock 5 is a fine first clock for a fresh row. */
    clk[0] = clk[1] = 5;
    step(f, 0, 5, 0, ELEMS, 1, one);
    expect_nothing(f);
    step(f, 1, 5, 0, ELEMS, 1, one);
    for (unsigned i = 0; i < ELEMS; i++)
        row[i] = 2;
    expect_row(f, 0, 0, 5, 3, clk, row);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bsp_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bsp_row, setup_lazy, teardown),
        cmocka_unit_test_setup_teardown(test_partial_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ssp_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_probes_and_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_piece_and_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_incarnation, setup_lazy, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
