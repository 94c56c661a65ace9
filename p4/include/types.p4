/* SPDX-License-Identifier: Apache-2.0 */
/*
 * types.p4 - the program's metadata: what the parser learnt, what the
 * tables said about the job and the sender, and the answer being built.
 */
#ifndef SERENE_P4_TYPES_P4_
#define SERENE_P4_TYPES_P4_

#include "constants.p4"
#include "lanes.p4"

typedef bit<16> job_id_t;
typedef bit<16> worker_id_t;
typedef bit<64> bitmap_t;   // one bit per worker of a job
typedef bit<32> clock_t;    // serial-number clocks
typedef bit<32> index_t;    // register index

// Why a packet was dropped without an answer (drop_ctr index).
const bit<32> SR_P4_DROP_PARSE = 0;      // truncated, bad IPv4 checksum, not Serene's to us
const bit<32> SR_P4_DROP_LENGTH = 1;     // UDP/IP length disagrees with count
const bit<32> SR_P4_DROP_ANSWER = 2;     // an answer op sent to the switch
const bit<32> SR_P4_DROP_UNREG = 3;      // source address in no worker_table entry
const bit<32> SR_P4_DROP_UNBOUND = 4;    // not a bound worker of the job at this address
const bit<32> SR_P4_DROP_DUP = 5;        // duplicate contribution to an open round
const bit<32> SR_P4_DROP_STALE = 6;      // late copy from a worker that moved on
const bit<32> SR_P4_DROP_FOREIGN = 7;    // not Serene: no forwarding entry
const bit<32> SR_P4_DROP_ROCE = 8;       // RoCEv2: bad ICRC, DMA length, or a SEND naming
                                         // another binding than its DestQP; or an answer
                                         // with no learnt QP to go to
const bit<32> SR_P4_DROP_REASONS = 9;

// simple_switch's standard_metadata.instance_type values the program tells apart.
const bit<32> SR_P4_INSTANCE_CLONE_I2E = 1;   // an ingress clone (CLOCK answer, STEP_RESP copy)
const bit<32> SR_P4_INSTANCE_REPLICATION = 5; // a multicast copy

// What a JOIN_ACK teaches the RoCE QP table (meta.roce_learn).
const bit<2> SR_P4_ROCE_KEEP = 0;
const bit<2> SR_P4_ROCE_BIND = 1;   // answered a SEND: the binding's QP is its source QP
const bit<2> SR_P4_ROCE_UNBIND = 2; // answered a UDP JOIN: answers go as UDP

// Kinds of copies leaving the switch (meta.route).
const bit<3> SR_P4_OUT_DROP = 0;
const bit<3> SR_P4_OUT_UNICAST = 1;   // back to the sender
const bit<3> SR_P4_OUT_MULTICAST = 2; // to every rank of the job
const bit<3> SR_P4_OUT_FORWARD = 3;   // not Serene's: forwarded as is
const bit<3> SR_P4_OUT_UP = 4;        // a leaf's packet to its parent (upstream.p4)
const bit<3> SR_P4_OUT_FALLBACK = 5;  // a shared job's request to its fallback (share.p4)
const bit<3> SR_P4_OUT_RANK = 6;      // the fallback's answer on to the worker it names

// A shared job's cell (share.p4): where its round is summed.
const bit<8> SR_P4_CELL_GONE = 0; // no round here or away (the software switch's SR_CELL_GONE)
const bit<8> SR_P4_CELL_HERE = 1; // in the slot's leased block
const bit<8> SR_P4_CELL_AWAY = 2; // at the fallback: its copies follow it

// Word i of a STEP_RESP's row, in the metadata its clone keeps.
#define SR_P4_STEP_WORD(i)                                                  \
    @field_list(SR_P4_CPU_CLONE_FL)                                         \
    bit<32> step_w##i;

struct meta_t {
    // Parser. serene is also kept in the clone of a CLOCK answer: simple_switch
    // re-parses a clone, then resets the metadata but for the field list.
    @field_list(SR_P4_CPU_CLONE_FL)
    bool serene;          // a Serene header of our version to our port
    bool too_many;        // count above SR_P4_ELEMS: payload not parsed
    bit<16> vals_left;    // parser loop counter
    // RoCEv2 (roce_in.p4, roce_out.p4): the request came as RoCEv2; a
    // SEND's source QP (its ImmDt); what the answer teaches the QP table.
    @field_list(SR_P4_CPU_CLONE_FL)
    bool roce;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<24> roce_src_qp;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<8> roce_opcode;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<2> roce_learn;    // SR_P4_ROCE_*: a JOIN_ACK binds the QP, or ends it
    bit<32> roce_icrc;    // the ICRC computed

    // worker_table: the sender's job and rank.
    job_id_t src_job;
    worker_id_t src_rank;

    // job_table: the job of hdr.serene.job.
    bit<32> n_workers;
    bitmap_t full_mask;
    bit<32> ring_mask;
    bit<32> store_words;   // already cut to SR_P4_STORE_WORDS
    bit<16> mgrp;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<64> job_token;     // admission token a JOIN must carry; 0: none
    index_t blk;           // the job's register block: job id mod SR_P4_MAX_JOBS
    bit<32> epoch;         // the job's incarnations so far (ingress.p4's epoch_reg)

    bool worker_ok;        // a bound worker of the job at its own address
    bitmap_t wbit;         // 1 << worker

    bit<8> err;            // SR_ST_* to answer with ERROR; 0: none
    bit<3> route;          // SR_P4_OUT_*: where the packet goes

    // upstream_table (upstream.p4): the job is a leaf of a tree. n_local is
    // the contributions a round waits for (n_workers when not a leaf).
    bool leaf;
    bit<32> n_local;
    bit<9> up_port;        // egress port toward the parent
    bit<32> up_ip;         // the parent's address and UDP port
    bit<16> up_udp;
    job_id_t up_job;       // the parent's job of the leaves
    worker_id_t up_member; // this leaf's member id in it
    bit<32> self_ip;       // this switch's address: the source of its partials
    bool relay;            // a request the leaf relays to the parent unchanged
    // parent_table: an answer from a leaf's parent, about that leaf's job.
    bool from_parent;

    // A shared job (share.p4). share_table: its fallback aggregator (address,
    // UDP port, switch port) and the window its answers announce (status);
    // fallback_table: an answer from that fallback; down_table: the port of
    // the worker it names. The JOIN that goes to the fallback as an ingress
    // clone keeps what egress writes in it.
    bool shared;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<32> fb_ip;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<16> fb_udp;
    bit<9> fb_port;
    bit<8> stamp;
    bool from_fallback;
    bool fb_bound;         // the fallback bound the sender (its JOIN_ACK came back)
    bit<9> rank_port;
    @field_list(SR_P4_CPU_CLONE_FL)
    bool fb_clone;         // this packet's ingress clone goes to the fallback
    @field_list(SR_P4_CPU_CLONE_FL)
    bool fb_rejoin;        // ... as the sender's JOIN, built from the three below
    @field_list(SR_P4_CPU_CLONE_FL)
    worker_id_t fb_worker;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<32> w_token;       // the sender's context token (its binding)
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<32> nonce;         // the job's incarnation

    // policy_table (policy.p4): the policy at the CLOCK's or STEP's clock;
    // pol_s is the s the barrier applies (BSP 0, ASP R - 2).
    bit<8> pol_mode;
    bit<32> pol_s;

    // Step (step.p4): what a STEP does, for the Store and the Barrier after
    // it; the STEP_RESP, which egress builds in each copy of the STEP's
    // clone (step_out.p4), is kept in the clone's field list.
    bool step_apply;       // a new piece: its words go into the row
    bool step_note;        // a piece the row took (new or repeated): high moves to it
    bool step_record;      // the piece completes its worker's step: CLOCK(c) is recorded
    @field_list(SR_P4_CPU_CLONE_FL)
    bool step_row;         // answered with STEP_RESP (this packet's clone carries it)
    @field_list(SR_P4_CPU_CLONE_FL)
    bool step_self;        // the sender's copy of the STEP_RESP goes out
    @field_list(SR_P4_CPU_CLONE_FL)
    bitmap_t step_cand;    // workers whose copy egress checks: waiting when the row's low moved
    @field_list(SR_P4_CPU_CLONE_FL)
    index_t step_base;     // the row's first step_last_reg / step_pol_reg entry
    @field_list(SR_P4_CPU_CLONE_FL)
    clock_t step_low;      // the row's low after the piece: the answer's aux
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<16> step_words;    // the row's length: the answer's count
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<8> step_mode;      // the policy at the sender's clock: its copy's exp and slot
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<15> step_s;
    SR_LANES(SR_P4_STEP_WORD) // the row's words after the piece (store.p4)

    // The CLOCK answer, kept for its clone when a RELEASE is multicast.
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<8> ans_op;
    @field_list(SR_P4_CPU_CLONE_FL)
    clock_t ans_low;
    @field_list(SR_P4_CPU_CLONE_FL)
    clock_t ans_high;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<32> ans_mode;
    @field_list(SR_P4_CPU_CLONE_FL)
    bit<32> ans_s;
    @field_list(SR_P4_CPU_CLONE_FL)
    job_id_t ans_job;
}

#endif /* SERENE_P4_TYPES_P4_ */
