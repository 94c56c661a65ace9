/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_pipeline.h - the fixture of fuzz_pipeline.c (its jobs and peers) and
 * its input format, shared with gen_seeds.c so the seed corpus keeps
 * addressing the jobs the target sets up.
 *
 * Input: a sequence of records, each
 *
 *   +--------+----------------+------------------------------+
 *   |  kind  | length (be16)  | length bytes                 |
 *   +--------+----------------+------------------------------+
 *
 * (a length beyond the end of the input is cut to what is left; a record
 * cut inside its first three bytes ends the input). kind & FZ_REC_CTL
 * clear: a message of those bytes from peer (kind & 3) to sr_pipe_process.
 * kind & FZ_REC_CTL set: a policy change through sr_pipe_set_policy, its
 * bytes read as FZ_CTL_LEN bytes (missing ones are 0):
 *   [0] job: FZ_JOB_A if even, else FZ_JOB_B
 *   [1] mode (any value: unknown modes must be refused)
 *   [2] s
 *   [3] want_from, as a signed delta from the barrier's current low
 *   [4] nonzero: want_from is instead big-endian bytes [5..8], absolute
 */
#ifndef SERENE_TESTS_FUZZ_PIPELINE_H
#define SERENE_TESTS_FUZZ_PIPELINE_H

#include <stdint.h>

#define FZ_REC_HDR 3u      /* kind + be16 length */
#define FZ_REC_CTL 0x80u   /* kind bit: a policy change, not a message */
#define FZ_CTL_LEN 9u
#define FZ_MAX_RECORDS 512 /* bounds the work per input */
#define FZ_NPEERS 4u

/* Peer k's address: 10.0.0.(k + 1), port 40000 + k. */
#define FZ_PEER_IP(k) (0x0a000001u + (uint32_t)(k))
#define FZ_PEER_PORT(k) ((uint16_t)(40000u + (k)))

/* Two small jobs, unlike each other where the code branches on it: A has
 * 3 workers, a partial last store row (10 words in rows of 4) and starts
 * in SSP; B has 2 workers, 1 slot, the smallest ring and starts in BSP. */
#define FZ_JOB_A 1u
#define FZ_JOB_A_WORKERS 3u
#define FZ_JOB_A_ELEMS 4u
#define FZ_JOB_A_SLOTS 2u
#define FZ_JOB_A_STORE 10u
#define FZ_JOB_A_RING 4u
#define FZ_JOB_A_S 1u /* SR_SYNC_SSP */

#define FZ_JOB_B 2u
#define FZ_JOB_B_WORKERS 2u
#define FZ_JOB_B_ELEMS 2u
#define FZ_JOB_B_SLOTS 1u
#define FZ_JOB_B_STORE 4u
#define FZ_JOB_B_RING 2u /* SR_SYNC_BSP */

#endif /* SERENE_TESTS_FUZZ_PIPELINE_H */
