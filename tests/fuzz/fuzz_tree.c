/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_tree.c - libFuzzer target for a leaf of an aggregation tree in the
 * software switch's pipeline (p4/swswitch: upstream.c, the leaf's side of
 * allreduce.c, membership.c and ingress.c; p4/README.md, "Trees").
 *
 * Each input runs on fresh jobs (fuzz_pipeline.h, "fuzz_tree.c's
 * fixture"; the pipelines are kept, emptied, see pipe_fresh): a leaf
 * whose job of the tree's 4 workers serves ids 1-2 and goes up, as member
 * K of the parent's job of the leaves, to a parent address (leases,
 * address proof and a root that does not fit by the input's first byte);
 * with FZ_TREE_CFG_ROOT, a real root pipeline at that address
 * (the root's job of the workers and its job of the leaves, as
 * test_pipeline_tree sets them up) and a network between the two that
 * the input drives (deliver, drop, reorder, duplicate). Records are
 * messages to the leaf from the workers' addresses, from strangers, from
 * the parent's address (forged answers of either of the parent's jobs)
 * and, with a root, messages to the root from another leaf. Every message
 * is copied to a heap buffer of exactly its length, so ASan catches a
 * read past it.
 *
 * After every step at the leaf (abort() on a violation):
 * - at most SR_PIPE_MAX_ACTIONS actions; each replica, packed with
 *   sr_pipe_replica_hdr and its payload, parses with sr_msg_parse to the
 *   template with the replica's worker;
 * - requests (JOIN, LEAVE, AR_DATA, AR_PROBE, PUSH, PULL, CLOCK) go only to
 *   the parent, and only as member K of the parent's job of the leaves
 *   (the leaf's JOIN while the parent has not acknowledged it in this
 *   incarnation, and then only partials, probes and markers; its LEAVE
 *   when its last worker left) or as a worker's own request relayed
 *   unchanged to the root's job: a JOIN the leaf accepted (which binds
 *   the worker here), or a LEAVE, PUSH, PULL or CLOCK of a worker bound at
 *   this leaf (ids 1-2) at its bound address;
 * - answers go back to the request's sender (only ERROR to anyone but a
 *   bound worker at its address, and never a JOIN_ACK: the root answers
 *   JOINs), or come from the parent's address: the root's answers relayed
 *   unchanged to the worker they name, if bound here, at its address (a
 *   JOIN_ACK whose parameters are not the leaf's becomes the ERROR that
 *   says why), and the parent's results multicast, as they came, to
 *   exactly the workers bound here;
 * - a model of the bindings, kept from the relayed JOINs and LEAVEs, and
 *   of the parent's acknowledgement agrees with sr_pipe_job_info_get;
 * - counters: rx_total moves by one, tx_total and the job's tx by the
 *   copies sent; up_relayed, down_relayed, up_results, results,
 *   up_partials, errors_sent and resets by what the step did; an answer
 *   from anyone but the parent is counted dropped and gets nothing.
 * And at the root: at most SR_PIPE_MAX_ACTIONS actions whose replicas
 * parse, and what it sends to the leaf's address names a worker of the
 * leaf's range (its job) or member K (its job of the leaves).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define NQ 32u        /* packets in flight between leaf and root */
#define NET_STEPS 64u /* deliveries per "deliver everything" */

typedef struct fz_pkt {
    uint8_t down; /* 1: root to leaf; 0: leaf to root */
    size_t len;
    uint8_t b[SR_WIRE_MAX_MSG];
} fz_pkt;


#define NSENT 4u /* the leaf's last messages to its parent, for FZ_TREE_CTL_ECHO */

static const sr_peer g_leaf_addr = {FZ_TREE_LEAF_IP, FZ_TREE_SW_PORT};
const sr_peer g_parent = {FZ_TREE_PARENT_IP, FZ_TREE_SW_PORT};
static const sr_peer g_phantom = {FZ_TREE_PHANTOM_IP, FZ_TREE_SW_PORT};

static sr_pipe *g_leaf, *g_root_pipe, *g_root; /* g_root: g_root_pipe, or NULL without one */
static sr_pipe_out *g_out;
static uint8_t g_cfg;
uint16_t g_k; /* the leaf's member id in the parent's job of the leaves */
static uint64_t g_now;
leaf_model g_m;
cell_model g_cells[2 * FZ_TREE_SLOTS];
static uint8_t g_sent[NSENT][SR_WIRE_MAX_MSG];
static size_t g_sent_len[NSENT];
static unsigned g_sent_n;
static fz_pkt g_q[NQ];
static unsigned g_qhead, g_qn;
static uint8_t g_rep[SR_WIRE_MAX_MSG];

static sr_peer src_of(unsigned k)
{
    sr_peer p = {FZ_PEER_IP(k), FZ_PEER_PORT(k)};

    if (k == FZ_TREE_SRC_PARENT)
        return g_parent;
    if (k == FZ_TREE_SRC_PHANTOM)
        return g_phantom;
    if (k >= FZ_TREE_SRC_STRANGER)
        p.ip = FZ_TREE_STRANGER_IP(k - FZ_TREE_SRC_STRANGER);
    return p;
}


/* ---- fixture ------------------------------------------------------------------ */

static void add_job(sr_pipe *p, uint16_t id, uint32_t n, uint32_t elems, uint32_t slots,
                    uint32_t store, uint64_t token, const sr_pipe_job_params *leaf)
{
    sr_pipe_job_params jp;

    if (leaf) {
        jp = *leaf;
    } else {
        sr_pipe_job_params_init(&jp);
        jp.n_workers = n;
        jp.elems_per_pkt = elems;
        jp.pool_slots = slots;
        jp.store_words = store;
        jp.ring = FZ_TREE_RING;
        jp.mode = SR_SYNC_SSP;
        jp.s = 1;
        jp.token = token;
    }
    CHECK(sr_pipe_job_add(p, id, &jp) == 0);
}

/* A pipeline as sr_pipe_create leaves it, but for its switch-wide counters
 * (the checks use their differences), with the input's clock, leases and
 * address proof. Each pipeline is created once: sr_pipe_destroy's walk of
 * the 65536-entry job table, instrumented, cost 9 of 10 executions; the
 * jobs (all of the state) are removed and added again per input. */
static void pipe_fresh(sr_pipe **p, uint8_t cfg)
{
    static const uint64_t key[2] = {0x0123456789abcdefu, 0xfedcba9876543210u};

    if (!*p)
        CHECK(sr_pipe_create(p) == 0);
    (void)sr_pipe_job_remove(*p, FZ_TREE_JOB);
    (void)sr_pipe_job_remove(*p, FZ_TREE_UPJOB);
    sr_pipe_tick(*p, g_now);
    sr_pipe_set_lease(*p, (cfg & FZ_TREE_CFG_LEASE) ? FZ_TREE_LEASE_MS
                                                    : SR_PIPE_LEASE_DEFAULT_MS);
    sr_pipe_set_proof(*p, (cfg & FZ_TREE_CFG_PROOF) ? key : NULL);
}

static void fixture_setup(uint8_t cfg)
{
    unsigned misfit = FZ_TREE_CFG_MISFIT(cfg);
    sr_pipe_job_params jp;

    g_cfg = cfg;
    g_k = (cfg & FZ_TREE_CFG_SOLO) ? 0 : FZ_TREE_MEMBER;
    g_now = 1000;
    memset(&g_m, 0, sizeof g_m);
    memset(g_cells, 0, sizeof g_cells);
    g_sent_n = 0;
    g_qhead = g_qn = 0;
    if (!g_out) {
        g_out = malloc(sizeof *g_out);
        CHECK(g_out != NULL);
    }

    pipe_fresh(&g_leaf, cfg);
    sr_pipe_job_params_init(&jp);
    jp.n_workers = FZ_TREE_N;
    jp.elems_per_pkt = FZ_TREE_ELEMS;
    jp.pool_slots = FZ_TREE_SLOTS;
    jp.store_words = 0;
    jp.ring = FZ_TREE_RING;
    jp.local_first = FZ_TREE_LOCAL_A;
    jp.local_n = FZ_TREE_LOCAL_B - FZ_TREE_LOCAL_A + 1u;
    jp.up = 1;
    jp.up_peer = g_parent;
    jp.up_job = FZ_TREE_UPJOB;
    jp.up_member = g_k;
    add_job(g_leaf, FZ_TREE_JOB, 0, 0, 0, 0, 0, &jp);

    g_root = NULL;
    if (!(cfg & FZ_TREE_CFG_ROOT))
        return;
    pipe_fresh(&g_root_pipe, cfg);
    g_root = g_root_pipe;
    add_job(g_root, FZ_TREE_JOB, FZ_TREE_N, FZ_TREE_ELEMS + (misfit == 1), FZ_TREE_SLOTS,
            FZ_TREE_STORE, 0, NULL);
    add_job(g_root, FZ_TREE_UPJOB, (cfg & FZ_TREE_CFG_SOLO) ? 1u : FZ_TREE_MEMBERS,
            FZ_TREE_ELEMS + (misfit == 2), FZ_TREE_SLOTS - (misfit == 3), 0,
            (cfg & FZ_TREE_CFG_TOKEN) ? FZ_TREE_TOKEN : 0, NULL);
}

/* ---- the network between leaf and root ----------------------------------------- */

static void net_push(uint8_t down, const uint8_t *b, size_t len)
{
    fz_pkt *p;

    if (!g_root || g_qn == NQ) /* no root, or the link is full: lost */
        return;
    p = &g_q[(g_qhead + g_qn++) % NQ];
    p->down = down;
    p->len = len;
    memcpy(p->b, b, len);
}

/* The replicas of the last sr_pipe_process that go to dst, onto the link. */
static void net_emit(const sr_peer *dst, uint8_t down)
{
    for (unsigned i = 0; i < g_out->n; i++) {
        const sr_pipe_action *a = &g_out->act[i];

        for (unsigned k = 0; k < a->n_dests; k++)
            if (fz_peer_eq(&a->dests[k].peer, dst))
                net_push(down, g_rep, fz_replica(a, k, g_rep));
    }
}


/* One step at the leaf: the message it was given and what the harness
 * knew before (the counters and the model), for the checks after it. */
typedef struct leaf_step {
    const sr_peer *src;
    sr_hdr req;
    const uint8_t *payload;
    int known, was_member, consumed;
    sr_pipe_job_counters jb, ja;
    sr_pipe_job_info info;
    leaf_model before;
    tally t;
} leaf_step;

/* The model after a step: a new incarnation, the parent's acknowledgement. */
static void leaf_step_model(leaf_step *s)
{
    const sr_hdr req = s->req;
    const uint8_t *payload = s->payload;

    /* A new incarnation: only a worker's JOIN with its nonce starts one. */
    if (s->info.nonce != g_m.nonce) {
        CHECK(s->known && req.op == SR_OP_JOIN && req.aux == s->info.nonce);
        CHECK(s->ja.resets == s->jb.resets + 1);
        g_m.nonce = s->info.nonce;
        g_m.bound = g_m.left = 0;
        memset(g_cells, 0, sizeof g_cells);
    } else {
        CHECK(s->ja.resets == s->jb.resets);
    }
    /* The parent's acknowledgement of the leaf's JOIN, in this incarnation,
     * for the leaf's packets and at least its pool, while a local worker
     * is live (after the last one left it is late). */
    if (s->consumed && req.job == FZ_TREE_UPJOB && req.op == SR_OP_JOIN_ACK &&
        req.seq == g_m.nonce && req.aux == g_m.nonce && req.count == SR_JOIN_PARAMS_WORDS &&
        live(&g_m)) {
        sr_join_params jp;

        sr_join_params_unpack(payload, &jp);
        if (jp.elems_per_pkt == FZ_TREE_ELEMS && jp.pool_slots >= FZ_TREE_SLOTS) {
            g_m.up = 1;
            g_m.up_nonce = g_m.nonce;
        }
    }
}

/* Each action of the step, by kind (fuzz_tree_check.c). */
static void leaf_step_actions(leaf_step *s)
{
    const sr_hdr req = s->req;
    const uint8_t *payload = s->payload;
    tally *t = &s->t;

    for (unsigned i = 0; i < g_out->n; i++) {
        const sr_pipe_action *a = &g_out->act[i];

        CHECK(a->hdr.version == SR_WIRE_VERSION && a->hdr.count <= SR_WIRE_MAX_ELEMS);
        CHECK(a->hdr.slot <= SR_WIRE_SLOT_MASK && a->hdr.shadow <= 1);
        if (a->multicast) {
            check_mcast(a, &req, payload, s->src, t);
            continue;
        }
        CHECK(a->n_dests == 1);
        if (fz_is_request(a->hdr.op))
            check_up(a, &req, payload, s->src, s->was_member, &s->before, t);
        else
            check_answer(a, &req, payload, s->src, s->was_member, s->known, &s->before, t);
    }
}

/* The step's sends and counters taken together. */
static void leaf_step_counts(leaf_step *s)
{
    const sr_hdr req = s->req;
    const sr_pipe_job_counters *ja = &s->ja, *jb = &s->jb;
    tally *t = &s->t;

    /* Exactly the sends the step calls for. The root's answer to a
     * worker bound here goes down, any other is dropped; of the parent's
     * answers to the leaf, only a result, a NAK and a MISMATCH about a
     * round move anything. */
    if (s->consumed && req.job == FZ_TREE_JOB) {
        int here = req.worker < FZ_TREE_N && (live(&s->before) >> req.worker & 1u);

        CHECK(g_out->n == (unsigned)here && t->down == (unsigned)here);
        CHECK(ja->up_dropped == jb->up_dropped + (!here || t->misfits));
    }
    if (s->consumed && req.job == FZ_TREE_UPJOB && req.op != SR_OP_AR_RESULT &&
        req.op != SR_OP_AR_NAK)
        CHECK(g_out->n == 0);
    if (t->relay_join)
        CHECK(t->self_join == !up_bound(&g_m));
    if (t->relay_leave)
        CHECK(t->self_leave == (up_bound(&s->before) && g_m.bound && !live(&g_m)));
    CHECK(ja->up_relayed == jb->up_relayed + t->relay_up);
    CHECK(ja->down_relayed == jb->down_relayed + t->down);
    CHECK(ja->up_results == jb->up_results + t->mcast && ja->results == jb->results + t->mcast);
    CHECK(ja->errors_sent == jb->errors_sent + t->errors + t->misfits);
    CHECK(ja->joins == jb->joins); /* the root answers the JOINs */
    if (ja->up_partials != jb->up_partials && t->markers) {
        /* A round of exponent SR_WIRE_EXP_NONE and count 0 completed:
         * its partial looks like a marker. */
        t->markers--;
        t->partials++;
    }
    CHECK(ja->up_resends >= jb->up_resends + t->probes + t->markers);
    CHECK(ja->up_resends <= jb->up_resends + t->probes + t->markers + t->self_join);
    CHECK(ja->up_partials <= jb->up_partials + 1);
    if (ja->up_partials != jb->up_partials) {
        /* A local round completed: its sum goes up with the round's
         * metadata, that of its last contribution (or, before the parent
         * acknowledged the leaf, the leaf's JOIN instead). */
        const sr_pipe_action *a = &g_out->act[0];
        cell_model *c = &g_cells[2u * req.slot + req.shadow];

        CHECK(s->was_member && req.op == SR_OP_AR_DATA && g_out->n == 1);
        memset(c, 0, sizeof *c);
        c->have = 1;
        if (a->hdr.op == SR_OP_AR_DATA) {
            CHECK(t->partials == 1 && a->hdr.count == req.count && a->hdr.seq == req.seq);
            CHECK(a->hdr.offset == req.offset && a->hdr.exp == req.exp && a->hdr.aux == req.aux);
            CHECK(a->hdr.next_exp >= req.next_exp);
            c->sent = 1;
            c->h = a->hdr;
            memcpy(c->payload, a->payload, a->payload_len);
        } else {
            CHECK(t->self_join == 1);
            c->h = req;
        }
    } else if (fz_is_request(req.op)) {
        CHECK(t->partials == 0); /* a worker's request sends a partial only so */
    }
    CHECK(s->info.n_bound == (uint32_t)__builtin_popcountll(g_m.bound));
    CHECK(s->info.nonce == g_m.nonce);
}

/* One message from src to the leaf, and every check after it. */
static void step_leaf(const sr_peer *src, const uint8_t *bytes, size_t len)
{
    uint8_t *msg = malloc(len ? len : 1);
    sr_pipe_counters sb, sa;
    leaf_step sp = {.src = src, .before = g_m};
    uint64_t copies = 0;
    int pr, is_req, from_parent;

    CHECK(msg != NULL);
    if (len)
        memcpy(msg, bytes, len);
    pr = sr_msg_parse(msg, len, &sp.req, &sp.payload);
    is_req = pr == SR_PARSE_OK && fz_is_request(sp.req.op);
    sp.known = is_req && sp.req.job == FZ_TREE_JOB;
    sp.was_member = sp.known && member(&g_m, sp.req.worker, src);
    from_parent = fz_peer_eq(src, &g_parent);
    sp.consumed = pr == SR_PARSE_OK && !is_req && from_parent &&
                  (sp.req.job == FZ_TREE_JOB ||
                   (sp.req.job == FZ_TREE_UPJOB && sp.req.worker == g_k));
    sr_pipe_counters_get(g_leaf, &sb);
    CHECK(sr_pipe_job_counters_get(g_leaf, FZ_TREE_JOB, &sp.jb) == 0);

    g_out->n = 0xdeadu;
    sr_pipe_process(g_leaf, src, msg, len, g_out);

    sr_pipe_counters_get(g_leaf, &sa);
    CHECK(sr_pipe_job_counters_get(g_leaf, FZ_TREE_JOB, &sp.ja) == 0);
    CHECK(sr_pipe_job_info_get(g_leaf, FZ_TREE_JOB, &sp.info) == 0);
    CHECK(g_out->n <= SR_PIPE_MAX_ACTIONS);
    for (unsigned i = 0; i < g_out->n; i++) {
        copies += g_out->act[i].n_dests;
        fz_check_replicas(&g_out->act[i]);
    }
    CHECK(sa.rx_total == sb.rx_total + 1);
    CHECK(sa.tx_total == sb.tx_total + copies);
    if (pr != SR_PARSE_OK) {
        CHECK(g_out->n == 0 && sa.rejected[-pr] == sb.rejected[-pr] + 1);
        goto out;
    }
    if (!is_req && !sp.consumed) {
        /* Not the parent, or about nothing of this leaf's. */
        CHECK(g_out->n == 0 && sa.answers_dropped == sb.answers_dropped + 1);
        CHECK(sp.ja.rx == sp.jb.rx);
        goto out;
    }
    CHECK(sa.answers_dropped == sb.answers_dropped);
    if (is_req && !sp.known) {
        CHECK(g_out->n == 1 && g_out->act[0].hdr.op == SR_OP_ERROR);
        CHECK(sa.unknown_job == sb.unknown_job + 1);
        CHECK(sp.ja.rx == sp.jb.rx && sp.ja.tx == sp.jb.tx);
    } else {
        CHECK(sp.ja.rx == sp.jb.rx + 1 && sp.ja.tx == sp.jb.tx + copies);
    }

    leaf_step_model(&sp);
    leaf_step_actions(&sp);
    leaf_step_counts(&sp);

out:
    for (unsigned i = 0; i < g_out->n; i++) {
        const sr_pipe_action *a = &g_out->act[i];

        if (!a->multicast && fz_peer_eq(&a->dests[0].peer, &g_parent)) {
            unsigned k = g_sent_n++ % NSENT;

            g_sent_len[k] = fz_replica(a, 0, g_sent[k]);
        }
    }
    net_emit(&g_parent, 0);
    free(msg);
}

/* ---- the root ------------------------------------------------------------------ */

static void step_root(const sr_peer *src, const uint8_t *bytes, size_t len)
{
    uint8_t *msg = malloc(len ? len : 1);
    sr_pipe_counters sb, sa;
    uint64_t copies = 0;

    CHECK(msg != NULL);
    if (len)
        memcpy(msg, bytes, len);
    sr_pipe_counters_get(g_root, &sb);
    g_out->n = 0xdeadu;
    sr_pipe_process(g_root, src, msg, len, g_out);
    free(msg);
    sr_pipe_counters_get(g_root, &sa);
    CHECK(g_out->n <= SR_PIPE_MAX_ACTIONS);
    for (unsigned i = 0; i < g_out->n; i++)
        copies += g_out->act[i].n_dests;
    CHECK(sa.rx_total == sb.rx_total + 1 && sa.tx_total == sb.tx_total + copies);
    for (unsigned i = 0; i < g_out->n; i++) {
        const sr_pipe_action *a = &g_out->act[i];

        fz_check_replicas(a);
        for (unsigned k = 0; k < a->n_dests; k++) {
            if (!fz_peer_eq(&a->dests[k].peer, &g_leaf_addr))
                continue;
            /* The root binds at the leaf's address only what the leaf
             * relayed: its workers, and itself as member K. */
            if (a->hdr.job == FZ_TREE_JOB)
                CHECK(local(a->dests[k].worker));
            else
                CHECK(a->hdr.job == FZ_TREE_UPJOB && a->dests[k].worker == g_k);
        }
    }
    net_emit(&g_leaf_addr, 1);
}

/* ---- steps --------------------------------------------------------------------- */

static void net_deliver(void)
{
    fz_pkt *p = &g_q[g_qhead];
    static fz_pkt cur;

    cur = *p;
    g_qhead = (g_qhead + 1) % NQ;
    g_qn--;
    if (cur.down)
        step_leaf(&g_parent, cur.b, cur.len);
    else
        step_root(&g_leaf_addr, cur.b, cur.len);
}

static void net_flush(void)
{
    for (unsigned n = 0; g_qn && n < NET_STEPS; n++)
        net_deliver();
}

static void step_net(const uint8_t *bytes, size_t len)
{
    fz_pkt *p = &g_q[g_qhead];

    if (!g_root || !g_qn || !len)
        return;
    switch (bytes[0] % FZ_TREE_NET_OPS) {
    case 0:
        net_deliver();
        break;
    case 1: /* lost */
        g_qhead = (g_qhead + 1) % NQ;
        g_qn--;
        break;
    case 2: /* overtaken by the rest */
        if (g_qn < NQ) {
            g_q[(g_qhead + g_qn) % NQ] = *p;
            g_qhead = (g_qhead + 1) % NQ;
        }
        break;
    case 3: /* duplicated */
        if (g_qn < NQ)
            g_q[(g_qhead + g_qn++) % NQ] = *p;
        break;
    default:
        net_flush();
    }
}

/* The parent's answer, forged, to one of the leaf's last messages to it:
 * bytes[0] picks the op (AR_NAK, AR_RESULT, AR_HELD, ERROR, JOIN_ACK),
 * bytes[1] varies it (the ERROR's status; an odd one: the AR_RESULT's
 * next_exp, a JOIN_ACK for other packets), bytes[2] the message (0: the
 * last). */
static void step_echo(const uint8_t *bytes, size_t len)
{
    uint8_t c[3] = {0}, m[SR_WIRE_MAX_MSG];
    const uint8_t *payload;
    unsigned k;
    sr_hdr h;

    if (!g_sent_n)
        return;
    memcpy(c, bytes, len < sizeof c ? len : sizeof c);
    k = (g_sent_n - 1u - c[2] % (g_sent_n < NSENT ? g_sent_n : NSENT)) % NSENT;
    CHECK(sr_msg_parse(g_sent[k], g_sent_len[k], &h, &payload) == SR_PARSE_OK);
    memcpy(m + SR_WIRE_HDR_LEN, payload, 4u * (size_t)h.count);
    switch (c[0] % 5u) {
    case 0:
        h.op = SR_OP_AR_NAK;
        h.count = 0;
        break;
    case 1:
        h.op = SR_OP_AR_RESULT;
        if (c[1] & 1u)
            h.next_exp = (int8_t)(c[1] >> 1);
        break;
    case 2:
        h.op = SR_OP_AR_HELD;
        h.count = 0;
        break;
    case 3:
        h.status = c[1] ? c[1] : SR_ST_MISMATCH;
        h.aux = h.op;
        h.op = SR_OP_ERROR;
        h.count = 0;
        break;
    default: {
        sr_join_params jp = {h.job == FZ_TREE_UPJOB ? FZ_TREE_MEMBERS : FZ_TREE_N,
                             FZ_TREE_ELEMS + (c[1] & 1u), FZ_TREE_SLOTS, FZ_TREE_STORE};

        h.op = SR_OP_JOIN_ACK;
        h.count = SR_JOIN_PARAMS_WORDS;
        sr_join_params_pack(m + SR_WIRE_HDR_LEN, &jp);
    }
    }
    sr_hdr_pack(m, &h);
    step_leaf(&g_parent, m, SR_WIRE_HDR_LEN + 4u * (size_t)h.count);
}

static void step_tick(const uint8_t *bytes, size_t len)
{
    g_now += len >= 2 ? sr_get_be16(bytes) : len ? bytes[0] : 1u;
    sr_pipe_tick(g_leaf, g_now);
    if (g_root)
        sr_pipe_tick(g_root, g_now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fixture_setup(size ? data[0] : 0);
    if (size) {
        data++;
        size--;
    }
    for (unsigned n = 0; size >= FZ_REC_HDR && n < FZ_MAX_RECORDS; n++) {
        uint8_t kind = data[0];
        size_t len = sr_get_be16(data + 1);
        unsigned k = kind & 7u;

        data += FZ_REC_HDR;
        size -= FZ_REC_HDR;
        if (len > size)
            len = size;
        if (kind & FZ_REC_CTL) {
            if ((kind & 3u) == FZ_TREE_CTL_NET)
                step_net(data, len);
            else if ((kind & 3u) == FZ_TREE_CTL_ECHO)
                step_echo(data, len);
            else
                step_tick(data, len);
        } else if (k == FZ_TREE_SRC_PHANTOM && g_root) {
            step_root(&g_phantom, data, len);
        } else {
            sr_peer src = src_of(k);

            step_leaf(&src, data, len);
        }
        if (g_cfg & FZ_TREE_CFG_FLUSH)
            net_flush();
        data += len;
        size -= len;
    }
    return 0;
}
