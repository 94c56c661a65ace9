/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline_helpers.h - the fixture and packet helpers that the pipeline
 * tests share (test_pipeline_jobs.c, test_pipeline_join.c,
 * test_pipeline_allreduce.c, test_pipeline_sim.c, test_pipeline_ssp.c): a
 * pipeline per test, worker addresses, header builders, job setup, JOIN,
 * per-job counters and the checks of answers as wire bytes. Header-only
 * (static inline), so each test binary stays a single source file.
 */
#ifndef SERENE_TESTS_PIPELINE_HELPERS_H
#define SERENE_TESTS_PIPELINE_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline.h"
#include "proto/wire.h"

typedef struct fx {
    sr_pipe *p;
    sr_pipe_out *out;
    uint8_t msg[SR_WIRE_MAX_MSG + 16];
    uint8_t rep[SR_WIRE_MAX_MSG];
    void *extra; /* a test's scratch, freed by teardown even on failure */
} fx;

static inline int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);

    if (!f)
        return -1;
    f->out = calloc(1, sizeof *f->out);
    if (!f->out || sr_pipe_create(&f->p) != 0) {
        free(f->out);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

/* The same pipeline with lazy payloads, as serene-switch runs it: results
 * keep their sums in the slot until written into a frame. */
static inline int setup_lazy(void **state)
{
    if (setup(state))
        return -1;
    sr_pipe_set_lazy_payload(((fx *)*state)->p, 1);
    return 0;
}

static inline int teardown(void **state)
{
    fx *f = *state;

    sr_pipe_destroy(&f->p);
    assert_null(f->p);
    free(f->extra);
    free(f->out);
    free(f);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

/* Worker w of a job sends from its own address. */
static inline sr_peer peer_of(unsigned job, unsigned w)
{
    sr_peer p = {0x0a000000u | job << 8 | w, (uint16_t)(40000u + w)};
    return p;
}

/* Build header + payload (count words of vals, zeros if NULL) and process. */
static inline void feed(fx *f, const sr_peer *src, const sr_hdr *h, const int32_t *vals)
{
    sr_hdr_pack(f->msg, h);
    for (unsigned i = 0; i < h->count; i++)
        sr_put_be32(f->msg + SR_WIRE_HDR_LEN + 4u * i, vals ? (uint32_t)vals[i] : 0u);
    sr_pipe_process(f->p, src, f->msg, SR_WIRE_HDR_LEN + 4u * h->count, f->out);
}

static inline sr_hdr mk(uint8_t op, uint16_t job, uint16_t w, uint32_t seq, uint32_t aux)
{
    sr_hdr h = {0};

    h.version = SR_WIRE_VERSION;
    h.op = op;
    h.job = job;
    h.worker = w;
    h.seq = seq;
    h.aux = aux;
    return h;
}

static inline sr_hdr ar_hdr(uint16_t job, uint16_t slot, uint8_t v, uint32_t seq,
                            uint32_t off, uint16_t count)
{
    sr_hdr h = mk(SR_OP_AR_DATA, job, 0, seq, 0);

    h.slot = slot;
    h.shadow = v;
    h.offset = off;
    h.count = count;
    return h;
}

static inline void join(fx *f, uint16_t job, uint16_t w, uint32_t token, uint32_t nonce)
{
    sr_hdr h = mk(SR_OP_JOIN, job, w, token, nonce);
    sr_peer src = peer_of(job, w);

    feed(f, &src, &h, NULL);
    assert_int_equal(f->out->n, 1);
    assert_int_equal(f->out->act[0].hdr.op, SR_OP_JOIN_ACK);
}

/* Worker w's context ends (LEAVE from its bound address and token). */
static inline void leave(fx *f, uint16_t job, uint16_t w, uint32_t token)
{
    sr_hdr h = mk(SR_OP_LEAVE, job, w, token, 0);
    sr_peer src = peer_of(job, w);

    feed(f, &src, &h, NULL);
    assert_int_equal(f->out->n, 0);
}

/* Add a job with the default parameters but these, and a small store
 * (SR_TEST_STORE words) so that tests stay light. Returns what
 * sr_pipe_job_add returns. */
#define SR_TEST_STORE 4096u
static inline int job_add(sr_pipe *p, uint16_t job, unsigned n, unsigned elems, unsigned slots)
{
    sr_pipe_job_params jp;

    sr_pipe_job_params_init(&jp);
    jp.n_workers = n;
    jp.elems_per_pkt = elems;
    jp.pool_slots = slots;
    jp.store_words = SR_TEST_STORE;
    return sr_pipe_job_add(p, job, &jp);
}

static inline void add_joined(fx *f, uint16_t job, unsigned n, unsigned elems, unsigned slots)
{
    assert_int_equal(job_add(f->p, job, n, elems, slots), 0);
    for (unsigned w = 0; w < n; w++)
        join(f, job, (uint16_t)w, 1000u + w, 0);
}

static inline void expect_peer(const sr_peer *got, const sr_peer *want)
{
    assert_int_equal(got->ip, want->ip);
    assert_int_equal(got->port, want->port);
}

static inline sr_pipe_job_counters jc(fx *f, uint16_t job)
{
    sr_pipe_job_counters c;

    assert_int_equal(sr_pipe_job_counters_get(f->p, job, &c), 0);
    return c;
}

/* ---- answers ----------------------------------------------------------------- */

/* Send h as worker w, from w's address. */
static inline void ar(fx *f, sr_hdr *h, unsigned w, const int32_t *vals)
{
    sr_peer src = peer_of(h->job, w);

    h->worker = (uint16_t)w;
    feed(f, &src, h, vals);
}

/* Replica k of action a as bytes, parsed back: checks the wire round trip. */
static inline sr_hdr replica(fx *f, const sr_pipe_action *a, unsigned k, const uint8_t **payload)
{
    sr_hdr h;

    assert_true(k < a->n_dests);
    assert_int_equal(a->payload_len, 4u * a->hdr.count);
    sr_pipe_replica_hdr(a, k, f->rep);
    /* Written as the switch's I/O writes it (lazy or not), and equal to
     * the plain payload[] the action flattens to. */
    sr_pipe_payload_write(a, f->rep + SR_WIRE_HDR_LEN);
    if (a->words) {
        sr_pipe_action *flat = malloc(sizeof *flat);

        assert_non_null(flat);
        memcpy(flat, a, sizeof *flat);
        sr_pipe_payload_flatten(flat);
        assert_null(flat->words);
        assert_memory_equal(flat->payload, f->rep + SR_WIRE_HDR_LEN, a->payload_len);
        free(flat);
    }
    assert_int_equal(sr_msg_parse(f->rep, SR_WIRE_HDR_LEN + a->payload_len, &h, payload),
                     SR_PARSE_OK);
    assert_int_equal(h.worker, a->dests[k].worker);
    return h;
}

static inline void expect_nothing(fx *f)
{
    assert_int_equal(f->out->n, 0);
}

/* Every field of a parsed header. */
static inline void expect_hdr(const sr_hdr *got, const sr_hdr *want)
{
    assert_int_equal(got->version, SR_WIRE_VERSION);
    assert_int_equal(got->op, want->op);
    assert_int_equal(got->job, want->job);
    assert_int_equal(got->worker, want->worker);
    assert_int_equal(got->seq, want->seq);
    assert_int_equal(got->slot, want->slot);
    assert_int_equal(got->shadow, want->shadow);
    assert_int_equal(got->count, want->count);
    assert_int_equal(got->exp, want->exp);
    assert_int_equal(got->next_exp, want->next_exp);
    assert_int_equal(got->flags, want->flags);
    assert_int_equal(got->status, want->status);
    assert_int_equal(got->offset, want->offset);
    assert_int_equal(got->aux, want->aux);
}

/* One unicast ERROR back to src: req echoed, with status and aux = op. */
static inline void expect_error(fx *f, const sr_peer *src, const sr_hdr *req, unsigned status)
{
    const sr_pipe_action *a = &f->out->act[0];
    sr_hdr want = *req, got;

    assert_int_equal(f->out->n, 1);
    assert_int_equal(a->multicast, 0);
    assert_int_equal(a->n_dests, 1);
    expect_peer(&a->dests[0].peer, src);
    want.op = SR_OP_ERROR;
    want.status = (uint8_t)status;
    want.aux = req->op;
    want.count = 0;
    got = replica(f, a, 0, NULL);
    expect_hdr(&got, &want);
}

/* One header-only allreduce answer (AR_HELD or AR_NAK) to req's sender,
 * worker req->worker: req echoed with op, count 0, flags and status 0. */
static inline void expect_answer(fx *f, const sr_hdr *req, unsigned op)
{
    const sr_pipe_action *a = &f->out->act[0];
    sr_peer src = peer_of(req->job, req->worker);
    sr_hdr want = *req, got;

    assert_int_equal(f->out->n, 1);
    assert_int_equal(a->multicast, 0);
    assert_int_equal(a->n_dests, 1);
    expect_peer(&a->dests[0].peer, &src);
    want.op = (uint8_t)op;
    want.count = 0;
    want.flags = 0;
    want.status = 0;
    got = replica(f, a, 0, NULL);
    expect_hdr(&got, &want);
}

/* The ERROR to worker w's own address. */
static inline void expect_error_w(fx *f, const sr_hdr *req, unsigned status)
{
    sr_peer src = peer_of(req->job, req->worker);

    expect_error(f, &src, req, status);
}

static inline sr_pipe_counters sc(fx *f)
{
    sr_pipe_counters c;

    sr_pipe_counters_get(f->p, &c);
    return c;
}

static inline sr_pipe_job_info info_of(fx *f, uint16_t job)
{
    sr_pipe_job_info info;

    assert_int_equal(sr_pipe_job_info_get(f->p, job, &info), 0);
    return info;
}

/* One AR_RESULT action: metadata from meta, the sums, and destinations:
 * workers 0..n_or_to-1 of the job if multicast, else worker n_or_to. */
static inline void expect_result(fx *f, int multicast, unsigned n_or_to, const sr_hdr *meta,
                                 const uint32_t *sum)
{
    const sr_pipe_action *a = &f->out->act[0];
    unsigned nd = multicast ? n_or_to : 1;
    sr_hdr want = *meta;

    want.op = SR_OP_AR_RESULT;
    want.flags = 0;
    want.status = 0;
    want.aux = meta->aux; /* the call's total count, echoed */
    assert_int_equal(f->out->n, 1);
    assert_int_equal(a->multicast, multicast);
    assert_int_equal(a->n_dests, nd);
    for (unsigned k = 0; k < nd; k++) {
        const uint8_t *pl;
        sr_hdr h = replica(f, a, k, &pl);
        unsigned w = multicast ? k : n_or_to;
        sr_peer pe = peer_of(meta->job, w);

        expect_peer(&a->dests[k].peer, &pe);
        want.worker = (uint16_t)w;
        expect_hdr(&h, &want);
        for (unsigned i = 0; i < h.count; i++)
            assert_int_equal(sr_get_be32(pl + 4u * i), sum[i]);
    }
}

#endif /* SERENE_TESTS_PIPELINE_HELPERS_H */
