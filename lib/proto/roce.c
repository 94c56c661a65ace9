/* SPDX-License-Identifier: Apache-2.0 */
/*
 * roce.c - Serene messages as RoCEv2 packets: the field mapping, the ICRC
 * and the frames (roce.h says what goes where and why).
 *
 * Invariants, as in wire.c: fields go through sr_put_be* / sr_get_be* at
 * fixed offsets, lengths are checked before the bytes they cover are read,
 * and outputs are written only on success.
 */
#include "proto/roce.h"

#include <string.h>

/* BTH byte offsets. */
#define BTH_OPCODE 0u
#define BTH_FLAGS 1u /* SE(1) M(1) PadCnt(2) TVer(4) */
#define BTH_PKEY 2u
#define BTH_QPN 4u   /* byte 4: FECN(1) BECN(1) reserved(6); 5..7: DestQP */
#define BTH_PSN 8u   /* byte 8: AckReq(1) reserved(7); 9..11: PSN */
/* RETH byte offsets (after the BTH). */
#define RETH_VA 0u
#define RETH_RKEY 8u
#define RETH_LEN 12u

/* The CRC-32 of IEEE 802.3 (reflected, polynomial 0xedb88320), without its
 * final inversion, over n bytes from crc: bytewise, with the table
 * computed by the compiler from the polynomial (no mutable state). */
#define CRC_POLY 0xedb88320u
#define T1(c) (((c) >> 1) ^ (((c) & 1u) ? CRC_POLY : 0u))
#define T8(c) T1(T1(T1(T1(T1(T1(T1(T1((uint32_t)(c)))))))))
#define R4(i) T8(i), T8((i) + 1), T8((i) + 2), T8((i) + 3)
#define R16(i) R4(i), R4((i) + 4), R4((i) + 8), R4((i) + 12)
#define R64(i) R16(i), R16((i) + 16), R16((i) + 32), R16((i) + 48)
static const uint32_t crc_table[256] = {R64(0), R64(64), R64(128), R64(192)};

uint32_t sr_crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return crc;
}

const char *sr_roce_result_name(int result)
{
    switch (result) {
    case SR_ROCE_OK: return "ok";
    case SR_ROCE_NOT_ROCE: return "not_roce";
    case SR_ROCE_TRUNCATED: return "truncated";
    case SR_ROCE_BAD_OPCODE: return "bad_opcode";
    case SR_ROCE_BAD_ICRC: return "bad_icrc";
    case SR_ROCE_BAD_LENGTH: return "bad_length";
    case SR_ROCE_BAD_MSG: return "bad_msg";
    default: return "roce?";
    }
}

static uint32_t imm_of(const sr_hdr *h)
{
    return (uint32_t)h->shadow << 31 | (uint32_t)h->slot << 16 | (uint32_t)(uint8_t)h->exp << 8 |
           (uint8_t)h->next_exp;
}

int sr_roce_from_msg(const uint8_t *msg, size_t len, uint32_t src_qpn, sr_roce_msg *r)
{
    sr_hdr h;
    const uint8_t *payload;

    if (sr_msg_parse(msg, len, &h, &payload) != SR_PARSE_OK || src_qpn > SR_ROCE_QPN_MASK)
        return SR_ROCE_BAD_MSG;
    if (h.op == SR_OP_AR_DATA) {
        /* What the RoCE fields cannot carry must be what the receiver
         * assumes or does not read: the wire version; flags, informational;
         * status, the slot's round number, which only the Tofino program
         * reads, and it takes no RoCE (both dropped: the receiver sees 0). */
        r->opcode = SR_ROCE_WRITE_ONLY_IMM;
        r->imm = imm_of(&h);
        r->va = (uint64_t)h.seq << 32 | h.offset;
        r->rkey = h.aux;
        r->payload = payload;
        r->payload_len = 4u * (size_t)h.count;
        return SR_ROCE_OK;
    }
    r->opcode = SR_ROCE_SEND_ONLY_IMM;
    r->imm = src_qpn;
    r->va = 0;
    r->rkey = 0;
    r->payload = msg;
    r->payload_len = len;
    return SR_ROCE_OK;
}

int sr_roce_to_msg(const sr_roce_msg *r, uint32_t dst_qpn, uint8_t *out, size_t cap)
{
    sr_hdr h;

    if (r->opcode == SR_ROCE_SEND_ONLY_IMM) {
        if (r->payload_len > cap || sr_msg_parse(r->payload, r->payload_len, &h, NULL))
            return SR_ROCE_BAD_MSG;
        /* Toward the switch, the header and the QP must name the same
         * binding: a SEND to (job, worker)'s QP speaks for that worker only. */
        if (SR_ROCE_IS_SWITCH_QPN(dst_qpn) &&
            (h.worker >= SR_WIRE_MAX_WORKERS || dst_qpn != SR_ROCE_QPN(h.job, h.worker)))
            return SR_ROCE_BAD_MSG;
        memcpy(out, r->payload, r->payload_len);
        return (int)r->payload_len;
    }
    if (r->opcode != SR_ROCE_WRITE_ONLY_IMM)
        return SR_ROCE_BAD_OPCODE;
    if (!SR_ROCE_IS_SWITCH_QPN(dst_qpn))
        return SR_ROCE_BAD_MSG;
    if (r->payload_len % 4u || r->payload_len / 4u > SR_WIRE_MAX_ELEMS)
        return SR_ROCE_BAD_LENGTH;
    if (cap < SR_WIRE_HDR_LEN + r->payload_len)
        return SR_ROCE_BAD_MSG;
    memset(&h, 0, sizeof h);
    h.version = SR_WIRE_VERSION;
    h.op = SR_OP_AR_DATA;
    h.job = (uint16_t)((dst_qpn & ~SR_ROCE_QPN_TAG) >> SR_ROCE_WORKER_BITS);
    h.worker = (uint16_t)(dst_qpn & (SR_WIRE_MAX_WORKERS - 1u));
    h.seq = (uint32_t)(r->va >> 32);
    h.offset = (uint32_t)r->va;
    h.aux = r->rkey;
    h.shadow = (uint8_t)(r->imm >> 31);
    h.slot = (uint16_t)(r->imm >> 16 & SR_WIRE_SLOT_MASK);
    h.exp = (int8_t)(uint8_t)(r->imm >> 8);
    h.next_exp = (int8_t)(uint8_t)r->imm;
    h.count = (uint16_t)(r->payload_len / 4u);
    sr_hdr_pack(out, &h);
    memcpy(out + SR_WIRE_HDR_LEN, r->payload, r->payload_len);
    return (int)(SR_WIRE_HDR_LEN + r->payload_len);
}

uint32_t sr_roce_icrc(const uint8_t *ip, size_t len)
{
    static const uint8_t lrh_ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    uint8_t masked[SR_IPV4_HLEN + SR_UDP_HLEN + SR_ROCE_BTH_LEN];

    if (len < sizeof masked)
        return 0;
    /* RoCEv2 has no LRH: its 8 bytes count as ones. The fields a router
     * may change are ones too: IPv4 TOS (DSCP, ECN), TTL and checksum,
     * the UDP checksum, and the BTH's FECN/BECN/reserved byte. */
    memcpy(masked, ip, sizeof masked);
    masked[1] = 0xff;
    masked[8] = 0xff;
    masked[10] = masked[11] = 0xff;
    masked[SR_IPV4_HLEN + 6] = masked[SR_IPV4_HLEN + 7] = 0xff;
    masked[SR_IPV4_HLEN + SR_UDP_HLEN + BTH_QPN] = 0xff;
    uint32_t crc = sr_crc32_update(0xffffffffu, lrh_ones, sizeof lrh_ones);
    crc = sr_crc32_update(crc, masked, sizeof masked);
    crc = sr_crc32_update(crc, ip + sizeof masked, len - sizeof masked);
    return ~crc;
}

size_t sr_roce_frame_pack(uint8_t *frame, size_t cap, const sr_roce_pkt *p)
{
    const sr_roce_msg *m = &p->m;
    int write = m->opcode == SR_ROCE_WRITE_ONLY_IMM;
    size_t hl = write ? SR_ROCE_WRITE_HLEN : SR_ROCE_SEND_HLEN;

    if ((!write && m->opcode != SR_ROCE_SEND_ONLY_IMM) || m->payload_len % 4u ||
        m->payload_len > SR_WIRE_MAX_MSG || p->dst_qpn > SR_ROCE_QPN_MASK ||
        p->psn > SR_ROCE_PSN_MASK || cap < SR_FRAME_HLEN + hl + m->payload_len + SR_ROCE_ICRC_LEN)
        return 0;
    uint8_t *bth = frame + SR_FRAME_HLEN;
    size_t udp_payload = hl + m->payload_len + SR_ROCE_ICRC_LEN;

    bth[BTH_OPCODE] = m->opcode;
    bth[BTH_FLAGS] = 0; /* no solicited event, MigReq 0, pad 0, TVer 0 */
    sr_put_be16(bth + BTH_PKEY, (uint16_t)SR_ROCE_PKEY);
    sr_put_be32(bth + BTH_QPN, p->dst_qpn);
    sr_put_be32(bth + BTH_PSN, p->psn);
    uint8_t *q = bth + SR_ROCE_BTH_LEN;
    if (write) {
        sr_put_be32(q + RETH_VA, (uint32_t)(m->va >> 32));
        sr_put_be32(q + RETH_VA + 4, (uint32_t)m->va);
        sr_put_be32(q + RETH_RKEY, m->rkey);
        sr_put_be32(q + RETH_LEN, (uint32_t)m->payload_len);
        q += SR_ROCE_RETH_LEN;
    }
    sr_put_be32(q, m->imm);
    q += SR_ROCE_IMM_LEN;
    if (m->payload_len) /* a zero-length WRITE may have no payload pointer */
        memmove(q, m->payload, m->payload_len);
    size_t len = sr_frame_pack(frame, cap, &p->a, udp_payload);
    if (!len)
        return 0;
    uint8_t *ip = frame + SR_ETH_HLEN;
    ip[SR_IPV4_HLEN + 6] = ip[SR_IPV4_HLEN + 7] = 0; /* RoCEv2: UDP checksum 0 */
    size_t covered = SR_IPV4_HLEN + SR_UDP_HLEN + hl + m->payload_len;
    uint32_t icrc = sr_roce_icrc(ip, covered);
    uint8_t *t = ip + covered;
    t[0] = (uint8_t)icrc, t[1] = (uint8_t)(icrc >> 8), t[2] = (uint8_t)(icrc >> 16),
    t[3] = (uint8_t)(icrc >> 24);
    return len;
}

int sr_roce_frame_parse(const uint8_t *frame, size_t len, sr_roce_pkt *p)
{
    sr_frame_addr a;
    const uint8_t *bth;
    size_t n;

    if (sr_frame_parse(frame, len, &a, &bth, &n) != SR_FRAME_OK || a.dst_port != SR_ROCE_UDP_PORT)
        return SR_ROCE_NOT_ROCE;
    if (n < SR_ROCE_BTH_LEN + SR_ROCE_IMM_LEN + SR_ROCE_ICRC_LEN)
        return SR_ROCE_TRUNCATED;
    uint8_t op = bth[BTH_OPCODE];
    int write = op == SR_ROCE_WRITE_ONLY_IMM;
    size_t hl = write ? SR_ROCE_WRITE_HLEN : SR_ROCE_SEND_HLEN;
    if ((!write && op != SR_ROCE_SEND_ONLY_IMM) || (bth[BTH_FLAGS] & 0x3fu) ||
        sr_get_be16(bth + BTH_PKEY) != SR_ROCE_PKEY)
        return SR_ROCE_BAD_OPCODE;
    if (n < hl + SR_ROCE_ICRC_LEN)
        return SR_ROCE_TRUNCATED;
    const uint8_t *ip = bth - SR_UDP_HLEN - SR_IPV4_HLEN;
    size_t covered = SR_IPV4_HLEN + SR_UDP_HLEN + n - SR_ROCE_ICRC_LEN;
    const uint8_t *t = ip + covered;
    uint32_t icrc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
                    (uint32_t)t[3] << 24;
    if (icrc != sr_roce_icrc(ip, covered))
        return SR_ROCE_BAD_ICRC;
    sr_roce_msg m;
    const uint8_t *q = bth + SR_ROCE_BTH_LEN;
    memset(&m, 0, sizeof m);
    m.opcode = op;
    m.payload_len = n - hl - SR_ROCE_ICRC_LEN;
    if (write) {
        m.va = (uint64_t)sr_get_be32(q + RETH_VA) << 32 | sr_get_be32(q + RETH_VA + 4);
        m.rkey = sr_get_be32(q + RETH_RKEY);
        if (sr_get_be32(q + RETH_LEN) != m.payload_len)
            return SR_ROCE_BAD_LENGTH;
        q += SR_ROCE_RETH_LEN;
    }
    m.imm = sr_get_be32(q);
    m.payload = q + SR_ROCE_IMM_LEN;
    p->a = a;
    p->dst_qpn = sr_get_be32(bth + BTH_QPN) & SR_ROCE_QPN_MASK;
    p->psn = sr_get_be32(bth + BTH_PSN) & SR_ROCE_PSN_MASK;
    p->m = m;
    return SR_ROCE_OK;
}
