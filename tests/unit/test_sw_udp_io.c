/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sw_udp_io.c - serene-switch's UDP I/O (p4/swswitch/udp_io.c, the
 * sw_io_udp table) over loopback, driven as the daemon's loop drives it.
 *
 * - Replicas: actions multicast to four worker sockets, with payloads of
 *   two lengths and header-only copies between them, more than one queue
 *   holds (so flush also runs from inside send): each worker gets every
 *   copy, in order, with its own worker id and the payload unchanged.
 * - Receive: GSO trains, a plain datagram and one longer than any message
 *   sent to the switch's socket come out as the same messages, in order,
 *   from their source; the long one as SR_WIRE_MAX_MSG + 1 bytes.
 * Each runs with the kernel's offloads, with them off (SW_IO_NO_GSO and
 * SW_IO_NO_GRO), with the kernel refusing the socket options (setsockopt
 * wrapped), and with the kernel refusing GSO sends (sendmmsg wrapped): the
 * messages must be the same every time. Every wait is bounded.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sw_io.h"
#include "udp_wrap.h"

#define NW 4          /* worker sockets */
#define ACTIONS 300   /* x NW copies: more than the I/O's queue of 1024 */
#define WAIT_MS 3000  /* the longest any receive may take */

/* ---- fixture ------------------------------------------------------------------ */

typedef struct fx {
    void *io;
    uint32_t ip;
    uint16_t port;
    int w[NW];
    sr_peer wp[NW];
    sr_pipe_action *a;
} fx;

static int udp_socket(uint16_t *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001u)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), big = 4 << 20;

    assert_true(fd >= 0);
    (void)__real_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    (void)__real_setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

static void fx_open(fx *f, unsigned flags)
{
    const sw_io_params par = {.ip = 0x7f000001u, .port = 0, .listen = "127.0.0.1:0", .flags = flags};
    char why[SW_IO_WHY_MAX];

    memset(f, 0, sizeof *f);
    assert_int_equal(sw_io_udp.open(&f->io, &par, why), 0);
    sw_io_udp.local(f->io, &f->ip, &f->port);
    assert_int_equal(f->ip, 0x7f000001u);
    assert_true(f->port != 0);
    for (unsigned i = 0; i < NW; i++) {
        f->w[i] = udp_socket(&f->wp[i].port);
        f->wp[i].ip = 0x7f000001u;
    }
    f->a = calloc(1, sizeof *f->a);
    assert_non_null(f->a);
}

static void fx_close(fx *f)
{
    sw_io_udp.close(f->io);
    for (unsigned i = 0; i < NW; i++)
        close(f->w[i]);
    free(f->a);
    refuse_opts = refuse_gso = 0;
    gso_seen = 0;
}

/* The value of " key=" in the I/O's counters, as text. */
static void counter(const fx *f, const char *key, char *out, size_t cap)
{
    char buf[1024], pat[64];
    const char *p;
    size_t n;

    sw_io_udp.counters(f->io, buf, sizeof buf);
    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(buf, pat);
    assert_non_null(p);
    p += strlen(pat);
    n = strcspn(p, " ");
    assert_true(n < cap);
    memcpy(out, p, n);
    out[n] = '\0';
}

static unsigned long long counter_u(const fx *f, const char *key)
{
    char v[32];

    counter(f, key, v, sizeof v);
    return strtoull(v, NULL, 10);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- replicas out ------------------------------------------------------------- */

/* Action i: AR_RESULT seq i to every worker; 16 payload words, or 5 for
 * every seventh (a shorter copy ends a GSO train). */
static void make_action(fx *f, uint32_t i)
{
    sr_pipe_action *a = f->a;
    unsigned words = i % 7 == 3 ? 5 : 16;

    memset(&a->hdr, 0, sizeof a->hdr);
    a->hdr.version = SR_WIRE_VERSION;
    a->hdr.op = SR_OP_AR_RESULT;
    a->hdr.job = 9;
    a->hdr.seq = i;
    a->hdr.count = (uint16_t)words;
    a->multicast = 1;
    a->n_dests = NW;
    for (unsigned k = 0; k < NW; k++) {
        a->dests[k].peer = f->wp[k];
        a->dests[k].worker = (uint16_t)(k + 10);
    }
    a->payload_len = 4u * words;
    for (unsigned e = 0; e < words; e++)
        sr_put_be32(a->payload + 4 * e, i * 1000u + e);
}

/* Every fifth action is followed by a header-only copy to worker 0 (the
 * per-copy send, as the fault injector uses it): seq 100000 + i. */
static void send_all(fx *f)
{
    for (uint32_t i = 0; i < ACTIONS; i++) {
        make_action(f, i);
        sw_io_udp.send_replicas(f->io, f->a);
        if (i % 5 == 0) {
            sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_PROCEED, .job = 9, .seq = 100000u + i};
            uint8_t m[SR_WIRE_HDR_LEN];

            sr_hdr_pack(m, &h);
            sw_io_udp.send(f->io, &f->wp[0], m, sizeof m, NULL, 0);
        }
    }
    sw_io_udp.flush(f->io);
}

/* Worker k's datagrams, each checked against what send_all queued. */
static void expect_worker(fx *f, unsigned k)
{
    uint8_t buf[SR_WIRE_MAX_MSG + 1];
    uint32_t next = 0, extra = 0;
    int64_t end = now_ms() + WAIT_MS;

    while (next < ACTIONS && now_ms() < end) {
        struct pollfd p = {.fd = f->w[k], .events = POLLIN};
        sr_hdr h;
        const uint8_t *pl;
        ssize_t n;

        if (poll(&p, 1, 100) <= 0)
            continue;
        n = recv(f->w[k], buf, sizeof buf, 0);
        assert_true(n > 0);
        assert_int_equal(sr_msg_parse(buf, (size_t)n, &h, &pl), SR_PARSE_OK);
        if (h.op == SR_OP_PROCEED) {
            assert_int_equal(k, 0);
            assert_int_equal(h.seq, 100000u + extra * 5);
            assert_int_equal(extra * 5, next - 1); /* right after its action */
            extra++;
            continue;
        }
        assert_int_equal(h.op, SR_OP_AR_RESULT);
        assert_int_equal(h.seq, next);
        assert_int_equal(h.worker, k + 10);
        assert_int_equal(h.count, next % 7 == 3 ? 5 : 16);
        for (unsigned e = 0; e < h.count; e++)
            assert_int_equal(sr_get_be32(pl + 4 * e), next * 1000u + e);
        next++;
    }
    assert_int_equal(next, ACTIONS);
    if (k == 0) {
        struct pollfd p = {.fd = f->w[0], .events = POLLIN};

        /* The header-only copy after the last fifth action may follow. */
        while (extra < (ACTIONS + 4) / 5 && poll(&p, 1, 500) > 0) {
            sr_hdr h;

            assert_true(recv(f->w[0], buf, sizeof buf, 0) == SR_WIRE_HDR_LEN);
            assert_int_equal(sr_msg_parse(buf, SR_WIRE_HDR_LEN, &h, NULL), SR_PARSE_OK);
            assert_int_equal(h.seq, 100000u + extra * 5);
            extra++;
        }
        assert_int_equal(extra, (ACTIONS + 4) / 5);
    }
}

static void check_replicas(unsigned flags, int kernel_gso)
{
    fx f;
    char v[8];

    fx_open(&f, flags);
    send_all(&f);
    for (unsigned k = 0; k < NW; k++)
        expect_worker(&f, k);
    assert_int_equal(counter_u(&f, "udp_tx"), ACTIONS * NW + (ACTIONS + 4) / 5);
    assert_int_equal(counter_u(&f, "udp_tx_errors"), 0);
    counter(&f, "udp_gso", v, sizeof v);
    if (kernel_gso && !refuse_gso) {
        assert_string_equal(v, "on");
        assert_true(counter_u(&f, "udp_tx_gso") > 0);
    } else {
        assert_string_equal(v, "off");
        assert_int_equal(counter_u(&f, "udp_tx_gso"), 0);
    }
    if (refuse_gso) {
        /* Refused once, then never asked again. */
        assert_int_equal(counter_u(&f, "udp_gso_refused"), 1);
        assert_int_equal(gso_seen, 1);
    }
    fx_close(&f);
}

/* ---- messages in -------------------------------------------------------------- */

/* The datagrams a worker sends the switch: a train of 20 messages of 1052
 * bytes, a header-only one, one of 9000 bytes, a train of 3 whose last is
 * shorter. Without GSO in the kernel, the same as single datagrams. */
typedef struct in_msg {
    size_t len;
    uint32_t seq;
} in_msg;

static const in_msg in_msgs[] = {
    {1052, 0}, {1052, 1}, {1052, 2}, {1052, 3}, {1052, 4}, {1052, 5}, {1052, 6},
    {1052, 7}, {1052, 8}, {1052, 9}, {1052, 10}, {1052, 11}, {1052, 12}, {1052, 13},
    {1052, 14}, {1052, 15}, {1052, 16}, {1052, 17}, {1052, 18}, {1052, 19},
    {SR_WIRE_HDR_LEN, 20}, {9000, 21}, {92, 22}, {92, 23}, {60, 24},
};
#define N_IN (sizeof in_msgs / sizeof in_msgs[0])

static void fill_msg(uint8_t *m, const in_msg *im)
{
    sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_AR_DATA, .job = 9, .seq = im->seq,
                .count = (uint16_t)((im->len - SR_WIRE_HDR_LEN) / 4)};

    memset(m, (int)im->seq, im->len);
    sr_hdr_pack(m, &h);
}

/* Messages [i, j) as one datagram train from fd to port. */
static void send_train(int fd, uint16_t port, size_t i, size_t j, int gso)
{
    static uint8_t buf[N_IN][9000];
    struct iovec iov[N_IN];
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(0x7f000001u)};
    union { char b[CMSG_SPACE(sizeof(uint16_t))]; size_t align; } ctl;
    struct msghdr mh = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = iov};

    for (size_t k = i; k < j; k++) {
        fill_msg(buf[k], &in_msgs[k]);
        iov[k - i] = (struct iovec){buf[k], in_msgs[k].len};
    }
    if (!gso || j - i == 1) {
        for (size_t k = i; k < j; k++) {
            mh.msg_iov = &iov[k - i];
            mh.msg_iovlen = 1;
            assert_true(sendmsg(fd, &mh, 0) == (ssize_t)in_msgs[k].len);
        }
        return;
    }
    uint16_t seg = (uint16_t)in_msgs[i].len;
    mh.msg_iovlen = j - i;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof ctl.b;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof seg);
    memcpy(CMSG_DATA(cm), &seg, sizeof seg);
    assert_true(sendmsg(fd, &mh, 0) > 0);
}

static void check_receive(unsigned flags, int kernel_gso)
{
    fx f;
    size_t next = 0;
    int64_t end;

    fx_open(&f, flags);
    send_train(f.w[2], f.port, 0, 20, kernel_gso);
    send_train(f.w[2], f.port, 20, 21, kernel_gso);
    send_train(f.w[2], f.port, 21, 22, kernel_gso);
    send_train(f.w[2], f.port, 22, 25, kernel_gso);
    end = now_ms() + WAIT_MS;
    while (next < N_IN && now_ms() < end) {
        struct pollfd p = {.fd = sw_io_udp.fd(f.io), .events = POLLIN};
        int full, n;

        if (poll(&p, 1, 100) <= 0)
            continue;
        n = sw_io_udp.recv(f.io, &full);
        assert_true(n > 0);
        for (int i = 0; i < n; i++, next++) {
            const in_msg *im = &in_msgs[next];
            uint8_t want[9000];
            sr_peer src;
            size_t len;
            const uint8_t *m = sw_io_udp.rx(f.io, (unsigned)i, &len, &src);

            assert_true(next < N_IN);
            assert_int_equal(src.ip, 0x7f000001u);
            assert_int_equal(src.port, f.wp[2].port);
            fill_msg(want, im);
            if (im->len > SR_WIRE_MAX_MSG) { /* handed on as a truncated read */
                assert_int_equal(len, SR_WIRE_MAX_MSG + 1);
            } else {
                assert_int_equal(len, im->len);
            }
            assert_memory_equal(m, want, len);
        }
    }
    assert_int_equal(next, N_IN);
    assert_int_equal(counter_u(&f, "udp_rx"), N_IN);
    assert_int_equal(counter_u(&f, "udp_rx_oversize"), 1);
    if (flags & SW_IO_NO_GRO || refuse_opts)
        assert_int_equal(counter_u(&f, "udp_rx_gro"), 0);
    fx_close(&f);
}

/* ---- cases -------------------------------------------------------------------- */

/* Whether this kernel takes UDP_SEGMENT at all (else the offload cases
 * check the fallback it forces). */
static int kernel_has_gso(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0), zero = 0, ok;

    ok = __real_setsockopt(fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof zero) == 0;
    close(fd);
    return ok;
}

static void test_replicas_offloads(void **state)
{
    (void)state;
    check_replicas(0, kernel_has_gso());
}

static void test_replicas_plain(void **state)
{
    (void)state;
    check_replicas(SW_IO_NO_GSO | SW_IO_NO_GRO, 0);
}

static void test_replicas_kernel_without_options(void **state)
{
    (void)state;
    refuse_opts = 1;
    check_replicas(0, 0);
}

static void test_replicas_gso_refused(void **state)
{
    (void)state;
    if (!kernel_has_gso())
        skip();
    refuse_gso = 1;
    check_replicas(0, 1);
}

static void test_receive_offloads(void **state)
{
    (void)state;
    check_receive(0, kernel_has_gso());
}

static void test_receive_plain(void **state)
{
    (void)state;
    check_receive(SW_IO_NO_GSO | SW_IO_NO_GRO, kernel_has_gso());
}

static void test_receive_kernel_without_options(void **state)
{
    (void)state;
    refuse_opts = 1;
    check_receive(0, kernel_has_gso());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replicas_offloads),
        cmocka_unit_test(test_replicas_plain),
        cmocka_unit_test(test_replicas_kernel_without_options),
        cmocka_unit_test(test_replicas_gso_refused),
        cmocka_unit_test(test_receive_offloads),
        cmocka_unit_test(test_receive_plain),
        cmocka_unit_test(test_receive_kernel_without_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
