/* SPDX-License-Identifier: Apache-2.0 */
/*
 * controls.h - the pipeline's controls, one file each, as the P4 program
 * has one control per file (p4/include/X.p4 beside p4/swswitch/X.c):
 *
 *   membership.c  JOIN, LEAVE, new incarnations   membership.p4
 *   allreduce.c   AR_DATA and AR_PROBE on the slots allreduce.p4
 *   store.c       PUSH and PULL on the SSP store    store.p4
 *   barrier.c     CLOCK on the barrier ring         barrier.p4
 *   step.c        STEP and STEP_PROBE on the store  step.p4
 *   upstream.c    a tree's leaf: relays, its parent upstream.p4
 *                 (a leaf's cells: allreduce.c)
 *   pool.c        blocks shared by jobs at run time  (none yet: P4 jobs
 *   fallback.c    a shared job's fallback aggregator  reserve their slots)
 *                 (a shared job's cells: allreduce.c)
 *
 * What each offers the dispatch (ingress.c, which routes a parsed request
 * to its control, as ingress.p4 does) and the job table (job_table.c,
 * which allocates and frees a job's state). Each control owns a group of
 * the job's fields (services.h) and uses the services there; a control
 * calls no other control, except that membership starts a new incarnation,
 * which clears the others' state (in P4, membership's reset_clocks), and
 * that a leaf's membership, allreduce and upstream call each other for
 * what goes up and comes down.
 *
 * Packet handlers take the request from src, already parsed (h; payload:
 * 4 * h->count bytes), to job j (not NULL), and add their answers to out.
 * Every request is checked completely before any state changes, so a
 * refused request leaves no trace but the counters; requests from a worker
 * that is not bound at its own address get no answer at all.
 */
#ifndef SERENE_SWSWITCH_CONTROLS_H
#define SERENE_SWSWITCH_CONTROLS_H

#include <stdint.h>

#include "services.h"

/* ---- membership.c --------------------------------------------------------- */

/* JOIN: check the admission token in its payload, bind worker h->worker
 * to src (a new nonce first starts a new incarnation, if nobody is bound)
 * and answer JOIN_ACK with the job's parameters, or ERROR. */
void sr_membership_join(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                        const uint8_t *payload, sr_pipe_out *out);

/* The workers that keep j in use: bound, not left, and whose lease has
 * not lapsed (pipeline.h, Leases). */
uint64_t sr_membership_live(const sr_pipe *p, const sr_pipe_job *j);

/* Request h from src to j was handled: if it comes from its worker's
 * binding (a JOIN: the binding's own), that worker's lease starts again. */
void sr_membership_seen(const sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const sr_peer *src);

/* With the address proof on (sr_pipe_set_proof): is h, a PULL or CLOCK
 * from the binding of its worker at src, one that must be refused with
 * UNPROVEN? Counts it. */
int sr_membership_unproven(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const sr_peer *src);

/* LEAVE: the worker's context ended. No answer. Returns 1 when it matched
 * the worker's binding (a repeat too; the worker has left), else 0. */
int sr_membership_leave(sr_pipe_job *j, const sr_peer *src, const sr_hdr *h);

/* A new incarnation: every binding, every cell, the store, the push table
 * and the barrier back to the state of a freshly added job (the nonce and
 * the resets counter are the caller's). Returns 0, or -ENOMEM when the
 * barrier could not be set up again; then nothing changed. */
int sr_membership_renew(sr_pipe_job *j);

/* ---- epoch.c -------------------------------------------------------------- */

/* Allocate j's tags (j->slots and j->rows set), all at epoch 0. Returns 0
 * or -ENOMEM; sr_epoch_free is safe either way. */
int sr_epoch_alloc(sr_pipe_job *j);
void sr_epoch_free(sr_pipe_job *j);

/* A new incarnation: every slot and row is stale from now on, and reads as
 * cleared once touched. O(1) but once every 2^32 calls (an eager clear). */
void sr_epoch_next(sr_pipe_job *j);

/* Before a request names slot (AR_DATA, AR_PROBE) or store word offset
 * (PUSH, PULL): clear that slot or row if it is stale. Out-of-range
 * indices are ignored (the control refuses them). */
void sr_epoch_touch_slot(sr_pipe_job *j, uint32_t slot);
void sr_epoch_touch_row(sr_pipe_job *j, uint32_t offset);

/* Has slot been touched in this incarnation (else it reads as idle)? */
int sr_epoch_slot_current(const sr_pipe_job *j, uint32_t slot);

/* ---- allreduce.c ---------------------------------------------------------- */

/* Allocate j's slot pool (j->slots and j->elems set), zeroed. Returns 0 or
 * -ENOMEM; sr_allreduce_free is safe either way. */
int sr_allreduce_alloc(sr_pipe_job *j);
void sr_allreduce_free(sr_pipe_job *j);

/* Every cell back to idle with zero sums. */
void sr_allreduce_clear(sr_pipe_job *j);

/* AR_DATA: one contribution to a slot; AR_RESULT to every worker when it
 * completes the round, the shadow copy to a retransmission to a complete
 * round, AR_HELD to one to an open round that holds it, or ERROR. */
/* tna_run.c: a model=tna job's AR_DATA, AR_PROBE, PUSH or PULL on the
 * Tofino program's model, after the worker check (and the slot and count
 * checks of sr_allreduce_data and _probe). sr_tna_job_check: may the job
 * run on it (32 values per packet, at most 256 slots, 32 workers and 512
 * rows of store, not shared, not a leaf)? sr_tna_job_added: its block
 * cleared (-1: no memory for the model); sr_tna_free: the model, at
 * sr_pipe_destroy. */
void sr_tna_run(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                const uint8_t *payload, sr_pipe_out *out);
int sr_tna_job_check(const sr_pipe_job_params *jp);
int sr_tna_job_added(sr_pipe *p, const sr_pipe_job *j);
void sr_tna_free(sr_pipe *p);

void sr_allreduce_data(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                       const uint8_t *payload, sr_pipe_out *out);

/* AR_PROBE: AR_HELD when the open round holds the worker's contribution,
 * else AR_NAK, or ERROR. Changes no state. */
void sr_allreduce_probe(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                        sr_pipe_out *out);

/* A leaf's answer from its parent about the partial of a cell (AR_RESULT,
 * AR_NAK or ERROR; upstream.c routes it here, h->job is the parent's job):
 * the result replaces the partial and goes to every local worker; a NAK
 * sends the partial again; a mismatch poisons the cell. Anything else is
 * counted and dropped. */
void sr_allreduce_up_answer(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                            sr_pipe_out *out);

/* ---- upstream.c: a leaf of a tree ------------------------------------------ */

/* A worker's resend or probe re-sends a leaf's partial at most this often
 * per cell (sr_pipe_tick's milliseconds). */
#define SR_UP_RESEND_MS 2u

/* Has the parent acknowledged the leaf's JOIN in this incarnation? */
int sr_up_bound(const sr_pipe_job *j);

/* The status with which the parent refused the leaf's JOIN in this
 * incarnation (UNKNOWN_JOB, NOT_MEMBER, DENIED, JOB_IN_USE; BAD_COUNT or
 * BAD_SLOT when its job's packets or pool do not fit the leaf's), until it
 * acknowledges one, or 0. */
unsigned sr_up_refused(const sr_pipe_job *j);

/* The leaf's own JOIN to its parent's job, as member up_member. */
void sr_up_join_self(sr_pipe *p, sr_pipe_job *j, sr_pipe_out *out);

/* A worker's JOIN that the leaf accepted (bound locally): relayed to the
 * root, whose JOIN_ACK comes back down, instead of the local JOIN_ACK;
 * with it the leaf's own JOIN while the parent has not acknowledged it. */
void sr_up_join(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                sr_pipe_out *out);

/* A request to leaf job j that goes up: PUSH, PULL and CLOCK relayed (from
 * a bound worker at its address; else dropped), LEAVE handled here and
 * relayed. Returns 1 when handled, 0 for the ops the leaf serves itself. */
int sr_up_request(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                  const uint8_t *payload, sr_pipe_out *out);

/* An answer op (not a request) from src: if it comes from a leaf's parent,
 * relay it down or hand it to the leaf's cells, and return 1; else 0. */
int sr_up_answer(sr_pipe *p, const sr_peer *src, const sr_hdr *h, const uint8_t *payload,
                 sr_pipe_out *out);

/* ---- pool.c: blocks shared at run time ------------------------------------ */

/* Free the pool (sr_pipe_destroy; after every job is freed). */
void sr_pool_destroy(sr_pipe *p);

/* A shared job's pool state (j->slots set): no block in any slot. Returns
 * 0, -ENXIO (no pool, or another elems), -ENOSPC (SR_POOL_MAX_JOBS) or
 * -ENOMEM; sr_pool_job_free is safe either way. */
int sr_pool_job_alloc(sr_pipe *p, sr_pipe_job *j);
void sr_pool_job_free(sr_pipe *p, sr_pipe_job *j);

/* Every block of j back to the pool (a new incarnation, or every worker
 * left): no cell answers from a block any more. */
void sr_pool_job_release(sr_pipe *p, sr_pipe_job *j);

/* The accumulators of j's cell: its own, or its slot's block. */
uint32_t *sr_pool_cell(const sr_pipe *p, const sr_pipe_job *j, size_t cell);

/* A round of shared job j starts in cell (slot, version): 1 if it is
 * summed here (the slot holds a block, or got one by the policy), 0 if it
 * goes to the fallback. */
int sr_pool_round_here(sr_pipe *p, sr_pipe_job *j, uint32_t slot, unsigned version);

/* The fallback's result for j's round in (slot, version) came by: if that
 * round handed the slot's block over, the block moves now. */
void sr_pool_away_done(sr_pipe *p, sr_pipe_job *j, uint32_t slot, unsigned version);

/* A round of j's call seq completed, here or at the fallback: a slot being
 * taken back whose rounds are all of earlier calls hands its block over
 * now (pool.c says why that is safe). */
void sr_pool_call_done(sr_pipe *p, sr_pipe_job *j, uint32_t seq);

/* A new incarnation of shared job j: the window its JOIN_ACKs announce
 * for its first calls. Under FAIR its share (0 if that covers its slots):
 * a first call on every slot would send the rounds of the slots past its
 * share to the fallback for the whole call, which then runs at the
 * fallback's pace. Else 0. */
uint8_t sr_pool_join_window(sr_pipe *p, sr_pipe_job *j);

/* The idle sweep (from sr_pipe_tick): idle jobs return their blocks, and
 * a running job the blocks of slots it no longer uses. */
void sr_pool_tick(sr_pipe *p);

/* A round of j completed: the window its result announces
 * (sr_pool_stamp), kept as j's latest. Under FAIR, first one more block
 * is claimed for j (at its holder's next call) while it holds, is handed
 * and claims fewer than its share: its calls' windows cover only blocks
 * it has, so its rounds alone would never ask for more. */
uint8_t sr_pool_result(sr_pipe *p, sr_pipe_job *j);

/* The window a result of shared job j announces for its next call (the
 * AR_RESULT's status): the blocks it holds or may get by the policy (under
 * FAIR, has now), 1 to 255; 0 for every slot (the job may have them all,
 * or has none: then every round goes to the fallback anyway). */
uint8_t sr_pool_stamp(const sr_pipe *p, const sr_pipe_job *j);

/* ---- fallback.c: a shared job's fallback aggregator ---------------------------- */

/* A request of shared job j to its fallback, unchanged (JOIN and LEAVE
 * too, so the fallback binds the workers at this switch's address); a
 * worker's AR request goes after its JOIN again while the fallback has
 * not acknowledged that. */
void sr_fb_relay(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, const uint8_t *payload,
                 sr_pipe_out *out);

/* An answer op from src: if it comes from a shared job's fallback, take
 * it (JOIN_ACK), or pass it to the worker it names, marked
 * SR_FLAG_FALLBACK, and return 1; else 0. */
int sr_fb_answer(sr_pipe *p, const sr_peer *src, const sr_hdr *h, const uint8_t *payload,
                 sr_pipe_out *out);

/* ---- store.c -------------------------------------------------------------- */

/* Allocate j's store and push table from j->params (already checked).
 * Returns 0 or -ENOMEM; sr_store_free is safe either way. */
int sr_store_alloc(sr_pipe_job *j);
void sr_store_free(sr_pipe_job *j);

/* Store and push table back to zero. */
void sr_store_clear(sr_pipe_job *j);

/* PUSH (added once per row, worker and push number; PUSH_ACK) and PULL
 * (PULL_RESP), or ERROR. */
void sr_store_push(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   const uint8_t *payload, sr_pipe_out *out);
void sr_store_pull(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   sr_pipe_out *out);

/* ---- step.c --------------------------------------------------------------- */

/* Allocate j's step state (after sr_store_alloc: j->rows set). Returns 0
 * or -ENOMEM; sr_step_free is safe either way. */
int sr_step_alloc(sr_pipe_job *j);
void sr_step_free(sr_pipe_job *j);
/* Bytes sr_step_alloc allocated. */
uint64_t sr_step_bytes(const sr_pipe_job *j);
/* Row row's step state, or every row's, back to never stepped. */
void sr_step_clear_row(sr_pipe_job *j, uint32_t row);
void sr_step_clear(sr_pipe_job *j);

/* STEP: add the piece once per (row, worker, clock); STEP_RESP with the
 * row to the sender and the waiting workers the row releases, STEP_HELD
 * to a repeated piece that waits, or ERROR; the piece that completes a
 * worker's step records its clock in the barrier (RELEASE when low moves). */
void sr_step_piece(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   const uint8_t *payload, sr_pipe_out *out);
/* STEP_PROBE: STEP_HELD (applied and waiting: marks it waiting again) or
 * STEP_NAK, or ERROR. */
void sr_step_probe(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                   sr_pipe_out *out);

/* ---- barrier.c ------------------------------------------------------------ */

/* Set up j's barrier from j->params (already checked). Returns 0 or
 * -ENOMEM; sr_barrier_job_free is safe either way. */
int sr_barrier_job_alloc(sr_pipe_job *j);
void sr_barrier_job_free(sr_pipe_job *j);

/* A fresh barrier for a new incarnation, keeping the job's policy rules.
 * It is set up before the old one is freed, so on -ENOMEM nothing changed. */
int sr_barrier_job_renew(sr_pipe_job *j);

/* CLOCK: PROCEED or HOLD to the sender, and RELEASE to every worker when
 * low advanced, or ERROR. */
void sr_barrier_job_clock(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                          sr_pipe_out *out);

/* A step piece h that completed its worker's step (checked by step.c:
 * bound worker, clock within the ring): CLOCK(h->seq) of h->worker
 * recorded as sr_barrier_job_clock does, but unanswered (the rows are the
 * answer); RELEASE when low moved. */
void sr_barrier_job_record(sr_pipe *p, sr_pipe_job *j, const sr_hdr *h, sr_pipe_out *out);

#endif /* SERENE_SWSWITCH_CONTROLS_H */
