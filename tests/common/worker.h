/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker.h - what the worker programs of the integration suites share:
 * their command-line options (a table of --name VALUE options), their
 * context (configured from the SERENE_* environment that serene-run or a
 * test script sets), the seeded hash their inputs come from, and the clock
 * log that ssp_check verifies across ranks.
 */
#ifndef SERENE_TESTS_WORKER_H
#define SERENE_TESTS_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "serene/serene.h"

/* ---- options -------------------------------------------------------------- */

typedef enum tc_opt_kind {
    TC_OPT_INT,   /* int *: decimal */
    TC_OPT_LONG,  /* long *: decimal */
    TC_OPT_U32,   /* uint32_t *: decimal, 0x hex or 0 octal */
    TC_OPT_U64,   /* uint64_t *: likewise */
    TC_OPT_SIZE,  /* size_t *: likewise */
    TC_OPT_STR,   /* const char **: the argument itself (not copied) */
    TC_OPT_FLAG,  /* int *: set to 1; takes no value */
    TC_OPT_SIZES, /* size_t[cap]: a comma list N,N,... (U64 syntax); *count set */
} tc_opt_kind;

typedef struct tc_opt {
    const char *name; /* "--elems"; NULL ends the table */
    tc_opt_kind kind;
    void *dst;
    int *count; /* TC_OPT_SIZES: how many were given */
    int cap;    /* TC_OPT_SIZES: room in dst */
    int *seen;  /* optional: set to 1 when the option was given */
} tc_opt;

/* Parse argv[first..argc) against the table opts. Every value must be a
 * whole number of its kind (no trailing characters). Returns 0, or -1 on
 * an unknown option, a missing or malformed value, or too many sizes, after
 * printing which on stderr. */
int tc_parse_opts(int argc, char **argv, int first, const tc_opt *opts);

/* ---- the context ------------------------------------------------------------- */

/* serene_config_init, then serene_config_from_env. 0, or -1 (the library
 * has logged why). */
int tc_config_from_env(serene_config *cfg);

/* serene_ctx_create; on failure prints "rank R: serene_ctx_create: NAME
 * (message)" on stderr. Returns what serene_ctx_create returned. */
int tc_ctx_create(serene_ctx **ctx, const serene_config *cfg);

/* ---- inputs ---------------------------------------------------------------------- */

/* splitmix64's finaliser: the seeded hash every worker's inputs come from,
 * so each rank can compute every other rank's input. */
uint64_t tc_mix(uint64_t x);

/* "BSP", "SSP", "ASP", or "?". */
const char *tc_mode_name(serene_sync_mode m);

/* ---- the clock log ----------------------------------------------------------------- */

/* DIR/rank<R>.csv, one row per clock:
 *     clock,t_call_ns,t_return_ns,mode,s,low,high
 * (CLOCK_MONOTONIC; mode, s, low, high from serene_get_clock_info after the
 * call) and a last line
 *     #stats holds=H releases=R clock_wait_ns=W retrans=T
 * which `ssp_check clocks` reads back for every rank. */
typedef struct tc_clock_log {
    FILE *f;
    char path[4096];
} tc_clock_log;

/* Create the file and write its header. 0, or -1 (message on stderr). */
int tc_clock_log_open(tc_clock_log *lg, const char *dir, int rank);

void tc_clock_log_row(tc_clock_log *lg, long clock, uint64_t t_call, uint64_t t_ret,
                      const serene_clock_info *ci);

/* Write the #stats line from ctx's statistics and close. 0, or -1 when the
 * file could not be written (message on stderr). */
int tc_clock_log_close(tc_clock_log *lg, serene_ctx *ctx);

#endif /* SERENE_TESTS_WORKER_H */
