/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_headers.p4 - headers and metadata of the Tofino (TNA, T2NA)
 * program. The Serene header is serene_h from wire_constants.p4, the same
 * bytes as everywhere; the payload is SR_TNA_ELEMS words (the reduced
 * store's row and an allreduce piece). Limits and why: p4/tna/README.md.
 */
#ifndef SERENE_TNA_HEADERS_P4_
#define SERENE_TNA_HEADERS_P4_

#include "../include/wire_constants.p4"

// Payload words handled per pass (an allreduce piece, a store row): one
// stateful ALU per word, the lanes lane_reg_0 .. lane_reg_31.
#define SR_TNA_ELEMS 32
#define SR_TNA_ELEMS_LOG2 5
// Allreduce slots per job JOIN_ACK announces (two cells each: the shadow
// copy), and the bits of a slot index.
#define SR_TNA_AR_SLOTS 256
#define SR_TNA_SLOT_BITS 8
// A lane register's entries: cells {0, 0, blk, slot, shadow} below 2048,
// store rows {1, blk, row} from 2048 (the upper 4096 entries unused).
#define SR_TNA_LANE_ENTRIES 8192
#define SR_TNA_CELLS (SR_TNA_MAX_JOBS * SR_TNA_AR_SLOTS * 2)
// What a packet asks of the lanes and the answer table (ig_meta_t.lop),
// from the classify table: a well-formed request of each kind, a store
// request with a bad count (its answer: RANGE or BAD_COUNT), or an error
// the header alone shows (md.err).
#define SR_TNA_LOP_NONE 0
#define SR_TNA_LOP_AR 1       // AR_DATA: the round's flags decide
#define SR_TNA_LOP_PROBE 2    // AR_PROBE
#define SR_TNA_LOP_PUSH 3     // PUSH of a whole row
#define SR_TNA_LOP_PULL 4     // PULL of a whole row
#define SR_TNA_LOP_PUSH_BAD 5 // PUSH, count not SR_TNA_ELEMS
#define SR_TNA_LOP_PULL_BAD 6 // PULL, aux not SR_TNA_ELEMS or count not 0
#define SR_TNA_LOP_ERR 7      // refused: md.err
// Rows of the reduced store per job, and jobs with register blocks.
#define SR_TNA_STORE_ROWS 512
#define SR_TNA_STORE_ROWS_LOG2 9
#define SR_TNA_MAX_JOBS 4
// A cell's round when no round has been through it (power-on, and what
// serene-ctl's script writes when it clears a job's block): lo 2 is no
// fingerprint (bit 0 clear) and is older than the rounds 1..127 a new
// context starts with (tna_ingress.p4, "A cell's round").
#define SR_TNA_ROUND_IDLE 2
// The allreduce events counted per job block (ar_ctr's index blk * 4 + e).
#define SR_TNA_EV_DONE 1     // a round completed (its result multicast)
#define SR_TNA_EV_DUP 2      // a copy of a contribution the round holds
#define SR_TNA_EV_MISMATCH 3 // a piece no round of its cell takes
// offset & SR_TNA_OFF_MASK == 0: a row's first word, below
// SR_TNA_STORE_ROWS rows; slot & SR_TNA_SLOT_MASK != 0: a slot index past
// SR_TNA_AR_SLOTS (of the 15 bits).
#define SR_TNA_OFF_MASK \
    ((0xffffffff ^ ((SR_TNA_STORE_ROWS << SR_TNA_ELEMS_LOG2) - 1)) | (SR_TNA_ELEMS - 1))
#define SR_TNA_SLOT_MASK (0x7fff ^ (SR_TNA_AR_SLOTS - 1))
#define SR_TNA_JOB_BITS 2
// Barrier ring entries per job (R <= this); 32-bit worker bitmaps.
#define SR_TNA_RING 64
#define SR_TNA_RING_LOG2 6
#define SR_TNA_MAX_WORKERS 32
#define SR_TNA_WORKER_BITS 5
// The second pass of a CLOCK that filled the ring entry of low + 1.
const bit<3> SR_TNA_RESUBMIT_ADVANCE = 1;

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header val_h {
    bit<32> v;
}

// A cell's round: lo its fingerprint {round number, CRC, 1}
// (SR_TNA_ROUND_IDLE before the first), hi the workers of the job that
// have not yet contributed (0: complete).
struct round_t {
    bit<32> lo;
    bit<32> hi;
}

// Carried into the second pass of an advancing CLOCK (64 bits on Tofino 1,
// the size of the port metadata it replaces).
header resubmit_h {
    bit<16> ring_idx; // the ring entry to clear
    bit<48> pad;
}

// Ingress to egress: what the egress needs to rewrite a copy.
header bridge_h {
    bit<8> serene;     // 1: a Serene copy to rewrite; 0: forwarded as is
    bit<8> ans_op;     // the sender's answer when a RELEASE is multicast
    bit<8> mc;         // 1: a multicast copy (RELEASE, AR_RESULT)
    bit<8> err;        // not 0: an ERROR answer with this status (egress)
    bit<16> sender;    // its rank: that replica becomes the answer
    bit<32> clock;     // the CLOCK's clock, echoed in the answer
    bit<32> mode;
    bit<32> s;
}

struct headers_t {
    bridge_h bridge;
    ethernet_h eth;
    ipv4_h ipv4;
    udp_h udp;
    serene_h serene;
    val_h[SR_TNA_ELEMS] vals;
}

// Egress parses no payload (Tofino 1's egress parser reaches 160 bytes,
// less than 32 lanes and the headers): the lanes pass as payload, and an
// answer to a CLOCK gets its two words here.
struct eg_headers_t {
    bridge_h bridge;
    ethernet_h eth;
    ipv4_h ipv4;
    udp_h udp;
    serene_h serene;
    val_h[SR_SYNC_WORDS] vals;
}

struct ig_meta_t {
    resubmit_h resub;
    bool serene;
    bool too_many;     // count above SR_TNA_ELEMS: lanes not parsed
    bit<1> w_hit;      // worker_table knows the sender
    bit<1> j_hit;      // job_table knows the job
    bit<16> src_job;
    bit<16> src_rank;
    bit<8> n_workers;
    bit<32> full_mask;
    bit<32> ring_mask;
    bit<16> store_words; // at most SR_TNA_STORE_ROWS * SR_TNA_ELEMS (serene-ctl)
    bit<16> mgrp;
    bit<32> wbit;
    // Register indices, computed before the RegisterAction that uses them
    // (Tofino addresses a stateful ALU from a PHV field or a hash, not from
    // an arithmetic expression): see tna_ingress.p4. blk, the job's
    // register block, is job mod SR_TNA_MAX_JOBS, i.e. job[1:0].
    bit<32> cidx;      // c & ring_mask: the ring entry within the job's block
    bit<16> blk;       // job mod SR_TNA_MAX_JOBS: low_reg and high_reg's index
    bit<16> ring_idx;  // blk * SR_TNA_RING + cidx
    bit<32> push_idx;  // (blk * SR_TNA_STORE_ROWS + row) * SR_TNA_MAX_WORKERS + worker
    // The lanes' entries: an allreduce cell, (blk * SR_TNA_AR_SLOTS + slot)
    // * 2 + shadow, and a store row, 2048 + blk * SR_TNA_STORE_ROWS + row.
    bit<16> cell;
    bit<16> row_idx;
    bit<16> lidx;      // the lanes' entry for this packet: cell or row_idx
    bit<8> lop;        // SR_TNA_LOP_*
    // What the round (or the push number) said, as flags the lanes and the
    // answer table match on: set one stage after the registers.
    bit<1> k_same;     // the round's fingerprint is the piece's
    bit<1> k_dup;      // the round already had the worker's contribution
    bit<1> k_done;     // the round is complete after this packet
    bit<1> k_free;     // a probe: the round is complete
    bit<1> k_new;      // the piece's round is newer than the cell's
    bit<1> k_range;    // a store row at or past the job's store_words
    bit<1> resub_go;   // pass 1 of an advancing CLOCK: resubmitted, no answer
    // Allreduce (tna_ingress.p4): the fingerprint of the piece's round;
    // what the round's three copies answered; next_exp.
    bit<32> fp;        // {status: the slot's round number, CRC of seq, offset, exp, aux, 1}
    bit<32> r_new;     // round_t.hi after this packet
    bit<32> r_old;     // round_t.hi before it
    bit<32> r_fp;      // round_t.lo before it, 0 if the piece's round is newer
    bit<32> p_hw;      // a probe: round_t.hi & ~fx (0: the worker is in)
    bit<32> nexp_in;   // {the round number, 0, next_exp ^ 0x80}: serial, then signed order
    bit<32> nexp;
    bit<2> ev;         // SR_TNA_EV_* to count (0: none)
    bit<16> ev_idx;    // blk * 4 + ev: ar_ctr's index
    // Tofino's gateways compare a field with a constant (or two fields for
    // equality) but not two fields for order, so the comparisons of the
    // barrier and the store's range check are differences whose sign bit
    // is tested (tna_ingress.p4 says why each is exact).
    bit<32> rm_c;      // ring_mask - c
    bit<32> d;         // c - low (= lead: low only moves to c)
    bit<32> tr;        // ring_mask - d
    bit<32> ts;        // s - d
    bit<16> ox;        // offset - store_words (16 bits)
    bit<32> fx;        // full_mask ^ wbit
    bit<32> fw;        // full_mask & wbit
    bit<32> ox_bits;   // old_bits ^ fx: 0 iff old_bits == full_mask ^ wbit
    bit<8> mode;
    bit<32> s;
    bit<32> low;
    bit<32> high;
    bit<32> old_bits;
    bit<8> err;
    bit<1> push_new;
}

struct eg_meta_t {
}

#endif /* SERENE_TNA_HEADERS_P4_ */
