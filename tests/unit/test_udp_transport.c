/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_udp_transport.c - the library's udp transport (lib/transport/udp)
 * over loopback, against a plain socket that plays the switch.
 *
 * - Send: a burst of messages of mixed lengths (runs of one length, which
 *   go as GSO trains, broken by shorter and header-only ones) reaches the
 *   switch as the same datagrams, in order.
 * - Receive: GSO trains, a header-only datagram and one longer than any
 *   message, taken a few at a time: the same messages come out in order,
 *   the long one as a truncated slot (length 0, counted).
 * Each runs with the kernel's offloads, with the kernel refusing the
 * socket options (setsockopt wrapped), and with it refusing GSO sends
 * (sendmmsg wrapped): the messages must be the same every time, and the
 * transport's closing log line tells which path ran. Every wait is
 * bounded.
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

#include "proto/wire.h"
#include "transport/transport.h"
#include "udp_wrap.h"

#define WAIT_MS 3000 /* the longest any receive may take */

/* ---- fixture ------------------------------------------------------------------ */

typedef struct fx {
    int sw;           /* the switch's socket */
    uint16_t sw_port, port;
    void *tp;
    sr_log log;
    char last_info[512]; /* the transport's last INFO line */
} fx;

static void capture(void *cookie, serene_log_level level, const char *msg)
{
    fx *f = cookie;

    if (level == SERENE_LOG_INFO)
        snprintf(f->last_info, sizeof f->last_info, "%s", msg);
}

static int kernel_has_gso(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0), zero = 0, ok;

    ok = __real_setsockopt(fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof zero) == 0;
    close(fd);
    return ok;
}

static void fx_open(fx *f)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001u)};
    struct sockaddr_in local, peer;
    socklen_t len = sizeof sa;
    serene_config cfg;
    int big = 4 << 20;

    memset(f, 0, sizeof *f);
    f->sw = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(f->sw >= 0);
    (void)__real_setsockopt(f->sw, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    assert_int_equal(bind(f->sw, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(f->sw, (struct sockaddr *)&sa, &len), 0);
    f->sw_port = ntohs(sa.sin_port);
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.switch_addr, sizeof cfg.switch_addr, "127.0.0.1:%u", f->sw_port);
    snprintf(cfg.bind_addr, sizeof cfg.bind_addr, "127.0.0.1:0");
    f->log = (sr_log){.fn = capture, .cookie = f, .level = SERENE_LOG_INFO};
    assert_int_equal(sr_transport_udp.open(&f->tp, &cfg, &f->log), 0);
    assert_int_equal(sr_transport_udp.addrs(f->tp, &local, &peer), 0);
    f->port = ntohs(local.sin_port);
}

/* Close the transport; its closing line must say "gso WANT_GSO". */
static void fx_close(fx *f, const char *want_gso)
{
    char want[32];

    sr_transport_udp.close(f->tp);
    close(f->sw);
    snprintf(want, sizeof want, "gso %s,", want_gso);
    assert_non_null(strstr(f->last_info, want));
    refuse_opts = refuse_gso = 0;
    gso_seen = 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Message i of length len: a header with seq i, then bytes of value i. */
static void fill_msg(uint8_t *m, uint32_t i, size_t len)
{
    sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_AR_DATA, .job = 3, .seq = i,
                .count = (uint16_t)((len - SR_WIRE_HDR_LEN) / 4)};

    memset(m, (int)(i & 0xff), len);
    sr_hdr_pack(m, &h);
}

/* ---- send ----------------------------------------------------------------------- */

/* A burst of SR_TP_BURST: 20 of 1052 bytes, one of 500 (ends the run), 5
 * of 1052, 6 header-only. */
static size_t send_len(unsigned i)
{
    return i < 20 ? 1052 : i == 20 ? 500 : i < 26 ? 1052 : SR_WIRE_HDR_LEN;
}

static void check_send(int want_gso)
{
    static uint8_t msgs[SR_TP_BURST][1052];
    struct iovec iov[SR_TP_BURST];
    uint8_t buf[2048], want[1052];
    unsigned next = 0;
    int64_t end;
    fx f;

    fx_open(&f);
    for (unsigned i = 0; i < SR_TP_BURST; i++) {
        fill_msg(msgs[i], i, send_len(i));
        iov[i] = (struct iovec){msgs[i], send_len(i)};
    }
    assert_int_equal(sr_transport_udp.send(f.tp, iov, SR_TP_BURST), SR_TP_BURST);
    /* A second burst after the first: after a refusal, no GSO is tried. */
    unsigned seen = gso_seen;
    assert_int_equal(sr_transport_udp.send(f.tp, iov, SR_TP_BURST), SR_TP_BURST);
    end = now_ms() + WAIT_MS;
    while (next < 2 * SR_TP_BURST && now_ms() < end) {
        struct pollfd p = {.fd = f.sw, .events = POLLIN};
        ssize_t n;
        unsigned i = next % SR_TP_BURST;

        if (poll(&p, 1, 100) <= 0)
            continue;
        n = recv(f.sw, buf, sizeof buf, 0);
        assert_int_equal(n, send_len(i));
        fill_msg(want, i, send_len(i));
        assert_memory_equal(buf, want, send_len(i));
        next++;
    }
    assert_int_equal(next, 2 * SR_TP_BURST);
    if (refuse_gso) {
        assert_int_equal(seen, 1);
        assert_int_equal(gso_seen, 1);
    } else if (want_gso) {
        assert_true(seen > 0 && gso_seen == 2 * seen);
    } else {
        assert_int_equal(gso_seen, 0);
    }
    fx_close(&f, want_gso && !refuse_gso ? "on" : "off");
    if (refuse_gso)
        assert_true(strstr(f.last_info, "gso_refused=1") != NULL);
}

/* ---- receive -------------------------------------------------------------------- */

/* What the switch sends: a train of 40 x 1052, one header-only, one of 9000
 * bytes, a train of 92, 92, 60. */
static size_t recv_len(unsigned i)
{
    return i < 40 ? 1052 : i == 40 ? SR_WIRE_HDR_LEN : i == 41 ? 9000 : i < 44 ? 92 : 60;
}
#define N_RECV 45u

static void send_train(const fx *f, unsigned i, unsigned j, int gso)
{
    static uint8_t buf[N_RECV][9000];
    struct iovec iov[N_RECV];
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(f->port),
                             .sin_addr.s_addr = htonl(0x7f000001u)};
    union { char b[CMSG_SPACE(sizeof(uint16_t))]; size_t align; } ctl;
    struct msghdr mh = {.msg_name = &to, .msg_namelen = sizeof to, .msg_iov = iov};

    for (unsigned k = i; k < j; k++) {
        fill_msg(buf[k], k, recv_len(k));
        iov[k - i] = (struct iovec){buf[k], recv_len(k)};
    }
    if (!gso || j - i == 1) {
        for (unsigned k = i; k < j; k++) {
            mh.msg_iov = &iov[k - i];
            mh.msg_iovlen = 1;
            assert_true(sendmsg(f->sw, &mh, 0) == (ssize_t)recv_len(k));
        }
        return;
    }
    uint16_t seg = (uint16_t)recv_len(i);
    mh.msg_iovlen = j - i;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof ctl.b;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof seg);
    memcpy(CMSG_DATA(cm), &seg, sizeof seg);
    assert_true(sendmsg(f->sw, &mh, 0) > 0);
}

static void check_recv(const char *want_gso)
{
    static uint8_t store[7][SR_WIRE_MAX_MSG];
    uint8_t *bufs[7];
    uint32_t lens[7];
    uint8_t want[9000];
    uint64_t truncated = 0;
    unsigned next = 0;
    int64_t end;
    int gso = kernel_has_gso();
    fx f;

    fx_open(&f);
    send_train(&f, 0, 40, gso);
    send_train(&f, 40, 41, gso);
    send_train(&f, 41, 42, gso);
    send_train(&f, 42, 45, gso);
    for (unsigned i = 0; i < 7; i++)
        bufs[i] = store[i];
    end = now_ms() + WAIT_MS;
    while (next < N_RECV && now_ms() < end) {
        /* Seven at a time: a GRO train is handed out over several calls. */
        int n = sr_transport_udp.recv(f.tp, bufs, lens, 7, SR_WIRE_MAX_MSG, &truncated);

        assert_true(n >= 0);
        if (n == 0) {
            assert_int_equal(sr_transport_udp.wait(f.tp, 100000000, -1), 0);
            continue;
        }
        for (int i = 0; i < n; i++, next++) {
            assert_true(next < N_RECV);
            if (recv_len(next) > SR_WIRE_MAX_MSG) {
                assert_int_equal(lens[i], 0);
                continue;
            }
            assert_int_equal(lens[i], recv_len(next));
            fill_msg(want, next, recv_len(next));
            assert_memory_equal(bufs[i], want, lens[i]);
        }
    }
    assert_int_equal(next, N_RECV);
    assert_int_equal(truncated, 1);
    fx_close(&f, want_gso);
}

/* ---- cases -------------------------------------------------------------------- */

static void test_send_offloads(void **state)
{
    (void)state;
    check_send(kernel_has_gso());
}

static void test_send_kernel_without_options(void **state)
{
    (void)state;
    refuse_opts = 1;
    check_send(0);
}

static void test_send_gso_refused(void **state)
{
    (void)state;
    if (!kernel_has_gso())
        skip();
    refuse_gso = 1;
    check_send(1);
}

static void test_recv_offloads(void **state)
{
    (void)state;
    check_recv(kernel_has_gso() ? "on" : "off");
}

static void test_recv_kernel_without_options(void **state)
{
    (void)state;
    refuse_opts = 1;
    check_recv("off");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_offloads),
        cmocka_unit_test(test_send_kernel_without_options),
        cmocka_unit_test(test_send_gso_refused),
        cmocka_unit_test(test_recv_offloads),
        cmocka_unit_test(test_recv_kernel_without_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
