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
 * distinct objects may be used from distinct threads. Each function's
 * comment opens with "name - summary." and has "Returns:", "Blocks:" and
 * "Threads:" parts, as in serene.h (tests/docs/check_docs.py).
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

/* serene_ctl_mode_name - the name of a mode.
 * Returns: "bsp", "ssp", "asp", or "?" for another value; static text.
 * Blocks: no.
 * Threads: any. */
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

/* serene_ctl_policy_parse - parse and compile a policy text.
 * text[len] need not be NUL-terminated. ring: the job's ring size R (s
 * must be <= R - 2), 0 when unknown (then s <= 4094, the switch's largest
 * ring). On success *out is a new policy (free it with
 * serene_ctl_policy_free); else *out is NULL.
 * Returns:
 *   0                      *out is the policy
 *   -EINVAL                out NULL, text NULL with len > 0, ring not a power
 *                          of 2 in 2..4096, or a syntax or semantic error:
 *                          "LINE:COL: message" (1-based) in err[errcap]
 *                          when err is not NULL
 *   -ENOMEM                out of memory
 * Blocks: no.
 * Threads: any. */
SERENE_CTL_API int serene_ctl_policy_parse(const char *text, size_t len, uint32_t ring,
                                           serene_ctl_policy **out, char *err, size_t errcap);

/* serene_ctl_policy_free - free a policy and set *p to NULL.
 * Accepts NULL and a pointer to NULL. No controller may still borrow it.
 * Returns: nothing.
 * Blocks: no.
 * Threads: any, while no other thread uses the policy. */
SERENE_CTL_API void serene_ctl_policy_free(serene_ctl_policy **p);

/* serene_ctl_policy_rules - copy the policy's compiled static rules.
 * The schedule plus `when clock >= N` overrides, ascending, the last one
 * open unless the schedule ends with an `until`. Copies up to cap of them
 * to out (NULL when cap is 0).
 * Returns: the number of rules, which may exceed cap; 0 for p NULL.
 * Blocks: no.
 * Threads: any (p is only read). */
SERENE_CTL_API unsigned serene_ctl_policy_rules(const serene_ctl_policy *p, serene_ctl_rule *out,
                                                unsigned cap);

/* serene_ctl_policy_reactive_count - the number of the policy's reactive rules.
 * wait_fraction, spread, loss_plateau and clock triggers.
 * Returns: the count; 0 for p NULL.
 * Blocks: no.
 * Threads: any (p is only read). */
SERENE_CTL_API unsigned serene_ctl_policy_reactive_count(const serene_ctl_policy *p);

/* serene_ctl_policy_stop - the clock at which the policy ends.
 * That of `stop at clock N`, or the end of a closed schedule; *clock is
 * set when clock is not NULL.
 * Returns:
 *   0                      *clock set
 *   -ENOENT                the policy has no end, or p is NULL
 * Blocks: no.
 * Threads: any (p is only read). */
SERENE_CTL_API int serene_ctl_policy_stop(const serene_ctl_policy *p, uint32_t *clock);

/* serene_ctl_policy_print - write the policy back in canonical form to f.
 * One statement a line: its rules, reactive rules and stop.
 * Returns:
 *   0                      written
 *   -EINVAL                p or f NULL
 *   -EIO                   f's error indicator is set
 * Blocks: on f's writes only.
 * Threads: any (p is only read). */
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
    /* A shared job on BMv2 (lib/ctl/README.md, "Shared jobs"): fb_addr 0
     * (the default) is none. Its rounds go to a leased block of the
     * switch's memory or to the fallback aggregator at fb_addr:fb_udp_port. */
    uint32_t fb_addr;         /* the fallback's IPv4, host order */
    uint16_t fb_udp_port;
    uint16_t fb_sw_port;      /* switch port toward it; default n_workers + 1 */
    uint32_t lease;           /* slots 0..lease-1 leased a block; default
                                 SERENE_CTL_LEASE_ALL (every slot) */
    uint32_t lease_first;     /* the block of slot 0, slot s's is lease_first + s;
                                 default SERENE_CTL_LEASE_ALL: the job's own
                                 register block's (BMv2: id mod 4 times 64) */
} serene_ctl_job;

#define SERENE_CTL_LEASE_ALL UINT32_MAX

/* serene_ctl_job_parse - parse a job file from text[len] into *job.
 * key = value lines (lib/ctl/README.md); fields not given keep their
 * defaults (above). name labels messages ("job" when NULL).
 * Returns:
 *   0                      *job filled
 *   -EINVAL                job NULL, text NULL with len > 0, or a bad line
 *                          or job: "NAME:LINE: message" in err[errcap]
 * Blocks: no.
 * Threads: any. */
SERENE_CTL_API int serene_ctl_job_parse(const char *text, size_t len, const char *name,
                                        serene_ctl_job *job, char *err, size_t errcap);

/* ---- targets ------------------------------------------------------------ */

typedef enum serene_ctl_target {
    SERENE_CTL_TARGET_SW = 0,    /* serene-switch control-socket commands */
    SERENE_CTL_TARGET_BMV2 = 1,  /* simple_switch_CLI command file */
    SERENE_CTL_TARGET_TOFINO = 2 /* bfrt_python script */
} serene_ctl_target;

/* serene_ctl_target_parse - the target named "sw", "bmv2" or "tofino".
 * Returns:
 *   0                      *t set
 *   -EINVAL                name or t NULL, or another name
 * Blocks: no.
 * Threads: any. */
SERENE_CTL_API int serene_ctl_target_parse(const char *name, serene_ctl_target *t);

/* serene_ctl_emit - write the job setup and the policy's rules for t to f.
 * For a tree job (n_leaves > 0) only target sw: the root's policy commands
 * (serene_ctl_emit_tree writes the switches' setup).
 * Returns:
 *   0                      written and flushed
 *   -EINVAL                bad arguments, the policy's s above the job's
 *                          ring, a tree for bmv2 or tofino, a job beyond a
 *                          Tofino's workers, store or policy table, or an
 *                          unknown target: message in err[errcap]
 *   -EIO                   the write or flush failed
 * Blocks: on f's writes only.
 * Threads: any (p and job are only read). */
SERENE_CTL_API int serene_ctl_emit(FILE *f, serene_ctl_target t, const serene_ctl_policy *p,
                                   const serene_ctl_job *job, char *err, size_t errcap);

/* serene_ctl_emit_tree - write each switch's setup of a tree job to f.
 * job->n_leaves > 0. Target sw: a comment line, then one line per
 * serene-switch, its name ("root", "leaf.K") and its --job arguments, then
 * "rank.R SERENE_SWITCH=A:P" for the ranks of leaves whose address is
 * given; the policy's rules go to the root, which holds the barrier
 * (serene_ctl_emit, target sw), and p may be NULL. Target bmv2: one
 * simple_switch_CLI command file per switch, each after a line "# switch
 * NAME", the policy's rules in the root's (p required; every worker.RANK
 * and leaf.K.addr needed; ports in lib/ctl/README.md, "Trees").
 * Returns:
 *   0                      written and flushed
 *   -EINVAL                not a tree, another target, p NULL for bmv2, or
 *                          an address missing: message in err[errcap]
 *   -EIO                   the write or flush failed
 * Blocks: on f's writes only.
 * Threads: any (p and job are only read). */
SERENE_CTL_API int serene_ctl_emit_tree(FILE *f, serene_ctl_target t, const serene_ctl_policy *p,
                                        const serene_ctl_job *job, char *err, size_t errcap);

/* serene_ctl_emit_counters - write a script that prints a Tofino job's counters.
 * The bfrt_python script prints one line "serene job J: packets P, rounds
 * completed R, duplicates D, mismatches M" (its job_table entry's packets;
 * the program's ar_ctr events for the job's register block).
 * Returns:
 *   0                      written and flushed
 *   -EINVAL                f or job NULL: message in err[errcap]
 *   -EIO                   the write or flush failed
 * Blocks: on f's writes only.
 * Threads: any (job is only read). */
SERENE_CTL_API int serene_ctl_emit_counters(FILE *f, const serene_ctl_job *job, char *err,
                                            size_t errcap);

/* serene_ctl_emit_reset - write a script that clears a Tofino job's block.
 * For a new run of the job on the same switch: the same guard and clearing
 * as the setup script (serene_ctl_emit for tofino) and low and high set to
 * first_clock - 1, without the table entries, which stay. A new context
 * of a job starts its slots' round numbers at 1 again: without the reset
 * its rounds meet the last run's in the cells (MISMATCH, or a piece equal
 * to an open round's is summed into it).
 * Returns:
 *   0                      written and flushed
 *   -EINVAL                f or job NULL: message in err[errcap]
 *   -EIO                   the write or flush failed
 * Blocks: on f's writes only.
 * Threads: any (job is only read). */
SERENE_CTL_API int serene_ctl_emit_reset(FILE *f, const serene_ctl_job *job, char *err,
                                         size_t errcap);

/* ---- the software switch: control socket and status --------------------- */

/* serene_ctl_sw_command - send one command line to serene-switch's socket.
 * Connects to the control socket at path, sends line and reads the
 * one-line reply (without the newline, truncated to fit) into reply[cap].
 * Returns:
 *   0                      the reply starts with "ok"
 *   -EPROTO                an error reply (still in reply), or none
 *   -EINVAL                a NULL argument, cap < 2, or line empty or
 *                          holding a newline
 *   -ENAMETOOLONG          path too long for a socket address
 *   -ETIMEDOUT             timeout_ms passed
 *   -errno                 connect, send or receive failed (-ECONNREFUSED,
 *                          -ENOENT, -EPIPE, ...)
 * Blocks: until the reply is in, at most timeout_ms (1 ms if <= 0) in all.
 * Threads: any. */
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

/* serene_ctl_status_parse - parse a `status JOB` reply into *st.
 * "ok job=J workers=N low=L ..." (unknown keys are skipped).
 * Returns:
 *   0                      *st filled
 *   -EINVAL                a NULL argument, not an ok status line, or a
 *                          field missing or malformed
 * Blocks: no.
 * Threads: any. */
SERENE_CTL_API int serene_ctl_status_parse(const char *line, serene_ctl_status *st);

/* serene_ctl_status_json - write st to f as one JSON object (no newline).
 * Returns:
 *   0                      written
 *   -EINVAL                st or f NULL
 *   -EIO                   f's error indicator is set
 * Blocks: on f's writes only.
 * Threads: any. */
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

/* serene_ctl_controller_create - a controller for policy p.
 * p is borrowed: it must outlive the controller.
 * Returns:
 *   0                      *out is the controller
 *   -EINVAL                out or p NULL
 *   -ENOMEM                out of memory
 * Blocks: no.
 * Threads: any. */
SERENE_CTL_API int serene_ctl_controller_create(serene_ctl_controller **out,
                                                const serene_ctl_policy *p);
/* serene_ctl_controller_destroy - free a controller and set *c to NULL.
 * Accepts NULL and a pointer to NULL; the policy stays the caller's.
 * Returns: nothing.
 * Blocks: no.
 * Threads: any, while no other thread uses the controller. */
SERENE_CTL_API void serene_ctl_controller_destroy(serene_ctl_controller **c);

/* serene_ctl_controller_step - feed one status sample; get the decisions.
 * loss_plateau: 1 when the metrics say the loss has stopped falling at
 * this clock, 0 otherwise (-1: no loss signal). Writes up to cap decisions
 * to out, in the order they must be installed. A returned decision is a
 * proposal: call serene_ctl_controller_applied with the effective clock
 * the switch answered. The first call proposes the policy's static rules.
 * Returns: the number of decisions written; 0 for c or st NULL, or out
 *   NULL with cap > 0.
 * Blocks: no.
 * Threads: one thread at a time per controller. */
SERENE_CTL_API unsigned serene_ctl_controller_step(serene_ctl_controller *c,
                                                   const serene_ctl_status *st, int loss_plateau,
                                                   serene_ctl_decision *out, unsigned cap);

/* serene_ctl_controller_applied - record that d took effect from a clock.
 * effective: the clock the switch answered. Only reactive decisions
 * (d->reactive) change the controller.
 * Returns: nothing.
 * Blocks: no.
 * Threads: one thread at a time per controller. */
SERENE_CTL_API void serene_ctl_controller_applied(serene_ctl_controller *c,
                                                  const serene_ctl_decision *d,
                                                  uint32_t effective);

/* serene_ctl_controller_done - whether the job has passed the policy's stop.
 * The stop clock of serene_ctl_policy_stop.
 * Returns: 1 when it has, else 0 (also for c NULL).
 * Blocks: no.
 * Threads: one thread at a time per controller. */
SERENE_CTL_API int serene_ctl_controller_done(const serene_ctl_controller *c);

#ifdef __cplusplus
}
#endif

#endif /* SERENE_CTL_H */
