/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_roce.c - Serene messages as RoCEv2 packets (lib/proto/roce.h): the
 * field mapping both ways, frames packed and parsed, the ICRC against a
 * frame built independently (Python's zlib CRC-32 over the masked fields),
 * every rejection, and the software switch's QP table (p4/swswitch/roce.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/roce.h"
#include "roce.h"

/* UC SEND Only with Immediate from 10.0.0.2:47001 to 10.0.0.254:4791, QP
 * 0x8000c1, PSN 0x123456, ImmDt 0x1a1, payload 01..08; IPv4 id 0, DF, TTL
 * 64, UDP checksum 0. Built and its ICRC computed by a Python script with
 * zlib.crc32, not by roce.c. */
static const uint8_t golden[] = {
    0x02, 0x53, 0x45, 0x00, 0x00, 0xfe, 0x02, 0x53, 0x45, 0x00, 0x00, 0x02,
    0x08, 0x00, 0x45, 0x00, 0x00, 0x38, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
    0x25, 0xb6, 0x0a, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0xfe, 0xb7, 0x99,
    0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, 0x25, 0x00, 0xff, 0xff, 0x00, 0x80,
    0x00, 0xc1, 0x00, 0x12, 0x34, 0x56, 0x00, 0x00, 0x01, 0xa1, 0x01, 0x02,
    0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x22, 0x19, 0x94, 0x5d,
};

#define IP_OFF SR_ETH_HLEN
#define BTH_OFF SR_FRAME_HLEN

/* Write the ICRC of a frame again after a test changed a covered byte. */
static void fix_icrc(uint8_t *f, size_t len)
{
    size_t covered = len - SR_ETH_HLEN - SR_ROCE_ICRC_LEN;
    uint32_t c = sr_roce_icrc(f + IP_OFF, covered);
    uint8_t *t = f + IP_OFF + covered;
    t[0] = (uint8_t)c, t[1] = (uint8_t)(c >> 8), t[2] = (uint8_t)(c >> 16), t[3] = (uint8_t)(c >> 24);
}

static void test_golden_frame(void **state)
{
    (void)state;
    sr_roce_pkt p;
    uint8_t f[sizeof golden];

    assert_int_equal(sr_roce_frame_parse(golden, sizeof golden, &p), SR_ROCE_OK);
    assert_int_equal(p.m.opcode, SR_ROCE_SEND_ONLY_IMM);
    assert_int_equal(p.dst_qpn, 0x8000c1);
    assert_int_equal(p.psn, 0x123456);
    assert_int_equal(p.m.imm, 0x1a1);
    assert_int_equal(p.m.payload_len, 8);
    assert_int_equal(p.a.src_ip, 0x0a000002);
    assert_int_equal(p.a.src_port, 47001);
    /* Packed again from what was parsed: the same bytes, ICRC included. */
    uint8_t payload[8];
    memcpy(payload, p.m.payload, sizeof payload);
    p.m.payload = payload;
    assert_int_equal(sr_roce_frame_pack(f, sizeof f, &p), sizeof golden);
    assert_memory_equal(f, golden, sizeof golden);
}

/* The fields a router may change are masked; the others are covered. */
static void test_icrc_masks(void **state)
{
    (void)state;
    uint8_t f[sizeof golden];
    sr_roce_pkt p;
    const size_t masked[] = {IP_OFF + 1, IP_OFF + 8, IP_OFF + 10, IP_OFF + 11,
                             IP_OFF + SR_IPV4_HLEN + 6, IP_OFF + SR_IPV4_HLEN + 7, BTH_OFF + 4};
    for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
        memcpy(f, golden, sizeof f);
        f[masked[i]] ^= 0xc0;
        assert_int_equal(sr_roce_icrc(f + IP_OFF, sizeof f - IP_OFF - 4),
                         sr_roce_icrc(golden + IP_OFF, sizeof f - IP_OFF - 4));
    }
    /* Every other byte from the IPv4 header to the payload is covered. */
    for (size_t off = IP_OFF; off < sizeof golden - 4; off++) {
        int is_masked = 0;
        for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++)
            is_masked |= masked[i] == off;
        if (is_masked)
            continue;
        memcpy(f, golden, sizeof f);
        f[off] ^= 0x01;
        assert_int_not_equal(sr_roce_icrc(f + IP_OFF, sizeof f - IP_OFF - 4),
                             sr_roce_icrc(golden + IP_OFF, sizeof f - IP_OFF - 4));
    }
    /* A flipped payload bit fails the check. */
    memcpy(f, golden, sizeof f);
    f[sizeof f - 6] ^= 0x10;
    assert_int_equal(sr_roce_frame_parse(f, sizeof f, &p), SR_ROCE_BAD_ICRC);
}

static size_t ar_msg(uint8_t *msg, sr_hdr *h)
{
    memset(h, 0, sizeof *h);
    h->version = SR_WIRE_VERSION;
    h->op = SR_OP_AR_DATA;
    h->job = 0xbeef;
    h->worker = 63;
    h->seq = 0xdeadbeef;
    h->slot = SR_WIRE_SLOT_MASK;
    h->shadow = 1;
    h->count = 3;
    h->exp = SR_WIRE_EXP_MIN;
    h->next_exp = SR_WIRE_EXP_NONE;
    h->offset = 0x01020304;
    h->aux = 0xffffffffu; /* the largest total, and SR_WIRE_AUX_V16: packed words alike */
    sr_hdr_pack(msg, h);
    for (unsigned i = 0; i < h->count; i++)
        sr_put_be32(msg + SR_WIRE_HDR_LEN + 4 * i, 0x80000000u + i);
    return SR_WIRE_HDR_LEN + 4u * h->count;
}

static size_t frame_of(uint8_t *f, size_t cap, const sr_roce_msg *m, uint32_t dst_qpn)
{
    sr_roce_pkt p;
    memset(&p, 0, sizeof p);
    p.a.src_ip = 0x0a000001;
    p.a.dst_ip = 0x0a0000fe;
    p.a.src_port = 47000;
    p.a.dst_port = SR_ROCE_UDP_PORT;
    p.dst_qpn = dst_qpn;
    p.psn = SR_ROCE_PSN_MASK; /* the last PSN before the wrap */
    p.m = *m;
    return sr_roce_frame_pack(f, cap, &p);
}

/* AR_DATA: the header in RETH and ImmDt, only the values as payload; back
 * to the same message; RETRANSMIT is informational and not carried. */
static void test_write_roundtrip(void **state)
{
    (void)state;
    uint8_t msg[SR_WIRE_MAX_MSG], back[SR_WIRE_MAX_MSG], f[SR_ROCE_FRAME_MAX];
    sr_hdr h;
    sr_roce_msg m;
    sr_roce_pkt p;
    size_t len = ar_msg(msg, &h);
    uint32_t qpn = SR_ROCE_QPN(h.job, h.worker);

    assert_int_equal(sr_roce_from_msg(msg, len, 0x1a0, &m), SR_ROCE_OK);
    assert_int_equal(m.opcode, SR_ROCE_WRITE_ONLY_IMM);
    assert_int_equal(m.va, 0xdeadbeef01020304ull);
    assert_int_equal(m.rkey, 0xffffffffu);
    assert_int_equal(m.imm, 0xffff0000u | (uint8_t)SR_WIRE_EXP_MIN << 8 | 0x80u);
    assert_ptr_equal(m.payload, msg + SR_WIRE_HDR_LEN);
    assert_int_equal(m.payload_len, 12);
    size_t n = frame_of(f, sizeof f, &m, qpn);
    assert_int_equal(n, SR_FRAME_HLEN + SR_ROCE_WRITE_HLEN + 12 + SR_ROCE_ICRC_LEN);
    assert_int_equal(sr_roce_frame_parse(f, n, &p), SR_ROCE_OK);
    assert_int_equal(p.dst_qpn, qpn);
    assert_int_equal(p.psn, SR_ROCE_PSN_MASK);
    assert_int_equal(sr_roce_to_msg(&p.m, p.dst_qpn, back, sizeof back), (int)len);
    assert_memory_equal(back, msg, len);

    h.flags = SR_FLAG_RETRANSMIT;
    sr_hdr_pack(msg, &h);
    assert_int_equal(sr_roce_from_msg(msg, len, 0x1a0, &m), SR_ROCE_OK);
    assert_int_equal(sr_roce_to_msg(&m, qpn, back, sizeof back), (int)len);
    assert_int_equal(back[SR_WIRE_OFF_FLAGS], 0);
    /* A header-only AR_DATA (the exponent round) is a zero-length WRITE. */
    h.count = 0;
    h.flags = 0;
    sr_hdr_pack(msg, &h);
    assert_int_equal(sr_roce_from_msg(msg, SR_WIRE_HDR_LEN, 0x1a0, &m), SR_ROCE_OK);
    n = frame_of(f, sizeof f, &m, qpn);
    assert_int_equal(sr_roce_frame_parse(f, n, &p), SR_ROCE_OK);
    assert_int_equal(sr_roce_to_msg(&p.m, p.dst_qpn, back, sizeof back), SR_WIRE_HDR_LEN);
    assert_memory_equal(back, msg, SR_WIRE_HDR_LEN);
    /* A WRITE to a QP that is no switch binding's carries no message. */
    assert_int_equal(sr_roce_to_msg(&p.m, 0x1a0, back, sizeof back), SR_ROCE_BAD_MSG);
    assert_int_equal(sr_roce_to_msg(&p.m, 0xc00000, back, sizeof back), SR_ROCE_BAD_MSG);
}

/* Other ops: SEND, the message itself as payload, ImmDt the source QP; a
 * SEND to a binding's QP must speak for that binding. */
static void test_send_roundtrip(void **state)
{
    (void)state;
    uint8_t msg[SR_WIRE_MAX_MSG], back[SR_WIRE_MAX_MSG], f[SR_ROCE_FRAME_MAX];
    sr_hdr h;
    sr_roce_msg m;
    sr_roce_pkt p;
    size_t len = ar_msg(msg, &h);

    h.op = SR_OP_AR_RESULT;
    sr_hdr_pack(msg, &h);
    assert_int_equal(sr_roce_from_msg(msg, len, 0x1a0, &m), SR_ROCE_OK);
    assert_int_equal(m.opcode, SR_ROCE_SEND_ONLY_IMM);
    assert_int_equal(m.imm, 0x1a0);
    assert_int_equal(m.payload_len, len);
    size_t n = frame_of(f, sizeof f, &m, SR_ROCE_QPN(h.job, h.worker));
    assert_int_equal(sr_roce_frame_parse(f, n, &p), SR_ROCE_OK);
    assert_int_equal(sr_roce_to_msg(&p.m, p.dst_qpn, back, sizeof back), (int)len);
    assert_memory_equal(back, msg, len);
    /* To a worker's QP (no tag) any binding's message is taken. */
    assert_int_equal(sr_roce_to_msg(&p.m, 0x1a0, back, sizeof back), (int)len);
    /* To another binding's QP: refused. */
    assert_int_equal(sr_roce_to_msg(&p.m, SR_ROCE_QPN(h.job, 0), back, sizeof back),
                     SR_ROCE_BAD_MSG);
    /* Not a Serene message, or too long for the buffer. */
    assert_int_equal(sr_roce_to_msg(&p.m, 0x1a0, back, len - 1), SR_ROCE_BAD_MSG);
    p.m.payload_len = 8;
    assert_int_equal(sr_roce_to_msg(&p.m, 0x1a0, back, sizeof back), SR_ROCE_BAD_MSG);
    assert_int_equal(sr_roce_from_msg(msg, len - 1, 0x1a0, &m), SR_ROCE_BAD_MSG);
    assert_int_equal(sr_roce_from_msg(msg, len, SR_ROCE_QPN_MASK + 1, &m), SR_ROCE_BAD_MSG);
}

static void test_rejects(void **state)
{
    (void)state;
    uint8_t msg[SR_WIRE_MAX_MSG], f[SR_ROCE_FRAME_MAX], g[SR_ROCE_FRAME_MAX];
    sr_hdr h;
    sr_roce_msg m;
    sr_roce_pkt p;
    size_t len = ar_msg(msg, &h);

    assert_int_equal(sr_roce_from_msg(msg, len, 0x1a0, &m), SR_ROCE_OK);
    size_t n = frame_of(f, sizeof f, &m, SR_ROCE_QPN(h.job, h.worker));
    /* Short of its ICRC, of its RETH: truncated (the UDP length agrees). */
    for (size_t cut = 4; cut <= 20; cut += 16) {
        memcpy(g, f, n);
        size_t k = n - cut;
        sr_put_be16(g + IP_OFF + 2, (uint16_t)(k - SR_ETH_HLEN));
        sr_put_be16(g + IP_OFF + 10, 0);
        sr_put_be16(g + IP_OFF + 10, sr_csum_ipv4(g + IP_OFF));
        sr_put_be16(g + IP_OFF + SR_IPV4_HLEN + 4, (uint16_t)(k - SR_ETH_HLEN - SR_IPV4_HLEN));
        int rc = sr_roce_frame_parse(g, k, &p);
        assert_true(rc == SR_ROCE_TRUNCATED || rc == SR_ROCE_BAD_ICRC || rc == SR_ROCE_BAD_LENGTH);
    }
    memcpy(g, f, n);
    sr_put_be16(g + IP_OFF + 2, (uint16_t)(SR_IPV4_HLEN + SR_UDP_HLEN + 8));
    sr_put_be16(g + IP_OFF + 10, 0);
    sr_put_be16(g + IP_OFF + 10, sr_csum_ipv4(g + IP_OFF));
    sr_put_be16(g + IP_OFF + SR_IPV4_HLEN + 4, SR_UDP_HLEN + 8);
    assert_int_equal(sr_roce_frame_parse(g, SR_FRAME_HLEN + 8, &p), SR_ROCE_TRUNCATED);
    /* Another UDP port. */
    memcpy(g, f, n);
    sr_put_be16(g + IP_OFF + SR_IPV4_HLEN + 2, SR_WIRE_UDP_PORT);
    assert_int_equal(sr_roce_frame_parse(g, n, &p), SR_ROCE_NOT_ROCE);
    /* RC instead of UC, a header version other than 0, another P_Key. */
    const size_t where[] = {BTH_OFF, BTH_OFF + 1, BTH_OFF + 2};
    const uint8_t what[] = {0x0b, 0x01, 0x7f};
    for (size_t i = 0; i < 3; i++) {
        memcpy(g, f, n);
        g[where[i]] = what[i];
        fix_icrc(g, n);
        assert_int_equal(sr_roce_frame_parse(g, n, &p), SR_ROCE_BAD_OPCODE);
    }
    /* A DMA length other than the payload's. */
    memcpy(g, f, n);
    g[BTH_OFF + SR_ROCE_BTH_LEN + 15] ^= 0x04;
    fix_icrc(g, n);
    assert_int_equal(sr_roce_frame_parse(g, n, &p), SR_ROCE_BAD_LENGTH);
    /* The ICRC. */
    memcpy(g, f, n);
    g[n - 1] ^= 0x80;
    assert_int_equal(sr_roce_frame_parse(g, n, &p), SR_ROCE_BAD_ICRC);
    /* A frame that does not fit, and an opcode pack does not know. */
    assert_int_equal(frame_of(g, SR_FRAME_HLEN + 20, &m, 1), 0);
    m.opcode = 0x04;
    assert_int_equal(frame_of(g, sizeof g, &m, 1), 0);
    assert_string_equal(sr_roce_result_name(SR_ROCE_BAD_ICRC), "bad_icrc");
}

/* The switch learns a worker's QP from the JOIN_ACK of its JOIN only, and
 * answers on it with a PSN that goes up by one a packet. */
static void test_switch_qp_table(void **state)
{
    (void)state;
    sr_roce_sw *s = sr_roce_sw_create();
    static sr_pipe_out out;
    sr_roce_req req = {.src_qpn = 0x1a0, .dst_qpn = SR_ROCE_QPN(3, 1),
                       .opcode = SR_ROCE_SEND_ONLY_IMM};
    sr_frame_addr a;
    uint8_t f[SR_ROCE_FRAME_MAX];
    sr_roce_pkt p;
    sr_roce_sw_counters c;

    assert_non_null(s);
    memset(&a, 0, sizeof a);
    memset(&out, 0, sizeof out);
    out.n = 1;
    sr_pipe_action *act = &out.act[0];
    act->n_dests = 1;
    act->dests[0].worker = 1;
    act->dests[0].peer.ip = 0x0a000002;
    act->dests[0].peer.port = 47001;
    act->hdr.version = SR_WIRE_VERSION;
    act->hdr.job = 3;
    act->hdr.op = SR_OP_ERROR; /* a refused JOIN: nothing learnt */
    sr_roce_sw_learn(s, &req, &out);
    act->multicast = 1; /* as a multicast it has no QP to go to */
    assert_false(sr_roce_sw_is_roce(s, NULL, act, 0));
    assert_int_equal(sr_roce_sw_egress(s, NULL, act, 0, &a, f, sizeof f), 0);
    act->multicast = 0;
    /* The unicast answer goes to the SEND's source QP, PSN 0. */
    assert_true(sr_roce_sw_is_roce(s, &req, act, 0));
    size_t n = sr_roce_sw_egress(s, &req, act, 0, &a, f, sizeof f);
    assert_int_not_equal(n, 0);
    assert_int_equal(sr_roce_frame_parse(f, n, &p), SR_ROCE_OK);
    assert_int_equal(p.dst_qpn, 0x1a0);
    assert_int_equal(p.psn, 0);
    assert_int_equal(p.m.imm, SR_ROCE_QPN(3, 1));
    assert_int_equal(p.a.src_port, SR_ROCE_SPORT_BASE | (SR_ROCE_QPN(3, 1) & SR_ROCE_SPORT_QP_MASK));
    /* JOIN_ACK: learnt; a multicast replica to that address now goes out
     * as RoCE, PSN 0, 1, 2 ... */
    act->hdr.op = SR_OP_JOIN_ACK;
    sr_roce_sw_learn(s, &req, &out);
    act->hdr.op = SR_OP_AR_RESULT;
    act->multicast = 1;
    for (uint32_t psn = 0; psn < 3; psn++) {
        assert_true(sr_roce_sw_is_roce(s, NULL, act, 0));
        n = sr_roce_sw_egress(s, NULL, act, 0, &a, f, sizeof f);
        assert_int_equal(sr_roce_frame_parse(f, n, &p), SR_ROCE_OK);
        assert_int_equal(p.psn, psn);
        assert_int_equal(p.dst_qpn, 0x1a0);
    }
    /* Another address for the same worker: not this QP's. */
    act->dests[0].peer.port = 47002;
    assert_false(sr_roce_sw_is_roce(s, NULL, act, 0));
    act->dests[0].peer.port = 47001;
    /* The worker joins again over UDP: its answers are UDP's. */
    act->hdr.op = SR_OP_JOIN_ACK;
    act->multicast = 0;
    sr_roce_sw_learn(s, NULL, &out);
    act->multicast = 1;
    assert_false(sr_roce_sw_is_roce(s, NULL, act, 0));
    sr_roce_sw_counters_get(s, &c);
    assert_int_equal(c.learnt, 1);
    assert_int_equal(c.tx, 4);
    assert_int_equal(c.no_qp, 1);
    sr_roce_sw_destroy(&s);
    assert_null(s);
    sr_roce_sw_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_frame),
        cmocka_unit_test(test_icrc_masks),
        cmocka_unit_test(test_write_roundtrip),
        cmocka_unit_test(test_send_roundtrip),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_switch_qp_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
