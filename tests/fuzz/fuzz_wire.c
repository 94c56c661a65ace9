/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_wire.c - libFuzzer target for the wire parsers (lib/proto/wire.c).
 *
 * The input is tried both as a Serene message (sr_msg_parse) and as a whole
 * Ethernet/IPv4/UDP frame (sr_frame_parse); the UDP payload of an accepted
 * frame is then parsed as a message too, from an exact-size copy so that a
 * read past its end is caught by ASan rather than landing in the frame.
 *
 * Checked on every accepted input (abort() on a violation, which libFuzzer
 * reports as a crash):
 * - the payload pointer and length lie inside the input;
 * - a message's length is exactly header + 4 * count, and re-packing the
 *   parsed header with sr_hdr_pack gives back the input's 28 header bytes;
 * - a JOIN_ACK payload survives sr_join_params unpack/pack;
 * - an accepted frame's addresses and payload, re-framed with
 *   sr_frame_pack, parse back to the same addresses and payload.
 * The parsers must also leave their outputs untouched on rejection.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                               \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "fuzz_wire: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

/* Names exist for every value a parser can return or a header can carry. */
static void check_names(int result, const sr_hdr *h)
{
    CHECK(sr_parse_result_name(result) != NULL);
    if (h) {
        CHECK(sr_op_name(h->op) != NULL);
        CHECK(sr_status_name(h->status) != NULL);
    }
}

/* Parse buf[0..len) as a message and check what an acceptance promises. */
static void check_msg(const uint8_t *buf, size_t len)
{
    sr_hdr h, h2;
    const uint8_t *payload = NULL;
    uint8_t packed[SR_WIRE_HDR_LEN];
    int r;

    /* Poison the outputs: a rejection must leave them as they were. */
    memset(&h, 0xa5, sizeof h);
    r = sr_msg_parse(buf, len, &h, &payload);
    check_names(r, NULL);
    CHECK(r <= 0 && r > -SR_PARSE_NREASONS);
    /* Validation only (NULL outputs) must agree with the full parse. */
    CHECK(sr_msg_parse(buf, len, NULL, NULL) == r);
    if (r != SR_PARSE_OK) {
        sr_hdr poison;

        memset(&poison, 0xa5, sizeof poison);
        CHECK(memcmp(&h, &poison, sizeof h) == 0);
        CHECK(payload == NULL);
        return;
    }
    check_names(r, &h);

    CHECK(h.version == SR_WIRE_VERSION);
    CHECK(h.count <= SR_WIRE_MAX_ELEMS);
    CHECK(h.slot <= SR_WIRE_SLOT_MASK);
    CHECK(h.shadow <= 1);
    CHECK(len == SR_WIRE_HDR_LEN + 4u * (size_t)h.count);
    CHECK(payload == buf + SR_WIRE_HDR_LEN);
    CHECK(payload + 4u * (size_t)h.count == buf + len);

    /* Byte-exact round trip of the header. */
    sr_hdr_pack(packed, &h);
    CHECK(memcmp(packed, buf, SR_WIRE_HDR_LEN) == 0);
    CHECK(sr_msg_parse(buf, len, &h2, NULL) == SR_PARSE_OK);
    CHECK(memcmp(&h, &h2, sizeof h) == 0); /* the parser zeroes padding */

    if (h.op == SR_OP_JOIN_ACK && h.count >= SR_JOIN_PARAMS_WORDS) {
        sr_join_params jp;
        uint8_t out[SR_JOIN_PARAMS_WORDS * 4u];

        sr_join_params_unpack(payload, &jp);
        sr_join_params_pack(out, &jp);
        CHECK(memcmp(out, payload, sizeof out) == 0);
    }
}

static int addr_eq(const sr_frame_addr *a, const sr_frame_addr *b)
{
    return memcmp(a->dst_mac, b->dst_mac, 6) == 0 && memcmp(a->src_mac, b->src_mac, 6) == 0 &&
           a->src_ip == b->src_ip && a->dst_ip == b->dst_ip && a->src_port == b->src_port &&
           a->dst_port == b->dst_port;
}

static void check_frame(const uint8_t *frame, size_t len)
{
    sr_frame_addr a, a2;
    const uint8_t *payload = NULL, *payload2 = NULL;
    size_t plen = (size_t)-1, plen2 = 0, flen;
    uint8_t *copy, *re;
    int r;

    memset(&a, 0xa5, sizeof a);
    r = sr_frame_parse(frame, len, &a, &payload, &plen);
    CHECK(r <= 0 && r >= SR_FRAME_BAD_LENGTH);
    CHECK(sr_frame_parse(frame, len, NULL, NULL, NULL) == r);
    if (r != SR_FRAME_OK) {
        sr_frame_addr poison;

        memset(&poison, 0xa5, sizeof poison);
        CHECK(memcmp(&a, &poison, sizeof a) == 0);
        CHECK(payload == NULL && plen == (size_t)-1);
        return;
    }

    /* The payload lies inside the frame, after the L2-L4 headers. */
    CHECK(len >= SR_FRAME_HLEN);
    CHECK(payload == frame + SR_FRAME_HLEN);
    CHECK(plen <= len - SR_FRAME_HLEN);
    CHECK(plen <= 65535u - SR_IPV4_HLEN - SR_UDP_HLEN);

    /* The message inside, from a copy that ends where the payload ends. */
    copy = malloc(plen ? plen : 1);
    CHECK(copy != NULL);
    if (plen)
        memcpy(copy, payload, plen);
    check_msg(copy, plen);
    free(copy);

    /* Re-frame the payload with the parsed addresses: it must parse back to
     * the same addresses and bytes (the checksums are recomputed, so this
     * also checks sr_frame_pack against sr_frame_parse). */
    re = malloc(SR_FRAME_HLEN + plen);
    CHECK(re != NULL);
    if (plen)
        memcpy(re + SR_FRAME_HLEN, payload, plen);
    flen = sr_frame_pack(re, SR_FRAME_HLEN + plen, &a, plen);
    CHECK(flen == SR_FRAME_HLEN + plen);
    CHECK(sr_frame_parse(re, flen, &a2, &payload2, &plen2) == SR_FRAME_OK);
    CHECK(addr_eq(&a, &a2));
    CHECK(payload2 == re + SR_FRAME_HLEN && plen2 == plen);
    CHECK(plen == 0 || memcmp(payload2, payload, plen) == 0);
    /* One byte short of room is refused, never written past. */
    CHECK(sr_frame_pack(re, SR_FRAME_HLEN + plen - 1, &a, plen) == 0);
    free(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_msg(data, size);
    check_frame(data, size);
    return 0;
}
