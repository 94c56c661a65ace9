/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_roce.c - libFuzzer target for the RoCEv2 parsers and mapping
 * (lib/proto/roce.c) and the software switch's RoCE port
 * (p4/swswitch/roce.c).
 *
 * The input is a frame. It is parsed twice: as it is, and with its ICRC
 * made right (so that mutations reach past the ICRC check). Checked on
 * every accepted frame (abort() on a violation):
 * - the payload lies inside the frame;
 * - the Serene message sr_roce_to_msg rebuilds (into an exact-size
 *   buffer, so that ASan sees a write past it) parses with sr_msg_parse;
 * - mapped back with sr_roce_from_msg and packed again with the frame's
 *   addresses, it parses to the same opcode, QP, PSN, ImmDt, RETH and
 *   payload (a WRITE drops nothing that its fields carry);
 * - the switch's port accepts it the same way (sr_roce_sw_ingress).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/roce.h"
#include "roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                               \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "fuzz_roce: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

static uint8_t g_again[SR_ROCE_FRAME_MAX];

static void check_frame(const uint8_t *f, size_t n)
{
    static sr_roce_sw *sw;
    sr_roce_pkt p, q;
    int rc = sr_roce_frame_parse(f, n, &p);

    CHECK(rc <= 0 && rc > -SR_ROCE_NREASONS);
    CHECK(strcmp(sr_roce_result_name(rc), "roce?") != 0);
    if (!sw)
        sw = sr_roce_sw_create();
    CHECK(sw);
    uint8_t *msg = malloc(SR_WIRE_MAX_MSG);
    CHECK(msg);
    sr_peer src;
    sr_roce_req req;
    int in = sr_roce_sw_ingress(sw, f, n, msg, &src, &req);
    free(msg);
    if (rc != SR_ROCE_OK) {
        CHECK(in == rc);
        return;
    }
    CHECK(p.m.payload >= f && p.m.payload + p.m.payload_len <= f + n);
    /* The message, into a buffer of exactly the size it needs at most. */
    size_t cap = p.m.opcode == SR_ROCE_WRITE_ONLY_IMM ? SR_WIRE_HDR_LEN + p.m.payload_len
                                                        : p.m.payload_len;
    uint8_t *out = malloc(cap ? cap : 1);
    CHECK(out);
    int len = sr_roce_to_msg(&p.m, p.dst_qpn, out, cap);
    CHECK(len == in || (len < 0 && in < 0));
    if (len > 0) {
        sr_hdr h;
        sr_roce_msg m;
        CHECK((size_t)len == cap);
        CHECK(sr_msg_parse(out, (size_t)len, &h, NULL) == SR_PARSE_OK);
        /* A SEND's ImmDt is its source QP: 24 bits, the rest ignored. */
        uint32_t src_qpn = p.m.opcode == SR_ROCE_SEND_ONLY_IMM ? p.m.imm & SR_ROCE_QPN_MASK : 1;
        int back = sr_roce_from_msg(out, (size_t)len, src_qpn, &m);
        if (p.m.opcode == SR_ROCE_SEND_ONLY_IMM && h.op == SR_OP_AR_DATA) {
            /* A SEND of an AR_DATA (no worker sends one) maps to a WRITE;
             * its flags and status do not ride in one (dropped, 50bffdf). */
            CHECK(back == SR_ROCE_OK);
            CHECK(m.opcode == SR_ROCE_WRITE_ONLY_IMM);
        } else {
            CHECK(back == SR_ROCE_OK);
            CHECK(m.opcode == p.m.opcode);
            q = p;
            q.m = m;
            size_t k = sr_roce_frame_pack(g_again, sizeof g_again, &q);
            CHECK(k);
            CHECK(sr_roce_frame_parse(g_again, k, &q) == SR_ROCE_OK);
            CHECK(q.m.opcode == p.m.opcode && q.dst_qpn == p.dst_qpn && q.psn == p.psn &&
                  q.m.imm == (p.m.opcode == SR_ROCE_SEND_ONLY_IMM ? src_qpn : p.m.imm) &&
                  q.m.va == p.m.va && q.m.rkey == p.m.rkey &&
                  q.m.payload_len == p.m.payload_len &&
                  !memcmp(q.m.payload, p.m.payload, p.m.payload_len));
        }
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > SR_ROCE_FRAME_MAX)
        return 0;
    /* An exact-size copy: a read past the frame is ASan's to see. */
    uint8_t *f = malloc(size ? size : 1);
    CHECK(f);
    memcpy(f, data, size);
    check_frame(f, size);
    /* The same with a right ICRC, when the frame has room for one. */
    if (size >= SR_FRAME_HLEN + SR_ROCE_ICRC_LEN) {
        size_t covered = size - SR_ETH_HLEN - SR_ROCE_ICRC_LEN;
        uint32_t c = sr_roce_icrc(f + SR_ETH_HLEN, covered);
        uint8_t *t = f + SR_ETH_HLEN + covered;
        t[0] = (uint8_t)c, t[1] = (uint8_t)(c >> 8), t[2] = (uint8_t)(c >> 16),
        t[3] = (uint8_t)(c >> 24);
        check_frame(f, size);
    }
    free(f);
    return 0;
}
