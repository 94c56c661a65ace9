/* SPDX-License-Identifier: Apache-2.0 */
/*
 * roce.h - Serene messages as RoCEv2 packets (the rdma transport, and the
 * software switch and P4 program that parse and answer them).
 *
 * The Serene message (wire.h) stays the one definition of what travels;
 * this file only says where each of its fields sits in a RoCEv2 packet,
 * as an Unreliable Connected (UC) queue pair emits it per the IBTA
 * specification (vol. 1 ch. 9, Annex A17 "RoCEv2"):
 *
 *   Ethernet / IPv4 / UDP (dport 4791, checksum 0) / BTH 12 / [RETH 16] /
 *   ImmDt 4 / payload / ICRC 4
 *
 * Every Serene message is exactly one RoCE packet: a message "ONLY"
 * opcode, so a lost packet loses one message, which the one retransmission
 * engine recovers (UC drops a whole message when one of its packets is
 * lost: a message per slot keeps that loss to the one slot). The NIC builds
 * the packets; the CPU posts one work request per message and a window of
 * them with one doorbell. A window as one multi-packet WRITE (the NIC
 * cutting it at the MTU) is not used: only its first packet has a RETH and
 * its last an ImmDt, so the middle packets could carry their own slot,
 * shadow bit and exponents only in their payload, which the NIC cuts at the
 * MTU: values per packet would have to be MTU / 4 - 1 (255, 1023), which
 * the P4 program's 32 lanes cannot hold, and one lost packet would lose
 * the rest of the window.
 *
 * Two opcodes, chosen by the message's op:
 *
 * - AR_DATA, worker -> switch: UC RDMA WRITE Only with Immediate (0x2b).
 *   The header is carried by the RoCE fields, the payload is the values:
 *     BTH.DestQP  = SR_ROCE_QPN(job, worker): the switch's QP of the
 *                   worker's binding
 *     RETH.VA     = seq << 32 | offset
 *     RETH.R_Key  = aux (the call's total count, and SR_WIRE_AUX_V16)
 *     RETH.DMALen = 4 * count = the payload's length
 *     ImmDt       = shadow << 31 | slot << 16 | (u8)exp << 8 | (u8)next_exp
 *   version is SR_WIRE_VERSION, flags and status arrive as 0: flags are
 *   informational (wire.h), and a request's status (the slot's round
 *   number) is read only by the Tofino program, which takes no RoCE.
 * - Every other message, both ways: UC SEND Only with Immediate (0x25).
 *     BTH.DestQP  = the receiver's QP (the switch's SR_ROCE_QPN(job,
 *                   worker), or the worker's own QP number)
 *     ImmDt       = the sender's QP number (a BTH names only the receiver's)
 *     payload     = the Serene message itself, header and payload
 *   The switch learns a worker's QP number from the ImmDt of its JOIN.
 *
 * BTH.PSN is the sending QP's packet sequence number (per QP, +1 a packet;
 * a UC responder accepts any "Only" packet whatever its PSN, so a gap
 * loses nothing more). P_Key 0xffff, no solicited event, pad 0 (every
 * payload is whole 32-bit words), AckReq 0 (UC has no acknowledgements).
 * The ICRC is a CRC-32 (the Ethernet one) over 8 bytes of 0xff, the IPv4
 * header with TOS, TTL and checksum set to ones, the UDP header with its
 * checksum set to ones, the BTH with byte 4 (FECN, BECN, reserved) set to
 * ones, then every later byte up to the ICRC; it is written least
 * significant byte first (IBTA A17.8; what rdma-core's rxe does).
 *
 * What a message may hold over RoCE: one packet, so 28 + 4 * count bytes of
 * a SEND (4 * count of a WRITE) at most the path MTU: elems <= 249 at MTU
 * 1024, <= 1017 at MTU 4096.
 */
#ifndef SERENE_PROTO_ROCE_H
#define SERENE_PROTO_ROCE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

#define SR_ROCE_UDP_PORT 4791u /* IANA: RoCEv2 */
#define SR_ROCE_BTH_LEN 12u
#define SR_ROCE_RETH_LEN 16u
#define SR_ROCE_IMM_LEN 4u
#define SR_ROCE_ICRC_LEN 4u
#define SR_ROCE_PKEY 0xffffu    /* the default partition */
#define SR_ROCE_SEND_ONLY_IMM 0x25u  /* UC (0x20) | SEND Only with Immediate (0x05) */
#define SR_ROCE_WRITE_ONLY_IMM 0x2bu /* UC (0x20) | RDMA WRITE Only with Immediate (0x0b) */
#define SR_ROCE_QPN_MASK 0xffffffu   /* 24-bit QP numbers and PSNs */
#define SR_ROCE_PSN_MASK 0xffffffu
/* The UDP source port of the switch's answers: this base | the low 14 bits
 * of its QP number (RoCEv2 leaves the source port to the sender, for ECMP
 * entropy; rdma-core's rxe uses the same range). */
#define SR_ROCE_SPORT_BASE 0xc000u
#define SR_ROCE_SPORT_QP_MASK 0x3fffu

/* The switch's QP of (job, worker): a tag bit, the job, the worker. QP 0
 * and 1 are special in InfiniBand; the tag keeps every switch QP above. */
#define SR_ROCE_WORKER_BITS 6u
#define SR_ROCE_QPN_TAG 0x800000u
#define SR_ROCE_QPN(job, worker)                                                                   \
    (SR_ROCE_QPN_TAG | (uint32_t)(job) << SR_ROCE_WORKER_BITS | (uint32_t)(worker))
/* A switch QP: bit 23 set, bit 22 clear (the job takes bits 21..6). */
#define SR_ROCE_IS_SWITCH_QPN(qpn) (((qpn) >> 22) == 2u)
_Static_assert(1u << SR_ROCE_WORKER_BITS == SR_WIRE_MAX_WORKERS, "a worker id fills its bits");
_Static_assert(SR_ROCE_QPN(0xffffu, SR_WIRE_MAX_WORKERS - 1u) <= SR_ROCE_QPN_MASK,
               "every (job, worker) has a 24-bit QP number");

/* Headers in front of the payload, and the whole overhead of a packet. */
#define SR_ROCE_WRITE_HLEN (SR_ROCE_BTH_LEN + SR_ROCE_RETH_LEN + SR_ROCE_IMM_LEN) /* 32 */
#define SR_ROCE_SEND_HLEN (SR_ROCE_BTH_LEN + SR_ROCE_IMM_LEN)                     /* 16 */
/* The largest frame: a SEND of the largest message. */
#define SR_ROCE_FRAME_MAX (SR_FRAME_HLEN + SR_ROCE_SEND_HLEN + SR_WIRE_MAX_MSG + SR_ROCE_ICRC_LEN)

/* A message in its RoCE form: the transport posts it as a work request,
 * the switch parses and builds it as a packet. */
typedef struct sr_roce_msg {
    uint8_t opcode;         /* SR_ROCE_SEND_ONLY_IMM or SR_ROCE_WRITE_ONLY_IMM */
    uint32_t imm;           /* ImmDt, host order */
    uint64_t va;            /* WRITE: RETH fields (DMALen is payload_len) */
    uint32_t rkey;
    const uint8_t *payload; /* the bytes after the RoCE headers (not owned) */
    size_t payload_len;
} sr_roce_msg;

/* A whole packet: addresses (dst_port SR_ROCE_UDP_PORT), BTH and message. */
typedef struct sr_roce_pkt {
    sr_frame_addr a;
    uint32_t dst_qpn;
    uint32_t psn;
    sr_roce_msg m;
} sr_roce_pkt;

enum sr_roce_result {
    SR_ROCE_OK = 0,
    SR_ROCE_NOT_ROCE = -1,   /* not IPv4/UDP to port 4791, or bad L2-L4 headers */
    SR_ROCE_TRUNCATED = -2,  /* shorter than its BTH, RETH, ImmDt and ICRC */
    SR_ROCE_BAD_OPCODE = -3, /* another transport or opcode than the two above,
                                or BTH fields other than those above (TVer, P_Key, pad) */
    SR_ROCE_BAD_ICRC = -4,   /* the ICRC does not match */
    SR_ROCE_BAD_LENGTH = -5, /* RETH DMA length other than the payload's */
    SR_ROCE_BAD_MSG = -6,    /* the carried message does not parse (sr_msg_parse), or a
                                SEND's header names another QP than its DestQP */
};
#define SR_ROCE_NREASONS 7 /* index = -result */

/* Name of a result, for logs; never NULL. */
const char *sr_roce_result_name(int result);

/* The RoCE form of the Serene message msg (len bytes, which sr_msg_parse
 * accepts) sent by QP src_qpn: the opcode by the message's op, as above.
 * r->payload points into msg. Returns SR_ROCE_OK or SR_ROCE_BAD_MSG. */
int sr_roce_from_msg(const uint8_t *msg, size_t len, uint32_t src_qpn, sr_roce_msg *r);

/* The Serene message a RoCE message to QP dst_qpn carries, written to out
 * (cap bytes). A WRITE must go to a switch QP (SR_ROCE_QPN). Returns the
 * message's length (> 0; sr_msg_parse accepts it), or SR_ROCE_BAD_MSG /
 * SR_ROCE_BAD_LENGTH / SR_ROCE_BAD_OPCODE. */
int sr_roce_to_msg(const sr_roce_msg *r, uint32_t dst_qpn, uint8_t *out, size_t cap);

/* The ICRC of an IPv4 RoCEv2 packet of len bytes from its IPv4 header to
 * the end of its payload (the ICRC itself excluded); the value to write
 * least significant byte first. */
uint32_t sr_roce_icrc(const uint8_t *ip, size_t len);
/* The CRC-32 of IEEE 802.3 (reflected, polynomial 0xedb88320) over n
 * bytes from crc, without its initial or final inversion: the ICRC's, and
 * the Tofino model's crc_32 (p4/tna/model). */
uint32_t sr_crc32_update(uint32_t crc, const uint8_t *p, size_t n);

/* Write the frame of p (a.dst_port is taken as given: SR_ROCE_UDP_PORT for
 * a real packet) into frame: Ethernet/IPv4 as sr_frame_pack writes them,
 * UDP checksum 0, BTH, RETH for a WRITE, ImmDt, payload and ICRC. Returns
 * the frame's length, or 0 when it exceeds cap or p is malformed. */
size_t sr_roce_frame_pack(uint8_t *frame, size_t cap, const sr_roce_pkt *p);

/* Parse a frame of len bytes: L2-L4 by sr_frame_parse, UDP port 4791, one
 * of the two opcodes with the BTH fields above, the lengths and the ICRC.
 * On SR_ROCE_OK fills *p (p->m.payload points into frame). */
int sr_roce_frame_parse(const uint8_t *frame, size_t len, sr_roce_pkt *p);

#endif /* SERENE_PROTO_ROCE_H */
