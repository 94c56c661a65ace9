/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire.h - the one source of truth for Serene's wire format.
 *
 * A Serene packet is Ethernet / IPv4 (no options) / UDP / Serene header /
 * payload. Over the udp transport the kernel owns the L2-L4 headers and a
 * datagram carries only "Serene header + payload"; the dpdk transport and
 * pcap tracing build and parse whole frames with sr_frame_*.
 *
 * Serene header, 28 bytes, all fields big-endian:
 *
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-------------------------------+---------------+---------------+
 * |        magic 0x5345 "SE"      |    version    |      op       |
 * +-------------------------------+---------------+---------------+
 * |            job id             |           worker id           |
 * +-------------------------------+-------------------------------+
 * |           seq (allreduce: call number; SSP: clock)            |
 * +-+-----------------------------+-------------------------------+
 * |S|   slot index (15 bits)      |   count (int32 payload words) |
 * +-+-------------+---------------+---------------+---------------+
 * |   exp (s8)    | next_exp (s8) |     flags     |    status     |
 * +---------------+---------------+---------------+---------------+
 * |             offset (element offset in tensor / store)         |
 * +---------------------------------------------------------------+
 * |                     aux (op-specific)                         |
 * +---------------------------------------------------------------+
 * |            payload: count big-endian int32 words ...          |
 *
 * S is the shadow-copy (version) bit of the slot. The payload is count
 * int32 words, whatever the op (an allreduce of 16-bit values packs two
 * values in a word: SR_WIRE_AUX_V16). Every user of these bytes
 * (library, software switch, P4 program, tests) derives from this file: the
 * P4 constants in p4/include/wire_constants.p4 are generated from it by
 * lib/proto/gen_p4_constants.c and a test checks they are current.
 *
 * Packing and parsing go field by field with explicit byte order; no packed
 * struct is ever cast onto a buffer.
 */
#ifndef SERENE_PROTO_WIRE_H
#define SERENE_PROTO_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* ---- Serene header ------------------------------------------------------ */

#define SR_WIRE_MAGIC 0x5345u   /* "SE": tells Serene datagrams from foreign ones */
#define SR_WIRE_VERSION 2u      /* bumped on any incompatible change (2: 16-bit values) */
#define SR_WIRE_HDR_LEN 28u     /* bytes of the Serene header */
#define SR_WIRE_UDP_PORT 48200u /* the switch's UDP port (default) */

/* Byte offsets of the header fields (P4 and the tests use them too). */
#define SR_WIRE_OFF_MAGIC 0u
#define SR_WIRE_OFF_VERSION 2u
#define SR_WIRE_OFF_OP 3u
#define SR_WIRE_OFF_JOB 4u
#define SR_WIRE_OFF_WORKER 6u
#define SR_WIRE_OFF_SEQ 8u
#define SR_WIRE_OFF_SLOT 12u
#define SR_WIRE_OFF_COUNT 14u
#define SR_WIRE_OFF_EXP 16u
#define SR_WIRE_OFF_NEXT_EXP 17u
#define SR_WIRE_OFF_FLAGS 18u
#define SR_WIRE_OFF_STATUS 19u
#define SR_WIRE_OFF_OFFSET 20u
#define SR_WIRE_OFF_AUX 24u

#define SR_WIRE_SLOT_SHADOW 0x8000u /* shadow-copy bit in the slot field */
#define SR_WIRE_SLOT_MASK 0x7fffu   /* slot index bits */

/* Limits. A job's elements per packet and pool size are chosen at job setup
 * within these bounds. */
#define SR_WIRE_MAX_ELEMS 2048u  /* payload words per packet: 8 KiB fits a 9000-byte jumbo frame */
#define SR_WIRE_DEF_ELEMS 256u   /* default: 1 KiB payload fits a 1500-byte MTU, as SwitchML */
#define SR_WIRE_MAX_SLOTS 32768u /* 15-bit slot index */
#define SR_WIRE_DEF_SLOTS 128u   /* default pool per job */
#define SR_WIRE_MAX_WORKERS 64u  /* one 64-bit bitmap word per slot in the software switch */
#define SR_WIRE_MAX_PAYLOAD (SR_WIRE_MAX_ELEMS * 4u)
#define SR_WIRE_MAX_MSG (SR_WIRE_HDR_LEN + SR_WIRE_MAX_PAYLOAD)

/* Block exponents: a payload value v stands for v * 2^(exp + 1 - B) where
 * B = SR_WIRE_BITS(N) = 30 - ceil(log2 N); see lib/quant/quant.h. */
#define SR_WIRE_EXP_MIN (-96) /* clamp: keeps 2^(B-1-exp) a normal float */
#define SR_WIRE_EXP_MAX 126   /* clamp: 127 is taken by the NaN/Inf hint (quant.h says
                                 how values >= 2^127 are handled) */
#define SR_WIRE_EXP_NONFINITE 127 /* hint: the chunk holds NaN/Inf on some worker;
                                     max-reduction spreads it to every worker */
#define SR_WIRE_EXP_NONE (-128) /* next_exp when the slot has no next round */

/* 16-bit values. In AR_DATA, AR_RESULT, AR_PROBE, AR_HELD and AR_NAK, aux
 * is the call's total count of values (bits 0-30) and this bit: the call's
 * values are int16, packed two to a payload word, so count is the words,
 * ceil(values / 2). Word k of a packet holds its values 2k (a) and 2k + 1
 * (b, 0 past the last value) as the int32 a * 2^16 + b. Workers quantize
 * so that the sum of N values fits an int16 (lib/quant/quant16.h); then
 * the int32 sum of N such words, in any order and wrapping or not, is
 * A * 2^16 + B with A and B the int16 sums, and the receiver takes them
 * back exactly: B is the word's low 16 bits as an int16, A the high 16
 * bits of (word - B). So every switch adds 16-bit values as it adds
 * 32-bit ones, word by word: the bit only tells the workers, and it is
 * part of the round's aux, which the round's workers must agree on, so a
 * worker that sends 16-bit values to a round of 32-bit ones meets a
 * MISMATCH like any other disagreement. */
#define SR_WIRE_AUX_V16 0x80000000u
#define SR_WIRE_AUX_TOTAL 0x7fffffffu /* the call's total count: at most 2^31 - 1 values */

/* Not a count any packet can carry (it exceeds SR_WIRE_MAX_ELEMS): the
 * switch stores it as an allreduce round's count to mark the round
 * poisoned by a mismatch (see SR_ST_MISMATCH). */
#define SR_WIRE_COUNT_POISON 0xffffu
_Static_assert(SR_WIRE_COUNT_POISON > SR_WIRE_MAX_ELEMS, "the poison mark is no real count");

/*
 * The lists below are the only place the ops, status codes and sync modes
 * are written: the enums, wire.c's names and the P4 constants
 * (gen_p4_constants.c) all expand them. Each entry is
 * X(NAME, value, one-line description); the description is the generated
 * P4 constant's comment, and the C comments above an entry say the rest.
 */

/* Ops. Requests go worker -> switch, answers switch -> worker. */
#define SR_WIRE_OPS(X)                                                                             \
    /* payload = struct sr_join_req (the job's admission token), or none                          \
     * (token 0) for a job that takes any. A JOIN whose token is not the                           \
     * job's is answered ERROR DENIED, the same answer whatever its nonce,                         \
     * worker id or the job's state, and changes nothing. */                                       \
    X(JOIN, 1, "join a job: seq = context token, aux = job nonce; payload = admission token")     \
    /* offset = 0: bound; else the binding's cookie: the worker proves it                         \
     * receives at its address by JOINing again with it (sr_join_req).                             \
     * status: 0, or for a job that shares the switch's memory the slots                           \
     * its calls should use until a result says otherwise (as AR_RESULT's),                        \
     * fixed for the incarnation at its first JOIN so that every worker                            \
     * reads the same. */                                                                          \
    X(JOIN_ACK, 2, "seq = token echoed; offset = cookie to echo, 0 = proven; payload = params")   \
    /* The worker's context ends. The switch unbinds it (no answer; best effort). */              \
    X(LEAVE, 4, "a worker's context ends: seq = token; the switch unbinds it")                    \
    /* status = enum sr_wire_status; other fields echo the refused request, but                   \
     * count = 0 and there is no payload. */                                                      \
    X(ERROR, 3, "status = SR_ST_*, aux = the refused op")                                         \
    /* aux = the call's total count of values, so workers that disagree on it                     \
     * meet a MISMATCH, and SR_WIRE_AUX_V16 for 16-bit values. status = the                       \
     * slot's round number mod 256 (from 1 at the join, one more per round in                     \
     * the slot: the same on every worker; an AR_PROBE keeps its round's):                        \
     * the Tofino program's round identity (p4/tna/README.md); serene-switch                      \
     * and BMv2 compare the round's fields instead. */                                            \
    X(AR_DATA, 16, "allreduce contribution for (slot, shadow bit); aux = call's total, V16")      \
    /* aux echoes the round's total count. status: 0, or for a job that                           \
     * shares the switch's memory (p4/swswitch/README.md, "Sharing the                            \
     * switch") the slots its next call should use (1..255): every worker                         \
     * takes it from the call's last chunk, whose result all receive alike. */                    \
    X(AR_RESULT, 17, "the slot's sum, sent to every worker of the job")                           \
    /* Sent instead of a contribution whose timer expired: its header with                        \
     * op AR_PROBE, count 0 and no payload. It changes no state. The switch                       \
     * answers AR_HELD when the worker's contribution is in the cell's open                       \
     * round, AR_NAK when it is not there or the round completed (the worker                      \
     * then resends in full and a completed round answers that with the                           \
     * shadow copy), ERROR MISMATCH on a poisoned round. (18 is unassigned.) */                   \
    X(AR_PROBE, 19, "allreduce: is my contribution to (slot, shadow bit) held? header only")      \
    /* Answer to an AR_PROBE, or to a resent AR_DATA, whose contribution the                      \
     * open round already holds: the request's header echoed, count 0. */                         \
    X(AR_HELD, 20, "allreduce: the round holds the contribution and waits; count 0")              \
    /* Answer to an AR_PROBE: the request's header echoed, count 0. */                            \
    X(AR_NAK, 21, "allreduce: the probed contribution is not held: resend it in full")            \
    /* SSP parameter store and barrier. The store is int32 words, added modulo                    \
     * 2^32, in rows of the job's elems_per_pkt words; a PUSH or PULL stays                       \
     * within one row. PUSH: seq = the worker's push number (serial, from 1),                     \
     * offset = store word, count + payload = values to add, aux = the                            \
     * worker's clock (informational). Applied once: the switch keeps, per                        \
     * row and worker, the last push number applied. */                                           \
    X(PUSH, 32, "SSP store: add values; seq = push number, applied once per row and worker")      \
    /* Echoes seq and offset; count 0. */                                                         \
    X(PUSH_ACK, 33, "SSP store: push acknowledged; aux = 1 applied now, 0 duplicate")             \
    /* seq = request number, count 0. */                                                          \
    X(PULL, 34, "SSP store: read aux words at offset")                                            \
    /* Echoes seq and offset; count + payload = words. */                                         \
    X(PULL_RESP, 35, "SSP store: the words read")                                                 \
    X(CLOCK, 36, "SSP: the worker finished clock seq")                                            \
    /* Answer to CLOCK(c) with seq = c; payload = struct sr_sync_words. */                        \
    X(PROCEED, 37, "SSP: go on; aux = low, offset = high, payload = mode, s")                     \
    /* Offset = high, count 0. */                                                                 \
    X(RELEASE, 38, "SSP: low clock advanced (seq = aux = low), to every worker")                  \
    /* Answer to CLOCK(c). */                                                                     \
    X(HOLD, 39, "SSP: wait for a RELEASE with c - low <= s; fields as PROCEED")                   \
    /* One SSP iteration as one pipelined op, a row piece per packet: add the                     \
     * payload to the store (as PUSH, applied once per row, worker and clock),                    \
     * and read the whole row back once the barrier lets it (STEP_RESP).                          \
     * seq = the worker's clock c, offset = store word, count + payload =                         \
     * update words within one row; aux = the pieces (rows) of the worker's                       \
     * step: once the switch has applied that many of them at clock c, it                         \
     * records CLOCK(c) in the job's barrier. A worker steps a row at                             \
     * consecutive clocks. */                                                                     \
    X(STEP, 40, "SSP step: add to a row at clock seq, read the row once the barrier allows")     \
    /* Sent instead of a STEP whose timer expired: its header, op                                 \
     * STEP_PROBE, count 0. Changes no state but the row's wait bit: the                          \
     * switch answers STEP_HELD when it applied the piece and the row waits                       \
     * for other workers (it will send the row when they come), else                              \
     * STEP_NAK (not applied, or ready: the worker resends in full). */                           \
    X(STEP_PROBE, 41, "SSP step: is my piece (row, clock seq) applied? header only")              \
    /* The row's words [offset, offset + count), to each worker the row                           \
     * releases, each copy with that worker's clock (seq) and the policy in                       \
     * force at it (exp = mode, slot = s as applied); aux = the row's low                         \
     * clock: every worker's steps of clocks <= aux are in it. */                                 \
    X(STEP_RESP, 42, "SSP step: the row; seq = receiver's clock, exp/slot = its mode/s")          \
    /* The request's header echoed, count 0, aux = the row's low clock. */                        \
    X(STEP_HELD, 43, "SSP step: applied; the row waits for other workers; count 0")               \
    X(STEP_NAK, 44, "SSP step: not applied, or the row is ready: resend the piece in full")

#define SR_WIRE_ENUM_OP(name, value, doc) SR_OP_##name = value,
enum sr_wire_op { SR_WIRE_OPS(SR_WIRE_ENUM_OP) };
#undef SR_WIRE_ENUM_OP

/* Flags. Informational only: the switch's semantics never depend on them. */
#define SR_FLAG_RETRANSMIT 0x01u /* set by a worker on a retransmitted packet */
/* Set by a switch on an answer it relays from the job's fallback
 * aggregator (the round had no switch memory): workers count the two
 * paths apart (serene_stats). */
#define SR_FLAG_FALLBACK 0x02u
/* Set by a switch on JOIN_ACK when its store takes whole rows only: a PUSH
 * of elems_per_pkt words from a row's first word, a PULL of one whole row
 * (the Tofino program, and serene-switch's rows=whole). The library then
 * pads each store request to its row (a push's other words are 0). */
#define SR_FLAG_WHOLE_ROWS 0x04u

/* Status codes carried by SR_OP_ERROR (status 0 = OK in other answers). */
#define SR_WIRE_STATUSES(X)                                                                        \
    X(OK, 0, "success")                                                                           \
    X(UNKNOWN_JOB, 1, "no such job in the switch")                                                \
    X(NOT_MEMBER, 2, "worker id >= N, or bound to another address")                               \
    X(STALE, 3, "a bound worker joined again with a new token, same nonce")                       \
    /* The contribution disagrees with the round's seq/offset/count/exp/total;                    \
     * every contribution to the round is answered MISMATCH until the job is                      \
     * reset. */                                                                                  \
    X(MISMATCH, 4, "contribution disagrees with the round: the round is poisoned")                \
    X(BAD_COUNT, 5, "count above the job's elements per packet")                                  \
    X(BAD_SLOT, 6, "slot index >= the job's pool size")                                           \
    X(UNSUPPORTED, 7, "op not implemented by this switch")                                        \
    X(RANGE, 8, "store access beyond the job's capacity, or across a row")                        \
    X(CLOCK_AHEAD, 9, "CLOCK beyond the barrier ring: the worker ignored a HOLD")                 \
    /* JOIN with a new nonce while workers of the current incarnation are                         \
     * still bound: reset the job first. */                                                       \
    X(JOB_IN_USE, 10, "new nonce while the current incarnation has bound workers")               \
    /* Checked before anything else a JOIN says, so it tells a guessed                             \
     * nonce right from wrong no more than a guessed token. */                                     \
    X(DENIED, 11, "JOIN without the job's admission token")                                       \
    /* PULL or CLOCK, whose answers are larger than the request, from a                            \
     * binding that has not echoed its JOIN_ACK's cookie yet. */                                   \
    X(UNPROVEN, 12, "binding's address not proven: JOIN again with the JOIN_ACK's cookie")

#define SR_WIRE_ENUM_ST(name, value, doc) SR_ST_##name = value,
enum sr_wire_status { SR_WIRE_STATUSES(SR_WIRE_ENUM_ST) };
#undef SR_WIRE_ENUM_ST

/* Payload of PROCEED and HOLD: the policy in force at the answered clock,
 * 2 big-endian u32 words. Fixed for that clock once answered, so every
 * worker sees the same policy at every clock. */
typedef struct sr_sync_words {
    uint32_t mode;      /* enum sr_sync_mode */
    uint32_t staleness; /* s: proceed iff c - low <= s (ASP: the ring's bound) */
} sr_sync_words;
#define SR_SYNC_WORDS 2u

/* Sync modes (PROCEED/HOLD payload word 0). serene.h's serene_sync_mode has
 * the same names and values (lib/ssp checks it). */
#define SR_WIRE_SYNC_MODES(X)                                                                      \
    X(BSP, 0, "bulk synchronous: s = 0")                                                          \
    X(SSP, 1, "stale synchronous: proceed iff c - low <= s")                                      \
    X(ASP, 2, "asynchronous: bounded only by the barrier ring")

#define SR_WIRE_ENUM_SYNC(name, value, doc) SR_SYNC_##name = value,
enum sr_sync_mode { SR_WIRE_SYNC_MODES(SR_WIRE_ENUM_SYNC) };
#undef SR_WIRE_ENUM_SYNC

/* Parsed header, host byte order. */
typedef struct sr_hdr {
    uint8_t version;
    uint8_t op;
    uint16_t job;
    uint16_t worker;
    uint32_t seq;
    uint16_t slot;  /* index, 0..SR_WIRE_SLOT_MASK */
    uint8_t shadow; /* 0 or 1 */
    uint16_t count;
    int8_t exp;
    int8_t next_exp;
    uint8_t flags;
    uint8_t status;
    uint32_t offset;
    uint32_t aux;
} sr_hdr;

/* Why a message was rejected. Callers count these per reason. */
enum sr_parse_result {
    SR_PARSE_OK = 0,
    SR_PARSE_TRUNCATED = -1,   /* shorter than the header */
    SR_PARSE_FOREIGN = -2,     /* magic does not match: not a Serene packet */
    SR_PARSE_BAD_VERSION = -3, /* another wire version */
    SR_PARSE_BAD_OP = -4,      /* op not in enum sr_wire_op */
    SR_PARSE_BAD_COUNT = -5,   /* count > SR_WIRE_MAX_ELEMS */
    SR_PARSE_BAD_LENGTH = -6,  /* length != header + 4 * count */
};
#define SR_PARSE_NREASONS 7 /* index = -result */

/* Payload of SR_OP_JOIN_ACK: the job's parameters, 4 big-endian u32 words. */
typedef struct sr_join_params {
    uint32_t n_workers;
    uint32_t elems_per_pkt;
    uint32_t pool_slots;
    uint32_t store_capacity; /* words of the job's SSP store (0: no store) */
} sr_join_params;
#define SR_JOIN_PARAMS_WORDS 4u

/* Payload of SR_OP_JOIN: the job's 64-bit admission token (operator or
 * launcher chosen; 0 = none) as 2 big-endian u32 words, high word first,
 * then the cookie of the JOIN_ACK being echoed (0 in a first JOIN), then a
 * zero word, so that a JOIN is as long as its JOIN_ACK and the handshake
 * amplifies nothing. */
typedef struct sr_join_req {
    uint64_t token;
    uint32_t cookie;
} sr_join_req;
#define SR_JOIN_REQ_WORDS 4u
_Static_assert(SR_JOIN_REQ_WORDS >= SR_JOIN_PARAMS_WORDS, "a JOIN is never shorter than its answer");

/* Write h as a 28-byte header at out. version is written as given (callers
 * set SR_WIRE_VERSION); shadow and slot are combined. */
void sr_hdr_pack(uint8_t *out, const sr_hdr *h);

/* The payload words of n 16-bit values (SR_WIRE_AUX_V16). */
static inline size_t sr_wire_v16_words(size_t n)
{
    return (n + 1u) / 2u;
}

/* Parse a whole message (header + payload) of len bytes. On SR_PARSE_OK, *h
 * holds the header and *payload (if not NULL) points at the payload words
 * inside buf. Never reads past buf + len. */
int sr_msg_parse(const uint8_t *buf, size_t len, sr_hdr *h, const uint8_t **payload);

/* Name of a parse result, op or status, for logs; never NULL. */
const char *sr_parse_result_name(int result);
const char *sr_op_name(unsigned op);
const char *sr_status_name(unsigned status);

/* Big-endian u32 words of the join parameters. */
void sr_join_params_pack(uint8_t *out, const sr_join_params *p);
void sr_join_params_unpack(const uint8_t *in, sr_join_params *p);
void sr_join_req_pack(uint8_t *out, const sr_join_req *r);
/* The token of a JOIN's payload of count words (0 when count is 0); returns
 * 0, or -1 when count is neither 0 nor SR_JOIN_REQ_WORDS. */
int sr_join_req_unpack(const uint8_t *in, unsigned count, sr_join_req *r);

/* Unaligned big-endian helpers. */
static inline void sr_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void sr_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline uint16_t sr_get_be16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}
static inline uint32_t sr_get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- Ethernet / IPv4 / UDP framing ------------------------------------- */

#define SR_ETH_HLEN 14u
#define SR_IPV4_HLEN 20u
#define SR_UDP_HLEN 8u
#define SR_FRAME_HLEN (SR_ETH_HLEN + SR_IPV4_HLEN + SR_UDP_HLEN) /* 42 */
#define SR_ETHERTYPE_IPV4 0x0800u
#define SR_IPPROTO_UDP 17u

/* Addresses of a frame; IPv4 addresses and ports in host byte order. */
typedef struct sr_frame_addr {
    uint8_t dst_mac[6];
    uint8_t src_mac[6];
    uint32_t src_ip;
    uint32_t dst_ip;
    uint16_t src_port;
    uint16_t dst_port;
} sr_frame_addr;

enum sr_frame_result {
    SR_FRAME_OK = 0,
    SR_FRAME_TRUNCATED = -1, /* shorter than the L2-L4 headers or their lengths */
    SR_FRAME_NOT_IPV4 = -2,  /* ethertype, IP version or IHL other than IPv4 without options */
    SR_FRAME_NOT_UDP = -3,   /* IP protocol is not UDP, or a fragment */
    SR_FRAME_BAD_CSUM = -4,  /* IPv4 header checksum, or a nonzero UDP checksum, is wrong */
    SR_FRAME_BAD_LENGTH = -5,/* IP or UDP length disagrees with the frame */
};

/* Write Ethernet/IPv4/UDP headers for a payload of payload_len bytes that
 * already sits at frame + SR_FRAME_HLEN; fills both checksums (the UDP one
 * over the payload too). Returns the frame length, or 0 if it would exceed
 * cap or 65535 - 28. */
size_t sr_frame_pack(uint8_t *frame, size_t cap, const sr_frame_addr *a, size_t payload_len);

/* Check the L2-L4 headers of a frame of len bytes; on SR_FRAME_OK fill *a
 * and point *payload / *payload_len at the UDP payload. Ethernet padding
 * beyond the IP length is allowed and ignored. */
int sr_frame_parse(const uint8_t *frame, size_t len, sr_frame_addr *a, const uint8_t **payload,
                   size_t *payload_len);

/* RFC 1071 ones'-complement checksum helpers. Each returns the value for the
 * checksum field, computed as if that field were zero (what it holds is
 * ignored). sr_csum_udp covers the pseudo-header (addresses from iphdr,
 * length udp_len) and never returns 0: a computed 0 is 0xffff (RFC 768). */
uint16_t sr_csum_ipv4(const uint8_t *iphdr);
uint16_t sr_csum_udp(const uint8_t *iphdr, const uint8_t *udp, size_t udp_len);

#endif /* SERENE_PROTO_WIRE_H */
