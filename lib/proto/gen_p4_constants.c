/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen_p4_constants.c - print p4/include/wire_constants.p4 from wire.h.
 *
 * The P4 program must agree with the C library byte for byte, and SwitchML's
 * two hand-kept copies of its header show how that drifts. So the P4 side is
 * never written by hand: every value below is the wire.h macro or enum
 * itself, and tests/unit/check_p4_constants.sh fails when the committed
 * output differs from what this program prints.
 *
 * Usage: gen_p4_constants > p4/include/wire_constants.p4
 * Exit status: 0, or 1 if a value does not fit its P4 width or the header
 * layout disagrees with the SR_WIRE_OFF_* offsets (nothing trustworthy is
 * printed then).
 *
 * The output must be deterministic (no dates, no paths): it is diffed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "proto/roce.h"
#include "proto/wire.h"

/* ---- the P4 header serene_h --------------------------------------------- */

/* Fields in wire order: name, width in bits, byte offset in wire.h (-1 for a
 * field that starts inside a byte), comment. */
#define SERENE_H_FIELDS(X)                                                                 \
    X(magic, 16, SR_WIRE_OFF_MAGIC, "SR_WIRE_MAGIC")                                       \
    X(version, 8, SR_WIRE_OFF_VERSION, "SR_WIRE_VERSION")                                  \
    X(op, 8, SR_WIRE_OFF_OP, "SR_OP_*")                                                    \
    X(job, 16, SR_WIRE_OFF_JOB, "job id")                                                  \
    X(worker, 16, SR_WIRE_OFF_WORKER, "worker id")                                         \
    X(seq, 32, SR_WIRE_OFF_SEQ, "allreduce: call number; SSP: clock")                      \
    X(shadow, 1, SR_WIRE_OFF_SLOT, "shadow-copy (version) bit of the slot")                \
    X(slot, 15, -1, "slot index")                                                          \
    X(count, 16, SR_WIRE_OFF_COUNT, "int32 payload words (two values each with V16)")      \
    X(exp, 8, SR_WIRE_OFF_EXP, "block exponent, two's complement")                         \
    X(next_exp, 8, SR_WIRE_OFF_NEXT_EXP, "exponent of the next round, two's complement")   \
    X(flags, 8, SR_WIRE_OFF_FLAGS, "SR_FLAG_*")                                            \
    X(status, 8, SR_WIRE_OFF_STATUS, "SR_ST_* (0 = OK)")                                   \
    X(offset, 32, SR_WIRE_OFF_OFFSET, "element offset in tensor / store")                  \
    X(aux, 32, SR_WIRE_OFF_AUX, "op-specific")

#define FIELD_BITS(name, bits, off, comment) +(bits)
_Static_assert(0 SERENE_H_FIELDS(FIELD_BITS) == SR_WIRE_HDR_LEN * 8u,
               "serene_h field widths must add up to SR_WIRE_HDR_LEN bytes");
/* The P4 header splits the 16-bit slot field into shadow (its top bit) and
 * slot (the rest); the masks in wire.h must say the same. */
_Static_assert(SR_WIRE_SLOT_SHADOW == 1u << 15 && SR_WIRE_SLOT_MASK == (1u << 15) - 1u,
               "serene_h.shadow is bit 15 and serene_h.slot bits 14..0 of the slot field");

struct field {
    const char *name;
    unsigned bits;
    int byte_off;
    const char *comment;
};

#define FIELD_ROW(name, bits, off, comment) {#name, bits, (int)(off), comment},
static const struct field fields[] = {SERENE_H_FIELDS(FIELD_ROW)};

/* ---- constants ---------------------------------------------------------- */

enum kind {
    K_SECTION, /* a heading; only name is used */
    K_CONST,   /* const bit<bits> NAME = value; compared with header fields */
    K_SIGNED,  /* like K_CONST, for a signed value stored in two's complement */
    K_DEFINE,  /* #define NAME value: sizes and limits, usable where P4 wants
                  a compile-time integer (register and array sizes) */
};

struct constant {
    enum kind kind;
    const char *name;
    long long value;
    unsigned bits; /* K_CONST / K_SIGNED width; 0 for K_DEFINE */
    int hex;       /* print in hex: masks, magic numbers, flags */
    const char *comment;
};

/* The value comes from the macro or enum itself: the name is stringified
 * from the same token, so the two cannot disagree. */
#define SEC(title) {K_SECTION, title, 0, 0, 0, NULL}
#define CONST(name, bits, hex, comment) {K_CONST, #name, (long long)(name), bits, hex, comment}
#define SIGNED(name, bits, comment) {K_SIGNED, #name, (long long)(name), bits, 1, comment}
#define DEFINE(name, comment) {K_DEFINE, #name, (long long)(name), 0, 0, comment}
/* Rows of wire.h's lists: the ops and status codes are 8-bit header fields,
 * the sync mode a 32-bit payload word. */
#define OP_ROW(name, value, doc) CONST(SR_OP_##name, 8, 0, doc),
#define ST_ROW(name, value, doc) CONST(SR_ST_##name, 8, 0, doc),
#define SYNC_ROW(name, value, doc) CONST(SR_SYNC_##name, 32, 0, doc),

static const struct constant constants[] = {
    SEC("Serene header identity"),
    CONST(SR_WIRE_MAGIC, 16, 1, "\"SE\": tells Serene datagrams from foreign ones"),
    CONST(SR_WIRE_VERSION, 8, 0, "wire version; bumped on any incompatible change"),
    CONST(SR_WIRE_UDP_PORT, 16, 0, "the switch's default UDP port"),
    DEFINE(SR_WIRE_HDR_LEN, "bytes of the Serene header (serene_h below)"),

    SEC("Ops (serene_h.op): requests worker -> switch, answers switch -> worker"),
    SR_WIRE_OPS(OP_ROW)

    SEC("Status codes (serene_h.status) carried by SR_OP_ERROR; 0 = OK elsewhere"),
    SR_WIRE_STATUSES(ST_ROW)

    SEC("Synchronization modes (payload word 0 of PROCEED/HOLD; the policy table's action)"),
    SR_WIRE_SYNC_MODES(SYNC_ROW)

    SEC("Flags (serene_h.flags): informational, never change the switch's semantics"),
    CONST(SR_FLAG_RETRANSMIT, 8, 1, "set by a worker on a retransmitted packet"),
    CONST(SR_FLAG_FALLBACK, 8, 1, "set by a switch on an answer relayed from the job's fallback"),
    CONST(SR_FLAG_WHOLE_ROWS, 8, 1, "set by a switch on JOIN_ACK: its store takes whole rows"),

    SEC("Slot field: serene_h splits it into shadow (bit 15) and slot (bits 14..0)"),
    CONST(SR_WIRE_SLOT_SHADOW, 16, 1, "shadow-copy bit of the 16-bit slot field"),
    CONST(SR_WIRE_SLOT_MASK, 16, 1, "slot index bits of the 16-bit slot field"),

    SEC("Limits: a job picks its elements per packet and pool size within these"),
    DEFINE(SR_WIRE_MAX_ELEMS, "payload words per packet: 8 KiB fits a 9000-byte jumbo frame"),
    DEFINE(SR_WIRE_DEF_ELEMS, "default words per packet: 1 KiB fits a 1500-byte MTU"),
    DEFINE(SR_WIRE_MAX_SLOTS, "slots addressable by the 15-bit slot index"),
    DEFINE(SR_WIRE_DEF_SLOTS, "default slot pool per job"),
    DEFINE(SR_WIRE_MAX_WORKERS, "workers per job: one 64-bit bitmap word per slot"),
    DEFINE(SR_WIRE_MAX_PAYLOAD, "payload bytes per packet (SR_WIRE_MAX_ELEMS * 4)"),
    DEFINE(SR_WIRE_MAX_MSG, "bytes of the largest Serene message, header included"),
    DEFINE(SR_JOIN_PARAMS_WORDS, "u32 words in the SR_OP_JOIN_ACK payload"),
    DEFINE(SR_JOIN_REQ_WORDS, "u32 words in a JOIN's payload: token high, low, cookie, 0"),
    DEFINE(SR_SYNC_WORDS, "u32 words in the PROCEED/HOLD payload (mode, s)"),

    SEC("Block exponents (serene_h.exp, next_exp): signed, stored in two's complement.\n"
        "   P4 compares bit<N> unsigned: flip bit 7 (x ^ 0x80) of both sides to compare\n"
        "   them as signed, e.g. when max-reducing exp."),
    SIGNED(SR_WIRE_EXP_MIN, 8, "clamp: keeps 2^(B-1-exp) a normal float"),
    SIGNED(SR_WIRE_EXP_MAX, 8, "clamp: |x| >= 2^127 saturates (counted)"),
    SIGNED(SR_WIRE_EXP_NONFINITE, 8,
           "hint: the chunk holds NaN/Inf on some worker; max-reduction spreads it"),
    SIGNED(SR_WIRE_EXP_NONE, 8, "next_exp when the slot has no next round"),

    SEC("Allreduce: aux of AR_DATA and AR_RESULT (and their probes and answers)"),
    CONST(SR_WIRE_AUX_V16, 32, 1, "the values are int16, two to a word (a switch adds the words alike)"),
    CONST(SR_WIRE_AUX_TOTAL, 32, 1, "bits of aux that hold the call's total count"),

    SEC("Allreduce cells"),
    CONST(SR_WIRE_COUNT_POISON, 16, 1,
          "a round's count that marks it poisoned by a mismatch (no packet carries it)"),

    SEC("Byte offsets of the Serene header fields"),
    DEFINE(SR_WIRE_OFF_MAGIC, "magic, 2 bytes"),
    DEFINE(SR_WIRE_OFF_VERSION, "version, 1 byte"),
    DEFINE(SR_WIRE_OFF_OP, "op, 1 byte"),
    DEFINE(SR_WIRE_OFF_JOB, "job id, 2 bytes"),
    DEFINE(SR_WIRE_OFF_WORKER, "worker id, 2 bytes"),
    DEFINE(SR_WIRE_OFF_SEQ, "seq, 4 bytes"),
    DEFINE(SR_WIRE_OFF_SLOT, "shadow bit + slot index, 2 bytes"),
    DEFINE(SR_WIRE_OFF_COUNT, "count, 2 bytes"),
    DEFINE(SR_WIRE_OFF_EXP, "exp, 1 byte"),
    DEFINE(SR_WIRE_OFF_NEXT_EXP, "next_exp, 1 byte"),
    DEFINE(SR_WIRE_OFF_FLAGS, "flags, 1 byte"),
    DEFINE(SR_WIRE_OFF_STATUS, "status, 1 byte"),
    DEFINE(SR_WIRE_OFF_OFFSET, "offset, 4 bytes"),
    DEFINE(SR_WIRE_OFF_AUX, "aux, 4 bytes"),

    SEC("Ethernet / IPv4 / UDP framing around a Serene message"),
    DEFINE(SR_ETH_HLEN, "Ethernet II header bytes"),
    DEFINE(SR_IPV4_HLEN, "IPv4 header bytes, no options"),
    DEFINE(SR_UDP_HLEN, "UDP header bytes"),
    DEFINE(SR_FRAME_HLEN, "bytes in front of the Serene header"),
    CONST(SR_ETHERTYPE_IPV4, 16, 1, "EtherType of IPv4"),
    CONST(SR_IPPROTO_UDP, 8, 0, "IPv4 protocol number of UDP"),

    SEC("RoCEv2 (lib/proto/roce.h): Serene messages as UC packets, the rdma transport"),
    CONST(SR_ROCE_UDP_PORT, 16, 0, "IANA: RoCEv2"),
    CONST(SR_ROCE_SEND_ONLY_IMM, 8, 1, "BTH opcode: UC SEND Only with Immediate (every op but AR_DATA)"),
    CONST(SR_ROCE_WRITE_ONLY_IMM, 8, 1, "BTH opcode: UC RDMA WRITE Only with Immediate (AR_DATA)"),
    CONST(SR_ROCE_PKEY, 16, 1, "BTH P_Key: the default partition"),
    CONST(SR_ROCE_QPN_TAG, 24, 1, "tag bit of the switch's QP numbers: tag | job << 6 | worker"),
    DEFINE(SR_ROCE_WORKER_BITS, "worker bits of a switch QP number"),
    CONST(SR_ROCE_SPORT_BASE, 16, 1, "UDP source port of the switch's answers: base | QP & mask"),
    CONST(SR_ROCE_SPORT_QP_MASK, 16, 1, "QP bits of the answers' UDP source port"),
    DEFINE(SR_ROCE_BTH_LEN, "Base Transport Header bytes"),
    DEFINE(SR_ROCE_RETH_LEN, "RDMA Extended Transport Header bytes (WRITE)"),
    DEFINE(SR_ROCE_IMM_LEN, "Immediate Data bytes"),
    DEFINE(SR_ROCE_ICRC_LEN, "Invariant CRC bytes, least significant byte first"),
};

/* ---- output ------------------------------------------------------------- */

static int fits(const struct constant *c)
{
    long long hi = (1LL << c->bits) - 1;
    if (c->kind == K_SIGNED)
        return c->value >= -(1LL << (c->bits - 1)) && c->value < (1LL << (c->bits - 1));
    return c->value >= 0 && c->value <= hi;
}

/* Refuse rather than print a truncated value: a P4 constant that silently
 * differs from the C one is exactly what this generator exists to prevent. */
static int check(void)
{
    int ok = 1;
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
        const struct constant *c = &constants[i];
        if (c->kind == K_SECTION)
            continue;
        if ((c->kind == K_DEFINE && c->value < 0) || (c->kind != K_DEFINE && !fits(c))) {
            fprintf(stderr, "gen_p4_constants: %s = %lld does not fit bit<%u>\n", c->name,
                    c->value, c->bits);
            ok = 0;
        }
    }
    unsigned bit = 0;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (fields[i].byte_off >= 0 && (unsigned)fields[i].byte_off * 8u != bit) {
            fprintf(stderr, "gen_p4_constants: serene_h.%s starts at bit %u, wire.h says byte %d\n",
                    fields[i].name, bit, fields[i].byte_off);
            ok = 0;
        }
        bit += fields[i].bits;
    }
    return ok;
}

static void print_const(const struct constant *c)
{
    unsigned long long raw = (unsigned long long)c->value & ((1ULL << c->bits) - 1);
    unsigned digits = (c->bits + 3) / 4;

    printf("// %s\n", c->comment);
    if (c->kind == K_SIGNED) {
        printf("const bit<%u> %s = 0x%0*llx; // %lld\n", c->bits, c->name, (int)digits, raw,
               c->value);
    } else if (c->hex) {
        printf("const bit<%u> %s = 0x%0*llx;\n", c->bits, c->name, (int)digits, raw);
    } else {
        printf("const bit<%u> %s = %llu;\n", c->bits, c->name, raw);
    }
}

int main(void)
{
    if (!check())
        return 1;

    puts("/* SPDX-License-Identifier: Apache-2.0 */\n"
         "/*\n"
         " * wire_constants.p4 - Serene wire-format constants and header for P4_16.\n"
         " *\n"
         " * generated by lib/proto/gen_p4_constants.c from lib/proto/wire.h; do not edit.\n"
         " * Change wire.h, then regenerate with\n"
         " *   <builddir>/lib/proto/gen_p4_constants > p4/include/wire_constants.p4\n"
         " * tests/unit/check_p4_constants.sh fails while this file is stale.\n"
         " *\n"
         " * All multi-byte fields are big-endian on the wire, as P4 extracts them.\n"
         " */\n"
         "#ifndef SERENE_P4_WIRE_CONSTANTS_P4_\n"
         "#define SERENE_P4_WIRE_CONSTANTS_P4_");

    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
        const struct constant *c = &constants[i];
        switch (c->kind) {
        case K_SECTION:
            printf("\n/* ---- %s */\n\n", c->name);
            break;
        case K_DEFINE:
            printf("// %s\n#define %s %lld\n", c->comment, c->name, c->value);
            break;
        case K_CONST:
        case K_SIGNED:
            print_const(c);
            break;
        }
    }

    printf("\n/* ---- Serene header: %u bytes, follows UDP */\n\n", SR_WIRE_HDR_LEN);
    puts("header serene_h {");
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const struct field *f = &fields[i];
        /* Pad the declaration so the comments line up. */
        int w = printf("    bit<%u> %s;", f->bits, f->name);
        printf("%*s// %s\n", w < 24 ? 24 - w : 1, "", f->comment);
    }
    puts("}\n\n#endif /* SERENE_P4_WIRE_CONSTANTS_P4_ */");
    /* A full disk must not leave a silently short file behind. */
    return fflush(stdout) != 0 || ferror(stdout) ? 1 : 0;
}
