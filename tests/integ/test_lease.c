/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_lease.c - leases against a live serene-switch (--lease 2).
 *
 * usage: test_lease [SWITCH_BIN]
 *        (defaults to $SERENE_SWITCH_BIN; without either: exit 77)
 *
 * 1. A run of 2 ranks (a child process) joins job 9 and is SIGKILLed: its
 *    contexts never send LEAVE. A new run (another nonce) is refused with
 *    JOB_IN_USE at once, and joins and allreduces exactly after the lease,
 *    with no operator `reset`.
 * 2. Rank 0 (child A) waits in an allreduce (deadline 10 s) for rank 1
 *    (child B), which is SIGKILLed. After B's lease the job is still in
 *    use, because A, live, waits for B; once A's deadline passed and A
 *    left, a new run joins and allreduces exactly.
 * Every wait is bounded; the test stops only the processes it started,
 * by PID. Exit status: 0 passed, 1 a check failed, 77 no switch.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serene/serene.h"
#include "check.h"
#include "timing.h"
#include "switch_proc.h"

#define JOB 9
#define LEASE_MS 2000 /* --lease 2: longer than a busy machine takes from a
                        * kill to the next JOIN */
#define WAIT_MS 10000 /* child A's deadline: it still waits when rank 1's lease
                        * lapsed, however busy the machine */
#define N 64 /* values per allreduce */

static sw_proc sw;
static int ready[2]; /* children write a byte once joined; non-blocking read end */

static int make_ctx(serene_ctx **ctx, int rank, uint32_t nonce, int timeout_ms)
{
    serene_config cfg;

    sw_worker_config(&sw, &cfg, JOB, rank, 2);
    cfg.job_nonce = nonce;
    cfg.timeout_ms = timeout_ms;
    cfg.log_fn = sw_quiet_log;
    return serene_ctx_create(ctx, &cfg);
}

/* A child that joins ranks [lo, hi) with nonce, writes one byte to the
 * ready pipe once joined, then allreduces (if ar, deadline WAIT_MS) or
 * sleeps; exits 0 after its context ends (which sends LEAVE), 1 if the join
 * failed. */
static pid_t child(int lo, int hi, uint32_t nonce, int ar)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    serene_ctx *c[2] = {NULL, NULL};
    for (int r = lo; r < hi; r++)
        if (make_ctx(&c[r], r, nonce, ar ? WAIT_MS : 3000))
            _exit(1);
    if (write(ready[1], "j", 1) != 1)
        _exit(1);
    if (ar) {
        float in[N] = {0}, out[N];
        (void)serene_allreduce(c[lo], in, out, N, SERENE_SUM); /* times out */
    } else {
        tc_sleep_ms(20000); /* SIGKILLed long before */
    }
    for (int r = lo; r < hi; r++)
        serene_ctx_destroy(&c[r]);
    _exit(0);
}

/* Wait for a child's "joined" byte, 5 s at most. */
static int joined(const char *who)
{
    char b;

    for (int i = 0; i < 500; i++) {
        if (read(ready[0], &b, 1) == 1)
            return 0;
        tc_sleep_ms(10);
    }
    tc_fail("%s did not join within 5 s", who);
    return -1;
}

static void reap(pid_t pid, int sig, const char *who)
{
    int st;

    if (pid <= 0)
        return;
    if (sig)
        kill(pid, sig);
    for (int i = 0; i < 2000; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return;
        tc_sleep_ms(10);
    }
    tc_fail("%s (pid %d) still running after 20 s: killed", who, (int)pid);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/* A new run with nonce: rc of rank 0's join, and when it joined, rank 1
 * too and an exact allreduce. */
static int new_run(uint32_t nonce, const char *when)
{
    serene_ctx *c[2] = {NULL, NULL};
    serene_op *op[2] = {NULL, NULL};
    float in[2][N], out[2][N];
    int rc = make_ctx(&c[0], 0, nonce, 3000);

    if (rc)
        return rc;
    if ((rc = make_ctx(&c[1], 1, nonce, 3000))) {
        tc_fail("%s: rank 1 of the new run: %s", when, serene_err_name(rc));
        goto out;
    }
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < N; i++)
            in[r][i] = (float)(r + i);
        if ((rc = serene_allreduce_start(c[r], in[r], out[r], N, SERENE_SUM, &op[r])))
            tc_fail("%s: allreduce_start: %s", when, serene_err_name(rc));
    }
    for (int r = 0; r < 2; r++) {
        if (op[r] && (rc = serene_op_wait(&op[r])))
            tc_fail("%s: allreduce rank %d: %s", when, r, serene_err_name(rc));
        for (int i = 0; i < N && !rc; i++)
            if (out[r][i] != (float)(1 + 2 * i)) {
                tc_fail("%s: rank %d value %d is %g", when, r, i, out[r][i]);
                break;
            }
    }
out:
    serene_ctx_destroy(&c[0]);
    serene_ctx_destroy(&c[1]);
    return 0;
}

static void killed_run(void)
{
    pid_t pid = child(0, 2, 100, 0);
    int rc;

    if (pid < 0 || joined("the first run")) {
        reap(pid, SIGKILL, "the first run");
        return;
    }
    reap(pid, SIGKILL, "the first run");
    if ((rc = new_run(200, "within the lease")) != SERENE_ERR_JOB_IN_USE)
        tc_fail("a new run within the lease: %s, want SERENE_ERR_JOB_IN_USE", serene_err_name(rc));
    tc_sleep_ms(LEASE_MS + 300);
    if ((rc = new_run(201, "after the lease")))
        tc_fail("a new run after the lease: %s", serene_err_name(rc));
}

static void held_by_call(void)
{
    pid_t a = child(0, 1, 300, 1), b = -1;
    int rc;

    if (a < 0 || joined("rank 0"))
        goto out;
    b = child(1, 2, 300, 0);
    if (b < 0 || joined("rank 1"))
        goto out;
    reap(b, SIGKILL, "rank 1");
    b = -1;
    tc_sleep_ms(LEASE_MS + 300); /* rank 1's lease lapsed; rank 0 waits for it */
    if ((rc = new_run(400, "while rank 0 waits")) != SERENE_ERR_JOB_IN_USE)
        tc_fail("a new run while rank 0 waits for the dead rank 1: %s, want "
             "SERENE_ERR_JOB_IN_USE",
             serene_err_name(rc));
    reap(a, 0, "rank 0"); /* its deadline, then LEAVE */
    a = -1;
    if ((rc = new_run(401, "after rank 0 left")))
        tc_fail("a new run after rank 0 left: %s", serene_err_name(rc));
out:
    reap(a, SIGKILL, "rank 0");
    reap(b, SIGKILL, "rank 1");
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : getenv("SERENE_SWITCH_BIN");
    const char *args[] = {"--job", "9:2:16", "--lease", "2", NULL};
    char reply[1024];
    uint64_t lapsed = 0;

    if (!bin) {
        printf("SKIP: no serene-switch (argument or SERENE_SWITCH_BIN)\n");
        return 77;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsetenv("SERENE_JOB_TOKEN");
    if (pipe(ready) || fcntl(ready[0], F_SETFL, O_NONBLOCK))
        return 1;
    if (sw_start(&sw, bin, args))
        return 1;
    killed_run();
    held_by_call();
    if (sw_control(&sw, "status 9", reply, sizeof reply) || sw_field(reply, "lapsed", &lapsed))
        tc_fail("status 9: %s", reply);
    else if (lapsed != 3)
        tc_fail("lapsed=%llu, want 3 (2 of the killed run, rank 1 of the second)",
             (unsigned long long)lapsed);
    sw_cleanup(&sw);
    close(ready[0]);
    close(ready[1]);
    if (tc_failures()) {
        printf("%d check(s) failed\n", tc_failures());
        return 1;
    }
    printf("ok: a killed run's job is free after the lease; a waited-for rank is held\n");
    return 0;
}
