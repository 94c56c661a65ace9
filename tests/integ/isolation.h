/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isolation.h - what the parts of the isolation test share (isolation.c
 * says what the test checks): the jobs, the switch, the legit workers
 * (iso_workers.c), the forging sockets and the counts the switch must show
 * for them (iso_forge.c), and the control-socket status and exit counters
 * (iso_status.c).
 */
#ifndef SERENE_TESTS_ISOLATION_H
#define SERENE_TESTS_ISOLATION_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"
#include "serene/serene.h"
#include "switch_proc.h"

#define JOB_A 1
#define JOB_B 2
#define JOB_C 3
#define NJOBS 4 /* indexes 1..3 used */
#define ELEMS 16
#define STORE 256
#define AR_COUNT 40     /* 3 packets of 16: every slot of the window in use */
#define PUSH_WORDS 64   /* 4 store rows */
#define TIMEOUT_MS 10000
#define QUIET_MS 300    /* a reply that has not come by then is not coming */
#define PENDING_MS 300  /* how long the pending ops must stay pending */

extern const uint32_t nonce_of[NJOBS];

/* ---- reporting and the switch (isolation.c) ---------------------------------- */

extern int failures;

__attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...);

extern sw_proc iso_sw;
extern struct sockaddr_in sw_addr; /* iso_sw's address, for sendto */

/* ---- the control socket and the exit counters (iso_status.c) ------------------ */

/* The fields of `status JOB` that no forged packet may move. */
#define NSTABLE 10

typedef struct ctl_status {
    char line[1024];
    uint64_t v[NSTABLE];
} ctl_status;

int status_get(int job, ctl_status *st);
uint64_t status_val(const ctl_status *st, const char *key);
void status_same(int job, const char *when, const ctl_status *a, const ctl_status *b);

/* What the switch's counters must show for the forged datagrams. */
typedef struct expect_counts {
    uint64_t unbound[NJOBS], errors[NJOBS];
    uint64_t unknown_job, answers_dropped, oversize;
    uint64_t rejected[SR_PARSE_NREASONS];
} expect_counts;

extern expect_counts expected;

/* Read the counter lines the stopped switch logged; check them against
 * expected. */
void check_exit_counters(void);

/* ---- the legit workers (iso_workers.c) ---------------------------------------- */

typedef struct legit {
    const char *name;
    int job, rank;
    serene_ctx *ctx;
    int fd; /* the context's UDP socket (found, not owned) */
    struct sockaddr_in local;
} legit;

int worker_join(legit *w, legit *ws, int nws);
float ar_input(int job, int rank, int call, int i);
int32_t push_value(int job, int rank, int k);
int32_t store_expect(int job, int k);
int wait_op(const legit *w, serene_op **op, const char *what);
void check_ar(const legit *w, int call, const float *got);
void job_allreduce(legit *w0, legit *w1, int call);
void job_clock(legit *w0, legit *w1);
void check_store(const legit *w, const char *when);
void check_clock_info(const legit *w, uint32_t clock, uint32_t low);

/* ---- forging (iso_forge.c) ------------------------------------------------------ */

typedef struct forger {
    const char *name;
    int fd;
    int owned;                /* close it at the end (not a context's socket) */
    unsigned want_err[16];    /* ERROR replies expected, by status */
    unsigned want_other[64];  /* other replies expected, by op */
    uint64_t sent;
} forger;

int forger_open(forger *f, const char *name, const char *ip, uint16_t port);
void send_join(forger *f, int job, int worker, uint32_t nonce, uint32_t token);
void forge_data(forger *f, int job, int worker);
void forge_unknown_job(forger *f, int job);
void forge_join_refused(forger *f, int job, int worker, uint32_t nonce, uint32_t token,
                        unsigned status);
void forge_malformed(forger *f);
void check_replies(forger *f);
void job_c_control(forger *c1, forger *c2);

#endif /* SERENE_TESTS_ISOLATION_H */
