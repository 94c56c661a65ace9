/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isolation.c - the isolation test: spoofed and foreign-job packets change
 * nothing in a job, and the switch counts every one of them.
 *
 * usage: isolation [SWITCH_BIN] [--nonce-reset-probe]
 *        (SWITCH_BIN defaults to $SERENE_SWITCH_BIN; without either: exit 77)
 *
 * Starts a real serene-switch on an ephemeral loopback port with a control
 * socket and three jobs:
 *   A = job 1 and B = job 2: 2 workers, 16 values per packet, 4 slots, a
 *       store of 256 words; joined by four contexts of the real library
 *       (A0, A1, B0, B1) in this process;
 *   C = job 3, 1 worker: driven only by packets made here, the positive
 *       control that they are well formed (the switch takes them from the
 *       address that joined).
 * The legit workers allreduce, push known values and clock. Then, while A0
 * waits in an allreduce for A1 and the barrier holds B0 at clock 1 waiting
 * for B1, plain UDP sockets send:
 *   (a) AR_DATA, PUSH, PULL and CLOCK with B's worker ids from another port,
 *       and from B0's own port number on another address (127.0.0.2);
 *   (b) the same with A's worker ids; and from A0's own socket: A1's id in
 *       job A, and B's ids in job B (a tenant of A poking at B);
 *   (c) every request op, JOIN included, for jobs that do not exist;
 *   (d) worker ids >= N (2, 63, 64, 65535), JOINs too, with the job's nonce
 *       and with another one (which must not reset the job);
 *   (e) truncated, foreign, bad version, op, count or length, oversize
 *       datagrams, and answers (switch-to-worker ops) sent to the switch;
 *   (f) JOINs for bound worker ids from new addresses with the job's nonce:
 *       a new token gets STALE; the bound token (job C, where this test
 *       knows it) gets NOT_MEMBER.
 * Then it checks that
 *   - the pending allreduce and clock stay pending (no forged packet
 *     completed a round or released the barrier), and complete with the
 *     right values once A1 and B1 take part;
 *   - each job's store, read back by its own workers, holds exactly what
 *     they pushed; the barrier and store state the control socket reports
 *     (low, high, advances, pushes, pulls, bound, nonce, ...) did not move
 *     during the forging;
 *   - the forging sockets got no answer except the ERROR a refused JOIN or
 *     an unknown job gets (nothing about any job's data);
 *   - the counters serene-switch prints at exit account exactly for every
 *     forged datagram: dropped_unbound and errors_sent per job, resets,
 *     unknown_job, answers_dropped, each rejected_* and udp_rx_oversize.
 * --nonce-reset-probe then checks that a JOIN with a new nonce from a
 * foreign address, while job B's workers are bound, is refused and changes
 * nothing (the exit counters are not checked in that mode).
 *
 * Every failed check prints "FAIL: " and what differed. Every wait is
 * bounded. Exit status: 0 all checks passed; 1 a check failed; 77 no switch.
 *
 * This file runs the scenario; iso_workers.c holds the legit workers,
 * iso_forge.c the forging, iso_status.c the control socket and the exit
 * counters.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isolation.h"
#include "timing.h"

#define MAX_FAILS 40

const uint32_t nonce_of[NJOBS] = {0, 0xa11ce001u, 0xb0b0b002u, 0xc0c0c003u};

/* ---- reporting ------------------------------------------------------------ */

int failures;

void fail(const char *fmt, ...)
{
    va_list ap;

    if (failures++ >= MAX_FAILS)
        return;
    fputs("FAIL: ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

/* ---- the switch --------------------------------------------------------------- */

sw_proc iso_sw = {.pid = -1};
struct sockaddr_in sw_addr;

static void cleanup(void)
{
    sw_cleanup(&iso_sw);
}

static void on_signal(int sig)
{
    (void)sig;
    exit(1); /* atexit: stop the switch, remove its directory */
}

/* Jobs A and B: 2 workers, ELEMS values per packet, 4 slots, a store of
 * STORE words; job C: 1 worker, a store of 4 packets. */
static int start_switch(const char *bin)
{
    char job_a[64], job_b[64], job_c[64];
    const char *args[] = {"--job", job_a, "--job", job_b, "--job", job_c, NULL};

    snprintf(job_a, sizeof job_a, "%d:2:%d:4,store=%d", JOB_A, ELEMS, STORE);
    snprintf(job_b, sizeof job_b, "%d:2:%d:4,store=%d", JOB_B, ELEMS, STORE);
    snprintf(job_c, sizeof job_c, "%d:1:%d:4,store=%d", JOB_C, ELEMS, 4 * ELEMS);
    if (sw_start(&iso_sw, bin, args)) {
        fail("serene-switch %s did not start (see above)", bin);
        return -1;
    }
    memset(&sw_addr, 0, sizeof sw_addr);
    sw_addr.sin_family = AF_INET;
    sw_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sw_addr.sin_port = htons((uint16_t)iso_sw.port);
    return 0;
}

/* ---- the probe of a new nonce ------------------------------------------------------------ */

/* A JOIN with another nonce from an address that is not B's, while B's
 * workers are bound: the switch must refuse it (JOB_IN_USE) and B's
 * incarnation, bindings and store must stay as they were. */
static void nonce_reset_probe(legit *b0, forger *f)
{
    ctl_status before, st;
    uint64_t refused[2];
    int32_t w0 = 0;
    int rc;

    if (status_get(JOB_B, &before))
        return;
    send_join(f, JOB_B, 0, nonce_of[JOB_B] + 1, 0xbad00001u);
    tc_sleep_ms(100);
    if (status_get(JOB_B, &st))
        return;
    rc = serene_pull_i32(b0->ctx, 0, &w0, 1, 0);
    printf("nonce-reset probe: after one JOIN(job %d, worker 0, nonce %#x) from %s: "
           "status nonce=%" PRIu64 " bound=%" PRIu64 " low=%" PRIu64 "; B0's pull of word 0: "
           "%s, value %d (want %d)\n",
           JOB_B, nonce_of[JOB_B] + 1, f->name, status_val(&st, "nonce"),
           status_val(&st, "bound"), status_val(&st, "low"), serene_err_name(rc), w0,
           store_expect(JOB_B, 0));
    if (status_val(&st, "nonce") != status_val(&before, "nonce"))
        fail("nonce-reset probe: a forged JOIN with a new nonce reset job %d", JOB_B);
    if (status_val(&st, "bound") != status_val(&before, "bound"))
        fail("nonce-reset probe: bound workers changed from %" PRIu64 " to %" PRIu64,
             status_val(&before, "bound"), status_val(&st, "bound"));
    if (sw_field(before.line, "in_use_refused", &refused[0]) ||
        sw_field(st.line, "in_use_refused", &refused[1]) || refused[1] != refused[0] + 1)
        fail("nonce-reset probe: in_use_refused did not count the forged JOIN");
    if (rc || w0 != store_expect(JOB_B, 0))
        fail("nonce-reset probe: B0's pull gave %s, value %d, want OK and %d",
             serene_err_name(rc), w0, store_expect(JOB_B, 0));
}

/* ---- the scenario ------------------------------------------------------------------ */

typedef struct iso {
    legit ws[4]; /* A0, A1, B0, B1 */
    forger fp, fip, fa0, c1, c2;
    ctl_status pend[NJOBS]; /* while A0's allreduce and B0's clock are pending */
    serene_stats a0_before;
    serene_op *a0_op, *b0_op;
    float a0_in[AR_COUNT], a0_out[AR_COUNT];
} iso;

/* Join, allreduce, push, clock and pull, both jobs; then leave A0 waiting
 * in allreduce call 2 and B0 held at clock 1. */
static int legit_start(iso *t)
{
    legit *ws = t->ws;
    ctl_status s0;

    for (int i = 0; i < 4; i++)
        if (worker_join(&ws[i], ws, i))
            return -1;
    job_allreduce(&ws[0], &ws[1], 1);
    job_allreduce(&ws[2], &ws[3], 1);
    for (int i = 0; i < 4; i++) {
        int32_t v[PUSH_WORDS];
        int rc;

        for (int k = 0; k < PUSH_WORDS; k++)
            v[k] = push_value(ws[i].job, ws[i].rank, k);
        if ((rc = serene_push_i32(ws[i].ctx, 0, v, PUSH_WORDS)))
            fail("%s: push: %s", ws[i].name, serene_err_name(rc));
    }
    job_clock(&ws[0], &ws[1]);
    job_clock(&ws[2], &ws[3]);
    for (int i = 0; i < 4; i++) {
        check_store(&ws[i], "before the forging");
        check_clock_info(&ws[i], 1, 0);
    }
    for (int j = JOB_A; j <= JOB_B; j++) {
        if (status_get(j, &s0))
            return -1;
        printf("before: job %d: %s\n", j, s0.line);
    }
    if (failures)
        return -1; /* the legit run itself is broken: nothing below would mean anything */
    for (int i = 0; i < AR_COUNT; i++)
        t->a0_in[i] = ar_input(JOB_A, 0, 2, i);
    if (serene_allreduce_start(ws[0].ctx, t->a0_in, t->a0_out, AR_COUNT, SERENE_SUM,
                               &t->a0_op) ||
        serene_clock_start(ws[2].ctx, &t->b0_op)) {
        fail("cannot start A0's allreduce or B0's clock");
        return -1;
    }
    tc_sleep_ms(100);
    if (serene_op_test(t->a0_op) != SERENE_ERR_AGAIN ||
        serene_op_test(t->b0_op) != SERENE_ERR_AGAIN)
        fail("A0's allreduce or B0's clock finished without its peer");
    if (status_get(JOB_A, &t->pend[JOB_A]) || status_get(JOB_B, &t->pend[JOB_B]))
        return -1;
    serene_get_stats(ws[0].ctx, &t->a0_before);
    return 0;
}

static int forge_all(iso *t)
{
    static const int big[] = {2, 63, 64, 65535};
    const legit *a0 = &t->ws[0], *b0 = &t->ws[2];

    if (forger_open(&t->fp, "other-port", "127.0.0.1", 0) ||
        forger_open(&t->c1, "job-C-worker", "127.0.0.1", 0) ||
        forger_open(&t->c2, "job-C-spoofer", "127.0.0.1", 0)) {
        fail("cannot open the forging sockets");
        return -1;
    }
    /* B0's port number on another loopback address. */
    if (forger_open(&t->fip, "other-ip", "127.0.0.2", ntohs(b0->local.sin_port)))
        printf("NOTE: no 127.0.0.2 here: the same-port, other-address case is left out\n");
    /* A0's own socket, shared with its context (which keeps reading it). */
    t->fa0.name = "A0's socket";
    t->fa0.fd = dup(a0->fd);
    if (t->fa0.fd < 0) {
        fail("dup of A0's socket: %s", strerror(errno));
        return -1;
    }
    job_c_control(&t->c1, &t->c2);
    /* (a) B's worker ids from another port, and from B0's port number on
     * another address. */
    for (int w = 0; w < 2; w++) {
        forge_data(&t->fp, JOB_B, w);
        if (t->fip.fd >= 0)
            forge_data(&t->fip, JOB_B, w);
    }
    /* (b) A's worker ids from a second socket; A0 claiming A1's id; A0 (a
     * worker of job A, from its own socket) in job B. */
    forge_data(&t->fp, JOB_A, 0);
    forge_data(&t->fp, JOB_A, 1);
    forge_data(&t->fa0, JOB_A, 1);
    forge_data(&t->fa0, JOB_B, 0);
    forge_data(&t->fa0, JOB_B, 1);
    /* (c) jobs that do not exist. */
    forge_unknown_job(&t->fp, 0);
    forge_unknown_job(&t->fp, 999);
    forge_unknown_job(&t->fp, 65535);
    forge_unknown_job(&t->fa0, 998);
    /* (d) worker ids >= N; JOINs with the job's nonce and with another one. */
    for (int j = JOB_A; j <= JOB_B; j++) {
        for (uint32_t k = 0; k < sizeof big / sizeof big[0]; k++) {
            forge_data(&t->fp, j, big[k]);
            forge_join_refused(&t->fp, j, big[k], nonce_of[j], 0x5eed0000u + k,
                               SR_ST_NOT_MEMBER);
            forge_join_refused(&t->fp, j, big[k], nonce_of[j] ^ 0x00ff00ffu, 0x5eed0100u + k,
                               SR_ST_NOT_MEMBER);
        }
    }
    /* (e) malformed datagrams and answers. */
    forge_malformed(&t->fp);
    /* (f) JOINs for bound worker ids from new addresses with the job's
     * nonce and a token of their own (the bound one is the context's). */
    for (uint32_t w = 0; w < 2; w++) {
        forge_join_refused(&t->fp, JOB_B, (int)w, nonce_of[JOB_B], 0x5eed0200u + w,
                           SR_ST_STALE);
        forge_join_refused(&t->fp, JOB_A, (int)w, nonce_of[JOB_A], 0x5eed0300u + w,
                           SR_ST_STALE);
    }
    if (t->fip.fd >= 0)
        forge_join_refused(&t->fip, JOB_B, 0, nonce_of[JOB_B], 0x5eed0400u, SR_ST_STALE);
    forge_join_refused(&t->fa0, JOB_B, 0, nonce_of[JOB_B], 0x5eed0500u, SR_ST_STALE);
    printf("forged %" PRIu64 " datagrams\n",
           t->fp.sent + t->fip.sent + t->fa0.sent + t->c1.sent + t->c2.sent);
    return 0;
}

/* Nothing moved; the legit peers take part and everything completes
 * correctly; the stores and barriers end where the legit workers put them. */
static void verify(iso *t)
{
    legit *ws = t->ws;
    serene_op *a1_op = NULL, *b1_op = NULL;
    float a1_in[AR_COUNT], a1_out[AR_COUNT];
    serene_stats a0_after;
    ctl_status now;
    unsigned a0_replies = t->fa0.want_err[SR_ST_UNKNOWN_JOB] + t->fa0.want_err[SR_ST_STALE];

    check_replies(&t->fp);
    check_replies(&t->fip);
    check_replies(&t->c1);
    check_replies(&t->c2);
    tc_sleep_ms(PENDING_MS);
    if (serene_op_test(t->a0_op) != SERENE_ERR_AGAIN)
        fail("A0's allreduce finished while A1 had not taken part: forged AR_DATA counted");
    if (serene_op_test(t->b0_op) != SERENE_ERR_AGAIN)
        fail("B0's clock 1 was let go while B1 had not clocked: a forged CLOCK counted");
    for (int j = JOB_A; j <= JOB_B; j++)
        if (!status_get(j, &now))
            status_same(j, "during the forging", &t->pend[j], &now);
    /* The replies to A0's socket went to A0's context, which drops answers
     * for another job (stats.rejected). */
    serene_get_stats(ws[0].ctx, &a0_after);
    if (a0_after.rejected - t->a0_before.rejected != a0_replies)
        fail("A0's context rejected %" PRIu64 " packets during the forging, want %u (the "
             "ERRORs for job 998 and job B)",
             a0_after.rejected - t->a0_before.rejected, a0_replies);

    for (int i = 0; i < AR_COUNT; i++)
        a1_in[i] = ar_input(JOB_A, 1, 2, i);
    if (serene_allreduce_start(ws[1].ctx, a1_in, a1_out, AR_COUNT, SERENE_SUM, &a1_op) ||
        serene_clock_start(ws[3].ctx, &b1_op))
        fail("cannot start A1's allreduce or B1's clock");
    if (!wait_op(&ws[0], &t->a0_op, "allreduce 2 (pending during the forging)"))
        check_ar(&ws[0], 2, t->a0_out);
    if (a1_op && !wait_op(&ws[1], &a1_op, "allreduce 2"))
        check_ar(&ws[1], 2, a1_out);
    wait_op(&ws[2], &t->b0_op, "clock 1 (held during the forging)");
    if (b1_op)
        wait_op(&ws[3], &b1_op, "clock 1");
    /* And the other way round: B allreduces, A clocks. */
    job_allreduce(&ws[2], &ws[3], 2);
    job_clock(&ws[0], &ws[1]);
    for (int i = 0; i < 4; i++) {
        check_store(&ws[i], "after the forging");
        check_clock_info(&ws[i], 2, 1);
    }
    for (int j = JOB_A; j <= JOB_B; j++) {
        if (status_get(j, &now))
            continue;
        printf("after: job %d: %s\n", j, now.line);
        if (status_val(&now, "low") != 1 || status_val(&now, "high") != 1 ||
            status_val(&now, "advances") != 2 || status_val(&now, "bound") != 2 ||
            status_val(&now, "nonce") != nonce_of[j] ||
            status_val(&now, "pushes") != 2 * PUSH_WORDS / ELEMS)
            fail("job %d: final status is not low=1 high=1 advances=2 bound=2 nonce=%u "
                 "pushes=%d: %s",
                 j, nonce_of[j], 2 * PUSH_WORDS / ELEMS, now.line);
    }
}

int main(int argc, char **argv)
{
    static iso t = {
        .ws = {{"A0", JOB_A, 0, NULL, -1, {0}},
               {"A1", JOB_A, 1, NULL, -1, {0}},
               {"B0", JOB_B, 0, NULL, -1, {0}},
               {"B1", JOB_B, 1, NULL, -1, {0}}},
        .fp = {.fd = -1}, .fip = {.fd = -1}, .fa0 = {.fd = -1}, .c1 = {.fd = -1},
        .c2 = {.fd = -1},
    };
    const char *bin = getenv("SERENE_SWITCH_BIN");
    forger *all[] = {&t.fp, &t.fip, &t.fa0, &t.c1, &t.c2};
    int probe = 0;
    double t0 = tc_now_ms();

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nonce-reset-probe")) {
            probe = 1;
        } else if (argv[i][0] != '-') {
            bin = argv[i];
        } else {
            fprintf(stderr, "usage: isolation [SWITCH_BIN] [--nonce-reset-probe]\n");
            return 2;
        }
    }
    if (!bin || !*bin) {
        printf("SKIP: no serene-switch (give its path or set SERENE_SWITCH_BIN)\n");
        return 77;
    }
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    if (start_switch(bin) || legit_start(&t) || forge_all(&t))
        return 1;
    verify(&t);
    if (probe)
        nonce_reset_probe(&t.ws[2], &t.fp);
    for (int i = 0; i < 4; i++)
        serene_ctx_destroy(&t.ws[i].ctx);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->fd >= 0)
            close(all[i]->fd);
    sw_stop(&iso_sw);
    printf("counters at exit:\n");
    if (probe)
        printf("  (not checked after the nonce-reset probe)\n");
    else
        check_exit_counters();
    if (failures) {
        printf("FAIL: isolation: %d check(s) failed (%.0f ms)\n", failures, tc_now_ms() - t0);
        return 1;
    }
    printf("PASS: isolation: every forged datagram was dropped or refused, changed nothing, "
           "and was counted (%.0f ms)\n",
           tc_now_ms() - t0);
    return 0;
}
