/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire.c - pack and parse Serene messages and their Ethernet/IPv4/UDP frames.
 *
 * Invariants:
 *  - Every field goes through sr_put_be* / sr_get_be* at its SR_WIRE_OFF_*
 *    offset; no struct is ever overlaid on a buffer, so alignment, padding
 *    and host byte order never leak onto the wire.
 *  - Parsers check a length before the bytes it covers are read: nothing
 *    reads at or past buf + len, whatever the bytes claim.
 *  - Parsers write their outputs only on success, so a rejected packet
 *    leaves the caller's state untouched. Any output pointer may be NULL
 *    (validation only), beyond what wire.h promises for payload.
 *  - The list of valid ops exists once (SR_WIRE_OPS in wire.h): sr_op_name
 *    and the BAD_OP check both expand it and cannot drift apart.
 */
#include "proto/wire.h"

#include <string.h>

_Static_assert(SR_WIRE_OFF_AUX + 4u == SR_WIRE_HDR_LEN, "aux is the last header field");
_Static_assert(SR_WIRE_SLOT_SHADOW == SR_WIRE_SLOT_MASK + 1u, "shadow bit sits above the slot index");
_Static_assert(SR_WIRE_MAX_SLOTS == SR_WIRE_SLOT_MASK + 1u, "every slot index is addressable");
_Static_assert(SR_WIRE_MAX_ELEMS <= 0xffffu, "count is a 16-bit field");
/* The largest message must fit one IPv4 datagram, or sr_frame_pack could not
 * carry it. */
_Static_assert(SR_WIRE_MAX_MSG <= 65535u - SR_IPV4_HLEN - SR_UDP_HLEN, "max message fits IPv4");
_Static_assert(SR_FRAME_HLEN == 42u, "Ethernet II + IPv4 without options + UDP");

/* ---- names -------------------------------------------------------------- */

/* NULL for a value outside enum sr_wire_op: also the parser's op check. */
static const char *op_name_or_null(unsigned op)
{
#define OP_CASE(name, value, doc)                                                                  \
    case SR_OP_##name:                                                                             \
        return #name;
    switch (op) {
        SR_WIRE_OPS(OP_CASE)
    default:
        return NULL;
    }
#undef OP_CASE
}

const char *sr_op_name(unsigned op)
{
    const char *s = op_name_or_null(op);
    return s ? s : "op?";
}

const char *sr_status_name(unsigned status)
{
#define ST_CASE(name, value, doc)                                                                  \
    case SR_ST_##name:                                                                             \
        return #name;
    switch (status) {
        SR_WIRE_STATUSES(ST_CASE)
    default:
        return "status?";
    }
#undef ST_CASE
}

const char *sr_parse_result_name(int result)
{
    /* Lower case, to tell a parse result from an op or status in a log. */
    switch (result) {
    case SR_PARSE_OK: return "ok";
    case SR_PARSE_TRUNCATED: return "truncated";
    case SR_PARSE_FOREIGN: return "foreign";
    case SR_PARSE_BAD_VERSION: return "bad_version";
    case SR_PARSE_BAD_OP: return "bad_op";
    case SR_PARSE_BAD_COUNT: return "bad_count";
    case SR_PARSE_BAD_LENGTH: return "bad_length";
    default: return "parse?";
    }
}

/* ---- Serene header ------------------------------------------------------ */

void sr_hdr_pack(uint8_t *out, const sr_hdr *h)
{
    /* Masking the index keeps a stray bit 15 in h->slot from flipping the
     * shadow bit, which would make the packet address the other copy. */
    uint16_t slot = (uint16_t)((h->slot & SR_WIRE_SLOT_MASK) | (h->shadow ? SR_WIRE_SLOT_SHADOW : 0u));

    sr_put_be16(out + SR_WIRE_OFF_MAGIC, (uint16_t)SR_WIRE_MAGIC);
    out[SR_WIRE_OFF_VERSION] = h->version;
    out[SR_WIRE_OFF_OP] = h->op;
    sr_put_be16(out + SR_WIRE_OFF_JOB, h->job);
    sr_put_be16(out + SR_WIRE_OFF_WORKER, h->worker);
    sr_put_be32(out + SR_WIRE_OFF_SEQ, h->seq);
    sr_put_be16(out + SR_WIRE_OFF_SLOT, slot);
    sr_put_be16(out + SR_WIRE_OFF_COUNT, h->count);
    /* int8 -> two's complement byte; the conversion to uint8_t is defined
     * (modulo 256), unlike the reverse. */
    out[SR_WIRE_OFF_EXP] = (uint8_t)h->exp;
    out[SR_WIRE_OFF_NEXT_EXP] = (uint8_t)h->next_exp;
    out[SR_WIRE_OFF_FLAGS] = h->flags;
    out[SR_WIRE_OFF_STATUS] = h->status;
    sr_put_be32(out + SR_WIRE_OFF_OFFSET, h->offset);
    sr_put_be32(out + SR_WIRE_OFF_AUX, h->aux);
}

/* Two's complement byte -> int8 without implementation-defined conversion. */
static int8_t get_s8(uint8_t b)
{
    return (int8_t)(b < 0x80u ? (int)b : (int)b - 256);
}

int sr_msg_parse(const uint8_t *buf, size_t len, sr_hdr *h, const uint8_t **payload)
{
    if (len < SR_WIRE_HDR_LEN)
        return SR_PARSE_TRUNCATED;
    /* Magic first: a foreign datagram on our port is counted as foreign,
     * never as a malformed Serene packet. */
    if (sr_get_be16(buf + SR_WIRE_OFF_MAGIC) != SR_WIRE_MAGIC)
        return SR_PARSE_FOREIGN;
    if (buf[SR_WIRE_OFF_VERSION] != SR_WIRE_VERSION)
        return SR_PARSE_BAD_VERSION;
    if (op_name_or_null(buf[SR_WIRE_OFF_OP]) == NULL)
        return SR_PARSE_BAD_OP;

    uint16_t count = sr_get_be16(buf + SR_WIRE_OFF_COUNT);
    if (count > SR_WIRE_MAX_ELEMS)
        return SR_PARSE_BAD_COUNT;
    /* Exact length: trailing bytes would mean the sender and receiver
     * disagree about the layout, which must not pass silently. */
    if (len != SR_WIRE_HDR_LEN + 4u * (size_t)count)
        return SR_PARSE_BAD_LENGTH;

    if (h) {
        uint16_t slot = sr_get_be16(buf + SR_WIRE_OFF_SLOT);

        memset(h, 0, sizeof(*h)); /* deterministic padding for memcmp users */
        h->version = buf[SR_WIRE_OFF_VERSION];
        h->op = buf[SR_WIRE_OFF_OP];
        h->job = sr_get_be16(buf + SR_WIRE_OFF_JOB);
        h->worker = sr_get_be16(buf + SR_WIRE_OFF_WORKER);
        h->seq = sr_get_be32(buf + SR_WIRE_OFF_SEQ);
        h->slot = (uint16_t)(slot & SR_WIRE_SLOT_MASK);
        h->shadow = (slot & SR_WIRE_SLOT_SHADOW) ? 1u : 0u;
        h->count = count;
        h->exp = get_s8(buf[SR_WIRE_OFF_EXP]);
        h->next_exp = get_s8(buf[SR_WIRE_OFF_NEXT_EXP]);
        h->flags = buf[SR_WIRE_OFF_FLAGS];
        h->status = buf[SR_WIRE_OFF_STATUS];
        h->offset = sr_get_be32(buf + SR_WIRE_OFF_OFFSET);
        h->aux = sr_get_be32(buf + SR_WIRE_OFF_AUX);
    }
    if (payload)
        *payload = buf + SR_WIRE_HDR_LEN; /* == buf + len when count is 0 */
    return SR_PARSE_OK;
}

void sr_join_params_pack(uint8_t *out, const sr_join_params *p)
{
    sr_put_be32(out + 0, p->n_workers);
    sr_put_be32(out + 4, p->elems_per_pkt);
    sr_put_be32(out + 8, p->pool_slots);
    sr_put_be32(out + 12, p->store_capacity);
}

void sr_join_params_unpack(const uint8_t *in, sr_join_params *p)
{
    p->n_workers = sr_get_be32(in + 0);
    p->elems_per_pkt = sr_get_be32(in + 4);
    p->pool_slots = sr_get_be32(in + 8);
    p->store_capacity = sr_get_be32(in + 12);
}
_Static_assert(SR_JOIN_PARAMS_WORDS * 4u == 16u, "join params are four u32 words");

void sr_join_req_pack(uint8_t *out, const sr_join_req *r)
{
    sr_put_be32(out + 0, (uint32_t)(r->token >> 32));
    sr_put_be32(out + 4, (uint32_t)r->token);
    sr_put_be32(out + 8, r->cookie);
    sr_put_be32(out + 12, 0);
}

int sr_join_req_unpack(const uint8_t *in, unsigned count, sr_join_req *r)
{
    r->token = 0;
    r->cookie = 0;
    if (count == 0)
        return 0;
    if (count != SR_JOIN_REQ_WORDS)
        return -1;
    r->token = (uint64_t)sr_get_be32(in) << 32 | sr_get_be32(in + 4);
    r->cookie = sr_get_be32(in + 8);
    return 0;
}
_Static_assert(SR_JOIN_REQ_WORDS * 4u == 16u, "a join request is four u32 words");

/* ---- checksums (RFC 1071) ----------------------------------------------- */

/* Offsets inside the IPv4 and UDP headers. */
enum {
    IP_OFF_VER_IHL = 0,
    IP_OFF_TOTLEN = 2,
    IP_OFF_ID = 4,
    IP_OFF_FRAG = 6,
    IP_OFF_TTL = 8,
    IP_OFF_PROTO = 9,
    IP_OFF_CSUM = 10,
    IP_OFF_SRC = 12,
    IP_OFF_DST = 16,
    UDP_OFF_SPORT = 0,
    UDP_OFF_DPORT = 2,
    UDP_OFF_LEN = 4,
    UDP_OFF_CSUM = 6,
};
#define IP_VER_IHL_PLAIN 0x45u /* version 4, IHL 5 words: no options */
#define IP_FLAG_DF 0x4000u
#define IP_FLAG_MF 0x2000u
#define IP_FRAG_OFF_MASK 0x1fffu
#define IP_TTL_DEFAULT 64u
#define SR_IP_MAX_PAYLOAD (65535u - SR_IPV4_HLEN - SR_UDP_HLEN)

/* Add the big-endian 16-bit words of p[0..n) to acc; an odd last byte is
 * padded with a zero byte (RFC 1071 section 4.1). The carries are folded
 * back once at the end: a 64-bit accumulator of 16-bit words cannot
 * overflow below 2^48 words. */
static uint64_t sum16(uint64_t acc, const uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i + 1 < n; i += 2)
        acc += (uint64_t)p[i] << 8 | p[i + 1];
    if (i < n)
        acc += (uint64_t)p[i] << 8;
    return acc;
}

static uint16_t fold(uint64_t acc)
{
    while (acc >> 16)
        acc = (acc & 0xffffu) + (acc >> 16);
    return (uint16_t)acc;
}

/* Pseudo-header of RFC 768: source, destination, zero, protocol, UDP length. */
static uint64_t sum_pseudo(const uint8_t *iphdr, size_t udp_len)
{
    uint64_t acc = sum16(0, iphdr + IP_OFF_SRC, 8);
    return acc + SR_IPPROTO_UDP + (uint64_t)(udp_len & 0xffffu);
}

uint16_t sr_csum_ipv4(const uint8_t *iphdr)
{
    /* Skip the checksum field so the result does not depend on what it
     * holds: the same call fills a fresh header and recomputes a received
     * one. */
    uint64_t acc = sum16(0, iphdr, IP_OFF_CSUM);
    acc = sum16(acc, iphdr + IP_OFF_CSUM + 2, SR_IPV4_HLEN - IP_OFF_CSUM - 2);
    return (uint16_t)~fold(acc);
}

uint16_t sr_csum_udp(const uint8_t *iphdr, const uint8_t *udp, size_t udp_len)
{
    uint64_t acc = sum_pseudo(iphdr, udp_len);
    acc = sum16(acc, udp, udp_len < UDP_OFF_CSUM ? udp_len : UDP_OFF_CSUM);
    if (udp_len > SR_UDP_HLEN)
        acc = sum16(acc, udp + SR_UDP_HLEN, udp_len - SR_UDP_HLEN);
    uint16_t c = (uint16_t)~fold(acc);
    /* 0 on the wire means "no checksum" (RFC 768): send its ones'-complement
     * twin instead. */
    return c ? c : 0xffffu;
}

/* Verification sums every word, the checksum field included, and expects
 * ones'-complement -0 (0xffff). Unlike comparing with a recomputed value,
 * this accepts both encodings of zero a conforming sender may use. */
static int ipv4_csum_ok(const uint8_t *iphdr)
{
    return fold(sum16(0, iphdr, SR_IPV4_HLEN)) == 0xffffu;
}

static int udp_csum_ok(const uint8_t *iphdr, const uint8_t *udp, size_t udp_len)
{
    return fold(sum16(sum_pseudo(iphdr, udp_len), udp, udp_len)) == 0xffffu;
}

/* ---- Ethernet / IPv4 / UDP ---------------------------------------------- */

size_t sr_frame_pack(uint8_t *frame, size_t cap, const sr_frame_addr *a, size_t payload_len)
{
    if (payload_len > SR_IP_MAX_PAYLOAD || cap < SR_FRAME_HLEN || cap - SR_FRAME_HLEN < payload_len)
        return 0;

    uint8_t *ip = frame + SR_ETH_HLEN;
    uint8_t *udp = ip + SR_IPV4_HLEN;
    size_t udp_len = SR_UDP_HLEN + payload_len;

    memcpy(frame, a->dst_mac, 6);
    memcpy(frame + 6, a->src_mac, 6);
    sr_put_be16(frame + 12, (uint16_t)SR_ETHERTYPE_IPV4);

    ip[IP_OFF_VER_IHL] = IP_VER_IHL_PLAIN;
    ip[1] = 0; /* DSCP/ECN: best effort */
    sr_put_be16(ip + IP_OFF_TOTLEN, (uint16_t)(SR_IPV4_HLEN + udp_len));
    /* DF with id 0 (RFC 6864): Serene datagrams are never fragmented, so
     * the id has nothing to identify. */
    sr_put_be16(ip + IP_OFF_ID, 0);
    sr_put_be16(ip + IP_OFF_FRAG, (uint16_t)IP_FLAG_DF);
    ip[IP_OFF_TTL] = IP_TTL_DEFAULT;
    ip[IP_OFF_PROTO] = SR_IPPROTO_UDP;
    sr_put_be32(ip + IP_OFF_SRC, a->src_ip);
    sr_put_be32(ip + IP_OFF_DST, a->dst_ip);
    sr_put_be16(ip + IP_OFF_CSUM, sr_csum_ipv4(ip));

    sr_put_be16(udp + UDP_OFF_SPORT, a->src_port);
    sr_put_be16(udp + UDP_OFF_DPORT, a->dst_port);
    sr_put_be16(udp + UDP_OFF_LEN, (uint16_t)udp_len);
    sr_put_be16(udp + UDP_OFF_CSUM, sr_csum_udp(ip, udp, udp_len));

    return SR_FRAME_HLEN + payload_len;
}

int sr_frame_parse(const uint8_t *frame, size_t len, sr_frame_addr *a, const uint8_t **payload,
                   size_t *payload_len)
{
    /* Each check reads only bytes an earlier check proved present. */
    if (len < SR_ETH_HLEN)
        return SR_FRAME_TRUNCATED;
    if (sr_get_be16(frame + 12) != SR_ETHERTYPE_IPV4)
        return SR_FRAME_NOT_IPV4;
    if (len < SR_ETH_HLEN + SR_IPV4_HLEN)
        return SR_FRAME_TRUNCATED;

    const uint8_t *ip = frame + SR_ETH_HLEN;
    if (ip[IP_OFF_VER_IHL] != IP_VER_IHL_PLAIN)
        return SR_FRAME_NOT_IPV4;
    if (ip[IP_OFF_PROTO] != SR_IPPROTO_UDP)
        return SR_FRAME_NOT_UDP;
    /* A fragment (first or later) holds only part of a datagram; Serene
     * sends DF, so one is foreign or broken either way. */
    if (sr_get_be16(ip + IP_OFF_FRAG) & (IP_FLAG_MF | IP_FRAG_OFF_MASK))
        return SR_FRAME_NOT_UDP;
    if (!ipv4_csum_ok(ip))
        return SR_FRAME_BAD_CSUM;

    /* Only now are the lengths trusted: the checksum vouches for them. */
    size_t ip_len = sr_get_be16(ip + IP_OFF_TOTLEN);
    if (ip_len > len - SR_ETH_HLEN)
        return SR_FRAME_TRUNCATED;
    if (ip_len < SR_IPV4_HLEN + SR_UDP_HLEN)
        return SR_FRAME_BAD_LENGTH;

    /* ip_len >= 28 and ip_len <= len - 14 put the UDP header in bounds. */
    const uint8_t *udp = ip + SR_IPV4_HLEN;
    size_t udp_len = sr_get_be16(udp + UDP_OFF_LEN);
    if (udp_len != ip_len - SR_IPV4_HLEN)
        return SR_FRAME_BAD_LENGTH;
    if (sr_get_be16(udp + UDP_OFF_CSUM) != 0 && !udp_csum_ok(ip, udp, udp_len))
        return SR_FRAME_BAD_CSUM;

    if (a) {
        memcpy(a->dst_mac, frame, 6);
        memcpy(a->src_mac, frame + 6, 6);
        a->src_ip = sr_get_be32(ip + IP_OFF_SRC);
        a->dst_ip = sr_get_be32(ip + IP_OFF_DST);
        a->src_port = sr_get_be16(udp + UDP_OFF_SPORT);
        a->dst_port = sr_get_be16(udp + UDP_OFF_DPORT);
    }
    if (payload)
        *payload = udp + SR_UDP_HLEN;
    if (payload_len)
        *payload_len = udp_len - SR_UDP_HLEN;
    return SR_FRAME_OK;
}
