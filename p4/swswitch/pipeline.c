/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.c - job table, JOIN binding, SwitchML-style streaming allreduce
 * with a shadow copy, and the dispatch of every op (see pipeline.h for the
 * contract; the SSP store and barrier ops are in ssp.c).
 *
 * State is laid out the way the P4 program will hold it in registers:
 * - job table: exact match on the 16-bit job id;
 * - per job and worker: bound bit, peer address, context token;
 * - per job, slot and version v (a "cell", index 2 * slot + v): seen bitmap,
 *   contributor count mod N, round metadata, max-reduced next exponent and
 *   elems_per_pkt accumulators.
 * Each packet touches one job, one worker entry and at most the two cells
 * of one slot, and every decision is a compare on those values. The seen
 * bitmaps and counts of a slot's two versions are read together (see
 * do_ar_data), so a target with one access per register per packet keeps
 * each pair in one register entry, as SwitchML does with its bitmaps. The
 * SSP store and barrier state, and what a PUSH, PULL or CLOCK touches, is
 * described in ssp.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "pipeline_int.h"

_Static_assert(SR_WIRE_MAX_WORKERS <= 64, "one 64-bit seen/bound word per cell/job");
_Static_assert(SR_WIRE_MAX_WORKERS <= 255, "cnt is a uint8_t holding 0..n-1");
_Static_assert(SR_JOIN_PARAMS_WORDS * 4 <= SR_WIRE_MAX_PAYLOAD, "JOIN_ACK payload fits");

/* ---- job table ------------------------------------------------------------ */

static void job_free(sr_pipe_job *j)
{
    if (!j)
        return;
    free(j->seen);
    free(j->cnt);
    free(j->m_seq);
    free(j->m_off);
    free(j->m_total);
    free(j->m_count);
    free(j->m_exp);
    free(j->nexp);
    free(j->values);
    sr_pipei_ssp_free(j);
    free(j);
}

/* A new incarnation: every binding, every cell, the store, the push table
 * and the barrier back to the state of a freshly added job (the nonce is set
 * by the caller). Counters survive. Returns 0, or -ENOMEM when the barrier
 * could not be set up again; then nothing changed. */
static void do_leave(sr_pipe_job *j, const sr_peer *src, const sr_hdr *h);

static int job_reset(sr_pipe_job *j)
{
    size_t cells = 2u * (size_t)j->slots;

    if (sr_pipei_ssp_reset(j) < 0)
        return -ENOMEM;

    j->bound = 0;
    j->left = 0;
    memset(j->peer, 0, sizeof j->peer);
    memset(j->token, 0, sizeof j->token);
    memset(j->seen, 0, cells * sizeof *j->seen);
    memset(j->cnt, 0, cells * sizeof *j->cnt);
    memset(j->m_seq, 0, cells * sizeof *j->m_seq);
    memset(j->m_off, 0, cells * sizeof *j->m_off);
    memset(j->m_total, 0, cells * sizeof *j->m_total);
    memset(j->m_count, 0, cells * sizeof *j->m_count);
    memset(j->m_exp, 0, cells * sizeof *j->m_exp);
    memset(j->nexp, 0, cells * sizeof *j->nexp);
    memset(j->values, 0, cells * j->elems * sizeof *j->values);
    return 0;
}

int sr_pipe_create(sr_pipe **out)
{
    sr_pipe *p;

    if (!out)
        return -EINVAL;
    p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    *out = p;
    return 0;
}

void sr_pipe_destroy(sr_pipe **pp)
{
    sr_pipe *p;

    if (!pp || !*pp)
        return;
    p = *pp;
    for (size_t i = 0; i < SR_PIPE_NJOBS; i++)
        job_free(p->jobs[i]);
    free(p);
    *pp = NULL;
}

void sr_pipe_job_params_init(sr_pipe_job_params *jp)
{
    if (!jp)
        return;
    memset(jp, 0, sizeof *jp);
    jp->elems_per_pkt = SR_WIRE_DEF_ELEMS;
    jp->pool_slots = SR_WIRE_DEF_SLOTS;
    jp->store_words = SR_PIPE_STORE_DEFAULT;
    jp->ring = SR_BARRIER_RING_DEFAULT;
    jp->mode = SR_SYNC_BSP;
}

int sr_pipe_job_params_check(const sr_pipe_job_params *jp, const char **why)
{
    const char *msg = NULL;

    _Static_assert(SR_WIRE_MAX_WORKERS == 64 && SR_WIRE_MAX_ELEMS == 2048 &&
                       SR_WIRE_MAX_SLOTS == 32768 && SR_PIPE_STORE_MAX == 268435456 &&
                       SR_BARRIER_RING_MAX == 4096 && SR_PIPE_PUSH_TABLE_MAX == 268435456,
                   "the messages below spell out these limits");
    if (!jp)
        msg = "no parameters given";
    else if (jp->n_workers < 1 || jp->n_workers > SR_WIRE_MAX_WORKERS)
        msg = "workers must be in 1..64";
    else if (jp->elems_per_pkt < 1 || jp->elems_per_pkt > SR_WIRE_MAX_ELEMS)
        msg = "elements per packet must be in 1..2048";
    else if (jp->pool_slots < 1 || jp->pool_slots > SR_WIRE_MAX_SLOTS)
        msg = "slots must be in 1..32768";
    else if (jp->store_words > SR_PIPE_STORE_MAX)
        msg = "store words must be in 0..268435456 (2^28)";
    else if (jp->ring < 2 || jp->ring > SR_BARRIER_RING_MAX || (jp->ring & (jp->ring - 1)))
        msg = "ring must be a power of 2 in 2..4096";
    else if (jp->mode != SR_SYNC_BSP && jp->mode != SR_SYNC_SSP && jp->mode != SR_SYNC_ASP)
        msg = "policy must be bsp, ssp or asp";
    else if (jp->mode == SR_SYNC_SSP && jp->s > jp->ring - 2)
        msg = "ssp's s must be at most ring - 2";
    else if (((uint64_t)jp->store_words + jp->elems_per_pkt - 1) / jp->elems_per_pkt *
                 jp->n_workers >
             SR_PIPE_PUSH_TABLE_MAX)
        msg = "store rows (store words / elements per packet) times workers must be at most "
              "268435456 (2^28): use more elements per packet or a smaller store";
    if (why)
        *why = msg;
    return msg ? -EINVAL : 0;
}

int sr_pipe_job_add(sr_pipe *p, uint16_t job_id, const sr_pipe_job_params *jp)
{
    sr_pipe_job *j;
    size_t cells;

    if (!p || sr_pipe_job_params_check(jp, NULL))
        return -EINVAL;
    if (p->jobs[job_id])
        return -EEXIST;

    j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->id = job_id;
    j->n = jp->n_workers;
    j->elems = jp->elems_per_pkt;
    j->slots = jp->pool_slots;
    j->params = *jp;
    /* At the limits: 2 * 32768 * 2048 * 4 bytes = 512 MiB; no size_t overflow. */
    cells = 2u * (size_t)j->slots;
    j->seen = calloc(cells, sizeof *j->seen);
    j->cnt = calloc(cells, sizeof *j->cnt);
    j->m_seq = calloc(cells, sizeof *j->m_seq);
    j->m_off = calloc(cells, sizeof *j->m_off);
    j->m_total = calloc(cells, sizeof *j->m_total);
    j->m_count = calloc(cells, sizeof *j->m_count);
    j->m_exp = calloc(cells, sizeof *j->m_exp);
    j->nexp = calloc(cells, sizeof *j->nexp);
    j->values = calloc(cells * j->elems, sizeof *j->values);
    if (!j->seen || !j->cnt || !j->m_seq || !j->m_off || !j->m_total || !j->m_count ||
        !j->m_exp || !j->nexp || !j->values || sr_pipei_ssp_alloc(j) < 0) {
        job_free(j);
        return -ENOMEM;
    }
    p->jobs[job_id] = j;
    p->n_jobs++;
    return 0;
}

int sr_pipe_job_remove(sr_pipe *p, uint16_t job_id)
{
    if (!p || !p->jobs[job_id])
        return -ENOENT;
    job_free(p->jobs[job_id]);
    p->jobs[job_id] = NULL;
    p->n_jobs--;
    return 0;
}

unsigned sr_pipe_job_list(const sr_pipe *p, uint16_t *ids, unsigned cap)
{
    unsigned k = 0;

    if (!p)
        return 0;
    for (size_t i = 0; i < SR_PIPE_NJOBS && k < cap; i++)
        if (p->jobs[i])
            ids[k++] = (uint16_t)i;
    return p->n_jobs;
}

int sr_pipe_job_info_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_info *info)
{
    const sr_pipe_job *j;

    if (!p || !p->jobs[job_id])
        return -ENOENT;
    j = p->jobs[job_id];
    info->job = j->id;
    info->n_workers = j->n;
    info->elems_per_pkt = j->elems;
    info->pool_slots = j->slots;
    info->store_words = j->store_words;
    info->ring = j->params.ring;
    info->mode = j->params.mode;
    info->s = j->params.s;
    info->nonce = j->nonce;
    info->n_bound = (uint32_t)__builtin_popcountll(j->bound);
    return 0;
}

int sr_pipe_job_counters_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_counters *c)
{
    if (!p || !p->jobs[job_id])
        return -ENOENT;
    *c = p->jobs[job_id]->c;
    return 0;
}

void sr_pipe_counters_get(const sr_pipe *p, sr_pipe_counters *c)
{
    *c = p->c;
}

int sr_pipe_job_counters_format(char *buf, size_t cap, const sr_pipe_job_counters *c)
{
    static const struct {
        const char *name;
        size_t off;
    } fields[] = {
#define SR_PIPE_X_ENTRY(name) {#name, offsetof(sr_pipe_job_counters, name)},
        SR_PIPE_JOB_COUNTERS(SR_PIPE_X_ENTRY)
#undef SR_PIPE_X_ENTRY
    };
    size_t used = 0;

    if (cap > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        uint64_t v;
        int r;

        memcpy(&v, (const char *)c + fields[i].off, sizeof v);
        r = snprintf(used < cap ? buf + used : NULL, used < cap ? cap - used : 0,
                     "%s%s=%" PRIu64, i ? " " : "", fields[i].name, v);
        if (r < 0)
            return r;
        used += (size_t)r;
    }
    return (int)used;
}

/* ---- output actions --------------------------------------------------------- */

int sr_pipei_peer_eq(const sr_peer *a, const sr_peer *b)
{
    return a->ip == b->ip && a->port == b->port;
}

/* Isolation: a request counts only from a worker id bound in this
 * incarnation and from the address it joined from, so another tenant or a
 * spoofer can neither touch the job's state nor learn anything from it. */
int sr_pipei_worker_ok(const sr_pipe_job *j, uint16_t w, const sr_peer *src)
{
    return w < j->n && (j->bound & ~j->left & (UINT64_C(1) << w)) &&
           sr_pipei_peer_eq(&j->peer[w], src);
}

/* A new action with an empty header template; NULL if out is full (cannot
 * happen: no op emits more than SR_PIPE_MAX_ACTIONS). */
sr_pipe_action *sr_pipei_action_new(sr_pipe_out *out)
{
    sr_pipe_action *a;

    if (out->n >= SR_PIPE_MAX_ACTIONS)
        return NULL;
    a = &out->act[out->n++];
    a->multicast = 0;
    a->n_dests = 0;
    a->payload_len = 0;
    memset(&a->hdr, 0, sizeof a->hdr);
    a->hdr.version = SR_WIRE_VERSION;
    return a;
}

void sr_pipei_action_unicast(sr_pipe_action *a, const sr_peer *src, uint16_t worker)
{
    a->multicast = 0;
    a->n_dests = 1;
    a->dests[0].peer = *src;
    a->dests[0].worker = worker;
}

/* Every bound worker of j, each replica with its own worker id. */
void sr_pipei_action_multicast(sr_pipe_action *a, const sr_pipe_job *j)
{
    a->multicast = 1;
    a->n_dests = 0;
    for (uint32_t i = 0; i < j->n; i++) {
        if (!(j->bound & ~j->left & (UINT64_C(1) << i)))
            continue;
        a->dests[a->n_dests].peer = j->peer[i];
        a->dests[a->n_dests].worker = (uint16_t)i;
        a->n_dests++;
    }
}

/* Count the copies an action will send. */
void sr_pipei_count_tx(sr_pipe *p, sr_pipe_job *j, const sr_pipe_action *a)
{
    p->c.tx_total += a->n_dests;
    if (j)
        j->c.tx += a->n_dests;
}

/* ERROR for a refused request: the request's header echoed, with op ERROR,
 * status = the reason, aux = the refused op and no payload. */
void sr_pipei_reply_error(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *req,
                          unsigned status, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_pipei_action_new(out);

    if (!a)
        return;
    a->hdr = *req;
    a->hdr.version = SR_WIRE_VERSION;
    a->hdr.op = SR_OP_ERROR;
    a->hdr.status = (uint8_t)status;
    a->hdr.aux = req->op;
    a->hdr.count = 0;
    sr_pipei_action_unicast(a, src, req->worker);
    sr_pipei_count_tx(p, j, a);
    if (j)
        j->c.errors_sent++;
}

/* ---- JOIN ------------------------------------------------------------------- */

static void do_join(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                    sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint64_t bit;
    sr_pipe_action *a;
    sr_join_params jp;

    /* Checked before the nonce so that a bad worker id cannot reset a job. */
    if (w >= j->n) {
        sr_pipei_reply_error(p, j, src, h, SR_ST_NOT_MEMBER, out);
        return;
    }
    /* Another nonce means the job was restarted: whatever the old
     * incarnation left in the slots or bindings is meaningless now. Only a
     * job nobody is bound to may be restarted from the network (workers
     * unbind with LEAVE when their context ends; `reset JOB` on the control
     * socket unbinds everyone), so a stray or forged JOIN cannot wipe a
     * running job. */
    if (h->aux != j->nonce) {
        if (j->bound & ~j->left) {
            j->c.in_use_refused++;
            sr_pipei_reply_error(p, j, src, h, SR_ST_JOB_IN_USE, out);
            return;
        }
        /* Out of memory for the new barrier: drop the JOIN, the worker
         * retransmits it, and the old incarnation stays whole meanwhile. */
        if (job_reset(j) < 0)
            return;
        j->nonce = h->aux;
        j->c.resets++;
    }
    bit = UINT64_C(1) << w;
    if (!(j->bound & bit)) {
        j->bound |= bit;
        j->peer[w] = *src;
        j->token[w] = h->seq;
    } else if (j->token[w] != h->seq || (j->left & bit)) {
        /* The worker's context was re-created within this incarnation: its
         * view of the slots (versions, rounds in flight) is lost, so letting
         * it in would corrupt the others' rounds. */
        sr_pipei_reply_error(p, j, src, h, SR_ST_STALE, out);
        return;
    } else if (!sr_pipei_peer_eq(&j->peer[w], src)) {
        /* Same token from another address: a spoof or a NAT rebinding.
         * Bindings never move; the worker must rejoin under a new nonce. */
        sr_pipei_reply_error(p, j, src, h, SR_ST_NOT_MEMBER, out);
        return;
    }
    /* New binding, or the same JOIN retransmitted (its ACK was lost). */
    a = sr_pipei_action_new(out);
    if (!a)
        return;
    a->hdr.op = SR_OP_JOIN_ACK;
    a->hdr.job = j->id;
    a->hdr.worker = w;
    a->hdr.seq = h->seq;
    a->hdr.aux = j->nonce;
    a->hdr.count = SR_JOIN_PARAMS_WORDS;
    jp.n_workers = j->n;
    jp.elems_per_pkt = j->elems;
    jp.pool_slots = j->slots;
    jp.store_capacity = j->store_words;
    sr_join_params_pack(a->payload, &jp);
    a->payload_len = SR_JOIN_PARAMS_WORDS * 4u;
    sr_pipei_action_unicast(a, src, w);
    sr_pipei_count_tx(p, j, a);
    j->c.joins++;
}

/* ---- streaming allreduce ------------------------------------------------------ */

/* AR_RESULT of a cell: its metadata and sums. Replicas get their worker id
 * from the destinations. */
static void result_fill(sr_pipe_action *a, const sr_pipe_job *j, size_t cell, uint16_t worker)
{
    const uint32_t *v = j->values + cell * j->elems;
    uint16_t count = j->m_count[cell];

    a->hdr.op = SR_OP_AR_RESULT;
    a->hdr.job = j->id;
    a->hdr.worker = worker;
    a->hdr.seq = j->m_seq[cell];
    a->hdr.slot = (uint16_t)(cell >> 1);
    a->hdr.shadow = (uint8_t)(cell & 1u);
    a->hdr.count = count;
    a->hdr.exp = j->m_exp[cell];
    a->hdr.next_exp = j->nexp[cell];
    a->hdr.offset = j->m_off[cell];
    a->hdr.aux = j->m_total[cell];
    for (unsigned i = 0; i < count; i++)
        sr_put_be32(a->payload + 4u * i, v[i]);
    a->payload_len = 4u * (size_t)count;
}

/* Does the packet belong to the cell's round (or last completed round)? */
static int meta_eq(const sr_pipe_job *j, size_t cell, const sr_hdr *h)
{
    return h->seq == j->m_seq[cell] && h->offset == j->m_off[cell] &&
           h->count == j->m_count[cell] && h->exp == j->m_exp[cell] &&
           h->aux == j->m_total[cell];
}

/*
 * One contribution from worker w to slot s, version v (cell c = 2s + v).
 *
 * seen[c] records who contributed to the cell's current round, cnt[c] how
 * many (mod N, so 0 means "idle or complete"). The last contributor
 * completes the round and the sums go to every worker. The cell keeps its
 * sums until the slot's next round of the same version starts: that is the
 * shadow copy that answers retransmissions from workers whose result was
 * lost.
 *
 * Why this is correct (SwitchML's argument):
 * - A worker sends version v in slot s only after it received the result
 *   of the slot's previous round, which used version 1-v. So when w
 *   contributes to v it is done with that round of 1-v for good, and
 *   clearing its bit in seen[1-v] readies the cell for the slot's next
 *   round of 1-v; every worker clears its own bit that way before it can
 *   contribute there.
 * - The next round of v cannot start before the round of 1-v in between
 *   completes, which needs w's contribution, which w sends only after it
 *   has the result of v. So while w still lacks that result (its copy of
 *   the multicast was lost), its bit stays set in seen[v] and cnt[v] stays
 *   0: its retransmission of v finds both and is answered from the cell's
 *   sums, the shadow copy.
 *
 * Stale copies. The argument assumes a worker's packet never arrives after
 * the worker moved on, but a retransmission can be overtaken by the result
 * it asked for and by the worker's next packet (UDP does not keep order).
 * Taken as a new contribution it would open a bogus round and clear w's
 * bit in the other cell, so w's next duplicate there would count twice.
 * Two tests reject such copies; neither can fire on the first arrival of a
 * real contribution of w to v with w's bit clear:
 * - cnt[1-v] != 0: a round of 1-v after the one w has the result of cannot
 *   start before w contributed to v (second point above);
 * - cnt[v] == 0, w's bit set in seen[1-v] and the packet's metadata equal
 *   to the round cell v completed: w got that round's result before it
 *   contributed to 1-v, and a real new round is another piece (another
 *   seq or offset) than the round before it in the same cell.
 * A copy that arrives after three later rounds of its slot completed, at a
 * moment when no round of the slot is open, still passes for a new round:
 * as in SwitchML, the workers' retransmission timeout must exceed the
 * network's worst delay by that much.
 */
static void do_ar_data(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                       const uint8_t *payload, sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint64_t bit;
    size_t cell;
    uint32_t *v;
    sr_pipe_action *a;

    /* Isolation: no answer at all to a worker id that is not bound to this
     * address, so another tenant or a spoofer learns nothing. */
    if (!sr_pipei_worker_ok(j, w, src)) {
        j->c.dropped_unbound++;
        return;
    }
    if (h->slot >= j->slots) {
        sr_pipei_reply_error(p, j, src, h, SR_ST_BAD_SLOT, out);
        return;
    }
    if (h->count > j->elems) {
        sr_pipei_reply_error(p, j, src, h, SR_ST_BAD_COUNT, out);
        return;
    }

    bit = UINT64_C(1) << w;
    cell = 2u * (size_t)h->slot + h->shadow;
    v = j->values + cell * j->elems;

    /* A poisoned round answers everyone MISMATCH (see below), the workers
     * that contributed before the mismatch included: their resends learn it. */
    if (j->m_count[cell] == SR_WIRE_COUNT_POISON) {
        j->c.mismatches++;
        sr_pipei_reply_error(p, j, src, h, SR_ST_MISMATCH, out);
        return;
    }
    if (j->seen[cell] & bit) {
        if (j->cnt[cell] == 0) {
            /* Complete: the worker lost its result; resend the shadow copy. */
            a = sr_pipei_action_new(out);
            if (!a)
                return;
            result_fill(a, j, cell, w);
            sr_pipei_action_unicast(a, src, w);
            sr_pipei_count_tx(p, j, a);
            j->c.shadow_replies++;
        } else {
            /* Still waiting for others: the first copy already counted. */
            j->c.dup_dropped++;
        }
        return;
    }

    /* A stale copy from a worker that moved on (see above): it needs
     * nothing, and counting it would corrupt the slot. */
    if (j->cnt[cell ^ 1u] != 0 ||
        (j->cnt[cell] == 0 && (j->seen[cell ^ 1u] & bit) && meta_eq(j, cell, h))) {
        j->c.stale_dropped++;
        return;
    }
    /* A round in progress only takes contributions to the same piece of the
     * same call (same total count), quantized with the same exponent. The
     * workers disagree, so the round can never complete: it is poisoned,
     * and every contribution to it, earlier or later, is answered MISMATCH.
     * Every worker sends to slot 0 in the first round of every call, with
     * the call's total count, so workers that disagree on the count all
     * learn it there, before any of them can finish the call. The values
     * are left as they were; a job reset clears the mark. */
    if (j->cnt[cell] != 0 && !meta_eq(j, cell, h)) {
        j->m_count[cell] = SR_WIRE_COUNT_POISON;
        j->c.mismatches++;
        sr_pipei_reply_error(p, j, src, h, SR_ST_MISMATCH, out);
        return;
    }

    j->seen[cell] |= bit;
    j->seen[cell ^ 1u] &= ~bit; /* w is done with the other version (see above) */
    if (j->cnt[cell] == 0) {
        j->m_seq[cell] = h->seq;
        j->m_off[cell] = h->offset;
        j->m_total[cell] = h->aux;
        j->m_count[cell] = h->count;
        j->m_exp[cell] = h->exp;
        j->nexp[cell] = h->next_exp;
        for (unsigned i = 0; i < h->count; i++)
            v[i] = sr_get_be32(payload + 4u * i);
    } else {
        /* uint32_t: the int32 sums wrap modulo 2^32, as in the switch ALU. */
        for (unsigned i = 0; i < h->count; i++)
            v[i] += sr_get_be32(payload + 4u * i);
        if (h->next_exp > j->nexp[cell])
            j->nexp[cell] = h->next_exp;
    }
    j->cnt[cell] = (uint8_t)(j->cnt[cell] + 1u == j->n ? 0u : j->cnt[cell] + 1u);
    if (j->cnt[cell] != 0)
        return;

    /* Round complete: the sums go to every worker. All n are bound: each
     * contributed, which needs a binding, and only a reset (which also
     * clears this cell) removes bindings. */
    a = sr_pipei_action_new(out);
    if (!a)
        return;
    result_fill(a, j, cell, w);
    sr_pipei_action_multicast(a, j);
    sr_pipei_count_tx(p, j, a);
    j->c.results++;
}

/* ---- dispatch ----------------------------------------------------------------- */

void sr_pipe_process(sr_pipe *p, const sr_peer *src, const uint8_t *msg, size_t len,
                     sr_pipe_out *out)
{
    sr_hdr h;
    const uint8_t *payload = NULL;
    sr_pipe_job *j;
    int r;

    out->n = 0;
    p->c.rx_total++;
    r = sr_msg_parse(msg, len, &h, &payload);
    if (r != SR_PARSE_OK) {
        /* Index 0 collects results outside enum sr_parse_result. */
        p->c.rejected[r < 0 && r > -SR_PARSE_NREASONS ? -r : 0]++;
        return;
    }

    switch (h.op) {
    case SR_OP_JOIN:
    case SR_OP_LEAVE:
    case SR_OP_AR_DATA:
    case SR_OP_PUSH:
    case SR_OP_PULL:
    case SR_OP_CLOCK:
        break;
    default:
        /* Answers (JOIN_ACK, ERROR, AR_RESULT, ...) only flow switch to
         * worker; one arriving here is a loop or a confused peer, and
         * answering it could start a ping-pong. */
        p->c.answers_dropped++;
        return;
    }

    j = p->jobs[h.job];
    if (!j) {
        p->c.unknown_job++;
        sr_pipei_reply_error(p, NULL, src, &h, SR_ST_UNKNOWN_JOB, out);
        return;
    }
    j->c.rx++;
    switch (h.op) {
    case SR_OP_JOIN: do_join(p, j, src, &h, out); break;
    case SR_OP_LEAVE: do_leave(j, src, &h); break;
    case SR_OP_AR_DATA: do_ar_data(p, j, src, &h, payload, out); break;
    case SR_OP_PUSH: sr_pipei_do_push(p, j, src, &h, payload, out); break;
    case SR_OP_PULL: sr_pipei_do_pull(p, j, src, &h, out); break;
    default: sr_pipei_do_clock(p, j, src, &h, out); break;
    }
}

/* LEAVE: the worker's context ended. Its id stays taken in this
 * incarnation (its slot state is gone, so it may not join again), but it
 * no longer keeps the job from being restarted. No answer: the worker is
 * gone, and a forged LEAVE that does not match the binding changes nothing. */
static void do_leave(sr_pipe_job *j, const sr_peer *src, const sr_hdr *h)
{
    uint64_t bit = h->worker < j->n ? UINT64_C(1) << h->worker : 0;

    if (!bit || !(j->bound & bit) || j->token[h->worker] != h->seq ||
        !sr_pipei_peer_eq(&j->peer[h->worker], src)) {
        j->c.dropped_unbound++;
        return;
    }
    if (!(j->left & bit))
        j->c.leaves++;
    j->left |= bit;
}

int sr_pipe_job_reset(sr_pipe *p, uint16_t job_id)
{
    sr_pipe_job *j = p->jobs[job_id];

    if (!j)
        return -ENOENT;
    if (job_reset(j) < 0)
        return -ENOMEM;
    j->c.resets++;
    return 0;
}

void sr_pipe_replica_hdr(const sr_pipe_action *a, unsigned k, uint8_t *out)
{
    sr_hdr h = a->hdr;

    h.worker = a->dests[k].worker;
    sr_hdr_pack(out, &h);
}
