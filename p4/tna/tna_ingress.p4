/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_ingress.p4 - ingress of the Tofino program: the sender and its job,
 * the streaming allreduce (AR_DATA, AR_PROBE), the barrier (CLOCK ->
 * PROCEED / HOLD, RELEASE multicast) and the store (PUSH applied once per
 * row, worker and push number; PULL), each register touched at most once
 * per pass through RegisterActions.
 *
 * Allreduce (p4/tna/README.md, "The allreduce"). A cell is (job block,
 * slot, shadow bit); its round is one pair register, round_t: lo the
 * round's fingerprint {the slot's round number (the request's status),
 * a CRC of the piece, 1}, hi the workers not yet in. The round number
 * decides: a newer one opens a new round whatever the cell held (complete,
 * or a failed round nobody finishes); the same fingerprint is the round
 * (hi loses the worker's bit); anything else (an older round's copy, or a
 * piece that disagrees with the round) changes nothing and is answered
 * MISMATCH. So the CRC can only fail a round, never answer one. Three
 * copies (round_a, _b, _c) answer hi after, hi before and lo before (0
 * when the piece's round is newer); nexp_reg keeps next_exp's max per
 * round number. Their flags pick the 32 lanes' actions (set, add, read:
 * the shadow copy) and the answer (answer_tbl). classify checks the header
 * first. No if/else tree follows the registers: on Tofino 1 a table after
 * a join follows every branch, and the lanes need stages 4 to 11.
 *
 * Barrier in two passes. Pass 1 reads low (low_reg), checks the clock,
 * sets the worker's bit in ring entry c mod R (ring_reg, returning the old
 * bits) and raises high. If that completed the entry of low + 1, low must
 * move and the entry be cleared, but low_reg and ring_reg were already
 * used in this pass: the packet is resubmitted, and pass 2 writes low = c
 * and clears the entry, then answers and multicasts RELEASE. Answers use
 * the low the pass ends with, as the software switch does.
 *
 * Tables and registers have the names serene-ctl's bfrt_python script
 * uses (lib/ctl/README.md): job_table, worker_table, policy_table,
 * low_reg and high_reg (index: job id mod 4) in Ingress. What the program leaves
 * out of the software switch's rules, and why: p4/tna/README.md.
 */
#ifndef SERENE_TNA_INGRESS_P4_
#define SERENE_TNA_INGRESS_P4_

#include <core.p4>
#include "tna_arch.p4"

#include "tna_headers.p4"

#include "tna_cells.p4"

control Ingress(inout headers_t hdr, inout ig_meta_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    // ---- the sender and its job (filled by serene-ctl's bfrt script) ----

    action set_worker(bit<16> job, bit<16> rank) {
        md.src_job = job;
        md.src_rank = rank;
        md.w_hit = 1;
    }

    table worker_table {
        key = {
            hdr.ipv4.src_addr: exact @name("src_addr");
            hdr.udp.src_port: exact @name("src_port");
        }
        actions = { set_worker; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    // The job's packets (every request with a known job id), per entry:
    // serene-ctl counters reads it with ar_ctr.
    DirectCounter<bit<32>>(CounterType_t.PACKETS) job_pkts;

    action set_job(bit<8> n_workers, bit<32> full_mask, bit<32> ring_mask,
                   bit<16> store_words, bit<16> mgrp) {
        job_pkts.count();
        md.n_workers = n_workers;
        md.full_mask = full_mask;
        md.ring_mask = ring_mask;
        md.store_words = store_words;
        md.mgrp = mgrp;
        md.j_hit = 1;
    }

    table job_table {
        key = { hdr.serene.job: exact @name("job"); }
        actions = { set_job; @defaultonly NoAction; }
        default_action = NoAction();
        size = 64;
        counters = job_pkts;
    }

    action set_policy(bit<8> mode, bit<32> s) {
        md.mode = mode;
        md.s = s;
    }

    // The hot swap: (job, clock range) -> (mode, s).
    table policy_table {
        key = {
            hdr.serene.job: exact @name("job");
            // Ternary, not range: p4c's Tofino back end takes a range key of
            // at most 5 nibbles ("does not fit in under 5 PHV nibbles"), and
            // a clock is 32 bits. serene-ctl writes each clock range as the
            // prefixes that cover it (at most 62), priority = rule index + 1.
            hdr.serene.seq: ternary @name("clock");
        }
        actions = { set_policy; }
        default_action = set_policy(0, 0);
        size = 1024;
    }

    // ---- register indices ----
    // Tofino addresses a stateful ALU from a PHV field, a constant or a
    // hash output, not from arithmetic, and has no shift by a run-time
    // amount. So the worker's bit comes from a constant table and every
    // register index is computed into metadata before its RegisterAction.
    // blk < SR_TNA_MAX_JOBS, the ring entry < SR_TNA_RING, the row within
    // the block < SR_TNA_STORE_ROWS (checked) and the worker <
    // SR_TNA_MAX_WORKERS (serene-ctl's limit), so blk * SR_TNA_RING + cidx,
    // blk * SR_TNA_STORE_ROWS + row and row * SR_TNA_MAX_WORKERS + worker
    // are concatenations of bit fields, built by identity hashes.

    action set_wbit(bit<32> wbit) {
        md.wbit = wbit;
    }

    // worker -> 1 << worker[4:0] (the worker's bit in a ring entry).
    table wbit_table {
        key = { hdr.serene.worker[SR_TNA_WORKER_BITS - 1:0]: exact @name("worker"); }
        actions = { set_wbit; }
        const default_action = set_wbit(0);
        size = SR_TNA_MAX_WORKERS;
        const entries = {
            0 : set_wbit(32w1 << 0);
            1 : set_wbit(32w1 << 1);
            2 : set_wbit(32w1 << 2);
            3 : set_wbit(32w1 << 3);
            4 : set_wbit(32w1 << 4);
            5 : set_wbit(32w1 << 5);
            6 : set_wbit(32w1 << 6);
            7 : set_wbit(32w1 << 7);
            8 : set_wbit(32w1 << 8);
            9 : set_wbit(32w1 << 9);
            10 : set_wbit(32w1 << 10);
            11 : set_wbit(32w1 << 11);
            12 : set_wbit(32w1 << 12);
            13 : set_wbit(32w1 << 13);
            14 : set_wbit(32w1 << 14);
            15 : set_wbit(32w1 << 15);
            16 : set_wbit(32w1 << 16);
            17 : set_wbit(32w1 << 17);
            18 : set_wbit(32w1 << 18);
            19 : set_wbit(32w1 << 19);
            20 : set_wbit(32w1 << 20);
            21 : set_wbit(32w1 << 21);
            22 : set_wbit(32w1 << 22);
            23 : set_wbit(32w1 << 23);
            24 : set_wbit(32w1 << 24);
            25 : set_wbit(32w1 << 25);
            26 : set_wbit(32w1 << 26);
            27 : set_wbit(32w1 << 27);
            28 : set_wbit(32w1 << 28);
            29 : set_wbit(32w1 << 29);
            30 : set_wbit(32w1 << 30);
            31 : set_wbit(32w1 << 31);
        }
    }

    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) ring_idx_hash;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) row_lane_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) push_idx_hash;

    // ---- barrier ----

    // low and high per register block (blk = job mod SR_TNA_MAX_JOBS, as
    // the ring, the cells and the rows): a Tofino stage's memory does not
    // hold 65536 clocks of each beside push_last_reg.
    Register<bit<32>, bit<16>>(SR_TNA_MAX_JOBS, 0xffffffff) low_reg;
    Register<bit<32>, bit<16>>(SR_TNA_MAX_JOBS, 0xffffffff) high_reg;
    Register<bit<32>, bit<16>>(SR_TNA_MAX_JOBS * SR_TNA_RING, 0) ring_reg;

    RegisterAction<bit<32>, bit<16>, bit<32>>(low_reg) low_read = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(low_reg) low_advance = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = hdr.serene.seq;
            rv = value;
        }
    };
    // Serial max: high moves only forward. c - value in [1, 2^31 - 1]
    // (c - value < 2^31 and c != value) is one signed comparison, the form a
    // stateful ALU's condition takes.
    RegisterAction<bit<32>, bit<16>, bit<32>>(high_reg) high_raise = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if ((int<32>)(hdr.serene.seq - value) > 0) {
                value = hdr.serene.seq;
            }
            rv = value;
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(high_reg) high_read = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };
    // The worker's bit set; the bits before it returned.
    RegisterAction<bit<32>, bit<16>, bit<32>>(ring_reg) ring_set = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value | md.wbit;
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(ring_reg) ring_clear = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = 0;
        }
    };

    // ---- reduced store ----

    Register<bit<32>, bit<32>>(SR_TNA_MAX_JOBS * SR_TNA_STORE_ROWS * SR_TNA_MAX_WORKERS, 0)
        push_last_reg;
    // Applied once: only a push number after the last applied (serial, as
    // in high_raise).
    RegisterAction<bit<32>, bit<32>, bit<1>>(push_last_reg) push_check = {
        void apply(inout bit<32> value, out bit<1> rv) {
            if ((int<32>)(hdr.serene.seq - value) > 0) {
                value = hdr.serene.seq;
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };

    // ---- allreduce cells and the lanes (the store's rows too) ----

    Register<round_t, bit<16>>(SR_TNA_CELLS, { SR_TNA_ROUND_IDLE, 0 }) round_a;
    Register<round_t, bit<16>>(SR_TNA_CELLS, { SR_TNA_ROUND_IDLE, 0 }) round_b;
    Register<round_t, bit<16>>(SR_TNA_CELLS, { SR_TNA_ROUND_IDLE, 0 }) round_c;
    RegisterAction<round_t, bit<16>, bit<32>>(round_a) round_a_data = {
        void apply(inout round_t value, out bit<32> rv) {
            SR_TNA_ROUND_UPDATE
            rv = value.hi;
        }
    };
    RegisterAction<round_t, bit<16>, bit<32>>(round_b) round_b_data = {
        void apply(inout round_t value, out bit<32> rv) {
            rv = value.hi;
            SR_TNA_ROUND_UPDATE
        }
    };
    // lo before, or 0 when the piece's round is newer (lo is never 0).
    RegisterAction<round_t, bit<16>, bit<32>>(round_c) round_c_data = {
        void apply(inout round_t value, out bit<32> rv) {
            rv = 0;
            if (SR_TNA_ROUND_NEWER) {
                value.lo = md.fp;
                value.hi = md.fx;
            } else {
                rv = value.lo;
                if (value.lo == md.fp) {
                    value.hi = value.hi & md.fx;
                }
            }
        }
    };
    // A probe: hi and lo (nothing written).
    RegisterAction<round_t, bit<16>, bit<32>>(round_b) round_b_probe = {
        void apply(inout round_t value, out bit<32> rv) {
            rv = value.hi;
        }
    };
    RegisterAction<round_t, bit<16>, bit<32>>(round_c) round_c_probe = {
        void apply(inout round_t value, out bit<32> rv) {
            rv = 0;
            if (!SR_TNA_ROUND_NEWER) {
                rv = value.lo;
            }
        }
    };

    // The round's next_exp max: one serial max of {round number, 0,
    // next_exp ^ 0x80}, so a newer round number starts it again at the
    // piece's next_exp, the same number takes the max (signed order as
    // unsigned) and an older round's copy changes nothing. A piece the
    // round refuses (MISMATCH) may raise it: that round has no result.
    Register<bit<32>, bit<16>>(SR_TNA_CELLS, 0) nexp_reg;
    RegisterAction<bit<32>, bit<16>, bit<32>>(nexp_reg) nexp_data = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if ((int<32>)(md.nexp_in - value) > 0) {
                value = md.nexp_in;
            }
            rv = value;
        }
    };

    // Per job block: SR_TNA_EV_* at blk * 4 + event (serene-ctl counters).
    Counter<bit<32>, bit<16>>(SR_TNA_MAX_JOBS * 4, CounterType_t.PACKETS) ar_ctr;
    action count_ev() {
        ar_ctr.count(md.ev_idx);
    }

    SR_TNA_LANES(SR_TNA_LANE)
    SR_TNA_LANES(SR_TNA_LANE_TABLE)

    Hash<bit<23>>(HashAlgorithm_t.CRC32) fp_hash;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) ev_hash;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) cell_hash;

    action unicast_back() {
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
    }

    // The CLOCK's differences (tna_headers.p4), one ALU operation per field,
    // in actions of their own (statements would be merged into one action, or
    // copy-propagated into a gateway), split by what each needs so that the
    // chain from low stays short (12 stages in all).
    action clock_prep() {
        md.cidx = hdr.serene.seq & md.ring_mask;
        md.rm_c = md.ring_mask - hdr.serene.seq;
    }

    action clock_bits() {
        md.fx = md.full_mask ^ md.wbit;
        md.fw = md.full_mask & md.wbit;
    }

    action clock_diffs() {
        md.d = hdr.serene.seq - md.low;
        md.tr = md.rm_c + md.low;
    }

    action clock_lead() {
        md.ts = md.s - md.d;
    }

    // The worker's bit filled the entry: old & wbit == 0 and old | wbit ==
    // full_mask, i.e. old == full_mask ^ wbit and wbit is in full_mask.
    action ring_filled() {
        md.ox_bits = md.old_bits ^ md.fx;
    }

    action store_prep() {
        md.ox = hdr.serene.offset[15:0] - md.store_words;
    }

    action answer_hdr(bit<8> op, bit<16> count, bit<32> aux) {
        hdr.serene.op = op;
        hdr.serene.count = count;
        hdr.serene.aux = aux;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        hdr.serene.exp = 0;
        hdr.serene.next_exp = 0;
        hdr.serene.shadow = 0;
        hdr.serene.slot = 0;
    }

    // Each hash in an action of its own (a table's immediate path carries
    // 32 bits of hash output).
    action set_blk() {
        md.blk = (bit<16>)hdr.serene.job[SR_TNA_JOB_BITS - 1:0];
    }

    action ar_cell() {
        md.cell = cell_hash.get({ hdr.serene.job[SR_TNA_JOB_BITS - 1:0],
                                  hdr.serene.slot[SR_TNA_SLOT_BITS - 1:0],
                                  hdr.serene.shadow });
    }

    action lidx_cell() {
        md.lidx = md.cell;
    }

    action lidx_row() {
        md.lidx = md.row_idx;
    }

    // Not count: an AR_PROBE has count 0 and must find its round (the
    // count follows from offset, aux and the job's values per packet).
    action ar_fp() {
        md.fp[23:1] = fp_hash.get({ hdr.serene.seq, hdr.serene.offset, hdr.serene.exp,
                                    hdr.serene.aux });
    }

    action ar_round() {
        md.fp[31:24] = hdr.serene.status;
    }

    action ev_index() {
        md.ev_idx = ev_hash.get({ md.blk[SR_TNA_JOB_BITS - 1:0], md.ev });
    }

    action push_index() {
        md.push_idx = push_idx_hash.get({ hdr.serene.job[SR_TNA_JOB_BITS - 1:0],
                                          hdr.serene.offset[SR_TNA_ELEMS_LOG2 +
                                                            SR_TNA_STORE_ROWS_LOG2 - 1:
                                                            SR_TNA_ELEMS_LOG2],
                                          hdr.serene.worker[SR_TNA_WORKER_BITS - 1:0] });
    }

    action store_row() {
        md.row_idx = row_lane_hash.get({ 1w1, hdr.serene.job[SR_TNA_JOB_BITS - 1:0],
                                          hdr.serene.offset[SR_TNA_ELEMS_LOG2 +
                                                            SR_TNA_STORE_ROWS_LOG2 - 1:
                                                            SR_TNA_ELEMS_LOG2] });
    }

    // A probe: the round's workers not yet in, less the others (0: the
    // worker's contribution is in).
    action probe_bits() {
        md.p_hw = md.r_old & ~md.fx;
    }

    // An ERROR answer, status err, back to the sender; egress writes it
    // (aux the refused op, header only): aux = op here would tie aux's
    // PHV slices to op's, and through aux = low to the barrier's fields.
    action error_answer() {
        hdr.bridge.serene = 1;
        hdr.bridge.err = md.err;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
    }

    action error_code(bit<8> st) {
        hdr.bridge.serene = 1;
        hdr.bridge.err = st;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
    }

    action drop_packet() {
        ig_dprsr_md.drop_ctl = 1;
    }

    action lop_set(bit<8> lop) {
        md.lop = lop;
    }

    action lop_err(bit<8> st) {
        md.lop = SR_TNA_LOP_ERR;
        md.err = st;
    }

    // What the request is, from its header alone: the checks the software
    // switch makes before it touches a slot or a row, in its order (the
    // first entry that matches wins). slot & SR_TNA_SLOT_MASK: a slot
    // index past SR_TNA_AR_SLOTS; offset & SR_TNA_OFF_MASK: not a row's
    // first word or past the rows (RANGE).
    table classify {
        key = {
            hdr.serene.op: ternary;
            hdr.serene.slot: ternary;
            md.too_many: ternary;
            hdr.serene.count: ternary;
            hdr.serene.aux: ternary;
            hdr.serene.offset: ternary;
        }
        actions = { lop_set; lop_err; NoAction; }
        const default_action = NoAction();
        size = 16;
        const entries = {
            (SR_OP_AR_DATA, 0 &&& SR_TNA_SLOT_MASK, false, _, _, _) : lop_set(SR_TNA_LOP_AR);
            (SR_OP_AR_DATA, 0 &&& SR_TNA_SLOT_MASK, true, _, _, _) : lop_err(SR_ST_BAD_COUNT);
            (SR_OP_AR_DATA, _, _, _, _, _) : lop_err(SR_ST_BAD_SLOT);
            (SR_OP_AR_PROBE, 0 &&& SR_TNA_SLOT_MASK, false, 0, _, _) : lop_set(SR_TNA_LOP_PROBE);
            (SR_OP_AR_PROBE, 0 &&& SR_TNA_SLOT_MASK, _, _, _, _) : lop_err(SR_ST_BAD_COUNT);
            (SR_OP_AR_PROBE, _, _, _, _, _) : lop_err(SR_ST_BAD_SLOT);
            (SR_OP_PUSH, _, _, SR_TNA_ELEMS, _, 0 &&& SR_TNA_OFF_MASK) :
                lop_set(SR_TNA_LOP_PUSH);
            (SR_OP_PUSH, _, _, _, _, 0 &&& SR_TNA_OFF_MASK) : lop_set(SR_TNA_LOP_PUSH_BAD);
            (SR_OP_PUSH, _, _, _, _, _) : lop_err(SR_ST_RANGE);
            (SR_OP_PULL, _, _, 0, SR_TNA_ELEMS, 0 &&& SR_TNA_OFF_MASK) :
                lop_set(SR_TNA_LOP_PULL);
            (SR_OP_PULL, _, _, _, _, 0 &&& SR_TNA_OFF_MASK) : lop_set(SR_TNA_LOP_PULL_BAD);
            (SR_OP_PULL, _, _, _, _, _) : lop_err(SR_ST_RANGE);
        }
    }

    action ar_prep() {
        md.nexp_in[7:0] = hdr.serene.next_exp ^ 0x80;
        md.nexp_in[31:24] = hdr.serene.status;
    }

    // AR_HELD, AR_NAK: the request's header, count 0, back to the sender.
    action ar_answer(bit<8> op) {
        hdr.serene.op = op;
        hdr.serene.count = 0;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
    }

    // The AR_RESULT: the piece's header (the round's, as the fingerprint
    // says) with the round's next_exp; the sums are in the lanes.
    action ar_result() {
        hdr.serene.op = SR_OP_AR_RESULT;
        hdr.serene.next_exp = md.nexp[7:0] ^ 0x80;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
    }

    // A contribution completed the round: the result to every worker of
    // the job.
    action ar_multicast() {
        ar_result();
        ig_tm_md.mcast_grp_a = md.mgrp;
        hdr.bridge.mc = 1;
        md.ev = SR_TNA_EV_DONE;
    }

    // A retransmission to the complete round: its result again, from the
    // cell (the shadow copy), to the sender.
    action ar_result_back() {
        ar_result();
        unicast_back();
        md.ev = SR_TNA_EV_DUP;
    }

    // A retransmission to the open round that holds it.
    action ar_held_dup() {
        ar_answer(SR_OP_AR_HELD);
        md.ev = SR_TNA_EV_DUP;
    }

    // A piece no round of its cell takes: an older round's copy (the
    // library ignores the answer: no round of its is in flight there) or
    // one that disagrees with the round (the call fails).
    action ar_mismatch() {
        error_code(SR_ST_MISMATCH);
        md.ev = SR_TNA_EV_MISMATCH;
    }

    action push_ack(bit<32> applied) {
        answer_hdr(SR_OP_PUSH_ACK, 0, applied);
        unicast_back();
    }

    action pull_resp() {
        answer_hdr(SR_OP_PULL_RESP, SR_TNA_ELEMS, 0);
        unicast_back();
    }

    // The answer to an allreduce or store request, from what the classify
    // table, the round's registers or the push number said (first match
    // wins). One table, not an if/else tree: on Tofino 1 the tables after
    // a join follow every branch, and the lanes must start by stage 4.
    // Header-only answers (count 0) leave the request's words beyond the
    // lengths (p4/tna/README.md).
    table answer_tbl {
        key = {
            md.lop: ternary;
            md.k_same: ternary;
            md.k_dup: ternary;
            md.k_done: ternary;
            md.k_free: ternary;
            md.k_new: ternary;
            md.p_hw: ternary;
            md.push_new: ternary;
            md.k_range: ternary;
        }
        actions = {
            ar_multicast; ar_result_back; ar_held_dup; ar_mismatch; ar_answer; drop_packet;
            error_code; error_answer; push_ack; pull_resp;
        }
        const default_action = drop_packet();
        size = 32;
        const entries = {
            // AR_DATA: a newer round number opened a new round...
            (SR_TNA_LOP_AR, _, _, 1, _, 1, _, _, _) : ar_multicast(); // one worker
            (SR_TNA_LOP_AR, _, _, 0, _, 1, _, _, _) : drop_packet();
            // ... the round (the same fingerprint) ...
            (SR_TNA_LOP_AR, 1, 0, 1, _, _, _, _, _) : ar_multicast(); // the last one in
            (SR_TNA_LOP_AR, 1, 0, 0, _, _, _, _, _) : drop_packet(); // waiting for the others
            (SR_TNA_LOP_AR, 1, 1, 1, _, _, _, _, _) : ar_result_back();
            (SR_TNA_LOP_AR, 1, 1, 0, _, _, _, _, _) : ar_held_dup(); // counted
            // ... or nothing: an older round's copy, or a disagreeing piece.
            (SR_TNA_LOP_AR, _, _, _, _, _, _, _, _) : ar_mismatch();
            // AR_PROBE (sr_allreduce_probe): nothing written. Its round
            // not yet in the cell, or complete: NAK (the resend opens it,
            // or is answered with the shadow copy).
            (SR_TNA_LOP_PROBE, _, _, _, _, 1, _, _, _) : ar_answer(SR_OP_AR_NAK);
            (SR_TNA_LOP_PROBE, 1, _, _, 1, _, _, _, _) : ar_answer(SR_OP_AR_NAK);
            (SR_TNA_LOP_PROBE, 1, _, _, _, _, 0, _, _) : ar_answer(SR_OP_AR_HELD);
            (SR_TNA_LOP_PROBE, 1, _, _, _, _, _, _, _) : ar_answer(SR_OP_AR_NAK);
            (SR_TNA_LOP_PROBE, _, _, _, _, _, _, _, _) : error_code(SR_ST_MISMATCH);
            // The store: a row at or past store_words is RANGE first.
            (SR_TNA_LOP_PUSH, _, _, _, _, _, _, _, 1) : error_code(SR_ST_RANGE);
            (SR_TNA_LOP_PUSH, _, _, _, _, _, _, 1, _) : push_ack(1);
            (SR_TNA_LOP_PUSH, _, _, _, _, _, _, _, _) : push_ack(0);
            (SR_TNA_LOP_PULL, _, _, _, _, _, _, _, 1) : error_code(SR_ST_RANGE);
            (SR_TNA_LOP_PULL, _, _, _, _, _, _, _, _) : pull_resp();
            (SR_TNA_LOP_PUSH_BAD, _, _, _, _, _, _, _, 1) : error_code(SR_ST_RANGE);
            (SR_TNA_LOP_PUSH_BAD, _, _, _, _, _, _, _, _) : error_code(SR_ST_BAD_COUNT);
            (SR_TNA_LOP_PULL_BAD, _, _, _, _, _, _, _, 1) : error_code(SR_ST_RANGE);
            (SR_TNA_LOP_PULL_BAD, _, _, _, _, _, _, _, _) : error_code(SR_ST_BAD_COUNT);
            (SR_TNA_LOP_ERR, _, _, _, _, _, _, _, _) : error_answer();
        }
    }

    apply {
        bool advanced = false;

        hdr.bridge.setValid();
        hdr.bridge.serene = 0;
        hdr.bridge.ans_op = 0;
        hdr.bridge.mc = 0;
        hdr.bridge.err = 0;
        md.err = 0;
        md.lop = SR_TNA_LOP_NONE;
        md.resub_go = 0;
        md.k_same = 0; md.k_dup = 0; md.k_done = 0; md.k_free = 0;
        md.k_new = 0; md.k_range = 0; md.push_new = 0;
        // Lookups, indices and checks, whatever the op, in the first
        // stages: the rounds go in stage 2, the lanes in 4 to 11.
        worker_table.apply();
        job_table.apply();
        wbit_table.apply(); // md.wbit = 1 << worker[4:0]
        set_blk(); // blk = job mod SR_TNA_MAX_JOBS: low and high's index
        ar_cell(); // cell
        push_index();
        ar_fp(); // fp[23:1] (fp[0] = 1 from the parser)
        ar_round(); // fp[31:24] = the slot's round number
        store_row(); // row_idx
        ar_prep(); // nexp_in = next_exp ^ 0x80
        clock_bits(); // fx = full_mask ^ wbit: the others; fw = full_mask & wbit
        classify.apply(); // lop (and err): what an allreduce or store request is
        store_prep(); // ox = offset - store_words
        if (!md.serene || md.w_hit == 0) {
            ig_dprsr_md.drop_ctl = 1; // no forwarding table; not a job file's address
        } else if (md.j_hit == 0) {
            md.err = SR_ST_UNKNOWN_JOB;
            error_answer();
        } else if (md.src_job != hdr.serene.job) {
            ig_dprsr_md.drop_ctl = 1; // not the job file's address of that worker
        } else if (md.src_rank != hdr.serene.worker) { // (a gateway holds 4 bytes: two ifs)
            ig_dprsr_md.drop_ctl = 1;
        } else if (hdr.serene.op == SR_OP_CLOCK) {
            hdr.bridge.serene = 1;
            clock_prep(); // cidx = c & ring_mask, rm_c = ring_mask - c
            policy_table.apply();
            if (md.mode == 2) {
                md.s = md.ring_mask - 1;
            } else if (md.mode == 0) {
                md.s = 0;
            }
            // ring_idx = blk * SR_TNA_RING + (c & ring_mask), ring_mask < SR_TNA_RING
            md.ring_idx = ring_idx_hash.get({ hdr.serene.job[SR_TNA_JOB_BITS - 1:0],
                                              md.cidx[SR_TNA_RING_LOG2 - 1:0] });
            // A register's RegisterActions all sit in one stage, so pass 2's
            // ring and high accesses come after the differences, level with
            // pass 1's (the stage of ring_set and high_raise, which need d).
            if (ig_intr_md.resubmit_flag == 1) {
                // Pass 2: low moves to c, the full entry is cleared (below).
                md.low = low_advance.execute(md.blk);
            } else {
                md.low = low_read.execute(md.blk);
            }
            // d = c - low, tr = ring_mask - d, ts = s - d. With d < 2^31 and
            // ring_mask < SR_TNA_RING, tr has no overflow: d > ring_mask + 1
            // iff tr <= -2 (signed). lead (c - low at the end of the pass) is
            // d: pass 1 leaves low as read, pass 2 sets it to c (d = 0).
            clock_diffs(); // d = c - low, tr = ring_mask - d
            if (ig_intr_md.resubmit_flag == 0) {
                if (md.d[31:31] == 0 && md.tr[31:31] == 1 && md.tr != 0xffffffff) {
                    md.err = SR_ST_CLOCK_AHEAD; // d > ring_mask + 1
                } else if (md.d != 0 && md.d[31:31] == 0) {
                    md.old_bits = ring_set.execute(md.ring_idx);
                    md.high = high_raise.execute(md.blk);
                    ring_filled(); // ox_bits = old_bits ^ full_mask ^ wbit
                    if (md.ox_bits == 0 && md.fw != 0) {
                        md.resub.ring_idx = md.ring_idx;
                        md.resub.pad = 0;
                        ig_dprsr_md.resubmit_type = SR_TNA_RESUBMIT_ADVANCE;
                        md.resub_go = 1; // answered in pass 2
                    }
                } else {
                    md.high = high_read.execute(md.blk); // a duplicate or older than low
                }
            } else {
                ring_clear.execute(md.resub.ring_idx);
                md.high = high_read.execute(md.blk);
                advanced = true;
            }
            clock_lead(); // ts = s - d
            if (md.err == 0 && md.resub_go == 0) {
                // lead > s with lead < 2^31: false if s >= 2^31, else
                // s - lead (no overflow) < 0.
                if (md.d[31:31] == 0 && md.s[31:31] == 0 && md.ts[31:31] == 1) {
                    hdr.bridge.ans_op = SR_OP_HOLD;
                } else {
                    hdr.bridge.ans_op = SR_OP_PROCEED;
                }
                hdr.bridge.mode = (bit<32>)md.mode;
                hdr.bridge.s = md.s;
                hdr.bridge.sender = hdr.serene.worker;
                hdr.bridge.clock = hdr.serene.seq;
                hdr.serene.aux = md.low;
                hdr.serene.offset = md.high;
                if (advanced) {
                    // RELEASE(low) to every rank; the sender's replica
                    // becomes its answer in egress.
                    answer_hdr(SR_OP_RELEASE, 0, md.low);
                    hdr.serene.seq = md.low;
                    ig_tm_md.mcast_grp_a = md.mgrp;
                    hdr.bridge.mc = 1;
                } else {
                    unicast_back();
                }
            } else if (md.err != 0) {
                error_answer(); // CLOCK_AHEAD
            }
        } else if (md.lop != SR_TNA_LOP_NONE) {
            // AR_DATA, AR_PROBE, PUSH, PULL: registers by stage 3, flags,
            // then the answer table and the lanes (stages 4 to 11), with no
            // if/else join after the flags.
            hdr.bridge.serene = 1;
            // The lanes' entry: the cell (blk * SR_TNA_AR_SLOTS + slot) * 2
            // + shadow (below 2048) or the store row 2048 + blk *
            // SR_TNA_STORE_ROWS + offset / SR_TNA_ELEMS.
            if (md.lop == SR_TNA_LOP_PUSH || md.lop == SR_TNA_LOP_PULL) {
                lidx_row();
            } else {
                lidx_cell();
            }
            // offset >= store_words: offset < 2^15 here (classify), so false
            // if store_words >= 2^15, else offset - store_words >= 0.
            if (md.store_words[15:15] == 0 && md.ox[15:15] == 0) {
                md.k_range = 1;
            }
            if (md.lop == SR_TNA_LOP_AR) {
                md.r_new = round_a_data.execute(md.cell);
                md.r_old = round_b_data.execute(md.cell);
                md.r_fp = round_c_data.execute(md.cell);
                md.nexp = nexp_data.execute(md.cell);
            } else if (md.lop == SR_TNA_LOP_PROBE) {
                md.r_old = round_b_probe.execute(md.cell);
                md.r_fp = round_c_probe.execute(md.cell);
            }
            // Applied once: a push number after the row's last; a refused push
            // takes none. The row check again, not k_range: that is set in
            // this stage, and reading it would move push_check a stage on.
            if (md.lop == SR_TNA_LOP_PUSH &&
                (md.store_words[15:15] == 1 || md.ox[15:15] == 1)) {
                md.push_new = push_check.execute(md.push_idx);
            }
            // What the round said (for a store request these flags are
            // unused: the tables match on lop first).
            if (md.r_fp == md.fp) {
                md.k_same = 1; // the open (or complete) round
            }
            if (md.r_fp == 0) {
                md.k_new = 1; // a newer round number: the cell's round was older
            }
            if (md.r_new == md.r_old) {
                md.k_dup = 1; // not a new contribution
            }
            if (md.r_new == 0) {
                md.k_done = 1; // the round is complete
            }
            if (md.r_old == 0) {
                md.k_free = 1; // a probe: the round is complete
            }
            probe_bits(); // p_hw = r_old & ~fx
            answer_tbl.apply();
            SR_TNA_LANES(SR_TNA_LANE_APPLY) // the lanes lop and the flags pick
            if (md.ev != 0) {
                ev_index(); // ev_idx = blk * 4 + ev
                count_ev();
            }
        } else if (hdr.serene.op == SR_OP_JOIN) {
            hdr.bridge.serene = 1;
            // Stateless JOIN_ACK: bindings are the job file's (worker_table);
            // the store takes whole rows (the library pads its requests).
            answer_hdr(SR_OP_JOIN_ACK, SR_JOIN_PARAMS_WORDS, hdr.serene.aux);
            hdr.serene.flags = SR_FLAG_WHOLE_ROWS;
            hdr.serene.offset = 0;
            hdr.vals[0].setValid();
            hdr.vals[0].v = (bit<32>)md.n_workers;
            hdr.vals[1].setValid();
            hdr.vals[1].v = SR_TNA_ELEMS;
            hdr.vals[2].setValid();
            hdr.vals[2].v = SR_TNA_AR_SLOTS;
            hdr.vals[3].setValid();
            hdr.vals[3].v = (bit<32>)md.store_words;
            unicast_back();
        } else {
            ig_dprsr_md.drop_ctl = 1; // LEAVE and answers
        }
    }
}

#endif /* SERENE_TNA_INGRESS_P4_ */
