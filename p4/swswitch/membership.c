/* SPDX-License-Identifier: Apache-2.0 */
/*
 * membership.c - JOIN, LEAVE and new incarnations: the Membership control
 * of p4/include/membership.p4 (whose binding check of every other request
 * is sr_svc_worker_ok, services.c).
 *
 * A JOIN must carry the job's admission token (sr_join_req; a job added
 * with token 0 admits any). State per job: the incarnation nonce, the bound and left bitmaps, and per
 * worker the address it joined from and the context token (JOIN's seq) of
 * its binding. Bindings never move within an incarnation: a worker whose
 * context was re-created, or who comes from another address, must wait for
 * a new incarnation (a JOIN with another nonce once nobody is bound, or the
 * operator's reset).
 *
 * Where the P4 program differs: its worker ids are fixed by worker_table
 * (the job file), so it checks a JOIN's id against the source instead of
 * remembering the address; and one packet cannot clear its slot, store and
 * ring registers, which sr_membership_renew here clears: the ring at once
 * (R entries at most), the slots and the store lazily, by incarnation
 * tags (epoch.c), so a new incarnation costs the same whatever their size.
 */
#include <errno.h>
#include <string.h>

#include "controls.h"

_Static_assert(SR_JOIN_PARAMS_WORDS * 4 <= SR_WIRE_MAX_PAYLOAD, "JOIN_ACK payload fits");

int sr_membership_renew(sr_pipe_job *j)
{
    /* The only step that can fail comes first. */
    if (sr_barrier_job_renew(j) < 0)
        return -ENOMEM;
    /* The slots and the store are cleared lazily (epoch.c): a new
     * incarnation costs the same whatever their size. */
    sr_epoch_next(j);
    j->bound = 0;
    j->left = 0;
    j->proven = 0;
    memset(j->peer, 0, sizeof j->peer);
    memset(j->token, 0, sizeof j->token);
    memset(j->step_n, 0, sizeof j->step_n);
    return 0;
}

/* ---- address proof: SipHash-2-4 (Aumasson and Bernstein) ------------------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                                  \
        v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                                     \
        v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                                     \
        v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                                  \
    } while (0)

/* SipHash-2-4 of n 64-bit words (a message of 8n bytes, little-endian words). */
static uint64_t siphash(const uint64_t key[2], const uint64_t *m, size_t n)
{
    uint64_t v0 = key[0] ^ UINT64_C(0x736f6d6570736575);
    uint64_t v1 = key[1] ^ UINT64_C(0x646f72616e646f6d);
    uint64_t v2 = key[0] ^ UINT64_C(0x6c7967656e657261);
    uint64_t v3 = key[1] ^ UINT64_C(0x7465646279746573);
    uint64_t b = (uint64_t)(8 * n) << 56;

    for (size_t i = 0; i < n; i++) {
        v3 ^= m[i];
        SIPROUND;
        SIPROUND;
        v0 ^= m[i];
    }
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* The cookie of worker w's binding to src: never 0 (0 means proven). */
static uint32_t cookie(const sr_pipe *p, const sr_pipe_job *j, uint16_t w, const sr_peer *src)
{
    uint64_t m[3] = {(uint64_t)j->id << 48 | (uint64_t)w << 32 | j->nonce,
                     (uint64_t)j->token[w] << 32 | src->ip, src->port};
    uint32_t c = (uint32_t)siphash(p->key, m, 3);

    return c ? c : 1;
}

int sr_membership_unproven(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const sr_peer *src)
{
    if (!p->proof || !sr_svc_worker_ok(j, h->worker, src) ||
        (j->proven & (UINT64_C(1) << h->worker)))
        return 0;
    j->c.unproven++;
    return 1;
}

/* ---- JOIN and LEAVE ------------------------------------------------------------ */

/* JOIN_ACK: the binding's nonce and token, its cookie while its address is
 * not proven, the job's parameters as payload. */
static void join_ack(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                     sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);
    sr_join_params jp;

    if (!a)
        return;
    a->hdr.op = SR_OP_JOIN_ACK;
    a->hdr.job = j->id;
    a->hdr.worker = h->worker;
    a->hdr.seq = h->seq;
    a->hdr.aux = j->nonce;
    a->hdr.flags = j->params.whole_rows || j->params.tna_model ? SR_FLAG_WHOLE_ROWS : 0;
    a->hdr.status = j->params.fallback ? j->join_win : 0;
    if (p->proof && !(j->proven & (UINT64_C(1) << h->worker)))
        a->hdr.offset = cookie(p, j, h->worker, src);
    a->hdr.count = SR_JOIN_PARAMS_WORDS;
    jp.n_workers = j->n;
    jp.elems_per_pkt = j->elems;
    jp.pool_slots = j->slots;
    jp.store_capacity = j->store_words;
    sr_join_params_pack(a->payload, &jp);
    a->payload_len = SR_JOIN_PARAMS_WORDS * 4u;
    sr_svc_unicast(a, src, h->worker);
    sr_svc_count_tx(p, j, a);
    j->c.joins++;
}

void sr_membership_join(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                        const uint8_t *payload, sr_pipe_out *out)
{
    uint16_t w = h->worker;
    uint64_t bit;
    sr_join_req rq;

    /* The admission token first, and one answer for every way of being
     * wrong (header only, so no larger than the JOIN): a sender without
     * the token learns nothing about the nonce, the bindings or the ids. */
    if (sr_join_req_unpack(payload, h->count, &rq) < 0 ||
        (j->params.token && rq.token != j->params.token)) {
        j->c.denied++;
        sr_svc_reply_error(p, j, src, h, SR_ST_DENIED, out);
        return;
    }
    /* Checked before the nonce so that a bad worker id cannot reset a job.
     * A leaf of a tree serves only its range of the tree's ids. */
    if (w >= j->n || w - j->params.local_first >= j->n_local) {
        sr_svc_reply_error(p, j, src, h, SR_ST_NOT_MEMBER, out);
        return;
    }
    /* Another nonce means the job was restarted: whatever the old
     * incarnation left in the slots or bindings is meaningless now. Only a
     * job with no live binding may be restarted from the network (workers
     * unbind with LEAVE when their context ends, an idle binding's lease
     * lapses unless a live worker waits for it, `reset JOB` on the control
     * socket unbinds everyone), so a stray or forged JOIN cannot wipe a
     * running job. */
    if (h->aux != j->nonce) {
        uint64_t lapsed = j->bound & ~j->left;

        if (sr_membership_live(p, j)) {
            j->c.in_use_refused++;
            sr_svc_reply_error(p, j, src, h, SR_ST_JOB_IN_USE, out);
            return;
        }
        /* Out of memory for the new barrier: drop the JOIN, the worker
         * retransmits it, and the old incarnation stays whole meanwhile. */
        if (sr_membership_renew(j) < 0)
            return;
        if (j->params.fallback) {
            sr_pool_job_release(p, j);
            j->join_win = sr_pool_join_window(p, j);
        }
        j->nonce = h->aux;
        j->c.lapsed += (uint64_t)__builtin_popcountll(lapsed);
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
        sr_svc_reply_error(p, j, src, h, SR_ST_STALE, out);
        return;
    } else if (!sr_svc_peer_eq(&j->peer[w], src)) {
        /* Same token from another address: a spoof or a NAT rebinding.
         * Bindings never move; the worker must rejoin under a new nonce. */
        sr_svc_reply_error(p, j, src, h, SR_ST_NOT_MEMBER, out);
        return;
    } else if (p->proof && rq.cookie && rq.cookie == cookie(p, j, w, src)) {
        j->proven |= bit; /* it got the JOIN_ACK at its address */
    }
    /* New binding, or the same JOIN retransmitted (its ACK was lost). A
     * leaf's JOIN_ACK comes from the root, which binds the worker too. */
    if (j->params.up)
        sr_up_join(p, j, h, payload, out);
    else
        join_ack(p, j, src, h, out);
    /* A shared job's fallback binds the worker too (at this address). */
    if (j->params.fallback)
        sr_fb_relay(p, j, h, payload, out);
}

/* Does j wait for worker bit in a call? An open allreduce round without
 * its contribution, or a barrier whose next clock (low + 1) lacks its
 * CLOCK while another worker reported beyond low. Reads the allreduce and
 * barrier state, writes none: O(slots), on a JOIN with a new nonce only. */
static int waits_for(const sr_pipe_job *j, uint64_t bit)
{
    const sr_barrier *b = &j->bar;

    if (b->low != b->high && !(b->ring[(b->low + 1) & b->mask] & bit))
        return 1;
    for (uint32_t c = 0; c < 2 * j->slots; c++)
        if (j->cnt[c] && !(j->seen[c] & bit) && sr_epoch_slot_current(j, c / 2))
            return 1;
    return 0;
}

uint64_t sr_membership_live(const sr_pipe *p, const sr_pipe_job *j)
{
    uint64_t in = j->bound & ~j->left, live = 0, idle = 0;

    for (uint32_t w = 0; w < j->n; w++) {
        uint64_t bit = UINT64_C(1) << w;

        if (!(in & bit))
            continue;
        if (!p->lease_ms || p->now_ms - j->seen_ms[w] < p->lease_ms)
            live |= bit;
        else
            idle |= bit;
    }
    /* An idle worker the job waits for stays while someone live waits. */
    for (uint32_t w = 0; live && idle && w < j->n; w++) {
        uint64_t bit = UINT64_C(1) << w;

        if ((idle & bit) && waits_for(j, bit))
            live |= bit;
    }
    return live;
}

void sr_membership_seen(const sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const sr_peer *src)
{
    uint16_t w = h->worker;

    /* A JOIN renews only as its binding's own (retransmitted) JOIN: a
     * refused one says nothing about the bound worker. */
    if (w < j->n && (j->bound & (UINT64_C(1) << w)) && sr_svc_peer_eq(&j->peer[w], src) &&
        (h->op != SR_OP_JOIN || (h->aux == j->nonce && h->seq == j->token[w])))
        j->seen_ms[w] = p->now_ms;
}

/* Its id stays taken in this incarnation (its slot state is gone, so it may
 * not join again), but it no longer keeps the job from being restarted. No
 * answer: the worker is gone, and a forged LEAVE that does not match the
 * binding changes nothing. */
int sr_membership_leave(sr_pipe_job *j, const sr_peer *src, const sr_hdr *h)
{
    uint64_t bit = h->worker < j->n ? UINT64_C(1) << h->worker : 0;

    if (!bit || !(j->bound & bit) || j->token[h->worker] != h->seq ||
        !sr_svc_peer_eq(&j->peer[h->worker], src)) {
        j->c.dropped_unbound++;
        return 0;
    }
    if (!(j->left & bit))
        j->c.leaves++;
    j->left |= bit;
    return 1;
}
