/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline_int.h - private to the pipeline (pipeline.c: job table, JOIN,
 * allreduce, dispatch; ssp.c: the SSP store and barrier): the job and
 * pipeline structs and the action helpers both use. Not for the daemon or
 * the tests: they go through pipeline.h.
 */
#ifndef SERENE_SWSWITCH_PIPELINE_INT_H
#define SERENE_SWSWITCH_PIPELINE_INT_H

#include <stdint.h>

#include "barrier.h"
#include "pipeline.h"

#define SR_PIPE_NJOBS 65536u /* the job id is 16 bits: a direct-indexed table */

typedef struct sr_pipe_job {
    uint16_t id;
    uint32_t n;     /* workers */
    uint32_t elems; /* accumulators per cell, and words per store row */
    uint32_t slots;
    uint32_t nonce; /* incarnation */
    sr_pipe_job_params params; /* as added: the barrier's initial policy on reset */

    /* Worker bindings. */
    uint64_t bound; /* bit w: worker w is bound */
    uint64_t left;  /* bit w: bound worker w has left (LEAVE); still holds its id */
    sr_peer peer[SR_WIRE_MAX_WORKERS];
    uint32_t token[SR_WIRE_MAX_WORKERS];

    /* Slot pool: arrays of 2 * slots cells, values of 2 * slots * elems. */
    uint64_t *seen;    /* workers that contributed to the cell's round */
    uint8_t *cnt;      /* contributors so far, mod n (0: idle or complete) */
    uint32_t *m_seq;   /* round metadata, set by the first contributor */
    uint32_t *m_off;
    uint32_t *m_total; /* the call's total count (aux of AR_DATA) */
    uint16_t *m_count; /* SR_WIRE_COUNT_POISON: the round saw a mismatch */
    int8_t *m_exp;
    int8_t *nexp;      /* max of the contributors' next_exp */
    uint32_t *values;  /* sums mod 2^32 (int32 on the wire) */

    /* SSP store (ssp.c): store_words accumulators in rows of elems words,
     * and per (row, worker), at index row * n + w, the last push number
     * applied (0: none yet). NULL when store_words is 0. */
    uint32_t store_words;
    uint32_t rows;
    uint32_t *store;
    uint32_t *push_last;
    sr_barrier bar;

    sr_pipe_job_counters c;
} sr_pipe_job;

struct sr_pipe {
    sr_pipe_job *jobs[SR_PIPE_NJOBS];
    unsigned n_jobs;
    sr_pipe_counters c;
};

/* ---- shared by pipeline.c and ssp.c (defined in pipeline.c) --------------- */

int sr_pipei_peer_eq(const sr_peer *a, const sr_peer *b);

/* Is w a bound worker of j sending from its bound address? */
int sr_pipei_worker_ok(const sr_pipe_job *j, uint16_t w, const sr_peer *src);

/* A new action with an empty header template (version set); NULL if out is
 * full. */
sr_pipe_action *sr_pipei_action_new(sr_pipe_out *out);

/* Make a unicast to src, whose header gets worker. */
void sr_pipei_action_unicast(sr_pipe_action *a, const sr_peer *src, uint16_t worker);

/* Make a multicast to every bound worker of j. */
void sr_pipei_action_multicast(sr_pipe_action *a, const sr_pipe_job *j);

/* Count the copies an action will send. */
void sr_pipei_count_tx(sr_pipe *p, sr_pipe_job *j, const sr_pipe_action *a);

/* ERROR for a refused request (see pipeline.c). */
void sr_pipei_reply_error(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *req,
                          unsigned status, sr_pipe_out *out);

/* ---- ssp.c ------------------------------------------------------------------- */

/* Allocate a new job's store, push table and barrier from j->params (already
 * checked). Returns 0 or -ENOMEM; sr_pipei_ssp_free is safe either way. */
int sr_pipei_ssp_alloc(sr_pipe_job *j);
void sr_pipei_ssp_free(sr_pipe_job *j);

/* A new incarnation: store and push table zeroed, barrier re-initialised
 * with the job's initial policy. The new barrier is set up before the old
 * one is freed, so on -ENOMEM nothing changed. */
int sr_pipei_ssp_reset(sr_pipe_job *j);

/* PUSH, PULL and CLOCK from src to job j (not NULL), already parsed. */
void sr_pipei_do_push(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                      const uint8_t *payload, sr_pipe_out *out);
void sr_pipei_do_pull(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                      sr_pipe_out *out);
void sr_pipei_do_clock(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                       sr_pipe_out *out);

#endif /* SERENE_SWSWITCH_PIPELINE_INT_H */
