/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_headers.p4 - headers and metadata of the Tofino (TNA) proof of
 * concept. The Serene header is serene_h from wire_constants.p4, the same
 * bytes as everywhere; the payload is SR_TNA_ELEMS words (the reduced
 * store's row). Limits and why: p4/tna/README.md.
 */
#ifndef SERENE_TNA_HEADERS_P4_
#define SERENE_TNA_HEADERS_P4_

#include "../include/wire_constants.p4"

// Store row and payload words handled per pass: one stateful ALU per word.
#define SR_TNA_ELEMS 8
#define SR_TNA_ELEMS_LOG2 3
// Allreduce slots JOIN_ACK announces: none yet (p4/tna/README.md); the
// library then runs push, pull, clock and step and refuses allreduce.
#define SR_TNA_AR_SLOTS 0
// Rows of the reduced store per job, and jobs with register blocks.
#define SR_TNA_STORE_ROWS 1024
#define SR_TNA_STORE_ROWS_LOG2 10
#define SR_TNA_MAX_JOBS 4
#define SR_TNA_JOB_BITS 2
// Barrier ring entries per job (R <= this); 32-bit worker bitmaps.
#define SR_TNA_RING 64
#define SR_TNA_RING_LOG2 6
#define SR_TNA_MAX_WORKERS 32
#define SR_TNA_WORKER_BITS 5
#define SR_TNA_JOB_IDS 65536
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

// Carried into the second pass of an advancing CLOCK (64 bits on Tofino 1,
// the size of the port metadata it replaces).
header resubmit_h {
    bit<32> ring_idx; // the ring entry to clear
    bit<32> pad;
}

// Ingress to egress: what the egress needs to rewrite a copy.
header bridge_h {
    bit<8> serene;     // 1: a Serene copy to rewrite; 0: forwarded as is
    bit<8> ans_op;     // the sender's answer when a RELEASE is multicast
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

struct ig_meta_t {
    resubmit_h resub;
    bool serene;
    bit<16> src_job;
    bit<16> src_rank;
    bit<32> n_workers;
    bit<32> full_mask;
    bit<32> ring_mask;
    bit<32> store_words;
    bit<16> mgrp;
    bit<32> wbit;
    // Register indices, computed before the RegisterAction that uses them
    // (Tofino addresses a stateful ALU from a PHV field or a hash, not from
    // an arithmetic expression): see tna_ingress.p4. blk, the job's
    // register block, is job mod SR_TNA_MAX_JOBS, i.e. job[1:0].
    bit<32> cidx;      // c & ring_mask: the ring entry within the job's block
    bit<32> ring_idx;  // blk * SR_TNA_RING + cidx
    bit<32> row;       // blk * SR_TNA_STORE_ROWS + offset / SR_TNA_ELEMS
    bit<32> push_idx;  // row * SR_TNA_MAX_WORKERS + worker
    // Tofino's gateways compare a field with a constant (or two fields for
    // equality) but not two fields for order, so the comparisons of the
    // barrier and the store's range check are differences whose sign bit
    // is tested (tna_ingress.p4 says why each is exact).
    bit<32> rm_c;      // ring_mask - c
    bit<32> d;         // c - low (= lead: low only moves to c)
    bit<32> tr;        // ring_mask - d
    bit<32> ts;        // s - d
    bit<32> ox;        // offset - store_words
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
