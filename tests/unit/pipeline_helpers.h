/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline_helpers.h - the fixture and packet helpers that test_pipeline.c
 * and test_pipeline_sim.c share: a pipeline per test, worker addresses,
 * header builders, JOIN, and per-job counters. Header-only (static inline),
 * so each test binary stays a single source file.
 */
#ifndef SERENE_TESTS_PIPELINE_HELPERS_H
#define SERENE_TESTS_PIPELINE_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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

static inline void add_joined(fx *f, uint16_t job, unsigned n, unsigned elems, unsigned slots)
{
    assert_int_equal(sr_pipe_job_add(f->p, job, n, elems, slots), 0);
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

#endif /* SERENE_TESTS_PIPELINE_HELPERS_H */
