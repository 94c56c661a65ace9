/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iso_forge.c - the packets the isolation test forges: plain UDP sockets
 * (another port, another address, or a legit context's own socket) that
 * send well-formed requests for jobs, workers and tokens they are not, and
 * malformed datagrams. Each forging function adds to `expected` what the
 * switch must count for it, and to the forger what it must get back;
 * check_replies then reads what came back. job_c_control shows that the
 * packets made here are well formed: sent from the bound address, they are
 * answered.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "isolation.h"
#include "timing.h"

#define ANSWER_MS 5000 /* an expected answer comes within this, however busy the machine */

int forger_open(forger *f, const char *name, const char *ip, uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

    memset(f, 0, sizeof *f);
    f->name = name;
    f->owned = 1;
    inet_pton(AF_INET, ip, &a.sin_addr);
    f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof a)) {
        printf("%s: cannot bind %s:%u: %s\n", name, ip, port, strerror(errno));
        if (f->fd >= 0)
            close(f->fd);
        f->fd = -1;
        return -1;
    }
    return 0;
}

static void send_raw(forger *f, const void *buf, size_t len)
{
    ssize_t k;

    if (f->fd < 0)
        return;
    /* A context's socket is connected to the switch: plain send. */
    k = f->owned ? sendto(f->fd, buf, len, 0, (const struct sockaddr *)&sw_addr, sizeof sw_addr)
                 : send(f->fd, buf, len, 0);
    if (k != (ssize_t)len)
        fail("%s: send of %zu bytes: %s", f->name, len, k < 0 ? strerror(errno) : "short");
    f->sent++;
    /* Pace: never let the switch's socket buffer overflow, so that the
     * exact counts below hold. */
    if (f->sent % 16 == 0)
        tc_sleep_ms(1);
}

/* Pack a message: header h plus h->count payload words fill, fill + 1, ...
 * (or pay_words of them when pay_words >= 0: a wrong length on purpose). */
static size_t pack(uint8_t *buf, const sr_hdr *h, uint32_t fill, int pay_words)
{
    size_t n = pay_words >= 0 ? (size_t)pay_words : h->count;

    sr_hdr_pack(buf, h);
    for (size_t i = 0; i < n; i++)
        sr_put_be32(buf + SR_WIRE_HDR_LEN + 4 * i, fill + (uint32_t)i);
    return SR_WIRE_HDR_LEN + 4 * n;
}

static sr_hdr hdr(uint8_t op, int job, int worker)
{
    sr_hdr h;

    memset(&h, 0, sizeof h);
    h.version = SR_WIRE_VERSION;
    h.op = op;
    h.job = (uint16_t)job;
    h.worker = (uint16_t)worker;
    return h;
}

static void send_msg(forger *f, const sr_hdr *h, uint32_t fill)
{
    uint8_t buf[SR_WIRE_MAX_MSG];

    send_raw(f, buf, pack(buf, h, fill, -1));
}

/* The data-path requests a forger tries on (job, worker): the two hint
 * versions of a slot, data rounds that would complete a round or ask for a
 * shadow copy, pushes that would be applied (a push number far ahead),
 * a pull, and the clocks around B0's held one. */
#define N_DATA_OPS 10

static void send_data_ops(forger *f, int job, int worker)
{
    sr_hdr h;

    for (int v = 0; v < 2; v++) { /* hint rounds of call 2, slot 0 */
        h = hdr(SR_OP_AR_DATA, job, worker);
        h.seq = 2;
        h.shadow = (uint8_t)v;
        h.next_exp = 6;
        send_msg(f, &h, 0);
    }
    h = hdr(SR_OP_AR_DATA, job, worker); /* a data round of call 2 */
    h.seq = 2;
    h.slot = 1;
    h.count = ELEMS;
    h.exp = 6;
    h.next_exp = SR_WIRE_EXP_NONE;
    h.offset = ELEMS;
    send_msg(f, &h, 0x01000000u);
    h = hdr(SR_OP_AR_DATA, job, worker); /* call 1 again: a shadow copy */
    h.seq = 1;
    h.slot = 0;
    h.shadow = 1;
    h.count = ELEMS;
    h.exp = 6;
    send_msg(f, &h, 0x00777777u);
    h = hdr(SR_OP_PUSH, job, worker);
    h.seq = 0x7fff0000u;
    h.count = ELEMS;
    send_msg(f, &h, 0x77777777u);
    h = hdr(SR_OP_PUSH, job, worker);
    h.seq = 1;
    h.offset = 4 * ELEMS; /* a row nobody pushed to */
    h.count = ELEMS;
    send_msg(f, &h, 0x66666666u);
    h = hdr(SR_OP_PULL, job, worker);
    h.seq = 1;
    h.aux = ELEMS;
    send_msg(f, &h, 0);
    for (uint32_t c = 0; c < 3; c++) {
        h = hdr(SR_OP_CLOCK, job, worker);
        h.seq = c;
        send_msg(f, &h, 0);
    }
}

void send_join(forger *f, int job, int worker, uint32_t nonce, uint32_t token)
{
    sr_hdr h = hdr(SR_OP_JOIN, job, worker);

    h.seq = token;
    h.aux = nonce;
    send_msg(f, &h, 0);
}

/* Forged requests to job (which exists) from a socket not bound to worker. */
void forge_data(forger *f, int job, int worker)
{
    send_data_ops(f, job, worker);
    expected.unbound[job] += N_DATA_OPS;
}

void forge_unknown_job(forger *f, int job)
{
    send_data_ops(f, job, 0);
    send_join(f, job, 0, 1, 0x1234);
    expected.unknown_job += N_DATA_OPS + 1;
    f->want_err[SR_ST_UNKNOWN_JOB] += N_DATA_OPS + 1;
}

void forge_join_refused(forger *f, int job, int worker, uint32_t nonce, uint32_t token,
                               unsigned status)
{
    send_join(f, job, worker, nonce, token);
    expected.errors[job]++;
    f->want_err[status]++;
}

/* (e): nothing here is a well-formed request. Aimed at job B where a header
 * has a job field, so a misparse would land in B's state. */
void forge_malformed(forger *f)
{
    static const uint8_t bad_ops[] = {0, 5, 15, 18, 31, 45, 255};
    static const uint8_t answers[] = {SR_OP_JOIN_ACK, SR_OP_ERROR,   SR_OP_AR_RESULT,
                                      SR_OP_PUSH_ACK, SR_OP_PULL_RESP, SR_OP_PROCEED,
                                      SR_OP_RELEASE,  SR_OP_HOLD};
    static uint8_t buf[SR_WIRE_MAX_MSG + 128];
    sr_hdr h = hdr(SR_OP_PUSH, JOB_B, 0);
    size_t len;

    h.seq = 0x7fff1000u;
    h.count = ELEMS;
    len = pack(buf, &h, 0x55555555u, -1);
    /* Truncated: empty, 1 byte, a header less its last byte. */
    send_raw(f, buf, 0);
    send_raw(f, buf, 1);
    send_raw(f, buf, SR_WIRE_HDR_LEN - 1);
    expected.rejected[-SR_PARSE_TRUNCATED] += 3;
    /* Foreign: another magic; a text protocol; all ones. */
    buf[0] = 0x12;
    send_raw(f, buf, len);
    memcpy(buf, "GET /serene HTTP/1.1\r\nHost: switch\r\n\r\n", 38);
    send_raw(f, buf, 38);
    memset(buf, 0xff, 64);
    send_raw(f, buf, 64);
    expected.rejected[-SR_PARSE_FOREIGN] += 3;
    /* The versions either side of this one. */
    for (unsigned v = SR_WIRE_VERSION - 1; v <= SR_WIRE_VERSION + 1; v += 2) {
        len = pack(buf, &h, 0x55555555u, -1);
        buf[SR_WIRE_OFF_VERSION] = (uint8_t)v;
        send_raw(f, buf, len);
        expected.rejected[-SR_PARSE_BAD_VERSION]++;
    }
    /* Ops that do not exist. */
    for (size_t i = 0; i < sizeof bad_ops; i++) {
        len = pack(buf, &h, 0x55555555u, -1);
        buf[SR_WIRE_OFF_OP] = bad_ops[i];
        send_raw(f, buf, len);
        expected.rejected[-SR_PARSE_BAD_OP]++;
    }
    /* A count above the largest packet. */
    for (unsigned c = SR_WIRE_MAX_ELEMS + 1; c <= 65535; c += 65535 - SR_WIRE_MAX_ELEMS - 1) {
        len = pack(buf, &h, 0, 0);
        sr_put_be16(buf + SR_WIRE_OFF_COUNT, (uint16_t)c);
        send_raw(f, buf, len);
        expected.rejected[-SR_PARSE_BAD_COUNT]++;
    }
    /* Length and count disagree: short payload, trailing bytes. */
    send_raw(f, buf, pack(buf, &h, 0x55555555u, ELEMS - 6));
    send_raw(f, buf, pack(buf, &h, 0x55555555u, ELEMS + 1));
    h.op = SR_OP_PULL;
    h.count = 0;
    h.aux = ELEMS;
    send_raw(f, buf, pack(buf, &h, 0, 1));
    expected.rejected[-SR_PARSE_BAD_LENGTH] += 3;
    /* Oversize: a full-size PUSH with 100 more bytes. The switch reads one
     * byte past the largest message, so it sees a bad length. */
    h.op = SR_OP_PUSH;
    h.count = SR_WIRE_MAX_ELEMS;
    len = pack(buf, &h, 0x55555555u, -1);
    memset(buf + len, 0x55, 100);
    send_raw(f, buf, len + 100);
    expected.rejected[-SR_PARSE_BAD_LENGTH]++;
    expected.oversize++;
    /* Answers only flow switch to worker: dropped, never answered. */
    for (size_t i = 0; i < sizeof answers; i++) {
        h = hdr(answers[i], JOB_B, 0);
        h.seq = 1;
        h.count = answers[i] == SR_OP_PROCEED || answers[i] == SR_OP_HOLD ? SR_SYNC_WORDS
                  : answers[i] == SR_OP_JOIN_ACK                          ? SR_JOIN_PARAMS_WORDS
                                                                          : 0;
        send_msg(f, &h, 0);
        expected.answers_dropped++;
    }
}

/* Read replies, waiting up to ANSWER_MS for each while fewer than the
 * expected have come (however busy the machine), then until QUIET_MS pass
 * without one (so that one too many shows); count them by op/status.
 * Returns the number read. */
static unsigned drain(forger *f, unsigned got_err[16], unsigned got_other[64])
{
    static uint8_t buf[SR_WIRE_MAX_MSG + 1];
    unsigned n = 0, want = 0;

    for (unsigned s = 0; s < 16; s++)
        want += f->want_err[s];
    for (unsigned o = 0; o < 64; o++)
        want += f->want_other[o];

    memset(got_err, 0, 16 * sizeof *got_err);
    memset(got_other, 0, 64 * sizeof *got_other);
    for (int i = 0; i < 100000; i++) {
        struct pollfd p = {.fd = f->fd, .events = POLLIN};
        const uint8_t *payload;
        sr_hdr h;
        ssize_t k;

        if (poll(&p, 1, n < want ? ANSWER_MS : QUIET_MS) <= 0)
            break;
        k = recv(f->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k < 0)
            continue;
        n++;
        if (sr_msg_parse(buf, (size_t)k, &h, &payload) != SR_PARSE_OK) {
            fail("%s: got a malformed reply of %zd bytes", f->name, k);
            continue;
        }
        if (h.op == SR_OP_ERROR)
            got_err[h.status & 15]++;
        else
            got_other[h.op & 63]++;
    }
    return n;
}

void check_replies(forger *f)
{
    unsigned err[16], other[64], n;

    if (f->fd < 0)
        return;
    n = drain(f, err, other);
    for (unsigned s = 0; s < 16; s++)
        if (err[s] != f->want_err[s])
            fail("%s: got %u ERROR %s replies, want %u", f->name, err[s], sr_status_name(s),
                 f->want_err[s]);
    for (unsigned o = 0; o < 64; o++)
        if (other[o] != f->want_other[o])
            fail("%s: got %u %s replies, want %u", f->name, other[o], sr_op_name(o),
                 f->want_other[o]);
    printf("%s: sent %" PRIu64 " datagrams, got %u replies back (all as expected unless "
           "FAIL above)\n",
           f->name, f->sent, n);
}

/* Job C, one worker, only hand-made packets: JOIN (its JOIN_ACK carries
 * the cookie of the address proof), a PULL before the proof (refused with
 * UNPROVEN, header only: no larger than the request), JOIN again echoing
 * the cookie (JOIN_ACK with offset 0), then PUSH, PULL, CLOCK and an
 * allreduce round from c1 are answered as from any worker; c2 reuses c1's
 * token (NOT_MEMBER), another token (STALE), and c2's data ops are dropped.
 * Shows that the packets this test forges are well formed. */
void job_c_control(forger *c1, forger *c2)
{
    static uint8_t buf[SR_WIRE_MAX_MSG + 1];
    const uint32_t token = 0x5eed0c01u;
    uint32_t cookie = 0;
    sr_hdr h;
    struct {
        uint8_t op, status;
        uint32_t aux;
        uint16_t count;
    } want[] = {
        {SR_OP_JOIN_ACK, 0, nonce_of[JOB_C], SR_JOIN_PARAMS_WORDS},
        {SR_OP_ERROR, SR_ST_UNPROVEN, SR_OP_PULL, 0},
        {SR_OP_JOIN_ACK, 0, nonce_of[JOB_C], SR_JOIN_PARAMS_WORDS},
        {SR_OP_PUSH_ACK, 0, 1, 0},
        {SR_OP_PULL_RESP, 0, 0, ELEMS},
        {SR_OP_PROCEED, 0, 0, SR_SYNC_WORDS},
        {SR_OP_AR_RESULT, 0, 0, 0},
    };

    for (size_t step = 0; step < sizeof want / sizeof want[0]; step++) {
        const uint8_t *payload = NULL;
        struct pollfd p = {.fd = c1->fd, .events = POLLIN};
        sr_hdr r;
        ssize_t k = -1;

        h = hdr(SR_OP_JOIN, JOB_C, 0);
        if (step == 0) {
            h.seq = token;
            h.aux = nonce_of[JOB_C];
        } else if (step == 1 || step == 4) {
            h.op = SR_OP_PULL;
            h.seq = 1;
            h.aux = ELEMS;
        } else if (step == 2) {
            h.seq = token;
            h.aux = nonce_of[JOB_C];
            h.count = SR_JOIN_REQ_WORDS;
        } else if (step == 3) {
            h.op = SR_OP_PUSH;
            h.seq = 1;
            h.count = ELEMS;
        } else if (step == 5) {
            h.op = SR_OP_CLOCK;
        } else {
            h.op = SR_OP_AR_DATA;
            h.seq = 1;
            h.next_exp = SR_WIRE_EXP_NONE;
        }
        if (step == 2) { /* the echo: no admission token, the cookie, 0 */
            uint8_t m[SR_WIRE_HDR_LEN + 4 * SR_JOIN_REQ_WORDS];
            pack(m, &h, 0, -1);
            sr_put_be32(m + SR_WIRE_HDR_LEN + 8, cookie);
            send_raw(c1, m, sizeof m);
        } else {
            send_msg(c1, &h, 0xc0de0000u);
        }
        /* CLOCK 0 of a one-worker job also advances low: skip its RELEASE. */
        for (int tries = 0; tries < 4; tries++) {
            k = -1;
            if (poll(&p, 1, ANSWER_MS) == 1)
                k = recv(c1->fd, buf, sizeof buf, 0);
            if (k < 0 || sr_msg_parse(buf, (size_t)k, &r, &payload) != SR_PARSE_OK ||
                r.op != SR_OP_RELEASE)
                break;
        }
        if (k < 0 || sr_msg_parse(buf, (size_t)k, &r, &payload) != SR_PARSE_OK) {
            fail("job C control: no well-formed answer to %s from the bound address",
                 sr_op_name(h.op));
            return;
        }
        if (r.op != want[step].op || r.count != want[step].count ||
            r.status != want[step].status || (want[step].aux && r.aux != want[step].aux) ||
            (step == 0 && r.offset == 0) || (step == 2 && r.offset != 0)) {
            fail("job C control: %s answered with %s status %s count %u aux %u, want %s "
                 "count %u",
                 sr_op_name(h.op), sr_op_name(r.op), sr_status_name(r.status), r.count, r.aux,
                 sr_op_name(want[step].op), want[step].count);
            return;
        }
        if (step == 0)
            cookie = r.offset; /* the address proof's cookie */
        if (step == 1)
            expected.errors[JOB_C]++; /* UNPROVEN */
        if (step == 4)
            for (unsigned i = 0; i < ELEMS; i++)
                if (sr_get_be32(payload + 4 * i) != 0xc0de0000u + i) {
                    fail("job C control: word %u pulled back as %#x, pushed %#x", i,
                         sr_get_be32(payload + 4 * i), 0xc0de0000u + i);
                    break;
                }
    }
    printf("job C control: JOIN, its echo, PUSH, PULL, CLOCK and AR_DATA made here are "
           "answered when sent from the bound address (a PULL before the echo: UNPROVEN)\n");
    /* (f) the bound token from another address, and a new token. */
    forge_join_refused(c2, JOB_C, 0, nonce_of[JOB_C], token, SR_ST_NOT_MEMBER);
    forge_join_refused(c2, JOB_C, 0, nonce_of[JOB_C], token + 1, SR_ST_STALE);
    forge_join_refused(c2, JOB_C, 1, nonce_of[JOB_C], token, SR_ST_NOT_MEMBER);
    forge_data(c2, JOB_C, 0);
}
