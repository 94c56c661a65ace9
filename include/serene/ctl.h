/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene/ctl.h - the Serene control plane (libserene-ctl): a small policy
 * language compiled to clock-range barrier rules, job setup for each switch
 * target (serene-switch's control socket, BMv2 simple_switch_CLI, Tofino
 * bfrt_python), monitoring of the software switch, and the dynamic
 * controller that evaluates reactive rules against the monitored figures.
 *
 * A library of its own, apart from libserene: workers never link it, and it
 * never links libserene. Every function returns 0 or a negative errno-style
 * code unless said otherwise; none prints, exits or aborts. Messages for a
 * human are written to caller-supplied buffers. Not thread-safe per object;
 * distinct objects may be used from distinct threads.
 *
 * The policy language is documented in lib/ctl/policy.c and
 * lib/ctl/README.md.
 */
#ifndef SERENE_CTL_H
#define SERENE_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SERENE_CTL_API
#elif defined(__GNUC__)
#define SERENE_CTL_API __attribute__((visibility("default")))
#else
#define SERENE_CTL_API
#endif

/* Modes, numbered as on the wire (lib/proto/wire.h, enum sr_sync_mode). */
typedef enum serene_ctl_mode {
    SERENE_CTL_BSP = 0,
    SERENE_CTL_SSP = 1,
    SERENE_CTL_ASP = 2,
} serene_ctl_mode;

/* "bsp", "ssp", "asp", or "?". */
SERENE_CTL_API const char *serene_ctl_mode_name(serene_ctl_mode mode);

/* One compiled rule: clocks [from, to) run under (mode, s); open: [from, inf). */
typedef struct serene_ctl_rule {
    uint32_t from;
    uint32_t to;   /* meaningless when open */
    int open;
    serene_ctl_mode mode;
    uint32_t s;    /* 0 unless SSP */
} serene_ctl_rule;

/* ---- policy ------------------------------------------------------------- */

typedef struct serene_ctl_policy serene_ctl_policy;

/* Longest error message written by serene_ctl_policy_parse. */
#define SERENE_CTL_ERR_MAX 256

/* Parse and compile text[len] (need not be NUL-terminated). ring: the job's
 * ring size R (s must be <= R - 2), 0 when unknown (then s <= 4094, the
 * switch's largest ring). On success *out is a new policy (free it with
 * serene_ctl_policy_free). On a syntax or semantic error returns -EINVAL and
 * writes "LINE:COL: message" (1-based) to err[errcap] when err is not NULL;
 * -ENOMEM when out of memory. */
SERENE_CTL_API int serene_ctl_policy_parse(const char *text, size_t len, uint32_t ring,
                                           serene_ctl_policy **out, char *err, size_t errcap);

/* Accepts NULL; sets *p to NULL. */
SERENE_CTL_API void serene_ctl_policy_free(serene_ctl_policy **p);

/* The compiled static rules (schedule plus `when clock >= N` overrides),
 * ascending, the last one open unless the schedule ends with an `until`.
 * Copies up to cap of them to out (NULL when cap is 0); returns the count. */
SERENE_CTL_API unsigned serene_ctl_policy_rules(const serene_ctl_policy *p, serene_ctl_rule *out,
                                                unsigned cap);

/* Number of reactive rules (wait_fraction, loss_plateau, clock triggers). */
SERENE_CTL_API unsigned serene_ctl_policy_reactive_count(const serene_ctl_policy *p);

/* The clock of `stop at clock N`, or the end of a closed schedule; returns 0
 * and sets *clock, or -ENOENT when the policy has no end. */
SERENE_CTL_API int serene_ctl_policy_stop(const serene_ctl_policy *p, uint32_t *clock);

/* Write the policy back in canonical form, one statement a line. */
SERENE_CTL_API int serene_ctl_policy_print(const serene_ctl_policy *p, FILE *f);

/* ---- job description ---------------------------------------------------- */

#define SERENE_CTL_MAX_WORKERS 64

typedef struct serene_ctl_worker {
    uint32_t addr;      /* IPv4, host byte order */
    uint16_t udp_port;  /* the worker's source UDP port */
    uint16_t sw_port;   /* switch egress port for its multicast copy */
} serene_ctl_worker;

/* A leaf of a tree: the ranks it serves, where it reaches the root and
 * (optional, for the ranks' SERENE_SWITCH) where its workers reach it. */
typedef struct serene_ctl_leaf {
    uint32_t first, count;    /* ranks first .. first + count - 1 */
    uint32_t up_addr;         /* IPv4 of the root as this leaf reaches it, host order */
    uint16_t up_port;
    uint16_t port;            /* where the workers reach the leaf; 0: not given */
    uint32_t addr;
} serene_ctl_leaf;

typedef struct serene_ctl_job {
    uint16_t id;              /* job id, no default */
    uint32_t n_workers;       /* 1..64, no default */
    uint32_t store_words;     /* default 0 */
    uint16_t mcast_group;     /* default id + 1 */
    uint32_t ring;            /* default 64 */
    uint32_t first_clock;     /* default 0 */
    serene_ctl_worker workers[SERENE_CTL_MAX_WORKERS];
    uint64_t token;           /* admission token a JOIN must carry; default 0 (none) */
    /* An aggregation tree of serene-switches (lib/ctl/README.md, "Trees"):
     * n_leaves 0 (the default) is a job on one switch. */
    uint32_t elems;           /* values per packet; default 256 (serene-switch's) */
    uint32_t slots;           /* slot pool per job; default 128 (serene-switch's) */
    uint16_t up_job;          /* the root's job whose members are the leaves;
                                 default id ^ 0x8000 */
    uint32_t n_leaves;        /* 0, or 1..64 leaves covering ranks 0..n_workers-1 */
    serene_ctl_leaf leaves[SERENE_CTL_MAX_WORKERS];
} serene_ctl_job;

/* Parse a job file (key = value lines; see lib/ctl/README.md) from
 * text[len]. name labels messages. Returns 0, or -EINVAL with
 * "NAME:LINE: message" in err[errcap]. */
SERENE_CTL_API int serene_ctl_job_parse(const char *text, size_t len, const char *name,
                                        serene_ctl_job *job, char *err, size_t errcap);

/* ---- targets ------------------------------------------------------------ */

typedef enum serene_ctl_target {
    SERENE_CTL_TARGET_SW = 0,    /* serene-switch control-socket commands */
    SERENE_CTL_TARGET_BMV2 = 1,  /* simple_switch_CLI command file */
    SERENE_CTL_TARGET_TOFINO = 2 /* bfrt_python script */
} serene_ctl_target;

/* "sw", "bmv2", "tofino" -> target; returns 0 or -EINVAL. */
SERENE_CTL_API int serene_ctl_target_parse(const char *name, serene_ctl_target *t);

/* Write the job setup plus the policy's rules for target t to f.
 * Returns 0, -EINVAL (bad arguments, or the policy's s above the job's
 * ring: message in err) or -EIO (write failed). */
SERENE_CTL_API int serene_ctl_emit(FILE *f, serene_ctl_target t, const serene_ctl_policy *p,
                                   const serene_ctl_job *job, char *err, size_t errcap);

/* Write each switch's configuration of a tree job (job->n_leaves > 0) to
 * f. Target sw: a comment line, then one line per serene-switch, its name
 * ("root", "leaf.K") and its --job arguments, then "rank.R
 * SERENE_SWITCH=A:P" for the ranks of leaves whose address is given; the
 * policy's rules go to the root, which holds the barrier (serene_ctl_emit,
 * target sw), and p may be NULL. Target bmv2: one simple_switch_CLI command
 * file per switch, each after a line "# switch NAME", the policy's rules in
 * the root's (p required; every worker.RANK and leaf.K.addr needed; ports
 * in lib/ctl/README.md, "Trees"). Returns 0, -EINVAL (not a tree, another
 * target, or an address missing: message in err) or -EIO. */
SERENE_CTL_API int serene_ctl_emit_tree(FILE *f, serene_ctl_target t, const serene_ctl_policy *p,
                                        const serene_ctl_job *job, char *err, size_t errcap);

/* ---- the software switch: control socket and status --------------------- */

/* Send one command line to serene-switch's control socket at path and read
 * its one-line reply (without the newline) into reply[cap]. Bounded by
 * timeout_ms for connect, send and receive. Returns 0 when the reply starts
 * with "ok", -EPROTO when it is an error reply (still in reply), or
 * -errno (-ETIMEDOUT, -ECONNREFUSED, -ENOENT, ...). */
SERENE_CTL_API int serene_ctl_sw_command(const char *path, const char *line, char *reply,
                                         size_t cap, int timeout_ms);

#define SERENE_CTL_STATUS_RULES 32

/* One `status JOB` reply, parsed. */
typedef struct serene_ctl_status {
    uint32_t job, workers, low, high, ring;
    serene_ctl_mode mode;  /* for clock high + 1 */
    uint32_t s;
    uint64_t clocks, holds, proceeds, advances;
    unsigned n_rules;
    serene_ctl_rule rules[SERENE_CTL_STATUS_RULES];
} serene_ctl_status;

/* Parse "ok job=J workers=N low=L ..." (unknown keys are skipped). Returns
 * 0 or -EINVAL (not an ok status line, or a field missing or malformed). */
SERENE_CTL_API int serene_ctl_status_parse(const char *line, serene_ctl_status *st);

/* Write st as one JSON object (no newline). */
SERENE_CTL_API int serene_ctl_status_json(const serene_ctl_status *st, FILE *f);

/* ---- the dynamic controller ---------------------------------------------- */

typedef struct serene_ctl_controller serene_ctl_controller;

/* One decision of the controller: install (mode, s) from clock `from`. */
typedef struct serene_ctl_decision {
    uint32_t clock;          /* the high clock the figure was measured at */
    char why[96];            /* e.g. "wait_fraction 0.62 > 0.5 over 5 clocks" */
    serene_ctl_mode old_mode, new_mode;
    uint32_t old_s, new_s;
    uint32_t from;           /* wanted start; the switch answers E >= from */
    int reactive;            /* 1: a reactive rule fired; 0: a static rule
                                (the schedule, or one re-installed after a
                                reactive change dropped it) */
} serene_ctl_decision;

/* A controller for policy p (borrowed: p must outlive it). */
SERENE_CTL_API int serene_ctl_controller_create(serene_ctl_controller **out,
                                                const serene_ctl_policy *p);
SERENE_CTL_API void serene_ctl_controller_destroy(serene_ctl_controller **c);

/* Feed one status sample. loss_plateau: 1 when the metrics say the loss has
 * stopped falling at this clock, 0 otherwise (-1: no loss signal). Writes up
 * to cap decisions to out, in the order they must be installed; returns
 * their count. A returned decision is a proposal: call
 * serene_ctl_controller_applied with the effective clock the switch answered.
 */
SERENE_CTL_API unsigned serene_ctl_controller_step(serene_ctl_controller *c,
                                                   const serene_ctl_status *st, int loss_plateau,
                                                   serene_ctl_decision *out, unsigned cap);

/* Record that d took effect from clock effective. */
SERENE_CTL_API void serene_ctl_controller_applied(serene_ctl_controller *c,
                                                  const serene_ctl_decision *d,
                                                  uint32_t effective);

/* 1 when the job has passed the policy's stop clock (see
 * serene_ctl_policy_stop), else 0. */
SERENE_CTL_API int serene_ctl_controller_done(const serene_ctl_controller *c);

#ifdef __cplusplus
}
#endif

#endif /* SERENE_CTL_H */
