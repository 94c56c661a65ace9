/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_admission.c - a job's admission token against a live serene-switch.
 *
 * usage: test_admission [SWITCH_BIN]
 *        (defaults to $SERENE_SWITCH_BIN; without either: exit 77)
 *
 * First, malformed token specs (empty, 0, 0x, too long, a blank, an unset
 * variable, twice) must make serene-switch exit 2. Then it starts
 * serene-switch with job 9 of 2 workers and the token in its
 * environment (token=env:NAME), then, from a plain UDP socket:
 *   - JOINs with no token, a wrong one, and the right one in a payload of
 *     the wrong length, each with two nonces: every one is answered once,
 *     ERROR DENIED, and the answers to the two nonces are the same bytes;
 *     the job stays unbound with nonce 0 (status on the control socket);
 * then two contexts of the real library with SERENE_JOB_TOKEN join and
 * allreduce exactly; the same forged JOINs, now with a third nonce while
 * the job is bound, still get the same DENIED bytes (not JOB_IN_USE or
 * STALE) and change neither the nonce nor the bindings; a source that
 * joins with the token but never reads its answers (as a spoofed source
 * address would not) draws no answer larger than its request (PULL and
 * CLOCK: ERROR UNPROVEN) until it echoes the JOIN_ACK's cookie; a context
 * with a wrong SERENE_JOB_TOKEN fails with SERENE_ERR_DENIED and one with
 * a malformed one with SERENE_ERR_CONFIG, both promptly.
 *
 * Every wait is bounded; the switch is stopped by the PID this test
 * started. Exit status: 0 passed, 1 a check failed, 77 no switch.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/wire.h"
#include "serene/serene.h"
#include "check.h"
#include "switch_proc.h"

#define JOB 9
#define TOKEN 0x00c0ffee12345678ull
#define TOKEN_HEX "00c0ffee12345678"
#define ANSWER_MS 5000 /* an answer that has not come by then is not coming */
#define DUP_MS 30       /* a second answer, looked for right after the first */
#define ELEMS 2048   /* values per packet: the largest PULL answer */

static sw_proc sw;

/* Send h with count payload words v; the first answer (within ANSWER_MS,
 * however busy the machine) goes to ans, and *n counts it and those within
 * DUP_MS after it. A datagram already waiting before the send is a second
 * answer to an earlier request, which came later than that: a failure. */
static void xchg(int fd, const sr_hdr *h, const uint32_t *v, uint8_t *ans, size_t *ans_len,
                 int *n)
{
    uint8_t msg[SR_WIRE_HDR_LEN + 16];
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                             .sin_port = htons((uint16_t)sw.port)};
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    uint8_t buf[SR_WIRE_MAX_MSG];

    while (poll(&pfd, 1, 0) == 1 && recv(fd, buf, sizeof buf, 0) > 0)
        tc_fail("a second answer to the request before %s came late", sr_op_name(h->op));
    sr_hdr_pack(msg, h);
    for (unsigned i = 0; i < h->count && i < 4; i++)
        sr_put_be32(msg + SR_WIRE_HDR_LEN + 4 * i, v[i]);
    *n = 0;
    *ans_len = 0;
    if (sendto(fd, msg, SR_WIRE_HDR_LEN + 4 * h->count, 0, (struct sockaddr *)&to, sizeof to) <
        0) {
        tc_fail("sendto: %s", strerror(errno));
        return;
    }
    while (poll(&pfd, 1, *n ? DUP_MS : ANSWER_MS) == 1) {
        ssize_t len = recv(fd, buf, sizeof buf, 0);
        if (len <= 0)
            break;
        if ((*n)++ == 0) {
            memcpy(ans, buf, (size_t)len);
            *ans_len = (size_t)len;
        }
    }
}

/* A JOIN of worker w with nonce and count payload words v, as xchg. */
static void forge_join(int fd, int w, uint32_t nonce, const uint32_t *v, unsigned count,
                       uint8_t *ans, size_t *ans_len, int *n)
{
    sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_JOIN, .job = JOB, .worker = (uint16_t)w,
                .seq = 0x0bad0000u + (uint32_t)w, .aux = nonce, .count = (uint16_t)count};

    xchg(fd, &h, v, ans, ans_len, n);
}

/* A source that never reads its answers, as a spoofed one would not: it
 * JOINs with the token (a tenant that knows it, spoofing the victim's
 * address) and asks for the largest answers. Each answer must be no
 * larger than its request. Then, as the control, the cookie is echoed
 * and the same PULL draws the full row. */
static void spoofed_source(int fd)
{
    const uint32_t tok[4] = {(uint32_t)(TOKEN >> 32), (uint32_t)TOKEN, 0, 0};
    sr_hdr join = {.version = SR_WIRE_VERSION, .op = SR_OP_JOIN, .job = JOB, .worker = 1,
                   .seq = 0x5b00f001u, .aux = 4343, .count = SR_JOIN_REQ_WORDS};
    sr_hdr pull = {.version = SR_WIRE_VERSION, .op = SR_OP_PULL, .job = JOB, .worker = 1,
                   .seq = 1, .aux = ELEMS};
    sr_hdr clock = {.version = SR_WIRE_VERSION, .op = SR_OP_CLOCK, .job = JOB, .worker = 1};
    const sr_hdr *reqs[] = {&join, &pull, &clock, &join, &pull};
    uint8_t ans[SR_WIRE_MAX_MSG];
    uint32_t v[4], cookie = 0;
    size_t len;
    int n;
    sr_hdr a;

    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        size_t req_len = SR_WIRE_HDR_LEN + 4u * reqs[i]->count;

        memcpy(v, tok, sizeof v);
        if (i == 3)
            v[2] = cookie + 1; /* a guess at the cookie: wrong */
        xchg(fd, reqs[i], v, ans, &len, &n);
        if (n != 1 || sr_msg_parse(ans, len, &a, NULL) != SR_PARSE_OK) {
            tc_fail("spoofed source: %s drew %d answers", sr_op_name(reqs[i]->op), n);
            return;
        }
        if (len > req_len)
            tc_fail("spoofed source: %s of %zu bytes drew %s of %zu", sr_op_name(reqs[i]->op),
                 req_len, sr_op_name(a.op), len);
        if (reqs[i]->op == SR_OP_JOIN && (a.op != SR_OP_JOIN_ACK || a.offset == 0))
            tc_fail("spoofed source: JOIN answered %s offset %u, want JOIN_ACK with a cookie",
                 sr_op_name(a.op), a.offset);
        if (reqs[i]->op != SR_OP_JOIN && (a.op != SR_OP_ERROR || a.status != SR_ST_UNPROVEN))
            tc_fail("spoofed source: %s answered %s %s, want ERROR UNPROVEN",
                 sr_op_name(reqs[i]->op), sr_op_name(a.op), sr_status_name(a.status));
        if (i == 0)
            cookie = a.offset;
    }
    /* The control: the address receives after all, and echoes. */
    memcpy(v, tok, sizeof v);
    v[2] = cookie;
    xchg(fd, &join, v, ans, &len, &n);
    if (n != 1 || sr_msg_parse(ans, len, &a, NULL) != SR_PARSE_OK || a.op != SR_OP_JOIN_ACK ||
        a.offset != 0)
        tc_fail("spoofed source: the echo of the cookie did not prove the address");
    xchg(fd, &pull, v, ans, &len, &n);
    if (n != 1 || len != SR_WIRE_HDR_LEN + 4u * ELEMS)
        tc_fail("spoofed source: a PULL after the proof drew %d answers of %zu bytes, want %u", n,
             len, SR_WIRE_HDR_LEN + 4u * ELEMS);
}

/* The forged JOINs: no token, wrong tokens, the right one cut short. Each
 * with nonce a and nonce b: one ERROR DENIED each, the same bytes. */
static void forged_joins(int fd, uint32_t a, uint32_t b, const char *when)
{
    static const uint32_t none[1];
    const uint32_t wrong1[4] = {(uint32_t)(TOKEN >> 32), (uint32_t)TOKEN ^ 1, 0, 0};
    const uint32_t wrong2[4] = {0xffffffffu, 0xffffffffu, 0, 0};
    const uint32_t short_[2] = {(uint32_t)(TOKEN >> 32), (uint32_t)TOKEN};
    const struct {
        const char *name;
        const uint32_t *v;
        unsigned count;
    } cases[] = {{"no token", none, 0},
                 {"token off by one bit", wrong1, 4},
                 {"token all ones", wrong2, 4},
                 {"right token, 2 words", short_, 2}};

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int w = 0; w < 2; w++) {
            uint8_t ra[SR_WIRE_MAX_MSG], rb[SR_WIRE_MAX_MSG];
            size_t la, lb;
            int na, nb;
            sr_hdr h;

            forge_join(fd, w, a, cases[i].v, cases[i].count, ra, &la, &na);
            forge_join(fd, w, b, cases[i].v, cases[i].count, rb, &lb, &nb);
            if (na != 1 || nb != 1) {
                tc_fail("%s, %s, worker %d: %d and %d answers, want 1 each", when, cases[i].name, w,
                     na, nb);
                continue;
            }
            if (la != lb || memcmp(ra, rb, la))
                tc_fail("%s, %s, worker %d: the answers to nonces %u and %u differ", when,
                     cases[i].name, w, a, b);
            if (sr_msg_parse(ra, la, &h, NULL) != SR_PARSE_OK || h.op != SR_OP_ERROR ||
                h.status != SR_ST_DENIED || h.count != 0)
                tc_fail("%s, %s, worker %d: answer is %s %s, want ERROR DENIED, header only", when,
                     cases[i].name, w, sr_op_name(h.op), sr_status_name(h.status));
        }
    }
}

/* Token specs the switch must refuse as a bad command line (exit 2,
 * within 5 s; output to /dev/null). */
static void bad_specs(const char *bin)
{
    static const char *const specs[] = {"9:2,token=", "9:2,token=0", "9:2,token=0x12",
                                        "9:2,token=12345678901234567", "9:2,token= 12",
                                        "9:2,token=env:SR_TEST_ADMISSION_UNSET",
                                        "9:2,token=1,token=2"};

    unsetenv("SR_TEST_ADMISSION_UNSET");
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        pid_t pid = fork();
        int st = -1;

        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            dup2(fd, 2);
            execl(bin, bin, "--listen", "127.0.0.1:0", "--job", specs[i], (char *)NULL);
            _exit(127);
        }
        for (int t = 0; t < 500 && pid > 0; t++) {
            struct timespec ts = {0, 10000000L};
            if (waitpid(pid, &st, WNOHANG) == pid)
                break;
            st = -1;
            nanosleep(&ts, NULL);
        }
        if (st == -1 && pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 2)
            tc_fail("--job %s: not refused as a bad command line (exit 2)", specs[i]);
    }
}

static void expect_status(uint64_t bound, uint64_t nonce, const char *when)
{
    char reply[1024];
    uint64_t b = ~0ull, n = ~0ull;

    if (sw_control(&sw, "status 9", reply, sizeof reply) || sw_field(reply, "bound", &b) ||
        sw_field(reply, "nonce", &n))
        tc_fail("%s: status 9: %s", when, reply);
    else if (b != bound || n != nonce)
        tc_fail("%s: bound=%llu nonce=%llu, want %llu and %llu", when, (unsigned long long)b,
             (unsigned long long)n, (unsigned long long)bound, (unsigned long long)nonce);
}

static int make_ctx(serene_ctx **ctx, int rank, uint32_t nonce, const char *token, int quiet)
{
    serene_config cfg;

    if (token)
        setenv("SERENE_JOB_TOKEN", token, 1);
    else
        unsetenv("SERENE_JOB_TOKEN");
    sw_worker_config(&sw, &cfg, JOB, rank, 2);
    cfg.job_nonce = nonce;
    cfg.timeout_ms = 5000;
    if (quiet)
        cfg.log_fn = sw_quiet_log;
    return serene_ctx_create(ctx, &cfg);
}

static void real_run(void)
{
    serene_ctx *c[2] = {NULL, NULL};
    float in[2][100], out[2][100];
    serene_op *op[2] = {NULL, NULL};
    int rc;

    for (int r = 0; r < 2; r++)
        if ((rc = make_ctx(&c[r], r, 4242, TOKEN_HEX, 0)))
            tc_fail("rank %d with the token: %s", r, serene_err_name(rc));
    if (!c[0] || !c[1])
        goto out;
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 100; i++)
            in[r][i] = (float)(r * 1000 + i);
        if ((rc = serene_allreduce_start(c[r], in[r], out[r], 100, SERENE_SUM, &op[r])))
            tc_fail("allreduce_start rank %d: %s", r, serene_err_name(rc));
    }
    for (int r = 0; r < 2; r++) {
        if (op[r] && (rc = serene_op_wait(&op[r])))
            tc_fail("allreduce rank %d: %s", r, serene_err_name(rc));
        for (int i = 0; i < 100 && !rc; i++)
            if (out[r][i] != (float)(1000 + 2 * i)) {
                tc_fail("rank %d: value %d is %g, want %d", r, i, out[r][i], 1000 + 2 * i);
                break;
            }
    }
    expect_status(2, 4242, "after the real run joined");
out:
    /* The job stays bound while forged JOINs come: left to the caller. */
    for (int r = 0; r < 2; r++)
        if (c[r])
            serene_ctx_destroy(&c[r]);
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : getenv("SERENE_SWITCH_BIN");
    const char *args[] = {"--job", "9:2:2048,token=env:SR_TEST_ADMISSION_TOKEN", NULL};
    serene_ctx *bad = NULL;
    int fd, rc;

    if (!bin) {
        printf("SKIP: no serene-switch (argument or SERENE_SWITCH_BIN)\n");
        return 77;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    bad_specs(bin);
    setenv("SR_TEST_ADMISSION_TOKEN", TOKEN_HEX, 1);
    if (sw_start(&sw, bin, args))
        return 1;
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        tc_fail("socket: %s", strerror(errno));
        goto out;
    }
    forged_joins(fd, 1, 2, "before any run");
    expect_status(0, 0, "after the forged JOINs");
    real_run();
    /* The contexts left; a new run binds the job again for the forged
     * JOINs, which come with its nonce and with another. */
    {
        serene_ctx *c0 = NULL;
        if ((rc = make_ctx(&c0, 0, 4343, TOKEN_HEX, 0)))
            tc_fail("rejoin rank 0: %s", serene_err_name(rc));
        forged_joins(fd, 4343, 7, "while the job is bound");
        expect_status(1, 4343, "after the forged JOINs while bound");
        spoofed_source(fd);
        if ((rc = make_ctx(&bad, 1, 4343, "00c0ffee12345679", 1)) != SERENE_ERR_DENIED)
            tc_fail("a context with a wrong token: %s, want SERENE_ERR_DENIED", serene_err_name(rc));
        serene_ctx_destroy(&bad);
        if ((rc = make_ctx(&bad, 1, 4343, "not-hex", 1)) != SERENE_ERR_CONFIG)
            tc_fail("a context with a malformed token: %s, want SERENE_ERR_CONFIG",
                 serene_err_name(rc));
        serene_ctx_destroy(&bad);
        expect_status(2, 4343, "after the refused contexts"); /* + the spoofed source */
        serene_ctx_destroy(&c0);
    }
    close(fd);
out:
    sw_cleanup(&sw);
    if (tc_failures()) {
        printf("%d check(s) failed\n", tc_failures());
        return 1;
    }
    printf("ok: forged JOINs denied alike whatever the nonce; the real run exact; no answer "
           "larger than its request to an unproven address\n");
    return 0;
}
