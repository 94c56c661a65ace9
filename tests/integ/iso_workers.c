/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iso_workers.c - the isolation test's legit workers: four contexts of the
 * real library in this process (A0, A1 in job A; B0, B1 in job B), each
 * joined from 127.0.0.1 with its job's nonce, whose UDP socket the test
 * finds (to forge from it, and to know its address); and what they do and
 * check: allreduces of small integers (exact in any kernel), pushes of
 * known words, clocks, and pulls of the whole store.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include "isolation.h"

static int is_switch_socket(int fd, struct sockaddr_in *local)
{
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    int type = 0;
    socklen_t tl = sizeof type;

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_DGRAM)
        return 0;
    if (getpeername(fd, (struct sockaddr *)&peer, &len) || peer.sin_family != AF_INET ||
        peer.sin_port != sw_addr.sin_port || peer.sin_addr.s_addr != sw_addr.sin_addr.s_addr)
        return 0;
    len = sizeof *local;
    return getsockname(fd, (struct sockaddr *)local, &len) == 0;
}

/* The socket a context just created: the one UDP socket connected to the
 * switch that no earlier worker owns. */
static int find_socket(legit *w, const legit *ws, int nws)
{
    int found = -1;

    for (int fd = 0; fd < 1024; fd++) {
        struct sockaddr_in local;
        int taken = 0;

        if (fcntl(fd, F_GETFD) < 0 || !is_switch_socket(fd, &local))
            continue;
        for (int i = 0; i < nws; i++)
            taken |= ws[i].ctx && ws[i].fd == fd;
        if (taken)
            continue;
        if (found >= 0) {
            fail("%s: two new sockets connected to the switch (%d and %d)", w->name, found, fd);
            return -1;
        }
        found = fd;
        w->local = local;
    }
    if (found < 0) {
        fail("%s: no socket connected to the switch", w->name);
        return -1;
    }
    w->fd = found;
    return 0;
}

int worker_join(legit *w, legit *ws, int nws)
{
    serene_config cfg;
    char addr[INET_ADDRSTRLEN];
    int rc;

    sw_worker_config(&iso_sw, &cfg, w->job, w->rank, 2);
    cfg.job_nonce = nonce_of[w->job];
    cfg.timeout_ms = TIMEOUT_MS;
    cfg.cpu_mask = 1; /* AVX2 at most: the values are exact in any kernel */
    /* 127.0.0.1, not the wildcard: so 127.0.0.2 can take the same port. */
    snprintf(cfg.bind_addr, sizeof cfg.bind_addr, "127.0.0.1");
    rc = serene_ctx_create(&w->ctx, &cfg);
    if (rc) {
        fail("%s: serene_ctx_create: %s", w->name, serene_err_name(rc));
        return -1;
    }
    if (find_socket(w, ws, nws))
        return -1;
    inet_ntop(AF_INET, &w->local.sin_addr, addr, sizeof addr);
    printf("%s: job %d worker %d joined from %s:%u (fd %d)\n", w->name, w->job, w->rank, addr,
           ntohs(w->local.sin_port), w->fd);
    return 0;
}

/* Allreduce input of worker rank in call c: small integers, exact in any
 * quantization of 2 workers. */
float ar_input(int job, int rank, int call, int i)
{
    return (float)((rank + 1) * (i + 1) * (call + job) - 7 * rank);
}

int32_t push_value(int job, int rank, int k)
{
    return job * 100000 + rank * 1000 + k;
}

/* The store a job's workers pushed: words [0, PUSH_WORDS) once each. */
int32_t store_expect(int job, int k)
{
    return k < PUSH_WORDS ? push_value(job, 0, k) + push_value(job, 1, k) : 0;
}

int wait_op(const legit *w, serene_op **op, const char *what)
{
    int rc = serene_op_wait(op);

    if (rc)
        fail("%s: %s: %s", w->name, what, serene_err_name(rc));
    return rc;
}

void check_ar(const legit *w, int call, const float *got)
{
    int bad = 0;

    for (int i = 0; i < AR_COUNT; i++) {
        float want = ar_input(w->job, 0, call, i) + ar_input(w->job, 1, call, i);

        if (got[i] != want && bad++ < 3)
            fail("%s: allreduce %d: [%d] = %g, want %g (its own job's workers' sum)", w->name,
                 call, i, (double)got[i], (double)want);
    }
}

/* Allreduce call `call` on both workers of a job, at once. */
void job_allreduce(legit *w0, legit *w1, int call)
{
    float in[2][AR_COUNT], out[2][AR_COUNT];
    serene_op *op[2] = {NULL, NULL};
    legit *w[2] = {w0, w1};

    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < AR_COUNT; i++)
            in[r][i] = ar_input(w[r]->job, r, call, i);
        if (serene_allreduce_start(w[r]->ctx, in[r], out[r], AR_COUNT, SERENE_SUM, &op[r]))
            fail("%s: allreduce_start", w[r]->name);
    }
    for (int r = 0; r < 2; r++)
        if (op[r] && !wait_op(w[r], &op[r], "allreduce"))
            check_ar(w[r], call, out[r]);
}

void job_clock(legit *w0, legit *w1)
{
    serene_op *op[2] = {NULL, NULL};
    legit *w[2] = {w0, w1};

    for (int r = 0; r < 2; r++)
        if (serene_clock_start(w[r]->ctx, &op[r]))
            fail("%s: clock_start", w[r]->name);
    for (int r = 0; r < 2; r++)
        if (op[r])
            wait_op(w[r], &op[r], "clock");
}

void check_store(const legit *w, const char *when)
{
    int32_t got[STORE];
    int bad = 0, rc = serene_pull_i32(w->ctx, 0, got, STORE, 0);

    if (rc) {
        fail("%s: pull %s: %s", w->name, when, serene_err_name(rc));
        return;
    }
    for (int k = 0; k < STORE; k++)
        if (got[k] != store_expect(w->job, k) && bad++ < 3)
            fail("%s: store word %d %s = %d, want %d (what job %d's workers pushed)", w->name,
                 k, when, got[k], store_expect(w->job, k), w->job);
}

void check_clock_info(const legit *w, uint32_t clock, uint32_t low)
{
    serene_clock_info ci;

    serene_get_clock_info(w->ctx, &ci);
    if (ci.clock != clock || ci.low != low)
        fail("%s: clock info clock=%u low=%u, want clock=%u low=%u", w->name, ci.clock, ci.low,
             clock, low);
}
