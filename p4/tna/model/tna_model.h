/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_model.h - a C model of the Tofino program's allreduce and store
 * (p4/tna: tna_ingress.p4's cells, rounds, next_exp max, lanes, store
 * rows, push numbers, classify's store entries, answer_tbl and ar_ctr),
 * for tests: each register is an array a test can set and read,
 * each table its const entries, each RegisterAction one function with the
 * P4's update and output. Written by hand; test tna-exec-diff checks it,
 * packet by packet and register by register, against the program's IR
 * executed (p4/tna/exec, p4/tna/README.md).
 *
 * tna_model_ar runs one AR_DATA or AR_PROBE of a job through it, after the
 * checks the program makes first (worker and job tables, classify): the
 * caller passes only well-formed requests of a known job and worker.
 * tna_model_store runs one PUSH or PULL, with classify's checks (whole
 * rows; RANGE and BAD_COUNT as the program answers). The barrier (CLOCK)
 * is not modelled.
 * legacy = 1 runs the rules the program had before the round number
 * (commit e15a425: the round is its 31-bit fingerprint, a new one opens
 * only a complete cell, another poisons it), so a test can show what the
 * change fixes.
 */
#ifndef SERENE_TNA_MODEL_H
#define SERENE_TNA_MODEL_H

#include <stdint.h>

#include "proto/wire.h"

/* tna_headers.p4's sizes (test tna_model checks them against the P4). */
#define TNA_ELEMS 32u
#define TNA_AR_SLOTS 256u
#define TNA_MAX_JOBS 4u
#define TNA_CELLS (TNA_MAX_JOBS * TNA_AR_SLOTS * 2u)
#define TNA_ROUND_IDLE 2u
#define TNA_EV_DONE 1u
#define TNA_EV_DUP 2u
#define TNA_EV_MISMATCH 3u
#define TNA_STORE_ROWS 512u
#define TNA_ROW0 2048u /* the lanes' first store row entry: {1, blk, row} */
#define TNA_LANE_ENTRIES 8192u
#define TNA_MAX_WORKERS 32u

typedef struct tna_pair {
    uint32_t lo, hi;
} tna_pair;

typedef struct tna_model {
    tna_pair round[TNA_CELLS];  /* round_a, _b, _c: one state, three outputs */
    uint32_t nexp[TNA_CELLS];   /* nexp_reg (legacy: the pair's hi, its lo in nexp_fp) */
    uint32_t nexp_fp[TNA_CELLS];
    uint32_t lane[TNA_ELEMS][TNA_LANE_ENTRIES]; /* lane_reg_i: cells, then store rows */
    uint32_t push_last[TNA_MAX_JOBS * TNA_STORE_ROWS * TNA_MAX_WORKERS]; /* push_last_reg */
    uint64_t ev[TNA_MAX_JOBS * 4u];      /* ar_ctr */
    int legacy;
} tna_model;

/* The job's job_table values the allreduce uses. */
typedef struct tna_job {
    uint16_t id;          /* blk = id mod TNA_MAX_JOBS */
    uint32_t full_mask;   /* its workers' bits */
    uint16_t store_words; /* its store (whole rows) */
} tna_job;

enum tna_verdict { TNA_DROP, TNA_MULTICAST, TNA_UNICAST, TNA_ERROR };

/* What the pipeline sends: nothing, the answer to every worker of the job
 * or to the sender (hdr, and count words in vals), or an ERROR with status
 * err to the sender (the request's header, count 0). */
typedef struct tna_out {
    enum tna_verdict verdict;
    sr_hdr hdr;
    uint32_t vals[TNA_ELEMS];
    uint8_t err;
} tna_out;

/* Power-on state, as serene-ctl's script leaves a cleared block. */
void tna_model_init(tna_model *m, int legacy);
/* The fingerprint the program computes for h (legacy: the old one). */
uint32_t tna_model_fp(const tna_model *m, const sr_hdr *h);
/* A job's register block back to power-on, as serene-ctl's script does
 * when it sets a job up (cells, lanes, rows, push numbers, counters). */
void tna_model_clear_block(tna_model *m, unsigned blk);
/* One AR_DATA (count words vals) or AR_PROBE of worker h->worker. */
void tna_model_ar(tna_model *m, const tna_job *j, const sr_hdr *h, const uint32_t *vals,
                  tna_out *out);
/* One PUSH (count words vals) or PULL of worker h->worker. */
void tna_model_store(tna_model *m, const tna_job *j, const sr_hdr *h, const uint32_t *vals,
                     tna_out *out);

#endif /* SERENE_TNA_MODEL_H */
