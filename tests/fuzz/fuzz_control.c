/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_control.c - libFuzzer target for serene-switch's control commands
 * (p4/swswitch/control.c, sr_ctl_exec), the closest thing to a policy
 * parser the switch has.
 *
 * Each input runs on a fresh pipeline with a pair of jobs, FZ_CTL_JOB (2
 * workers, bound, SSP) and job 65535 (1 worker, BSP), which it may
 * remove ("job remove J force"), and whatever jobs it adds itself ("job
 * add"), and is split at '\n' into lines. A
 * line is a command for sr_ctl_exec, copied to a heap buffer of exactly its
 * length plus the NUL so that ASan catches a read past it; or, when it
 * starts with '!', a harness directive that moves the barrier so policy and
 * status meet live clocks:
 *   !clock W C   CLOCK(C) from worker W % 2 of FZ_CTL_JOB, at its address
 *   !join N      both workers join FZ_CTL_JOB again with nonce N
 *
 * Every reply must (abort() otherwise): be NUL-terminated within its
 * buffer at the length returned; start with "ok" or "error"; hold only
 * printable characters (it is one line of a line protocol); never be cut
 * at SR_CTL_REPLY_MAX. Commands other than policy and job add/remove
 * (which change state) are re-run with short buffers (and cap 0), whose
 * replies must be prefixes of the full one.
 * A successful policy's effective clock is past the high it was set
 * against, and a status reports the low and high the pipeline has.
 *
 * "jobs" probes all 65536 job ids, about 1 ms under the sanitizers, and
 * its reply depends only on the job table, which is fixed per input: only
 * the first command that starts with it runs, so that inputs full of them
 * do not slow the fuzzer down a hundredfold.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* strcasestr: _GNU_SOURCE comes from the project */
#include <strings.h>

#include "control.h"
#include "pipeline.h"
#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_control: check failed at %s:%d: %s\n", __FILE__, __LINE__,      \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define FZ_CTL_JOB 7u
#define FZ_CTL_JOB_MAX 65535u
#define FZ_MAX_LINES 64 /* bounds the work per input */

static sr_pipe *g_pipe;
static sr_pipe_out *g_out;

static sr_peer peer_of(unsigned w)
{
    sr_peer p = {0x0a000001u + w, (uint16_t)(40000u + w)};
    return p;
}

static void send_msg(uint8_t op, uint16_t w, uint32_t seq, uint32_t aux)
{
    uint8_t msg[SR_WIRE_HDR_LEN];
    sr_hdr h = {.version = SR_WIRE_VERSION, .op = op, .job = FZ_CTL_JOB, .worker = w,
                .seq = seq, .aux = aux};
    sr_peer src = peer_of(w);

    sr_hdr_pack(msg, &h);
    sr_pipe_process(g_pipe, &src, msg, sizeof msg, g_out);
}

static void job_add(uint16_t id, uint32_t n, uint32_t ring, enum sr_sync_mode mode, uint32_t s)
{
    sr_pipe_job_params jp;

    sr_pipe_job_params_init(&jp);
    jp.n_workers = n;
    jp.elems_per_pkt = 4;
    jp.pool_slots = 2;
    jp.store_words = 16;
    jp.ring = ring;
    jp.mode = mode;
    jp.s = s;
    (void)sr_pipe_job_remove(g_pipe, id);
    CHECK(sr_pipe_job_add(g_pipe, id, &jp) == 0);
}

static void fixture_reset(void)
{
    /* A new pipeline each input: jobs an input added ("job add") go with
     * it, so memory does not grow from input to input. */
    if (g_pipe)
        sr_pipe_destroy(&g_pipe);
    CHECK(sr_pipe_create(&g_pipe) == 0);
    if (!g_out) {
        g_out = malloc(sizeof *g_out);
        CHECK(g_out != NULL);
    }
    job_add(FZ_CTL_JOB, 2, 8, SR_SYNC_SSP, 2);
    job_add(FZ_CTL_JOB_MAX, 1, 2, SR_SYNC_BSP, 0);
    for (uint16_t w = 0; w < 2; w++) {
        send_msg(SR_OP_JOIN, w, 100u + w, 0);
        CHECK(g_out->n == 1 && g_out->act[0].hdr.op == SR_OP_JOIN_ACK);
    }
}

static void directive(const char *line)
{
    unsigned w;
    uint32_t c, nonce;

    if (sscanf(line, "!clock %u %u", &w, &c) == 2) {
        send_msg(SR_OP_CLOCK, (uint16_t)(w % 2u), c, 0);
    } else if (sscanf(line, "!join %u", &nonce) == 1) {
        for (uint16_t k = 0; k < 2; k++)
            send_msg(SR_OP_JOIN, k, 100u + k, nonce);
    }
}

/* The reply in buf[cap] of length n, as sr_ctl_exec returned it. */
static void check_reply(const char *buf, size_t cap, size_t n)
{
    CHECK(n < cap);
    CHECK(buf[n] == '\0' && strlen(buf) == n);
    CHECK(n + 1 < cap); /* SR_CTL_REPLY_MAX never truncates */
    CHECK(!strncmp(buf, "ok", 2) || !strncmp(buf, "error ", 6));
    CHECK(buf[0] != 'o' || buf[2] == '\0' || buf[2] == ' ');
    for (size_t i = 0; i < n; i++)
        CHECK(buf[i] >= 0x20 && buf[i] < 0x7f);
}

/* The same command with short buffers: a prefix of the full reply. */
static void check_short(const char *line, const char *full, size_t n)
{
    size_t cap = 1 + n % 37, n2;
    char *buf = malloc(cap);

    CHECK(buf != NULL);
    n2 = sr_ctl_exec(g_pipe, line, buf, cap);
    CHECK(n2 == (n < cap - 1 ? n : cap - 1));
    CHECK(buf[n2] == '\0' && memcmp(buf, full, n2) == 0);
    free(buf);

    buf = malloc(0); /* any write to it is an ASan report */
    CHECK(sr_ctl_exec(g_pipe, line, buf, 0) == 0);
    free(buf);
}

/* What a reply claims about the pipeline, where it is cheap to check. */
static void check_claims(const char *line, const char *reply, const sr_pipe_sync_state *before,
                         const int *had)
{
    unsigned job;
    uint32_t e, low, high;
    sr_pipe_sync_state now;

    if (sscanf(reply, "ok job=%u effective=%" SCNu32, &job, &e) == 2) {
        CHECK(strcasestr(line, "policy") != NULL);
        if ((job == FZ_CTL_JOB && had[0]) || (job == FZ_CTL_JOB_MAX && had[1])) {
            const sr_pipe_sync_state *b = &before[job == FZ_CTL_JOB ? 0 : 1];
            CHECK((int32_t)(e - (b->high + 1u)) >= 0); /* E > high at the time */
        } else { /* a job the input added (or removed and added again) */
            CHECK(sr_pipe_sync_get(g_pipe, (uint16_t)job, &now) == 0);
        }
    } else if (sscanf(reply, "ok job=%u workers=%*u low=%" SCNu32 " high=%" SCNu32, &job, &low,
                      &high) == 3) {
        CHECK(sr_pipe_sync_get(g_pipe, (uint16_t)job, &now) == 0);
        CHECK(now.low == low && now.high == high);
    }
}

/* Is the command's first word w (case aside)? */
static int first_word(const char *line, const char *w)
{
    size_t n = strlen(w);

    line += strspn(line, " \t");
    return !strncasecmp(line, w, n) && strchr(" \t\r", line[n]) != NULL;
}

static void exec_line(const char *line)
{
    char *reply = malloc(SR_CTL_REPLY_MAX);
    sr_pipe_sync_state before[2];
    int had[2];
    size_t n;
    /* policy and job add/remove change state: a re-run could answer
     * differently ("exists already"). */
    int changes = strcasestr(line, "policy") != NULL || first_word(line, "job");

    CHECK(reply != NULL);
    memset(reply, 0x7f, SR_CTL_REPLY_MAX);
    /* The fixture's jobs, unless the input removed them ("job remove J
     * force" takes a job with bound workers too). */
    had[0] = sr_pipe_sync_get(g_pipe, FZ_CTL_JOB, &before[0]) == 0;
    had[1] = sr_pipe_sync_get(g_pipe, FZ_CTL_JOB_MAX, &before[1]) == 0;
    n = sr_ctl_exec(g_pipe, line, reply, SR_CTL_REPLY_MAX);
    check_reply(reply, SR_CTL_REPLY_MAX, n);
    check_claims(line, reply, before, had);
    if (!changes)
        check_short(line, reply, n);
    free(reply);
}


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int jobs_done = 0;

    fixture_reset();
    for (unsigned k = 0; size > 0 && k < FZ_MAX_LINES; k++) {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t len = nl ? (size_t)(nl - data) : size;
        /* Exactly len + 1 bytes: a read past the NUL is an ASan report. */
        char *line = malloc(len + 1);

        CHECK(line != NULL);
        memcpy(line, data, len);
        line[len] = '\0';
        if (len > 0 && line[0] == '!')
            directive(line);
        else if (!first_word(line, "jobs") || !jobs_done++)
            exec_line(line);
        free(line);
        data += len;
        size -= len;
        if (nl) {
            data++;
            size--;
        }
    }
    return 0;
}
