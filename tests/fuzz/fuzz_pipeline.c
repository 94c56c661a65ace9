/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_pipeline.c - libFuzzer target for the software switch's pipeline
 * (p4/swswitch: pipeline.c, ssp.c, barrier.c).
 *
 * Each input runs on a fresh pair of jobs (fuzz_pipeline.h: two small jobs
 * with allreduce slots, a store and a barrier) and is read as records: a
 * message from one of four peers to sr_pipe_process, or a policy change
 * through sr_pipe_set_policy. Every message is copied to a heap buffer of
 * exactly its length, so ASan catches a read past it.
 *
 * Beside the sanitizers, every step checks (abort() on a violation):
 * - at most SR_PIPE_MAX_ACTIONS actions; each replica's header, packed by
 *   sr_pipe_replica_hdr with its payload, parses with sr_msg_parse to the
 *   template with the replica's worker; payload_len = 4 * count;
 * - answers stay within the request's job and its limits (count <= elems,
 *   slot < slots, store accesses inside the store and one row, policy s
 *   within the ring), and each op gets only the answers it may get;
 * - isolation: unicasts go back to the source only; multicasts go exactly
 *   to the workers bound in the job's current incarnation, at the addresses
 *   they joined from (a model of the bindings kept here from the JOIN_ACKs
 *   seen, and checked against sr_pipe_job_info_get); AR_DATA, AR_PROBE,
 *   PUSH, PULL and CLOCK from anyone else get nothing;
 * - AR_HELD and AR_NAK echo the request, header only, to its sender; a
 *   probe changes no state and never gets a result;
 * - counters: rx_total moves by one, tx_total and the job's tx by the
 *   copies sent, a rejected message is counted under its parse result;
 * - the barrier: high - low <= ring, rules ordered and bounded, clocks =
 *   proceeds + holds + violations; PROCEED exactly when c - low <= s; a
 *   refused policy change changes nothing.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_pipeline.h"
#include "pipeline.h"
#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK FZ_CHECK

/* What the harness knows of a job: its setup and, from the JOIN_ACKs it
 * saw, the bindings of the current incarnation. */
typedef struct job_model {
    uint16_t id;
    sr_pipe_job_params jp;
    uint32_t nonce;
    uint64_t bound;
    uint64_t left; /* bound workers that sent a matching LEAVE */
    sr_peer peer[SR_WIRE_MAX_WORKERS];
    uint32_t token[SR_WIRE_MAX_WORKERS];
} job_model;

static sr_pipe *g_pipe;
static sr_pipe_out *g_out;
static job_model g_jobs[2];

static job_model *model_of(uint16_t job)
{
    for (unsigned i = 0; i < 2; i++)
        if (g_jobs[i].id == job)
            return &g_jobs[i];
    return NULL;
}

static int member(const job_model *m, uint16_t w, const sr_peer *src)
{
    return w < m->jp.n_workers && ((m->bound & ~m->left) >> w & 1u) &&
           fz_peer_eq(&m->peer[w], src);
}

/* s as the barrier applies it (barrier.h): 0 for BSP, R - 2 for ASP. */
static uint32_t applied_s(const job_model *m, uint32_t mode, uint32_t s)
{
    return mode == SR_SYNC_BSP ? 0u : mode == SR_SYNC_ASP ? m->jp.ring - 2u : s;
}

/* ---- fixture ------------------------------------------------------------------ */

static void job_setup(job_model *m, uint16_t id, uint32_t n, uint32_t elems, uint32_t slots,
                      uint32_t store, uint32_t ring, enum sr_sync_mode mode, uint32_t s)
{
    memset(m, 0, sizeof *m);
    m->id = id;
    sr_pipe_job_params_init(&m->jp);
    m->jp.n_workers = n;
    m->jp.elems_per_pkt = elems;
    m->jp.pool_slots = slots;
    m->jp.store_words = store;
    m->jp.ring = ring;
    m->jp.mode = mode;
    m->jp.s = s;
    (void)sr_pipe_job_remove(g_pipe, id);
    CHECK(sr_pipe_job_add(g_pipe, id, &m->jp) == 0);
}

/* Every input starts from two freshly added jobs; the pipeline itself (a
 * 512 KiB job table) is kept, so only its switch-wide counters carry over,
 * and the checks use their differences. */
static void fixture_reset(void)
{
    if (!g_pipe) {
        CHECK(sr_pipe_create(&g_pipe) == 0);
        g_out = malloc(sizeof *g_out);
        CHECK(g_out != NULL);
    }
    job_setup(&g_jobs[0], FZ_JOB_A, FZ_JOB_A_WORKERS, FZ_JOB_A_ELEMS, FZ_JOB_A_SLOTS,
              FZ_JOB_A_STORE, FZ_JOB_A_RING, SR_SYNC_SSP, FZ_JOB_A_S);
    job_setup(&g_jobs[1], FZ_JOB_B, FZ_JOB_B_WORKERS, FZ_JOB_B_ELEMS, FZ_JOB_B_SLOTS,
              FZ_JOB_B_STORE, FZ_JOB_B_RING, SR_SYNC_BSP, 0);
}

/* ---- checks ------------------------------------------------------------------- */

static void check_sync(const job_model *m)
{
    sr_pipe_sync_state st;
    const sr_barrier_counters *c = &st.cnt;

    CHECK(sr_pipe_sync_get(g_pipe, m->id, &st) == 0);
    CHECK(st.ring == m->jp.ring);
    CHECK(st.high - st.low <= st.ring); /* serial: high within the ring above low */
    CHECK(st.mode <= SR_SYNC_ASP && st.s == applied_s(m, st.mode, st.s));
    CHECK(st.s <= st.ring - 2u);
    CHECK(st.n_rules >= 1 && st.n_rules <= SR_BARRIER_MAX_RULES);
    for (unsigned i = 0; i < st.n_rules; i++) {
        const sr_barrier_range *g = &st.rules[i];

        CHECK(g->mode <= SR_SYNC_ASP && g->s == applied_s(m, g->mode, g->s));
        CHECK(g->s <= st.ring - 2u);
        CHECK(g->open == (i + 1 == st.n_rules));
        if (i + 1 < st.n_rules) {
            CHECK(g->to == st.rules[i + 1].from);
            CHECK((int32_t)(g->to - g->from) > 0);
        }
    }
    CHECK(c->clocks == c->proceeds + c->holds + c->violations);
}

static void check_info(const job_model *m)
{
    sr_pipe_job_info info;

    CHECK(sr_pipe_job_info_get(g_pipe, m->id, &info) == 0);
    CHECK(info.job == m->id);
    CHECK(info.nonce == m->nonce);
    CHECK(info.n_bound == (uint32_t)__builtin_popcountll(m->bound));
    CHECK(info.n_workers == m->jp.n_workers && info.elems_per_pkt == m->jp.elems_per_pkt);
}

/* Destinations: the source for a unicast; exactly the bound workers of the
 * job, each at its own address, for a multicast. */
static void check_dests(const job_model *m, const sr_hdr *req, const sr_peer *src,
                        const sr_pipe_action *a)
{
    if (!a->multicast) {
        CHECK(a->n_dests == 1);
        CHECK(fz_peer_eq(&a->dests[0].peer, src));
        CHECK(a->dests[0].worker == req->worker);
        return;
    }
    CHECK(m != NULL);
    /* A row goes to the workers it releases: some bound ones; the rest to
     * every bound worker. */
    if (a->hdr.op == SR_OP_STEP_RESP)
        CHECK(a->n_dests >= 1 && a->n_dests <= (unsigned)__builtin_popcountll(m->bound & ~m->left));
    else
        CHECK(a->n_dests == (unsigned)__builtin_popcountll(m->bound & ~m->left));
    for (unsigned k = 0; k < a->n_dests; k++) {
        uint16_t w = a->dests[k].worker;

        CHECK(w < m->jp.n_workers && ((m->bound & ~m->left) >> w & 1u));
        CHECK(fz_peer_eq(&a->dests[k].peer, &m->peer[w]));
        CHECK(k == 0 || w > a->dests[k - 1].worker);
    }
}

/* A STEP's or STEP_PROBE's answer. */
static void check_step_answer(const job_model *m, const sr_hdr *req, const sr_pipe_action *a)
{
    const sr_hdr *h = &a->hdr;
    uint32_t elems = m->jp.elems_per_pkt;

    if (h->op == SR_OP_STEP_RESP) {
        /* The whole row the piece is in, to the workers it releases. */
        CHECK(req->op == SR_OP_STEP && req->count >= 1 && req->count <= elems && req->aux >= 1);
        CHECK(h->offset % elems == 0 && h->offset / elems == req->offset / elems);
        CHECK(h->count >= 1 && h->count <= elems);
        CHECK((uint64_t)h->offset + h->count <= m->jp.store_words);
        CHECK(req->offset / elems == (req->offset + req->count - 1u) / elems);
        CHECK(a->multicast && a->dest_seq);
        return;
    }
    /* STEP_HELD, STEP_NAK: the request echoed, header only, to its
     * sender; only a probe gets STEP_NAK. */
    CHECK(req->op == SR_OP_STEP_PROBE || (req->op == SR_OP_STEP && h->op == SR_OP_STEP_HELD));
    CHECK(!a->multicast && h->count == 0 && h->flags == 0 && h->status == 0);
    CHECK(h->seq == req->seq && h->offset == req->offset && h->offset < m->jp.store_words);
}

static void check_action(const job_model *m, const sr_hdr *req, const sr_peer *src,
                         const sr_pipe_action *a, unsigned idx)
{
    const sr_hdr *h = &a->hdr;
    uint32_t elems = m ? m->jp.elems_per_pkt : 0;

    CHECK(h->version == SR_WIRE_VERSION);
    CHECK(h->job == req->job);
    CHECK(h->count <= SR_WIRE_MAX_ELEMS && a->payload_len == 4u * (size_t)h->count);
    CHECK(h->slot <= SR_WIRE_SLOT_MASK && h->shadow <= 1);
    check_dests(m, req, src, a);
    fz_check_replicas(a);

    /* A second action is a RELEASE; a RELEASE is the second action, or a
     * STEP's only one (its piece waits, and completing the worker's step
     * moved the barrier's low). Only RELEASE, AR_RESULT and STEP_RESP go
     * to many. */
    CHECK(idx != 1 || h->op == SR_OP_RELEASE);
    CHECK(h->op != SR_OP_RELEASE || idx == 1 || (req->op == SR_OP_STEP && g_out->n == 1));
    CHECK(!a->multicast || h->op == SR_OP_RELEASE || h->op == SR_OP_AR_RESULT ||
          h->op == SR_OP_STEP_RESP);

    switch (h->op) {
    case SR_OP_ERROR:
        CHECK(h->count == 0 && h->aux == req->op);
        /* UNPROVEN: never here, the harness leaves the address proof off. */
        CHECK(h->status >= SR_ST_UNKNOWN_JOB && h->status <= SR_ST_DENIED);
        CHECK((h->status == SR_ST_UNKNOWN_JOB) == (m == NULL));
        CHECK(h->status != SR_ST_NOT_MEMBER || req->op == SR_OP_JOIN);
        CHECK(h->status != SR_ST_STALE || req->op == SR_OP_JOIN);
        /* The jobs have no admission token: only a malformed payload. */
        CHECK(h->status != SR_ST_DENIED ||
              (req->op == SR_OP_JOIN && req->count != 0 && req->count != SR_JOIN_REQ_WORDS));
        break;
    case SR_OP_JOIN_ACK: {
        sr_join_params jp;

        CHECK(req->op == SR_OP_JOIN && !a->multicast);
        CHECK(h->count == SR_JOIN_PARAMS_WORDS && h->seq == req->seq && h->aux == req->aux);
        sr_join_params_unpack(a->payload, &jp);
        CHECK(jp.n_workers == m->jp.n_workers && jp.elems_per_pkt == elems);
        CHECK(jp.pool_slots == m->jp.pool_slots && jp.store_capacity == m->jp.store_words);
        break;
    }
    case SR_OP_AR_RESULT:
        CHECK(req->op == SR_OP_AR_DATA);
        CHECK(h->count <= elems && h->slot < m->jp.pool_slots);
        /* A round completes only when every worker contributed, and each
         * contribution needs a binding. */
        CHECK(!a->multicast || a->n_dests == m->jp.n_workers);
        CHECK(a->multicast || (h->slot == req->slot && h->shadow == req->shadow));
        break;
    case SR_OP_AR_HELD:
    case SR_OP_AR_NAK:
        /* The request echoed, header only, to its sender: never larger
         * than the request. Only a probe gets AR_NAK. */
        CHECK(req->op == SR_OP_AR_PROBE || (req->op == SR_OP_AR_DATA && h->op == SR_OP_AR_HELD));
        CHECK(!a->multicast && h->count == 0 && h->flags == 0 && h->status == 0);
        CHECK(h->seq == req->seq && h->slot == req->slot && h->shadow == req->shadow);
        CHECK(h->offset == req->offset && h->exp == req->exp && h->aux == req->aux);
        CHECK(h->slot < m->jp.pool_slots && req->count <= elems);
        break;
    case SR_OP_PUSH_ACK:
        CHECK(req->op == SR_OP_PUSH && h->count == 0 && h->aux <= 1);
        CHECK(h->seq == req->seq && h->offset == req->offset);
        CHECK(req->count >= 1 && req->count <= elems);
        CHECK((uint64_t)req->offset + req->count <= m->jp.store_words);
        CHECK(req->offset / elems == (req->offset + req->count - 1u) / elems);
        break;
    case SR_OP_PULL_RESP:
        CHECK(req->op == SR_OP_PULL && h->seq == req->seq && h->offset == req->offset);
        CHECK(h->count == req->aux && h->count >= 1 && h->count <= elems);
        CHECK((uint64_t)h->offset + h->count <= m->jp.store_words);
        CHECK(h->offset / elems == (h->offset + h->count - 1u) / elems);
        break;
    case SR_OP_PROCEED:
    case SR_OP_HOLD: {
        uint32_t mode = sr_get_be32(a->payload), s = sr_get_be32(a->payload + 4);

        CHECK(req->op == SR_OP_CLOCK && h->seq == req->seq && h->count == SR_SYNC_WORDS);
        CHECK(mode <= SR_SYNC_ASP && s == applied_s(m, mode, s) && s <= m->jp.ring - 2u);
        /* aux = low, offset = high, after the CLOCK was recorded. */
        CHECK(h->offset - h->aux <= m->jp.ring);
        CHECK((h->op == SR_OP_PROCEED) == sr_barrier_released(req->seq, s, h->aux));
        break;
    }
    case SR_OP_RELEASE:
        CHECK((req->op == SR_OP_CLOCK || req->op == SR_OP_STEP) && h->count == 0 &&
              h->seq == h->aux && a->multicast);
        /* A CLOCK's answer before it reports the same low and high. */
        CHECK(req->op == SR_OP_STEP ||
              (g_out->act[0].hdr.aux == h->aux && g_out->act[0].hdr.offset == h->offset));
        break;
    case SR_OP_STEP_RESP:
    case SR_OP_STEP_HELD:
    case SR_OP_STEP_NAK:
        check_step_answer(m, req, a);
        break;
    default:
        CHECK(!"an op the switch never sends");
    }
}

/* ---- steps --------------------------------------------------------------------- */

static void step_msg(unsigned k, const uint8_t *bytes, size_t len)
{
    sr_peer src = {FZ_PEER_IP(k), FZ_PEER_PORT(k)};
    sr_pipe_counters before, after;
    sr_pipe_job_counters jb, ja;
    uint64_t copies = 0;
    uint8_t *msg = malloc(len ? len : 1);
    job_model *m;
    sr_hdr req;
    int pr, was_member, left_again;

    CHECK(msg != NULL);
    if (len)
        memcpy(msg, bytes, len);
    pr = sr_msg_parse(msg, len, &req, NULL);
    m = pr == SR_PARSE_OK ? model_of(req.job) : NULL;
    was_member = m && member(m, req.worker, &src);
    /* A second LEAVE of a worker that already left (the library sends
     * two) is neither a member's request nor a stranger's. */
    left_again = m && req.op == SR_OP_LEAVE && req.worker < m->jp.n_workers &&
                 (m->left >> req.worker & 1u) && fz_peer_eq(&m->peer[req.worker], &src) &&
                 m->token[req.worker] == req.seq;
    if (m)
        CHECK(sr_pipe_job_counters_get(g_pipe, m->id, &jb) == 0);
    sr_pipe_counters_get(g_pipe, &before);

    g_out->n = 0xdeadu;
    sr_pipe_process(g_pipe, &src, msg, len, g_out);
    free(msg);

    sr_pipe_counters_get(g_pipe, &after);
    CHECK(g_out->n <= SR_PIPE_MAX_ACTIONS);
    for (unsigned i = 0; i < g_out->n; i++)
        copies += g_out->act[i].n_dests;
    CHECK(after.rx_total == before.rx_total + 1);
    CHECK(after.tx_total == before.tx_total + copies);
    if (pr != SR_PARSE_OK) {
        CHECK(g_out->n == 0);
        CHECK(after.rejected[-pr] == before.rejected[-pr] + 1);
        return;
    }
    if (!fz_is_request(req.op)) {
        CHECK(g_out->n == 0);
        CHECK(after.answers_dropped == before.answers_dropped + 1);
        return;
    }
    if (!m) {
        CHECK(g_out->n == 1 && after.unknown_job == before.unknown_job + 1);
        check_action(NULL, &req, &src, &g_out->act[0], 0);
        return;
    }

    CHECK(sr_pipe_job_counters_get(g_pipe, m->id, &ja) == 0);
    CHECK(ja.rx == jb.rx + 1 && ja.tx == jb.tx + copies);
    /* Isolation: only JOIN answers anyone but a bound worker at its
     * address. */
    if (req.op != SR_OP_JOIN && !was_member) {
        CHECK(g_out->n == 0);
        CHECK(ja.dropped_unbound == jb.dropped_unbound + (left_again ? 0 : 1));
    }
    if (req.op == SR_OP_JOIN && req.worker < m->jp.n_workers && req.aux != m->nonce &&
        (req.count == 0 || req.count == SR_JOIN_REQ_WORDS)) {
        /* A new incarnation binds the joiner (memory permitting), but only
         * once every worker of the current one has left. */
        CHECK(g_out->n == 1);
        if (m->bound & ~m->left)
            CHECK(g_out->act[0].hdr.op == SR_OP_ERROR &&
                  g_out->act[0].hdr.status == SR_ST_JOB_IN_USE);
        else
            CHECK(g_out->act[0].hdr.op == SR_OP_JOIN_ACK);
    }
    if (req.op == SR_OP_LEAVE) {
        CHECK(g_out->n == 0);
        if (was_member && m->token[req.worker] == req.seq)
            m->left |= UINT64_C(1) << req.worker;
    }
    for (unsigned i = 0; i < g_out->n; i++)
        check_action(m, &req, &src, &g_out->act[i], i);

    if (g_out->n == 1 && g_out->act[0].hdr.op == SR_OP_JOIN_ACK) {
        uint16_t w = req.worker;

        if (g_out->act[0].hdr.aux != m->nonce) {
            m->nonce = g_out->act[0].hdr.aux;
            m->bound = 0;
            m->left = 0;
            CHECK(ja.resets == jb.resets + 1);
        }
        if (m->bound >> w & 1u) {
            CHECK(fz_peer_eq(&m->peer[w], &src)); /* bindings never move */
        } else {
            m->bound |= UINT64_C(1) << w;
            m->peer[w] = src;
            m->token[w] = req.seq;
        }
    }
    check_info(m);
    if (req.op == SR_OP_CLOCK || req.op == SR_OP_STEP || req.op == SR_OP_JOIN)
        check_sync(m);
}

/* A policy change (record layout in fuzz_pipeline.h). */
static void step_policy(const uint8_t *bytes, size_t len)
{
    uint8_t c[FZ_CTL_LEN] = {0};
    const job_model *m;
    sr_pipe_sync_state before, after;
    enum sr_sync_mode mode;
    uint32_t s, from, next, eff = 0xdeadbeefu;
    int rc;

    memcpy(c, bytes, len < sizeof c ? len : sizeof c);
    m = (c[0] & 1u) ? &g_jobs[1] : &g_jobs[0];
    mode = (enum sr_sync_mode)(c[1] & 3u); /* 3: not a mode */
    s = c[2];
    CHECK(sr_pipe_sync_get(g_pipe, m->id, &before) == 0);
    from = c[4] ? sr_get_be32(c + 5) : before.low + (uint32_t)(int32_t)(int8_t)c[3];
    next = before.high + 1u;

    rc = sr_pipe_set_policy(g_pipe, m->id, mode, s, from, &eff);
    CHECK(sr_pipe_sync_get(g_pipe, m->id, &after) == 0);
    CHECK(after.low == before.low && after.high == before.high);
    if (mode > SR_SYNC_ASP)
        CHECK(rc == -EINVAL);
    else if (mode == SR_SYNC_SSP && s > m->jp.ring - 2u)
        CHECK(rc == -ERANGE);
    if (rc == 0) {
        /* E = max(want_from, high + 1), serially. */
        CHECK(eff == ((int32_t)(from - next) > 0 ? from : next));
        if (eff == next)
            CHECK(after.mode == mode && after.s == applied_s(m, mode, s));
    } else {
        CHECK(rc == -EINVAL || rc == -ERANGE || rc == -ENOSPC);
        CHECK(eff == 0xdeadbeefu);
        /* Nothing changes on error. */
        CHECK(after.n_rules == before.n_rules && after.mode == before.mode &&
              after.s == before.s);
        for (unsigned i = 0; i < after.n_rules; i++) {
            const sr_barrier_range *x = &after.rules[i], *y = &before.rules[i];

            CHECK(x->from == y->from && x->open == y->open && x->mode == y->mode &&
                  x->s == y->s && (x->open || x->to == y->to));
        }
    }
    check_sync(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fixture_reset();
    for (unsigned n = 0; size >= FZ_REC_HDR && n < FZ_MAX_RECORDS; n++) {
        uint8_t kind = data[0];
        size_t len = sr_get_be16(data + 1);

        data += FZ_REC_HDR;
        size -= FZ_REC_HDR;
        if (len > size)
            len = size;
        if (kind & FZ_REC_CTL)
            step_policy(data, len);
        else
            step_msg(kind % FZ_NPEERS, data, len);
        data += len;
        size -= len;
    }
    return 0;
}
