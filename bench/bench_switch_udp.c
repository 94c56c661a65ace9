/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_switch_udp.c - packets per second of the serene-switch process over
 * kernel UDP, driven by a blaster: one thread plays N workers (N sockets on
 * 127.0.0.1) of a job and keeps --window allreduce rounds in flight, each
 * round one AR_DATA per worker, as the library would but without its engine,
 * quantization or retransmission, so that the figure is the switch
 * daemon's (and the loopback stack's) alone.
 *
 * Run it under the launcher with a second job for the blaster (the
 * launcher's own job 0 has the one rank that is this program):
 *   serene-run -n 1 --switch-arg=--job --switch-arg=1:4 -- \
 *       bench/bench_switch_udp --job 1 --workers 4
 * (it reads the switch's address from SERENE_SWITCH, as any rank does).
 *
 * With --gso 1 (the default) each worker sends the rounds it may send in
 * one go as one UDP GSO train (UDP_SEGMENT: one sendmsg of up to 64
 * datagrams, as the library's udp transport sends a window) and receives
 * with UDP GRO and recvmmsg; a kernel without them gets sendmmsg and
 * plain datagrams. --gso 0 is the blaster of old: one send() and one
 * recv() per packet.
 *
 * Reported per call of --rounds rounds: input packets per second (the
 * workers' contributions the switch took) and result packets per second
 * (the copies it sent); GB/s counts input message bytes. Verified after
 * timing: every result arrived, in order, with the exact sums. Loopback
 * UDP loses nothing while the window fits the socket buffers; a round that
 * does not complete within --stall-ms fails the case (a smaller --window
 * then helps), as this blaster does not retransmit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/udp_gso.h"
#include "harness.h"
#include "proto/wire.h"

#define MAX_N 16
#define MAX_WINDOW 1024  /* rounds in flight at most (a job's pool is at most 32768 slots) */
#define GSO_SEGS 64      /* datagrams per GSO send */
#define GSO_BYTES 65000u /* bytes per GSO send */
#define RX_BATCH 16      /* datagrams per recvmmsg */
#define RX_LEN 65535u    /* per datagram: a GRO train fits */

typedef struct bctx {
    unsigned n, elems, slots, window, job;
    size_t rounds, stall_ms;
    int gso, gro;         /* batched I/O: GSO sends (else sendmmsg), GRO receives */
    int fd[MAX_N];
    size_t msg_len;
    uint8_t *msg[MAX_N];  /* each worker's AR_DATA template */
    uint8_t (*hdr)[SR_WIRE_HDR_LEN]; /* batched: headers of the rounds in flight, [w * MAX_WINDOW + r % window] */
    uint8_t *rx;          /* batched: RX_BATCH * RX_LEN bytes */
    uint32_t sent;        /* rounds sent by every worker */
    uint32_t got[MAX_N];  /* results received per worker */
    uint64_t bad, results;
    char err[96];
} bctx;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int32_t q_of(unsigned e)
{
    return (int32_t)(e * 2654435761u % 20001u) - 10000;
}

static void send_round(bctx *c, uint32_t r)
{
    uint16_t slot = (uint16_t)((r % c->slots) | (((r / c->slots) & 1u) ? SR_WIRE_SLOT_SHADOW : 0));
    for (unsigned w = 0; w < c->n; w++) {
        uint8_t *m = c->msg[w];
        sr_put_be32(m + SR_WIRE_OFF_SEQ, r);
        sr_put_be16(m + SR_WIRE_OFF_SLOT, slot);
        sr_put_be32(m + SR_WIRE_OFF_OFFSET, r * c->elems);
        if (send(c->fd[w], m, c->msg_len, 0) != (ssize_t)c->msg_len && !c->err[0])
            snprintf(c->err, sizeof c->err, "send: %s", strerror(errno));
    }
}

/* Worker w's rounds [r0, r1) as GSO trains (or, without GSO, one sendmmsg
 * of single datagrams): each datagram its round's header, then the
 * worker's payload. */
static void send_batch(bctx *c, unsigned w, uint32_t r0, uint32_t r1)
{
    struct iovec iov[2 * GSO_SEGS];
    struct mmsghdr mm[GSO_SEGS];
    union { char buf[CMSG_SPACE(sizeof(uint16_t))]; size_t align; } ctl;
    const size_t pl = c->msg_len - SR_WIRE_HDR_LEN;
    unsigned per = c->gso ? (unsigned)(GSO_BYTES / c->msg_len) : GSO_SEGS;

    per = per < 1 ? 1 : per > GSO_SEGS ? GSO_SEGS : per;
    while (r0 < r1) {
        unsigned k = r1 - r0 < per ? r1 - r0 : per;
        for (unsigned i = 0; i < k; i++) {
            uint32_t r = r0 + i;
            uint8_t *h = c->hdr[w * MAX_WINDOW + r % c->window];
            uint16_t slot = (uint16_t)((r % c->slots) | (((r / c->slots) & 1u) ? SR_WIRE_SLOT_SHADOW : 0));
            memcpy(h, c->msg[w], SR_WIRE_HDR_LEN);
            sr_put_be32(h + SR_WIRE_OFF_SEQ, r);
            sr_put_be16(h + SR_WIRE_OFF_SLOT, slot);
            sr_put_be32(h + SR_WIRE_OFF_OFFSET, r * c->elems);
            iov[2 * i] = (struct iovec){h, SR_WIRE_HDR_LEN};
            iov[2 * i + 1] = (struct iovec){c->msg[w] + SR_WIRE_HDR_LEN, pl};
            mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[2 * i], .msg_iovlen = 2};
        }
        int ok;
        if (c->gso && k > 1) {
            struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2 * k, .msg_control = ctl.buf,
                                .msg_controllen = sizeof ctl.buf};
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            uint16_t seg = (uint16_t)c->msg_len;
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof seg);
            memcpy(CMSG_DATA(cm), &seg, sizeof seg);
            ok = sendmsg(c->fd[w], &mh, 0) == (ssize_t)(k * c->msg_len);
        } else {
            ok = sendmmsg(c->fd[w], mm, k, 0) == (int)k;
        }
        if (!ok && !c->err[0])
            snprintf(c->err, sizeof c->err, "send: %s", strerror(errno));
        r0 += k;
    }
}

/* One answer to worker w: the next result, with the exact sums. */
static void check_result(bctx *c, unsigned w, const uint8_t *buf, size_t len)
{
    const int32_t tri = (int32_t)(c->n * (c->n + 1) / 2);
    sr_hdr h;
    const uint8_t *pl;
    if (sr_msg_parse(buf, len, &h, &pl) != SR_PARSE_OK || h.op != SR_OP_AR_RESULT || h.seq != c->got[w] ||
        h.count != c->elems || (int32_t)sr_get_be32(pl) != q_of(0) * tri ||
        (int32_t)sr_get_be32(pl + 4 * (c->elems - 1)) != q_of(c->elems - 1) * tri) {
        if (!c->bad && !c->err[0])
            snprintf(c->err, sizeof c->err, "worker %u: unexpected answer (op %s, seq %u, want %u)", w,
                     sr_op_name(h.op), h.seq, c->got[w]);
        c->bad++;
        return;
    }
    c->got[w]++;
    c->results++;
}

/* What waits at worker w, by recvmmsg, each GRO train split at its
 * segment size. Returns how many datagrams came (0: none waits). */
static int drain_batch(bctx *c, unsigned w)
{
    struct mmsghdr mm[RX_BATCH];
    struct iovec iov[RX_BATCH];
    union { char buf[CMSG_SPACE(sizeof(int))]; size_t align; } ctl[RX_BATCH];
    for (unsigned i = 0; i < RX_BATCH; i++) {
        iov[i] = (struct iovec){c->rx + (size_t)i * RX_LEN, RX_LEN};
        mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1, .msg_control = ctl[i].buf,
                                        .msg_controllen = c->gro ? sizeof ctl[i].buf : 0};
    }
    int k = recvmmsg(c->fd[w], mm, RX_BATCH, MSG_DONTWAIT, NULL);
    for (int i = 0; i < k; i++) {
        size_t len = mm[i].msg_len, seg = len;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mm[i].msg_hdr); c->gro && cm;
             cm = CMSG_NXTHDR(&mm[i].msg_hdr, cm)) {
            int v;
            memcpy(&v, CMSG_DATA(cm), sizeof v);
            if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO && v > 0)
                seg = (size_t)v;
        }
        for (size_t off = 0; off < len; off += seg)
            check_result(c, w, c->rx + (size_t)i * RX_LEN + off, len - off < seg ? len - off : seg);
    }
    return k;
}

/* Drain what has arrived on every socket; check each result. */
static void drain(bctx *c)
{
    uint8_t buf[SR_WIRE_MAX_MSG];
    for (unsigned w = 0; w < c->n; w++) {
        if (c->rx) {
            while (drain_batch(c, w) == RX_BATCH)
                ;
            continue;
        }
        for (;;) {
            ssize_t k = recv(c->fd[w], buf, sizeof buf, MSG_DONTWAIT);
            if (k < 0)
                break;
            check_result(c, w, buf, (size_t)k);
        }
    }
}

static uint32_t min_got(const bctx *c)
{
    uint32_t m = c->got[0];
    for (unsigned w = 1; w < c->n; w++)
        m = c->got[w] < m ? c->got[w] : m;
    return m;
}

static void run_blast(void *a)
{
    bctx *c = a;
    uint32_t end = c->sent + (uint32_t)c->rounds;
    uint64_t last_progress = now_ms();
    uint32_t last_min = min_got(c);
    while (!c->err[0]) {
        uint32_t done = min_got(c);
        if (c->rx) {
            uint32_t to = done + c->window < end ? done + c->window : end;
            for (unsigned w = 0; to > c->sent && w < c->n; w++)
                send_batch(c, w, c->sent, to);
            c->sent = to > c->sent ? to : c->sent;
        }
        while (c->sent < end && c->sent - done < c->window)
            send_round(c, c->sent++);
        if (done == end)
            break;
        struct pollfd p[MAX_N];
        for (unsigned w = 0; w < c->n; w++)
            p[w] = (struct pollfd){.fd = c->fd[w], .events = POLLIN};
        (void)poll(p, c->n, 10);
        drain(c);
        uint64_t t = now_ms();
        if (min_got(c) != last_min) {
            last_min = min_got(c);
            last_progress = t;
        } else if (t - last_progress > c->stall_ms) {
            snprintf(c->err, sizeof c->err, "no result for %zu ms at round %u: packets lost (try a smaller --window)",
                     c->stall_ms, last_min);
        }
    }
}

static int verify_blast(void *a, char *why, size_t wl)
{
    bctx *c = a;
    if (c->err[0] || c->bad) {
        snprintf(why, wl, "%s", c->err[0] ? c->err : "bad answers");
        return 1;
    }
    for (unsigned w = 0; w < c->n; w++)
        if (c->got[w] != c->sent) {
            snprintf(why, wl, "worker %u has %u results of %u rounds", w, c->got[w], c->sent);
            return 1;
        }
    return 0;
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return *end || port <= 0 || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1 ? -1 : 0;
}

/* Open the sockets and JOIN every worker; fills elems and slots from the
 * JOIN_ACK. */
static int join_all(bctx *c, const struct sockaddr_in *sw, uint32_t nonce)
{
    int big = 4 << 20;
    for (unsigned w = 0; w < c->n; w++) {
        c->fd[w] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (c->fd[w] < 0)
            return -1;
        (void)setsockopt(c->fd[w], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        (void)setsockopt(c->fd[w], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        if (connect(c->fd[w], (const struct sockaddr *)sw, sizeof *sw) < 0)
            return -1;
        sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_JOIN, .job = (uint16_t)c->job,
                    .worker = (uint16_t)w, .seq = 0x1000u + w, .aux = nonce};
        uint8_t m[SR_WIRE_HDR_LEN], buf[SR_WIRE_MAX_MSG];
        sr_hdr_pack(m, &h);
        uint64_t give_up = now_ms() + 5000;
        for (;;) {
            if (send(c->fd[w], m, sizeof m, 0) != (ssize_t)sizeof m)
                return -1;
            struct pollfd p = {.fd = c->fd[w], .events = POLLIN};
            if (poll(&p, 1, 200) > 0) {
                ssize_t k = recv(c->fd[w], buf, sizeof buf, 0);
                sr_hdr a;
                const uint8_t *pl;
                if (k > 0 && sr_msg_parse(buf, (size_t)k, &a, &pl) == SR_PARSE_OK) {
                    if (a.op != SR_OP_JOIN_ACK) {
                        fprintf(stderr, "bench_switch_udp: JOIN of worker %u refused: %s\n", w,
                                a.op == SR_OP_ERROR ? sr_status_name(a.status) : sr_op_name(a.op));
                        return -1;
                    }
                    sr_join_params jp;
                    sr_join_params_unpack(pl, &jp);
                    if (jp.n_workers != c->n) {
                        fprintf(stderr, "bench_switch_udp: job %u has %u workers, --workers is %u\n", c->job,
                                jp.n_workers, c->n);
                        return -1;
                    }
                    c->elems = jp.elems_per_pkt;
                    c->slots = jp.pool_slots;
                    break;
                }
            }
            if (now_ms() > give_up) {
                fprintf(stderr, "bench_switch_udp: no JOIN_ACK within 5 s\n");
                return -1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t workers = 4, job = 1, window = 32, rounds = 2048, stall_ms = 2000, gso = 1;
    const sr_bench_opt opts[] = {
        {"--workers", "N: workers the blaster plays (the job's size)", &workers},
        {"--job", "job id at the switch", &job},
        {"--window", "rounds in flight (at most the job's pool)", &window},
        {"--rounds", "rounds per timed call", &rounds},
        {"--stall-ms", "fail when no round completes for this long", &stall_ms},
        {"--gso", "1: batched I/O (GSO trains, GRO, recvmmsg); 0: one send and recv per packet", &gso},
    };
    sr_bench_init(&b, "bench_switch_udp", 0);
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (workers < 1 || workers > MAX_N || job > 65535 || window == 0 || window > MAX_WINDOW || rounds == 0 ||
        rounds > (1u << 24) || stall_ms == 0 || gso > 1) {
        fprintf(stderr, "bench_switch_udp: need 1 <= --workers <= %d, --job <= 65535, 1 <= --window <= %d, "
                        "--rounds (<= 2^24), --stall-ms >= 1 and --gso 0 or 1\n", MAX_N, MAX_WINDOW);
        return 2;
    }
    const char *swaddr = getenv("SERENE_SWITCH");
    struct sockaddr_in sw;
    if (!swaddr || parse_addr(swaddr, &sw)) {
        fprintf(stderr, "bench_switch_udp: SERENE_SWITCH must be IPv4:PORT (run it under serene-run)\n");
        return 2;
    }
    bctx c = {.n = (unsigned)workers, .job = (unsigned)job, .rounds = rounds, .stall_ms = stall_ms};
    for (unsigned w = 0; w < MAX_N; w++)
        c.fd[w] = -1;
    if (join_all(&c, &sw, (uint32_t)time(NULL) ^ (uint32_t)getpid() << 8)) {
        fprintf(stderr, "bench_switch_udp: cannot join job %zu at %s%s%s\n", job, swaddr, errno ? ": " : "",
                errno ? strerror(errno) : "");
        return 1;
    }
    c.window = (unsigned)(window < c.slots ? window : c.slots);
    c.msg_len = SR_WIRE_HDR_LEN + 4u * c.elems;
    if (gso) {
        c.hdr = calloc((size_t)MAX_N * MAX_WINDOW, sizeof *c.hdr);
        c.rx = malloc((size_t)RX_BATCH * RX_LEN);
        if (!c.hdr || !c.rx)
            return 1;
        /* Each offload the kernel refuses stays off: sendmmsg, plain datagrams. */
        int one = 1, zero = 0;
        c.gso = c.gro = 1;
        for (unsigned w = 0; w < c.n; w++) {
            c.gso &= setsockopt(c.fd[w], SOL_UDP, UDP_SEGMENT, &zero, sizeof zero) == 0;
            c.gro &= setsockopt(c.fd[w], SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
        }
    }
    for (unsigned w = 0; w < c.n; w++) {
        c.msg[w] = malloc(c.msg_len);
        if (!c.msg[w])
            return 1;
        sr_hdr dh = {.version = SR_WIRE_VERSION, .op = SR_OP_AR_DATA, .job = (uint16_t)job,
                     .worker = (uint16_t)w, .count = (uint16_t)c.elems, .exp = 3, .next_exp = 3};
        sr_hdr_pack(c.msg[w], &dh);
        for (unsigned e = 0; e < c.elems; e++)
            sr_put_be32(c.msg[w] + SR_WIRE_HDR_LEN + 4 * e, (uint32_t)(q_of(e) * (int32_t)(w + 1)));
    }
    b.size_bytes = c.msg_len;
    char config[300];
    snprintf(config, sizeof config,
             "serene-switch at %s, job %zu: %u workers, %u values per packet (message %zu B), pool %u, "
             "window %u rounds, %zu rounds per call; blaster I/O: %s", swaddr, job, c.n, c.elems, c.msg_len,
             c.slots, c.window, rounds,
             !gso ? "send/recv per packet" : c.gso ? (c.gro ? "GSO trains, GRO, recvmmsg" : "GSO trains, recvmmsg")
                                            : (c.gro ? "sendmmsg, GRO, recvmmsg" : "sendmmsg, recvmmsg"));
    sr_bench_begin(&b, config);

    char variant[16];
    snprintf(variant, sizeof variant, "n%u", c.n);
    size_t pkts = rounds * c.n;
    sr_bench_case bc = {"switch_udp", variant, pkts * c.msg_len, run_blast, verify_blast, &c};
    sr_bench_result r;
    sr_bench_run(&b, &bc, &r);
    snprintf(r.extra, sizeof r.extra, "workers=%u Mpps=%.3f best_Mpps=%.3f out_Mpps=%.3f ns_per_pkt=%.1f", c.n,
             (double)pkts / r.median_s / 1e6, (double)pkts / r.best_s / 1e6, (double)pkts / r.median_s / 1e6,
             r.median_s / (double)pkts * 1e9);
    sr_bench_report(&b, &r);
    sr_bench_note(&b, "# Mpps = AR_DATA packets into the switch per second (it sends as many results back)");
    for (unsigned w = 0; w < c.n; w++) {
        /* LEAVE, so that the job can be joined again; best effort */
        sr_hdr lh = {.version = SR_WIRE_VERSION, .op = SR_OP_LEAVE, .job = (uint16_t)job, .worker = (uint16_t)w,
                     .seq = 0x1000u + w};
        uint8_t m[SR_WIRE_HDR_LEN];
        sr_hdr_pack(m, &lh);
        (void)send(c.fd[w], m, sizeof m, 0);
        close(c.fd[w]);
        free(c.msg[w]);
    }
    free(c.hdr);
    free(c.rx);
    return sr_bench_end(&b);
}
