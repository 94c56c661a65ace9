/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.c - switch memory shared at run time: one pool of blocks (a slot's
 * two cells of accumulators each) leased to the shared jobs' slots as
 * their rounds start, returned when a job is idle or leaves, and taken
 * back by the policy (pipeline.h, enum sr_pool_policy) for a job that
 * has a better claim. A round that finds no block in its slot goes to the
 * job's fallback aggregator (fallback.c) and is exact there.
 *
 * Invariants:
 * - A block is in exactly one place: the free list, one job's spare list
 *   (taken back on its behalf, not in a slot yet), or one slot of one
 *   job (its blk[]). held counts a job's slots with a block.
 * - A slot gives its block up only when no worker can need the sums it
 *   keeps: after its next round, summed at the fallback, completed (the
 *   handover: every worker has the previous round's result before it
 *   sends the next), when the slot has had no packet for idle_ms and no
 *   round is open in it (a worker missing a result keeps resending or
 *   probing far more often), when every worker left, or with a new
 *   incarnation. A round open in the block is never cut: taking back is
 *   at a round boundary, and the round either completes here or is
 *   summed at the fallback from its first contribution on.
 * - The data path does O(1) work per packet, except taking a block back
 *   (a pass over the shared jobs and one over the victim's slots, for a
 *   round that finds no block while its job may claim one) and the idle
 *   sweep (sr_pool_tick, at most every idle_ms / 4, over the jobs, and
 *   over the slots of a job that is idle).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controls.h"

static const char *const policy_names[] = {"static", "first", "fair", "priority"};

const char *sr_pool_policy_name(enum sr_pool_policy policy)
{
    return (unsigned)policy < 4 ? policy_names[policy] : NULL;
}

int sr_pool_policy_parse(const char *s, enum sr_pool_policy *policy)
{
    for (unsigned i = 0; s && i < 4; i++)
        if (!strcasecmp(s, policy_names[i])) {
            *policy = (enum sr_pool_policy)i;
            return 0;
        }
    return -EINVAL;
}

int sr_pipe_set_pool(sr_pipe *p, uint32_t blocks, uint32_t elems, enum sr_pool_policy policy)
{
    sr_pool *pl = &p->pool;

    if (blocks < 1 || blocks > SR_POOL_MAX_BLOCKS || elems < 1 || elems > SR_WIRE_MAX_ELEMS ||
        (uint64_t)blocks * 2u * elems * sizeof(uint32_t) > (UINT64_C(1) << 30) ||
        !sr_pool_policy_name(policy))
        return -EINVAL;
    if (pl->blocks)
        return -EEXIST;
    pl->values = calloc((size_t)blocks * 2u * elems, sizeof *pl->values);
    pl->claim = malloc(blocks * sizeof *pl->claim);
    pl->next = malloc(blocks * sizeof *pl->next);
    if (!pl->values || !pl->claim || !pl->next) {
        sr_pool_destroy(p);
        return -ENOMEM;
    }
    for (uint32_t b = 0; b < blocks; b++) {
        pl->claim[b] = SR_POOL_NOJOB;
        pl->next[b] = b + 1 < blocks ? b + 1 : SR_POOL_NONE;
    }
    pl->free_head = 0;
    pl->n_free = blocks;
    pl->blocks = blocks;
    pl->elems = elems;
    pl->policy = policy;
    pl->idle_ms = SR_POOL_IDLE_DEFAULT_MS;
    return 0;
}

void sr_pool_destroy(sr_pipe *p)
{
    sr_pool *pl = &p->pool;

    free(pl->values);
    free(pl->claim);
    free(pl->next);
    memset(pl, 0, sizeof *pl);
}

int sr_pipe_pool_set_policy(sr_pipe *p, enum sr_pool_policy policy)
{
    if (!p->pool.blocks)
        return -ENOENT;
    if (!sr_pool_policy_name(policy))
        return -EINVAL;
    p->pool.policy = policy;
    return 0;
}

int sr_pipe_pool_set_idle(sr_pipe *p, uint64_t ms)
{
    if (!p->pool.blocks)
        return -ENOENT;
    p->pool.idle_ms = ms;
    return 0;
}

int sr_pipe_pool_get(const sr_pipe *p, sr_pipe_pool_state *st)
{
    const sr_pool *pl = &p->pool;

    if (!st)
        return -EINVAL;
    if (!pl->blocks)
        return -ENOENT;
    memset(st, 0, sizeof *st);
    st->blocks = pl->blocks;
    st->elems = pl->elems;
    st->policy = pl->policy;
    st->idle_ms = pl->idle_ms;
    st->free = pl->n_free;
    st->revoking = pl->revoking;
    st->peak = pl->peak;
    st->n_jobs = pl->n_jobs;
    st->grants = pl->grants;
    st->revokes = pl->revokes;
    st->returns = pl->returns;
    return 0;
}

/* ---- blocks --------------------------------------------------------------- */

uint32_t *sr_pool_cell(const sr_pipe *p, const sr_pipe_job *j, size_t cell)
{
    if (!j->params.fallback)
        return j->values + cell * j->elems;
    return p->pool.values + ((size_t)j->blk[cell >> 1] * 2u + (cell & 1u)) * p->pool.elems;
}

static uint32_t pop(sr_pool *pl, uint32_t *head)
{
    uint32_t b = *head;

    if (b != SR_POOL_NONE)
        *head = pl->next[b];
    return b;
}

/* A block leaves its slot (or a job's spare list): to the job that claimed
 * it (its spare list), or to the free list. */
static void block_put(sr_pipe *p, uint32_t b)
{
    sr_pool *pl = &p->pool;
    uint32_t c = pl->claim[b];
    sr_pipe_job *to = c != SR_POOL_NOJOB ? p->jobs[c] : NULL;

    pl->claim[b] = SR_POOL_NOJOB;
    if (to && to->params.fallback) {
        pl->next[b] = to->spare;
        to->spare = b;
        to->n_spare++;
        if (to->claims)
            to->claims--;
        return;
    }
    pl->next[b] = pl->free_head;
    pl->free_head = b;
    pl->n_free++;
}

static uint32_t spare_pop(sr_pool *pl, sr_pipe_job *j)
{
    uint32_t b = pop(pl, &j->spare);

    if (b != SR_POOL_NONE)
        j->n_spare--;
    return b;
}

static uint32_t free_pop(sr_pool *pl)
{
    uint32_t b = pop(pl, &pl->free_head);

    if (b != SR_POOL_NONE)
        pl->n_free--;
    return b;
}

/* Blocks taken back for j that it has not put in a slot: to the free list
 * (j idles or ends, so nobody claims them any more). */
static void spares_return(sr_pipe *p, sr_pipe_job *j)
{
    uint32_t b;

    while ((b = spare_pop(&p->pool, j)) != SR_POOL_NONE) {
        p->pool.claim[b] = SR_POOL_NOJOB;
        block_put(p, b);
    }
}

static uint32_t in_use(const sr_pool *pl)
{
    return pl->blocks - pl->n_free;
}

/* Put block b in slot s of j, zeroed (whatever its last holder left). */
static void slot_take(sr_pipe *p, sr_pipe_job *j, uint32_t s, uint32_t b)
{
    sr_pool *pl = &p->pool;

    memset(pl->values + (size_t)b * 2u * pl->elems, 0, 2u * pl->elems * sizeof *pl->values);
    j->blk[s] = b;
    j->held++;
    if (!j->got_block) {
        j->got_block = 1;
        j->c.first_wait = j->c.fb_rounds - j->inc_away;
        j->c.first_wait_others = p->pool.rounds - j->rounds - j->wait_from;
    }
    j->c.grants++;
    pl->grants++;
    if (in_use(pl) > pl->peak)
        pl->peak = in_use(pl);
}

/* Slot s of j gives its block up; a cell whose round was summed in it
 * can no longer answer (SR_CELL_GONE). */
static void slot_release(sr_pipe *p, sr_pipe_job *j, uint32_t s)
{
    uint32_t b = j->blk[s];

    for (size_t c = 2u * (size_t)s; c < 2u * (size_t)s + 2; c++)
        if (j->relay[c] == SR_CELL_HERE)
            j->relay[c] = SR_CELL_GONE;
    if (j->revoke[s]) {
        j->revoke[s] = 0;
        j->n_revoke--;
        p->pool.revoking--;
    }
    j->blk[s] = SR_POOL_NONE;
    j->held--;
    block_put(p, b);
}

static int slot_quiet(const sr_pipe *p, const sr_pipe_job *j, uint32_t s)
{
    return j->cnt[2u * s] == 0 && j->cnt[2u * s + 1] == 0 &&
           p->now_ms - j->slot_ms[s] >= p->pool.idle_ms;
}

/* Are both of slot s's rounds of calls before j's latest call with a
 * complete round? Then no worker asks about them again: each worker's
 * calls run one at a time, and every worker contributed to that round,
 * so each had (or gave up on) every result of its earlier calls. */
static int slot_settled(const sr_pipe_job *j, uint32_t s)
{
    if (!j->done_call)
        return 0;
    for (size_t c = 2u * (size_t)s; c < 2u * (size_t)s + 2; c++)
        if (j->cnt[c] != 0 || ((j->m_seq[c] - j->done_seq) >> 31) == 0)
            return 0;
    return 1;
}

/* ---- jobs ----------------------------------------------------------------- */

int sr_pool_job_alloc(sr_pipe *p, sr_pipe_job *j)
{
    size_t n = j->slots ? j->slots : 1;

    if (!p->pool.blocks || p->pool.elems != j->elems)
        return -ENXIO;
    if (p->pool.n_jobs == SR_POOL_MAX_JOBS)
        return -ENOSPC;
    j->blk = malloc(n * sizeof *j->blk);
    j->stamp = malloc(2u * n * sizeof *j->stamp);
    j->revoke = calloc(n, 1);
    j->relay = malloc(2u * n);
    j->slot_ms = calloc(n, sizeof *j->slot_ms);
    if (!j->blk || !j->stamp || !j->revoke || !j->relay || !j->slot_ms)
        return -ENOMEM;
    for (size_t s = 0; s < n; s++)
        j->blk[s] = SR_POOL_NONE;
    for (size_t c = 0; c < 2u * n; c++)
        j->stamp[c] = SR_STAMP_UNSET;
    memset(j->relay, SR_CELL_GONE, 2u * n);
    j->spare = SR_POOL_NONE;
    p->pool.jobs[p->pool.n_jobs++] = j->id;
    return 0;
}

void sr_pool_job_release(sr_pipe *p, sr_pipe_job *j)
{
    if (!j->blk)
        return;
    for (uint32_t s = 0; s < j->slots && j->held; s++)
        if (j->blk[s] != SR_POOL_NONE)
            slot_release(p, j, s);
    spares_return(p, j);
    memset(j->relay, SR_CELL_GONE, 2u * (size_t)(j->slots ? j->slots : 1));
    j->n_revoke = 0;
    j->claims = 0;
    j->reserved = 0;
    j->fb_bound = 0;
    j->got_block = 0;
    j->inc_away = j->c.fb_rounds;
    j->rounds = 0;
    j->done_call = 0;
    j->win = 0;
}

void sr_pool_job_free(sr_pipe *p, sr_pipe_job *j)
{
    if (j->blk) {
        sr_pool_job_release(p, j);
        for (unsigned i = 0; i < p->pool.n_jobs; i++)
            if (p->pool.jobs[i] == j->id) {
                p->pool.jobs[i] = p->pool.jobs[--p->pool.n_jobs];
                break;
            }
    }
    free(j->blk);
    free(j->stamp);
    free(j->revoke);
    free(j->relay);
    free(j->slot_ms);
}

/* ---- taking blocks back ----------------------------------------------------- */

/* Slot s of v gives its block up (to whoever claimed it, else the free
 * list): now, or at the boundary its policy uses (revoke[s] = 1), counted
 * either way. Returns now. */
static int take_back(sr_pipe *p, sr_pipe_job *v, uint32_t s, int now)
{
    v->c.preempted++;
    p->pool.revokes++;
    if (now) {
        slot_release(p, v, s);
        return 1;
    }
    v->revoke[s] = 1;
    v->n_revoke++;
    p->pool.revoking++;
    return 0;
}

/* Take one block of victim v back for job to: from a slot no worker asks
 * about, quiet (no packet, contribution or probe, for idle_ms) or settled
 * (its rounds of calls before v's latest), which gives it at once;
 * else from v's highest slot that has one, which hands it over after its
 * next round there (PRIORITY: sr_pool_round_here, sr_pool_away_done) or
 * at v's next call (FAIR: sr_pool_call_done). The highest, because a
 * call of window W uses slots 0 to W - 1 and v's next calls get a window
 * of the blocks it keeps (sr_pool_stamp): they find those blocks in their
 * slots, where blocks taken from anywhere would leave some of v's slots
 * without one and some of its blocks unused until they idle. */
static void revoke_one(sr_pipe *p, sr_pipe_job *v, sr_pipe_job *to)
{
    uint32_t best = SR_POOL_NONE;
    int now = 0;

    for (uint32_t s = v->slots; s-- > 0 && !now;)
        if (v->blk[s] != SR_POOL_NONE && !v->revoke[s]) {
            now = slot_quiet(p, v, s) || slot_settled(v, s);
            if (best == SR_POOL_NONE || now)
                best = s;
        }
    if (best == SR_POOL_NONE)
        return;
    p->pool.claim[v->blk[best]] = to->id;
    to->claims++;
    take_back(p, v, best, now);
}

int sr_pipe_pool_take(sr_pipe *p, uint16_t job, uint32_t slot)
{
    sr_pipe_job *j = p->jobs[job];

    if (!p->pool.blocks)
        return -ENOENT;
    if (!j || !j->params.fallback)
        return -ESRCH;
    if (slot >= j->slots)
        return -EINVAL;
    if (j->blk[slot] == SR_POOL_NONE)
        return -ENODATA;
    if (j->revoke[slot])
        return -EALREADY;
    /* Its block's claim stays SR_POOL_NOJOB: it goes to the free list. */
    return take_back(p, j, slot, slot_quiet(p, j, slot) || slot_settled(j, slot));
}

static int active(const sr_pipe *p, const sr_pipe_job *j)
{
    return p->now_ms - j->active_ms < p->pool.idle_ms;
}

/* A fair share of the pool for j: its blocks over the jobs active now,
 * j counted as one. */
static uint32_t fair_share(const sr_pipe *p, const sr_pipe_job *j)
{
    const sr_pool *pl = &p->pool;
    uint32_t n_active = 0;

    for (unsigned i = 0; i < pl->n_jobs; i++)
        n_active += active(p, p->jobs[pl->jobs[i]]) || p->jobs[pl->jobs[i]] == j;
    return pl->blocks / (n_active ? n_active : 1);
}

/* Blocks v holds that are not being taken back. */
static uint32_t keeps(const sr_pipe_job *v)
{
    return v->held - v->n_revoke;
}

/* Under FAIR or PRIORITY, the job j may take a block back from: NULL if
 * none. A STATIC reservation is never taken back. */
static sr_pipe_job *victim(sr_pipe *p, const sr_pipe_job *j)
{
    sr_pool *pl = &p->pool;
    sr_pipe_job *best = NULL;
    uint32_t share, best_keep = 0;

    if (pl->policy == SR_POOL_FAIR) {
        share = fair_share(p, j);
        if (j->held + j->claims + j->n_spare >= share)
            return NULL;
        for (unsigned i = 0; i < pl->n_jobs; i++) {
            sr_pipe_job *v = p->jobs[pl->jobs[i]];
            uint32_t k = v == j || v->reserved == 1 ? 0 : keeps(v);

            if (k > share && k > best_keep) {
                best = v;
                best_keep = k;
            }
        }
        return best;
    }
    for (unsigned i = 0; i < pl->n_jobs; i++) {
        sr_pipe_job *v = p->jobs[pl->jobs[i]];
        uint32_t k = v->params.prio < j->params.prio && v->reserved != 1 ? keeps(v) : 0;

        if (k && (!best || v->params.prio < best->params.prio || (v->params.prio == best->params.prio && k > best_keep))) {
            best = v;
            best_keep = k;
        }
    }
    return best;
}

/* STATIC: a block for every slot at once, or none for the incarnation. */
static void reserve_all(sr_pipe *p, sr_pipe_job *j)
{
    j->reserved = 2;
    if (p->pool.n_free < j->slots - j->held)
        return;
    for (uint32_t s = 0; s < j->slots; s++) {
        if (j->blk[s] != SR_POOL_NONE)
            continue;
        slot_take(p, j, s, free_pop(&p->pool));
    }
    j->reserved = 1;
}

int sr_pool_round_here(sr_pipe *p, sr_pipe_job *j, uint32_t slot, unsigned version)
{
    sr_pool *pl = &p->pool;
    uint32_t b;

    /* Counted for first_wait_others: the other jobs' rounds while j
     * waits for its first block. */
    pl->rounds++;
    j->rounds++;
    if (j->rounds == 1)
        j->wait_from = pl->rounds - 1u;
    if (j->blk[slot] != SR_POOL_NONE) {
        if (!j->revoke[slot])
            return 1;
        /* Being taken back for a fair share: summed here still, as the
         * job's next call leaves the slot out (its window is the blocks
         * it keeps, the highest slots go first) and the block moves then
         * (sr_pool_call_done); its rounds never go to the fallback for it. */
        if (pl->policy == SR_POOL_FAIR && j->revoke[slot] == 1)
            return 1;
        /* For a higher priority: this round is summed at the fallback, and
         * the block moves once it completes (sr_pool_away_done). */
        if (j->revoke[slot] == 1)
            j->revoke[slot] = (uint8_t)(2u + version);
        return 0;
    }
    if (pl->policy == SR_POOL_STATIC) {
        if (j->reserved == 0)
            reserve_all(p, j);
        return j->blk[slot] != SR_POOL_NONE;
    }
    b = spare_pop(pl, j);
    if (b == SR_POOL_NONE)
        b = free_pop(pl);
    if (b != SR_POOL_NONE) {
        slot_take(p, j, slot, b);
        return 1;
    }
    /* One more block taken back per round that finds none, until the
     * blocks held, claimed and handed over cover the job's slots: the
     * handovers run side by side. */
    if ((pl->policy == SR_POOL_FAIR || pl->policy == SR_POOL_PRIORITY) &&
        j->held + j->claims + j->n_spare < j->slots) {
        sr_pipe_job *v = victim(p, j);

        if (v)
            revoke_one(p, v, j);
        /* A quiet slot's block came at once. */
        if ((b = spare_pop(pl, j)) != SR_POOL_NONE) {
            slot_take(p, j, slot, b);
            return 1;
        }
    }
    return 0;
}

void sr_pool_away_done(sr_pipe *p, sr_pipe_job *j, uint32_t slot, unsigned version)
{
    if (slot < j->slots && j->blk[slot] != SR_POOL_NONE && j->revoke[slot] == 2u + version)
        slot_release(p, j, slot);
}

/* A call's first complete round settles the slots whose rounds are older:
 * a block being taken back from one of them moves without waiting for a
 * round there, which may never come (j's later calls use a smaller window
 * that leaves the slot out). Once per call, over j's slots. */
void sr_pool_call_done(sr_pipe *p, sr_pipe_job *j, uint32_t seq)
{
    if (j->done_call && (seq - j->done_seq - 1u) >> 31)
        return; /* not a newer call */
    j->done_seq = seq;
    j->done_call = 1;
    for (uint32_t s = 0; s < j->slots && j->n_revoke; s++)
        if (j->blk[s] != SR_POOL_NONE && j->revoke[s] && slot_settled(j, s))
            slot_release(p, j, s);
}

/* Quiet slots give their blocks back: every slot of an idle job, and of a
 * running one the slots it no longer uses; under FAIR only those past the
 * window it was last announced (sr_pool_stamp): a slot within it may be
 * quiet only because the call's other slots lag, and the next call needs
 * its block (a job below its share would claim one back; one above gives
 * it up at once to a claim, the slot being settled). SR_POOL_SWEEP_SLOTS
 * per sweep from where the last one stopped. n: how many slots to look
 * at. */
#define SR_POOL_SWEEP_SLOTS 64u

static void sweep_slots(sr_pipe *p, sr_pipe_job *j, uint32_t n, int idle)
{
    for (uint32_t k = 0; k < n && k < j->slots && j->held; k++) {
        uint32_t s = j->sweep_at++ % j->slots;

        if (!idle && p->pool.policy == SR_POOL_FAIR && (j->win == 0 || s < j->win))
            continue;
        if (j->blk[s] != SR_POOL_NONE && slot_quiet(p, j, s)) {
            slot_release(p, j, s);
            j->c.returned++;
            p->pool.returns++;
        }
    }
}

uint8_t sr_pool_result(sr_pipe *p, sr_pipe_job *j)
{
    sr_pipe_job *v;

    /* The policy first: this runs for every completed round, and the
     * share counts the active jobs. */
    if (p->pool.policy == SR_POOL_FAIR && j->reserved != 1) {
        uint32_t want = fair_share(p, j);

        if (j->held + j->claims + j->n_spare < (want < j->slots ? want : j->slots) &&
            (v = victim(p, j)) != NULL)
            revoke_one(p, v, j);
    }
    j->win = sr_pool_stamp(p, j);
    return j->win;
}

/* A window of l blocks as a result or JOIN_ACK announces it: 0 (every
 * slot) for none or at least the job's slots, at most 255. */
static uint8_t window_of(const sr_pipe_job *j, uint64_t l)
{
    return l == 0 || l >= j->slots ? 0 : l > 255 ? 255 : (uint8_t)l;
}

uint8_t sr_pool_stamp(const sr_pipe *p, const sr_pipe_job *j)
{
    const sr_pool *pl = &p->pool;
    uint64_t l = 0, has;

    switch (pl->policy) {
    case SR_POOL_STATIC:
        return 0;
    case SR_POOL_FIRST:
        l = (uint64_t)j->held + j->n_spare + pl->n_free;
        break;
    case SR_POOL_FAIR:
        /* Up to its share (or what it keeps, if more), the blocks it has
         * now: those it keeps, those handed to it, and free ones. A slot
         * that waits for a claimed block would send its rounds to the
         * fallback, and the whole call would run at the fallback's pace;
         * the claim (sr_pool_result) widens a later call instead. */
        l = fair_share(p, j);
        if (l < keeps(j))
            l = keeps(j);
        has = (uint64_t)keeps(j) + j->n_spare + pl->n_free;
        if (l > has)
            l = has;
        break;
    case SR_POOL_PRIORITY:
        l = (uint64_t)j->held + j->n_spare + pl->n_free;
        for (unsigned i = 0; i < pl->n_jobs; i++) {
            const sr_pipe_job *v = p->jobs[pl->jobs[i]];

            if (v->params.prio < j->params.prio && v->reserved != 1)
                l += keeps(v);
        }
        break;
    }
    return window_of(j, l);
}

uint8_t sr_pool_join_window(sr_pipe *p, sr_pipe_job *j)
{
    j->win = p->pool.policy == SR_POOL_FAIR ? window_of(j, fair_share(p, j)) : 0;
    return j->win;
}

void sr_pool_tick(sr_pipe *p)
{
    sr_pool *pl = &p->pool;

    if (!pl->blocks || p->now_ms - pl->swept_ms < pl->idle_ms / 4u)
        return;
    pl->swept_ms = p->now_ms;
    for (unsigned i = 0; i < pl->n_jobs; i++) {
        sr_pipe_job *j = p->jobs[pl->jobs[i]];
        int idle = !active(p, j);

        /* Blocks taken back for an idle job: it no longer asks for them. */
        if (idle)
            spares_return(p, j);
        if (j->reserved != 1)
            sweep_slots(p, j, idle ? j->slots : SR_POOL_SWEEP_SLOTS, idle);
    }
}
