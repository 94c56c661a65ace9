/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pipeline_pool.c - the shared pool and the fallback (pool.c,
 * fallback.c): a switch with a pool and shared jobs, wired in memory to a
 * second real pipeline as the jobs' fallback aggregator. Every message
 * one sends to the other is processed by it; what goes to a worker lands
 * in that worker's inbox. The tests check where each round is summed,
 * that every result is exact, when blocks move (lease, take back at a
 * round boundary, idle return, static reservation) and the refusals.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job_spec.h"
#include "pipeline_helpers.h"

#define ELEMS 4u
#define NW 2u
#define INBOX 64u

static const sr_peer sw_addr = {0x7f000001u, 48200}; /* the shared switch */
static const sr_peer fb_addr = {0x7f000002u, 48300}; /* its fallback */

/* A message that reached a worker. */
typedef struct msg {
    sr_hdr h;
    int32_t v[ELEMS];
} msg;

typedef struct net {
    sr_pipe *fb;
    sr_pipe_out *fbout;
    msg inbox[8][NW][INBOX]; /* [job][worker] */
    unsigned n[8][NW];
    unsigned hops; /* messages between the two switches */
} net;

static int setup_pool(void **state)
{
    fx *f;
    net *t;

    if (setup(state))
        return -1;
    f = *state;
    t = calloc(1, sizeof *t);
    f->extra = t;
    if (!t || !(t->fbout = calloc(1, sizeof *t->fbout)) || sr_pipe_create(&t->fb))
        return -1;
    return 0;
}

static int teardown_pool(void **state)
{
    fx *f = *state;
    net *t = f->extra;

    sr_pipe_destroy(&t->fb);
    free(t->fbout);
    return teardown(state);
}

static void deliver(fx *f, sr_pipe *from, const sr_pipe_out *out);

static int peq(const sr_peer *a, const sr_peer *b)
{
    return a->ip == b->ip && a->port == b->port;
}

/* Process msg (len bytes) from src at `to`, then deliver what it sends. */
static void hop(fx *f, sr_pipe *to, const sr_peer *src, const uint8_t *m, size_t len)
{
    net *t = f->extra;
    sr_pipe_out *out = malloc(sizeof *out);

    assert_non_null(out);
    t->hops++;
    assert_true(t->hops < 100000);
    sr_pipe_process(to, src, m, len, out);
    deliver(f, to, out);
    free(out);
}

static void deliver(fx *f, sr_pipe *from, const sr_pipe_out *out)
{
    net *t = f->extra;
    uint8_t buf[SR_WIRE_MAX_MSG];

    for (unsigned i = 0; i < out->n; i++) {
        const sr_pipe_action *a = &out->act[i];

        for (unsigned k = 0; k < a->n_dests; k++) {
            const sr_peer *d = &a->dests[k].peer;
            size_t len = SR_WIRE_HDR_LEN + a->payload_len;
            const uint8_t *pl;
            sr_hdr h;

            sr_pipe_replica_hdr(a, k, buf);
            sr_pipe_payload_write(a, buf + SR_WIRE_HDR_LEN);
            if (from == f->p && peq(d, &fb_addr)) {
                hop(f, t->fb, &sw_addr, buf, len);
                continue;
            }
            if (from == t->fb) {
                assert_true(peq(d, &sw_addr));
                hop(f, f->p, &fb_addr, buf, len);
                continue;
            }
            assert_int_equal(sr_msg_parse(buf, len, &h, &pl), SR_PARSE_OK);
            assert_true(h.job < 8 && h.worker < NW);
            {
                sr_peer want = peer_of(h.job, h.worker);
                unsigned *n = &t->n[h.job][h.worker];

                expect_peer(d, &want);
                assert_true(*n < INBOX);
                t->inbox[h.job][h.worker][*n].h = h;
                for (unsigned e = 0; e < h.count && e < ELEMS; e++)
                    t->inbox[h.job][h.worker][*n].v[e] = (int32_t)sr_get_be32(pl + 4u * e);
                (*n)++;
            }
        }
    }
}

/* Worker w of job sends h (its payload vals) to the shared switch. */
static void send_w(fx *f, sr_hdr *h, unsigned w, const int32_t *vals)
{
    sr_peer src = peer_of(h->job, w);
    uint8_t m[SR_WIRE_MAX_MSG];

    h->worker = (uint16_t)w;
    sr_hdr_pack(m, h);
    for (unsigned i = 0; i < h->count; i++)
        sr_put_be32(m + SR_WIRE_HDR_LEN + 4u * i, vals ? (uint32_t)vals[i] : 0u);
    hop(f, f->p, &src, m, SR_WIRE_HDR_LEN + 4u * h->count);
}

/* The last message worker w of job got, which must exist; clears the box. */
static msg last(fx *f, unsigned job, unsigned w)
{
    net *t = f->extra;
    msg m;

    assert_true(t->n[job][w] > 0);
    m = t->inbox[job][w][t->n[job][w] - 1];
    t->n[job][w] = 0;
    return m;
}

/* Adds shared job `job` here and at the fallback, and joins its workers;
 * returns the window their JOIN_ACKs announced (the same for each). */
static unsigned add_shared(fx *f, uint16_t job, unsigned slots, uint8_t prio)
{
    net *t = f->extra;
    sr_pipe_job_params jp;
    int win = -1;

    sr_pipe_job_params_init(&jp);
    jp.n_workers = NW;
    jp.elems_per_pkt = ELEMS;
    jp.pool_slots = slots;
    jp.store_words = 0;
    assert_int_equal(sr_pipe_job_add(t->fb, job, &jp), 0);
    jp.fallback = 1;
    jp.fb_peer = fb_addr;
    jp.prio = prio;
    assert_int_equal(sr_pipe_job_add(f->p, job, &jp), 0);
    for (unsigned w = 0; w < NW; w++) {
        sr_hdr h = mk(SR_OP_JOIN, job, (uint16_t)w, 500u + w, 7);
        send_w(f, &h, w, NULL);
        msg m = last(f, job, w);

        assert_int_equal(m.h.op, SR_OP_JOIN_ACK);
        if (win >= 0)
            assert_int_equal(m.h.status, win);
        win = m.h.status;
    }
    return (unsigned)win;
}

/* One round of job in (slot, v), piece seq/off: worker w sends base + w + e
 * as value e; every worker must get the exact sums, marked as summed at
 * the fallback iff want_away, all with one window stamp (status), which
 * it returns. */
static unsigned round_of(fx *f, uint16_t job, uint16_t slot, uint8_t v, uint32_t seq, uint32_t off,
                     int base, int want_away)
{
    int32_t vals[ELEMS];
    int stamp = -1;

    for (unsigned w = 0; w < NW; w++) {
        sr_hdr h = ar_hdr(job, slot, v, seq, off, ELEMS);

        for (unsigned e = 0; e < ELEMS; e++)
            vals[e] = base + (int)w + (int)e;
        send_w(f, &h, w, vals);
    }
    for (unsigned w = 0; w < NW; w++) {
        msg m = last(f, job, w);

        assert_int_equal(m.h.op, SR_OP_AR_RESULT);
        assert_int_equal(m.h.seq, seq);
        assert_int_equal(m.h.offset, off);
        assert_int_equal(m.h.slot, slot);
        assert_int_equal(m.h.shadow, v);
        assert_int_equal(!!(m.h.flags & SR_FLAG_FALLBACK), want_away);
        for (unsigned e = 0; e < ELEMS; e++)
            assert_int_equal(m.v[e], (int32_t)NW * (base + (int)e) + (int32_t)(NW * (NW - 1) / 2));
        if (stamp >= 0)
            assert_int_equal(m.h.status, stamp);
        stamp = m.h.status;
    }
    return (unsigned)stamp;
}

static sr_pipe_pool_state pool(fx *f)
{
    sr_pipe_pool_state st;

    assert_int_equal(sr_pipe_pool_get(f->p, &st), 0);
    return st;
}

/* ---- tests ------------------------------------------------------------------- */

/* One block, two jobs: the first job's round takes it, the second's goes
 * to the fallback; both exact, the second's marked; the pool's view. */
static void test_lease_and_fallback(void **state)
{
    fx *f = *state;

    assert_int_equal(sr_pipe_set_pool(f->p, 1, ELEMS, SR_POOL_FIRST), 0);
    add_shared(f, 1, 1, 0);
    add_shared(f, 2, 1, 0);
    round_of(f, 1, 0, 0, 1, 0, 10, 0);
    round_of(f, 2, 0, 0, 1, 0, 20, 1);
    round_of(f, 1, 0, 1, 1, 4, 30, 0); /* the next round of job 1: the block again */
    round_of(f, 2, 0, 1, 1, 4, 40, 1);
    assert_int_equal(pool(f).free, 0);
    assert_int_equal(pool(f).peak, 1);
    assert_int_equal(info_of(f, 1).held, 1);
    assert_int_equal(info_of(f, 2).held, 0);
    assert_int_equal(jc(f, 2).fb_rounds, 2);
    assert_int_equal(jc(f, 1).fb_rounds, 0);
    assert_int_equal(jc(f, 2).fb_dropped, 0);
}

/* A lost result of a round at the fallback: the worker's resend follows
 * the round there and gets the fallback's shadow copy; a probe too. */
static void test_away_resend(void **state)
{
    fx *f = *state;
    net *t = f->extra;
    sr_hdr h, p;

    assert_int_equal(sr_pipe_set_pool(f->p, 1, ELEMS, SR_POOL_FIRST), 0);
    add_shared(f, 1, 1, 0);
    add_shared(f, 2, 1, 0);
    round_of(f, 1, 0, 0, 1, 0, 1, 0);
    round_of(f, 2, 0, 0, 1, 0, 5, 1);
    h = ar_hdr(2, 0, 0, 1, 0, ELEMS);
    send_w(f, &h, 1, (const int32_t[]){6, 7, 8, 9});
    {
        msg m = last(f, 2, 1);
        assert_int_equal(m.h.op, SR_OP_AR_RESULT);
        assert_true(m.h.flags & SR_FLAG_FALLBACK);
        assert_int_equal(m.v[0], 11);
    }
    p = ar_hdr(2, 0, 0, 1, 0, 0);
    p.op = SR_OP_AR_PROBE;
    send_w(f, &p, 0, NULL);
    assert_int_equal(last(f, 2, 0).h.op, SR_OP_AR_NAK); /* complete there: resend in full */
    assert_int_equal(t->n[1][0], 0);
}

/* Priority: a high job's round takes the block back at a round boundary.
 * The low job's next round goes to the fallback (the block still answers
 * its round before with the shadow copy), and once that one completes the
 * block is the high job's. */
static void test_preempt_at_round_boundary(void **state)
{
    fx *f = *state;
    sr_hdr h;

    assert_int_equal(sr_pipe_set_pool(f->p, 1, ELEMS, SR_POOL_PRIORITY), 0);
    add_shared(f, 1, 1, 0);
    add_shared(f, 2, 1, 5);
    round_of(f, 1, 0, 0, 1, 0, 1, 0);        /* low: here */
    round_of(f, 2, 0, 0, 1, 0, 2, 1);        /* high: away, and the block is claimed */
    assert_int_equal(jc(f, 1).preempted, 1);
    assert_int_equal(pool(f).revoking, 1);
    /* The low job's worker 1 lost round 1's result: the block's shadow. */
    h = ar_hdr(1, 0, 0, 1, 0, ELEMS);
    send_w(f, &h, 1, (const int32_t[]){2, 3, 4, 5});
    assert_int_equal(last(f, 1, 1).v[0], 3);
    round_of(f, 1, 0, 1, 1, 4, 3, 1);        /* low's next round: away (the handover) */
    assert_int_equal(info_of(f, 1).held, 0);
    assert_int_equal(pool(f).revoking, 0);
    round_of(f, 2, 0, 1, 1, 4, 4, 0);        /* high: here now */
    assert_int_equal(info_of(f, 2).held, 1);
    assert_int_equal(jc(f, 2).first_wait, 1);
    assert_int_equal(jc(f, 2).first_wait_others, 1); /* the low job's handover round */
    round_of(f, 1, 0, 0, 2, 0, 5, 1);        /* low: away, a round after one summed away */
    round_of(f, 2, 0, 0, 2, 0, 6, 0);
    round_of(f, 1, 0, 1, 2, 4, 7, 1);
    assert_int_equal(jc(f, 1).mismatches, 0);
    assert_int_equal(jc(f, 2).mismatches, 0);
}

/* The fallback sees a slot's rounds with gaps (the rounds in between were
 * summed in the switch): a round after a gap in the same version starts
 * a new round there, never answered with the old one's sums. */
static void test_fallback_gaps(void **state)
{
    fx *f = *state;

    assert_int_equal(sr_pipe_set_pool(f->p, 1, ELEMS, SR_POOL_FIRST), 0);
    assert_int_equal(sr_pipe_pool_set_idle(f->p, 10), 0);
    add_shared(f, 1, 1, 0);
    add_shared(f, 2, 1, 0);
    round_of(f, 2, 0, 0, 1, 0, 1, 0);        /* job 2 takes the block */
    round_of(f, 1, 0, 0, 1, 0, 2, 1);        /* job 1 away, version 0 */
    sr_pipe_tick(f->p, 100);                 /* job 2 idle: its block returns */
    assert_int_equal(jc(f, 2).returned, 1);
    round_of(f, 1, 0, 1, 1, 4, 3, 0);        /* job 1 here, version 1 */
    sr_pipe_tick(f->p, 200);                 /* job 1 idle too */
    round_of(f, 2, 0, 1, 1, 4, 4, 0);
    round_of(f, 1, 0, 0, 2, 0, 5, 1);        /* job 1 away, version 0 again: new there */
}

/* static: the first job's first round reserves every slot; the second
 * gets none for its whole run, even once blocks are free. */
static void test_static(void **state)
{
    fx *f = *state;

    assert_int_equal(sr_pipe_set_pool(f->p, 3, ELEMS, SR_POOL_STATIC), 0);
    add_shared(f, 1, 2, 0);
    add_shared(f, 2, 2, 0);
    round_of(f, 1, 0, 0, 1, 0, 1, 0);
    assert_int_equal(info_of(f, 1).held, 2);
    round_of(f, 2, 0, 0, 1, 0, 2, 1);
    round_of(f, 2, 1, 0, 1, 4, 2, 1);
    assert_int_equal(pool(f).free, 1);
    for (unsigned w = 0; w < NW; w++) {
        sr_hdr h = mk(SR_OP_LEAVE, 1, (uint16_t)w, 500u + w, 0);
        send_w(f, &h, w, NULL); /* relayed to the fallback too */
    }
    assert_int_equal(jc(f, 1).fb_relayed, 2u * NW);
    assert_int_equal(pool(f).free, 3); /* every worker of job 1 left */
    round_of(f, 2, 0, 1, 1, 8, 3, 1);  /* still none: its reservation was none */
    sr_pipe_pool_set_policy(f->p, SR_POOL_FIRST);
    round_of(f, 2, 0, 0, 2, 0, 4, 0);
}

/* Fair share: a job below blocks / active jobs takes one back from the
 * job furthest above, which keeps summing in it until its next call,
 * whose smaller window leaves the slot out: then the block moves. */
static void test_fair(void **state)
{
    fx *f = *state;

    assert_int_equal(sr_pipe_set_pool(f->p, 2, ELEMS, SR_POOL_FAIR), 0);
    add_shared(f, 1, 2, 0);
    add_shared(f, 2, 2, 0);
    round_of(f, 1, 0, 0, 1, 0, 1, 0);
    round_of(f, 1, 1, 0, 1, 4, 1, 0);
    assert_int_equal(info_of(f, 1).held, 2);
    round_of(f, 2, 0, 0, 1, 0, 2, 1);        /* below its share of 1: claims job 1's slot 1 */
    assert_int_equal(jc(f, 1).preempted, 1);
    assert_int_equal(pool(f).revoking, 1);
    /* Job 1's call goes on in both slots, here, announcing a window of 1. */
    assert_int_equal(round_of(f, 1, 0, 1, 1, 8, 3, 0), 1);
    assert_int_equal(round_of(f, 1, 1, 1, 1, 12, 3, 0), 1);
    assert_int_equal(pool(f).revoking, 1);
    round_of(f, 1, 0, 0, 2, 0, 5, 0);        /* its next call, in slot 0: slot 1's block moves */
    assert_int_equal(pool(f).revoking, 0);
    assert_int_equal(info_of(f, 1).held, 1);
    assert_int_equal(jc(f, 1).fb_rounds, 0); /* none of its rounds went to the fallback */
    round_of(f, 2, 0, 1, 1, 4, 4, 0);        /* job 2: here now */
    round_of(f, 2, 1, 0, 1, 8, 4, 1);        /* at its share: no more */
    assert_int_equal(jc(f, 1).preempted, 1);
}

/* Under fair share a result announces only the blocks the job has now
 * (kept, handed over, free) up to its share, and each completed round
 * claims one more until the job holds, is handed or claims its share: a
 * call never waits on a slot whose block is still claimed. */
static void test_fair_stamps(void **state)
{
    fx *f = *state;

    assert_int_equal(sr_pipe_set_pool(f->p, 4, ELEMS, SR_POOL_FAIR), 0);
    assert_int_equal(add_shared(f, 1, 4, 0), 0); /* alone: its share covers its slots */
    assert_int_equal(add_shared(f, 2, 4, 0), 2); /* both active: shares of 2 */
    assert_int_equal(round_of(f, 1, 0, 0, 1, 0, 1, 0), 2);
    round_of(f, 1, 1, 0, 1, 4, 1, 0);
    round_of(f, 1, 2, 0, 1, 8, 1, 0);
    assert_int_equal(round_of(f, 1, 3, 0, 1, 12, 1, 0), 0); /* keeps 4: all */
    /* Job 2 finds none: its round claims job 1's slot 3, its result slot
     * 2, and it announces every slot, as all its rounds go away. */
    assert_int_equal(round_of(f, 2, 0, 0, 1, 0, 2, 1), 0);
    assert_int_equal(jc(f, 1).preempted, 2);
    assert_int_equal(pool(f).revoking, 2);
    assert_int_equal(round_of(f, 2, 1, 0, 1, 4, 2, 1), 0); /* at its share: no third */
    assert_int_equal(jc(f, 1).preempted, 2);
    /* Job 1's next call, in slots 0 and 1: both blocks move to job 2. */
    assert_int_equal(round_of(f, 1, 0, 1, 2, 0, 3, 0), 2);
    assert_int_equal(pool(f).revoking, 0);
    assert_int_equal(round_of(f, 2, 0, 1, 2, 0, 4, 0), 2); /* keeps 1, handed 1 */
    assert_int_equal(round_of(f, 2, 1, 1, 2, 4, 4, 0), 2);
    assert_int_equal(info_of(f, 2).held, 2);
    assert_int_equal(jc(f, 1).fb_rounds, 0);
    assert_int_equal(jc(f, 2).mismatches, 0);
    /* A third job's first calls get a window of its share, 4 / 3. */
    assert_int_equal(add_shared(f, 3, 4, 0), 1);
    sr_pipe_pool_set_policy(f->p, SR_POOL_FIRST);
    assert_int_equal(add_shared(f, 4, 4, 0), 0); /* first come: every slot */
}

/* A block taken back from a slot its job's next call leaves out (a
 * smaller window) moves once a round of that call completes: no round in
 * the slot is needed, nor the idle time. */
static void test_settled(void **state)
{
    fx *f = *state;

    assert_int_equal(sr_pipe_set_pool(f->p, 2, ELEMS, SR_POOL_PRIORITY), 0);
    add_shared(f, 1, 2, 0);
    add_shared(f, 2, 2, 5);
    round_of(f, 1, 0, 0, 1, 0, 1, 0);        /* job 1's call 1 in both slots */
    round_of(f, 1, 1, 0, 1, 4, 1, 0);
    round_of(f, 2, 0, 0, 1, 0, 2, 1);        /* job 2: away, claims job 1's slot 1 */
    assert_int_equal(pool(f).revoking, 1);
    round_of(f, 1, 0, 1, 2, 0, 3, 0);        /* job 1's call 2, window 1: slot 0 */
    assert_int_equal(pool(f).revoking, 0);
    assert_int_equal(info_of(f, 1).held, 1);
    round_of(f, 2, 0, 1, 1, 4, 4, 0);        /* job 2's next round: here */
    assert_int_equal(info_of(f, 2).held, 1);
    assert_int_equal(jc(f, 2).first_wait, 1);
    round_of(f, 1, 0, 0, 3, 0, 5, 0);
    assert_int_equal(jc(f, 1).mismatches, 0);
    assert_int_equal(jc(f, 2).mismatches, 0);
}

/* The control plane takes a block back (sr_pipe_pool_take): under first
 * come, at the slot's next round, which is summed at the fallback; then
 * the block is free and the next round that asks takes it. At once for a
 * settled slot; refusals. */
static void test_take(void **state)
{
    fx *f = *state;

    assert_int_equal(sr_pipe_set_pool(f->p, 2, ELEMS, SR_POOL_FIRST), 0);
    add_shared(f, 1, 4, 0);
    assert_int_equal(sr_pipe_pool_take(f->p, 1, 0), -ENODATA);
    round_of(f, 1, 0, 0, 1, 0, 1, 0);
    round_of(f, 1, 1, 0, 1, 4, 2, 0);
    round_of(f, 1, 2, 0, 1, 8, 3, 1);        /* no block left */
    assert_int_equal(sr_pipe_pool_take(f->p, 1, 1), 0);
    assert_int_equal(sr_pipe_pool_take(f->p, 1, 1), -EALREADY);
    assert_int_equal(pool(f).revoking, 1);
    round_of(f, 1, 1, 1, 1, 12, 4, 1);       /* its next round: away, then the block goes */
    assert_int_equal(pool(f).revoking, 0);
    assert_int_equal(pool(f).free, 1);
    round_of(f, 1, 2, 1, 1, 16, 5, 0);       /* slot 2 asks first: here */
    assert_int_equal(info_of(f, 1).held, 2);
    round_of(f, 1, 0, 1, 2, 0, 6, 0);        /* call 2 settles slot 2's call 1... */
    round_of(f, 1, 2, 0, 2, 4, 7, 0);        /* ...not this one's */
    assert_int_equal(sr_pipe_pool_take(f->p, 1, 0), 0); /* call 2's round in it */
    assert_int_equal(sr_pipe_pool_take(f->p, 1, 9), -EINVAL);
    assert_int_equal(sr_pipe_pool_take(f->p, 2, 0), -ESRCH);
    round_of(f, 1, 0, 0, 3, 0, 8, 1);        /* call 3: slot 0's round away, then free */
    assert_int_equal(pool(f).free, 1);
    assert_int_equal(sr_pipe_pool_take(f->p, 1, 2), 1); /* call 2's rounds: settled, now */
    assert_int_equal(pool(f).free, 2);
    assert_int_equal(info_of(f, 1).held, 0);
    assert_int_equal(jc(f, 1).mismatches, 0);
}

/* Each result announces the window of the job's next call: the blocks it
 * holds or may get (first: held + free), 0 for all its slots; the same on
 * every worker's copy, from the switch and through the fallback; a lost
 * result's shadow copy carries it too. */
static void test_stamps(void **state)
{
    fx *f = *state;
    sr_hdr h;

    assert_int_equal(sr_pipe_set_pool(f->p, 3, ELEMS, SR_POOL_FIRST), 0);
    add_shared(f, 1, 4, 0);
    add_shared(f, 2, 4, 0);
    assert_int_equal(round_of(f, 1, 0, 0, 1, 0, 1, 0), 3); /* held 1 + free 2 */
    assert_int_equal(round_of(f, 2, 0, 0, 1, 0, 1, 0), 2); /* held 1 + free 1 */
    assert_int_equal(round_of(f, 2, 1, 0, 1, 4, 1, 0), 2); /* held 2 + free 0 */
    assert_int_equal(round_of(f, 2, 2, 0, 1, 8, 1, 1), 2); /* away, stamped as it passed */
    assert_int_equal(round_of(f, 1, 1, 0, 1, 4, 1, 1), 1);
    h = ar_hdr(2, 2, 0, 1, 8, ELEMS); /* a lost result, resent through the fallback */
    send_w(f, &h, 0, (const int32_t[]){1, 2, 3, 4});
    assert_int_equal(last(f, 2, 0).h.status, 2);
    h = ar_hdr(1, 0, 0, 1, 0, ELEMS); /* and from the switch's shadow copy */
    send_w(f, &h, 1, (const int32_t[]){2, 3, 4, 5});
    assert_int_equal(last(f, 1, 1).h.status, 3);
    assert_int_equal(sr_pipe_pool_set_policy(f->p, SR_POOL_STATIC), 0);
    assert_int_equal(round_of(f, 1, 0, 1, 2, 0, 1, 0), 0); /* static: every slot */
}

/* What is refused, and how. */
static void test_refusals(void **state)
{
    fx *f = *state;
    sr_pipe_job_params jp;
    uint16_t id;
    char why[SW_JOB_SPEC_WHY_MAX];
    sr_pipe_pool_state st;

    sr_pipe_job_params_init(&jp);
    jp.n_workers = 2;
    jp.elems_per_pkt = ELEMS;
    jp.fallback = 1;
    jp.fb_peer = fb_addr;
    assert_int_equal(sr_pipe_job_add(f->p, 1, &jp), -ENXIO); /* no pool */
    assert_int_equal(sr_pipe_pool_get(f->p, &st), -ENOENT);
    assert_int_equal(sr_pipe_pool_set_policy(f->p, SR_POOL_FAIR), -ENOENT);
    assert_int_equal(sr_pipe_set_pool(f->p, 0, ELEMS, SR_POOL_FIRST), -EINVAL);
    assert_int_equal(sr_pipe_set_pool(f->p, 1, 0, SR_POOL_FIRST), -EINVAL);
    assert_int_equal(sr_pipe_set_pool(f->p, 1u << 20, 2048, SR_POOL_FIRST), -EINVAL); /* 16 GiB */
    assert_int_equal(sr_pipe_set_pool(f->p, 1, ELEMS, (enum sr_pool_policy)7), -EINVAL);
    assert_int_equal(sr_pipe_set_pool(f->p, 4, ELEMS, SR_POOL_FIRST), 0);
    assert_int_equal(sr_pipe_set_pool(f->p, 4, ELEMS, SR_POOL_FIRST), -EEXIST);
    assert_int_equal(sr_pipe_pool_set_policy(f->p, (enum sr_pool_policy)7), -EINVAL);
    jp.elems_per_pkt = ELEMS + 1;
    assert_int_equal(sr_pipe_job_add(f->p, 1, &jp), -ENXIO); /* another block size */
    jp.elems_per_pkt = ELEMS;
    jp.up = 1;
    assert_int_equal(sr_pipe_job_add(f->p, 1, &jp), -EINVAL); /* a leaf cannot be shared */
    jp.up = 0;
    assert_int_equal(sr_pipe_job_add(f->p, 1, &jp), 0);
    assert_int_equal(sr_pipe_job_remove(f->p, 1), 0);
    assert_int_equal(pool(f).n_jobs, 0);

    assert_int_equal(sw_job_spec_parse("3:4:256:16,fallback=10.0.0.9:48300,prio=7", NULL, &id,
                                       &jp, why, sizeof why), 0);
    assert_int_equal(jp.fallback, 1);
    assert_int_equal(jp.fb_peer.ip, 0x0a000009u);
    assert_int_equal(jp.fb_peer.port, 48300);
    assert_int_equal(jp.prio, 7);
    assert_int_equal(sw_job_spec_parse("3:4,prio=1", NULL, &id, &jp, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "needs fallback"));
    assert_int_equal(sw_job_spec_parse("3:4,fallback=10.0.0.9", NULL, &id, &jp, why, sizeof why),
                     -EINVAL);
    assert_non_null(strstr(why, "ADDR:PORT"));
    assert_int_equal(sw_job_spec_parse("3:4,fallback=1.2.3.4:5,prio=256", NULL, &id, &jp, why,
                                       sizeof why), -EINVAL);
    assert_non_null(strstr(why, "0..255"));
    assert_int_equal(sw_job_spec_parse("3:4,fallback=1.2.3.4:5,up=1.2.3.4:6,upjob=4,member=0",
                                       NULL, &id, &jp, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "cannot be shared"));
    /* rows= (the store's whole rows; test_pipeline_ssp.c has its use). */
    assert_int_equal(sw_job_spec_parse("3:1,rows=some", NULL, &id, &jp, why, sizeof why),
                     -EINVAL);
    assert_string_equal(why, "rows 'some' in '3:1,rows=some' is not whole or any");
    assert_int_equal(sw_job_spec_parse("3:1,rows=any", NULL, &id, &jp, why, sizeof why), 0);
    assert_int_equal(jp.whole_rows, 0);
    assert_int_equal(sw_job_spec_parse("3:1:8,store=20,rows=whole", NULL, &id, &jp, why,
                                       sizeof why),
                     -EINVAL);
    assert_non_null(strstr(why, "whole rows"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lease_and_fallback, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_away_resend, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_preempt_at_round_boundary, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_fallback_gaps, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_static, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_fair, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_fair_stamps, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_settled, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_stamps, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_take, setup_pool, teardown_pool),
        cmocka_unit_test_setup_teardown(test_refusals, setup_pool, teardown_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
