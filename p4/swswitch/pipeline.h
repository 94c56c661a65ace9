/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.h - the aggregator's packet pipeline, shared by serene-switch and
 * (as the reference it mirrors) the P4 program.
 *
 * One call processes one received message (Serene header + payload, as from
 * a UDP datagram) and fills in the actions to take: zero or more messages,
 * each sent either back to the source or to every worker of the job, with
 * the header's worker field rewritten per replica.
 *
 * Invariants:
 * - Pure: no I/O, no clock, no globals, no randomness. The same sequence of
 *   (source, message) pairs always gives the same actions and counters.
 * - No allocation per packet: a job's state is allocated when the job is
 *   added and freed when it is removed. Callers own the output struct.
 * - Every piece of state is a fixed-size array indexed by worker or by
 *   (slot, version), so the P4 program can hold it in registers.
 * - Not thread-safe: one thread owns a pipeline.
 */
#ifndef SERENE_SWSWITCH_PIPELINE_H
#define SERENE_SWSWITCH_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/* A source or destination address. Opaque to the pipeline (it only compares
 * them): IPv4 address and UDP port, host byte order, for the udp daemon. */
typedef struct sr_peer {
    uint32_t ip;
    uint16_t port;
} sr_peer;

/* ---- Output actions ----------------------------------------------------- */

/* Current ops need one action per packet; two leave room for the SSP clock,
 * whose answer to the sender can come with a RELEASE to the held workers. */
#define SR_PIPE_MAX_ACTIONS 2

/* One destination of an action: the worker id written into that replica's
 * header, and the address it goes to. */
typedef struct sr_pipe_dest {
    sr_peer peer;
    uint16_t worker;
} sr_pipe_dest;

typedef struct sr_pipe_action {
    uint8_t multicast; /* 0: unicast back to the source; 1: every worker of the job */
    unsigned n_dests;  /* replicas: 1 for unicast, the job's workers for multicast */
    sr_pipe_dest dests[SR_WIRE_MAX_WORKERS];
    sr_hdr hdr;        /* header template: hdr.worker is replaced per replica */
    size_t payload_len; /* 4 * hdr.count bytes */
    uint8_t payload[SR_WIRE_MAX_PAYLOAD]; /* big-endian int32 words */
} sr_pipe_action;

/* Filled in by sr_pipe_process; n == 0 means nothing is sent. About 18 KiB:
 * allocate it once, not on a small stack per packet. */
typedef struct sr_pipe_out {
    unsigned n;
    sr_pipe_action act[SR_PIPE_MAX_ACTIONS];
} sr_pipe_out;

/* ---- Counters ----------------------------------------------------------- */

/* Per-job counters, in the order they are printed. The X-macro keeps the
 * struct fields and their printed names in one list. */
#define SR_PIPE_JOB_COUNTERS(X)                                                                   \
    X(rx)              /* parsed messages addressed to the job */                                \
    X(tx)              /* copies sent (one per replica) */                                       \
    X(joins)           /* JOIN_ACKs sent, retransmitted JOINs included */                        \
    X(resets)          /* new incarnations (JOIN with another nonce) */                          \
    X(results)         /* rounds completed (each a multicast of AR_RESULT) */                    \
    X(shadow_replies)  /* AR_RESULTs re-sent from a completed slot to a retransmission */        \
    X(dup_dropped)     /* duplicate contributions to a round still in progress */                \
    X(mismatches)      /* contributions whose seq/offset/count/exp disagree with the slot */     \
    X(stale_dropped)   /* late copies from a worker that already moved on in the slot */         \
    X(dropped_unbound) /* AR_DATA from an unbound worker id or from another address */           \
    X(errors_sent)     /* ERROR replies */

typedef struct sr_pipe_job_counters {
#define SR_PIPE_X_FIELD(name) uint64_t name;
    SR_PIPE_JOB_COUNTERS(SR_PIPE_X_FIELD)
#undef SR_PIPE_X_FIELD
} sr_pipe_job_counters;

/* Switch-wide counters. */
typedef struct sr_pipe_counters {
    uint64_t rx_total;                     /* every message given to sr_pipe_process */
    uint64_t tx_total;                     /* copies sent, all jobs and no job */
    uint64_t rejected[SR_PARSE_NREASONS];  /* by -sr_msg_parse result; [0] unused */
    uint64_t unknown_job;                  /* requests for a job not in the table */
    uint64_t answers_dropped;              /* switch-to-worker ops received by the switch */
} sr_pipe_counters;

/* Setup of a job, as given to sr_pipe_job_add, plus its current nonce. */
typedef struct sr_pipe_job_info {
    uint16_t job;
    uint32_t n_workers;
    uint32_t elems_per_pkt;
    uint32_t pool_slots;
    uint32_t nonce;    /* incarnation; 0 until a JOIN brings another */
    uint32_t n_bound;  /* workers bound in this incarnation */
} sr_pipe_job_info;

/* ---- API ---------------------------------------------------------------- */

typedef struct sr_pipe sr_pipe;

/* Create an empty pipeline (no jobs). Returns 0 or -ENOMEM; *out is set on
 * success only. */
int sr_pipe_create(sr_pipe **out);

/* Free the pipeline and all its jobs. Accepts NULL and *p == NULL; sets *p
 * to NULL. */
void sr_pipe_destroy(sr_pipe **p);

/* Add a job with 1 <= n_workers <= SR_WIRE_MAX_WORKERS,
 * 1 <= elems_per_pkt <= SR_WIRE_MAX_ELEMS, 1 <= pool_slots <= SR_WIRE_MAX_SLOTS.
 * Its nonce starts at 0 and no worker is bound. Allocates the job's slot
 * pool (2 * pool_slots * elems_per_pkt accumulators).
 * Returns 0, -EINVAL (a limit), -EEXIST (job id taken) or -ENOMEM. */
int sr_pipe_job_add(sr_pipe *p, uint16_t job_id, unsigned n_workers, unsigned elems_per_pkt,
                    unsigned pool_slots);

/* Remove a job and free its state; its counters are gone too. Later
 * messages for it get SR_ST_UNKNOWN_JOB. Returns 0 or -ENOENT. */
int sr_pipe_job_remove(sr_pipe *p, uint16_t job_id);

/* Write up to cap job ids, ascending, to ids (may be NULL when cap is 0).
 * Returns the number of jobs, which may exceed cap. */
unsigned sr_pipe_job_list(const sr_pipe *p, uint16_t *ids, unsigned cap);

/* Setup and nonce of a job. Returns 0 or -ENOENT. */
int sr_pipe_job_info_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_info *info);

/* Copy a job's counters. Returns 0 or -ENOENT. */
int sr_pipe_job_counters_get(const sr_pipe *p, uint16_t job_id, sr_pipe_job_counters *c);

/* Copy the switch-wide counters. */
void sr_pipe_counters_get(const sr_pipe *p, sr_pipe_counters *c);

/* Process one message of len bytes received from src. Fills *out (out->n
 * actions); msg and src are only read during the call. Unicast actions go
 * to src. Every outcome, drops included, is counted. */
void sr_pipe_process(sr_pipe *p, const sr_peer *src, const uint8_t *msg, size_t len,
                     sr_pipe_out *out);

/* Pack the header of replica k (< a->n_dests) of an action into
 * out[SR_WIRE_HDR_LEN]: the template with worker = a->dests[k].worker.
 * The payload (a->payload, a->payload_len bytes) follows it unchanged. */
void sr_pipe_replica_hdr(const sr_pipe_action *a, unsigned k, uint8_t *out);

/* Write "key=value" pairs of c, space-separated, in SR_PIPE_JOB_COUNTERS
 * order, to buf (NUL-terminated, truncated to cap). Returns what snprintf
 * returns. */
int sr_pipe_job_counters_format(char *buf, size_t cap, const sr_pipe_job_counters *c);

#endif /* SERENE_SWSWITCH_PIPELINE_H */
