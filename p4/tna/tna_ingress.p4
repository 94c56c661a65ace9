/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_ingress.p4 - ingress of the Tofino proof of concept: the sender and
 * its job, the barrier (CLOCK -> PROCEED / HOLD, RELEASE multicast) and a
 * reduced store (PUSH applied once per row, worker and push number; PULL),
 * each register touched at most once per pass through RegisterActions.
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
 * low_reg and high_reg (index: job id) in Ingress.
 */
#ifndef SERENE_TNA_INGRESS_P4_
#define SERENE_TNA_INGRESS_P4_

#include <core.p4>
#include <tna.p4>

#include "tna_headers.p4"

#define SR_TNA_ST_REG(i)                                                    \
    Register<bit<32>, bit<32>>(SR_TNA_MAX_JOBS * SR_TNA_STORE_ROWS, 0) st_reg_##i; \
    RegisterAction<bit<32>, bit<32>, bit<32>>(st_reg_##i) st_add_##i = {    \
        void apply(inout bit<32> value, out bit<32> rv) {                   \
            value = value + hdr.vals[i].v;                                  \
            rv = value;                                                     \
        }                                                                   \
    };                                                                      \
    RegisterAction<bit<32>, bit<32>, bit<32>>(st_reg_##i) st_read_##i = {   \
        void apply(inout bit<32> value, out bit<32> rv) {                   \
            rv = value;                                                     \
        }                                                                   \
    };

control Ingress(inout headers_t hdr, inout ig_meta_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    // ---- the sender and its job (filled by serene-ctl's bfrt script) ----

    action set_worker(bit<16> job, bit<16> rank) {
        md.src_job = job;
        md.src_rank = rank;
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

    action set_job(bit<32> n_workers, bit<32> full_mask, bit<32> ring_mask,
                   bit<32> store_words, bit<16> mgrp) {
        md.n_workers = n_workers;
        md.full_mask = full_mask;
        md.ring_mask = ring_mask;
        md.store_words = store_words;
        md.mgrp = mgrp;
    }

    table job_table {
        key = { hdr.serene.job: exact @name("job"); }
        actions = { set_job; NoAction; }
        default_action = NoAction();
        size = 64;
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

    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) ring_idx_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) row_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) push_idx_hash;

    // ---- barrier ----

    Register<bit<32>, bit<32>>(SR_TNA_JOB_IDS, 0xffffffff) low_reg;
    Register<bit<32>, bit<32>>(SR_TNA_JOB_IDS, 0xffffffff) high_reg;
    Register<bit<32>, bit<32>>(SR_TNA_MAX_JOBS * SR_TNA_RING, 0) ring_reg;

    RegisterAction<bit<32>, bit<32>, bit<32>>(low_reg) low_read = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(low_reg) low_advance = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = hdr.serene.seq;
            rv = value;
        }
    };
    // Serial max: high moves only forward. c - value in [1, 2^31 - 1]
    // (c - value < 2^31 and c != value) is one signed comparison, the form a
    // stateful ALU's condition takes.
    RegisterAction<bit<32>, bit<32>, bit<32>>(high_reg) high_raise = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if ((int<32>)(hdr.serene.seq - value) > 0) {
                value = hdr.serene.seq;
            }
            rv = value;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(high_reg) high_read = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };
    // The worker's bit set; the bits before it returned.
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_reg) ring_set = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value | md.wbit;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(ring_reg) ring_clear = {
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
    SR_TNA_ST_REG(0)
    SR_TNA_ST_REG(1)
    SR_TNA_ST_REG(2)
    SR_TNA_ST_REG(3)
    SR_TNA_ST_REG(4)
    SR_TNA_ST_REG(5)
    SR_TNA_ST_REG(6)
    SR_TNA_ST_REG(7)

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
        md.ox = hdr.serene.offset - md.store_words;
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

    apply {
        bit<32> jid = (bit<32>)hdr.serene.job;
        bool advanced = false;

        hdr.bridge.setValid();
        hdr.bridge.serene = 0;
        hdr.bridge.ans_op = 0;
        md.err = 0;
        if (!md.serene) {
            ig_dprsr_md.drop_ctl = 1; // no forwarding table in the proof of concept
            return;
        }
        if (!worker_table.apply().hit) {
            ig_dprsr_md.drop_ctl = 1;
            return;
        }
        if (!job_table.apply().hit) {
            md.err = SR_ST_UNKNOWN_JOB;
        } else if (md.src_job != hdr.serene.job) {
            ig_dprsr_md.drop_ctl = 1; // not the job file's address of that worker
            return;
        } else if (md.src_rank != hdr.serene.worker) { // (a gateway holds 4 bytes: two ifs)
            ig_dprsr_md.drop_ctl = 1;
            return;
        }
        hdr.bridge.serene = 1;
        wbit_table.apply(); // md.wbit = 1 << worker[4:0]

        if (md.err == 0 && hdr.serene.op == SR_OP_CLOCK) {
            clock_prep(); // cidx = c & ring_mask, rm_c = ring_mask - c
            policy_table.apply();
            if (md.mode == 2) {
                md.s = md.ring_mask - 1;
            } else if (md.mode == 0) {
                md.s = 0;
            }
            // ring_idx = blk * SR_TNA_RING + (c & ring_mask), ring_mask < SR_TNA_RING
            clock_bits(); // fx = full_mask ^ wbit, fw = full_mask & wbit
            md.ring_idx = ring_idx_hash.get({ hdr.serene.job[SR_TNA_JOB_BITS - 1:0],
                                              md.cidx[SR_TNA_RING_LOG2 - 1:0] });
            // A register's RegisterActions all sit in one stage, so pass 2's
            // ring and high accesses come after the differences, level with
            // pass 1's (the stage of ring_set and high_raise, which need d).
            if (ig_intr_md.resubmit_flag == 1) {
                // Pass 2: low moves to c, the full entry is cleared (below).
                md.low = low_advance.execute(jid);
            } else {
                md.low = low_read.execute(jid);
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
                    md.high = high_raise.execute(jid);
                    ring_filled(); // ox_bits = old_bits ^ full_mask ^ wbit
                    if (md.ox_bits == 0 && md.fw != 0) {
                        md.resub.ring_idx = md.ring_idx;
                        md.resub.pad = 0;
                        ig_dprsr_md.resubmit_type = SR_TNA_RESUBMIT_ADVANCE;
                        return; // answered in pass 2
                    }
                } else {
                    md.high = high_read.execute(jid); // a duplicate or older than low
                }
            } else {
                ring_clear.execute(md.resub.ring_idx);
                md.high = high_read.execute(jid);
                advanced = true;
            }
            clock_lead(); // ts = s - d
            if (md.err == 0) {
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
                } else {
                    unicast_back();
                }
            }
        } else if (md.err == 0 && (hdr.serene.op == SR_OP_PUSH || hdr.serene.op == SR_OP_PULL)) {
            // Reduced store: whole rows only, so lane i is store word i of
            // the row and no run-time index is needed.
            // row = blk * SR_TNA_STORE_ROWS + offset / SR_TNA_ELEMS (the row
            // within the block is checked below to be < SR_TNA_STORE_ROWS);
            // push_idx = row * SR_TNA_MAX_WORKERS + worker.
            md.row = row_hash.get({ hdr.serene.job[SR_TNA_JOB_BITS - 1:0],
                                    hdr.serene.offset[SR_TNA_ELEMS_LOG2 + SR_TNA_STORE_ROWS_LOG2 - 1:
                                                      SR_TNA_ELEMS_LOG2] });
            store_prep(); // ox = offset - store_words
            if ((hdr.serene.offset & (SR_TNA_ELEMS - 1)) != 0 ||
                hdr.serene.offset >= (SR_TNA_STORE_ROWS << SR_TNA_ELEMS_LOG2)) {
                md.err = SR_ST_RANGE;
            } else if (md.store_words[31:SR_TNA_ELEMS_LOG2 + SR_TNA_STORE_ROWS_LOG2] == 0 &&
                       md.ox[31:31] == 0) {
                // offset >= store_words: offset < 2^13 here, so false if
                // store_words >= 2^13, else offset - store_words >= 0.
                md.err = SR_ST_RANGE;
            } else if (hdr.serene.op == SR_OP_PUSH) {
                if (!hdr.vals[0].isValid()) {
                    md.err = SR_ST_BAD_COUNT;
                } else {
                    // (its own table: two 32-bit hash outputs exceed one
                    // table's 32-bit immediate path)
                    md.push_idx = push_idx_hash.get({ hdr.serene.job[SR_TNA_JOB_BITS - 1:0],
                                                      hdr.serene.offset[SR_TNA_ELEMS_LOG2 + SR_TNA_STORE_ROWS_LOG2 - 1:
                                                                        SR_TNA_ELEMS_LOG2],
                                                      hdr.serene.worker[SR_TNA_WORKER_BITS - 1:0] });
                    md.push_new = push_check.execute(md.push_idx);
                    if (md.push_new == 1) {
                        st_add_0.execute(md.row);
                        st_add_1.execute(md.row);
                        st_add_2.execute(md.row);
                        st_add_3.execute(md.row);
                        st_add_4.execute(md.row);
                        st_add_5.execute(md.row);
                        st_add_6.execute(md.row);
                        st_add_7.execute(md.row);
                    }
                    answer_hdr(SR_OP_PUSH_ACK, 0, (bit<32>)md.push_new);
                    hdr.vals[0].setInvalid();
                    hdr.vals[1].setInvalid();
                    hdr.vals[2].setInvalid();
                    hdr.vals[3].setInvalid();
                    hdr.vals[4].setInvalid();
                    hdr.vals[5].setInvalid();
                    hdr.vals[6].setInvalid();
                    hdr.vals[7].setInvalid();
                    unicast_back();
                }
            } else if (hdr.serene.aux != SR_TNA_ELEMS) {
                md.err = SR_ST_BAD_COUNT;
            } else {
                hdr.vals[0].setValid();
                hdr.vals[1].setValid();
                hdr.vals[2].setValid();
                hdr.vals[3].setValid();
                hdr.vals[4].setValid();
                hdr.vals[5].setValid();
                hdr.vals[6].setValid();
                hdr.vals[7].setValid();
                hdr.vals[0].v = st_read_0.execute(md.row);
                hdr.vals[1].v = st_read_1.execute(md.row);
                hdr.vals[2].v = st_read_2.execute(md.row);
                hdr.vals[3].v = st_read_3.execute(md.row);
                hdr.vals[4].v = st_read_4.execute(md.row);
                hdr.vals[5].v = st_read_5.execute(md.row);
                hdr.vals[6].v = st_read_6.execute(md.row);
                hdr.vals[7].v = st_read_7.execute(md.row);
                answer_hdr(SR_OP_PULL_RESP, SR_TNA_ELEMS, 0);
                unicast_back();
            }
        } else if (md.err == 0 && hdr.serene.op == SR_OP_JOIN) {
            // Stateless JOIN_ACK: bindings are the job file's (worker_table).
            answer_hdr(SR_OP_JOIN_ACK, SR_JOIN_PARAMS_WORDS, hdr.serene.aux);
            hdr.serene.offset = 0;
            hdr.vals[0].setValid();
            hdr.vals[0].v = md.n_workers;
            hdr.vals[1].setValid();
            hdr.vals[1].v = SR_TNA_ELEMS;
            hdr.vals[2].setValid();
            hdr.vals[2].v = SR_TNA_AR_SLOTS;
            hdr.vals[3].setValid();
            hdr.vals[3].v = md.store_words;
            unicast_back();
        } else if (md.err == 0) {
            md.err = SR_ST_UNSUPPORTED; // AR_DATA; LEAVE and answers are dropped below
            if (hdr.serene.op != SR_OP_AR_DATA) {
                ig_dprsr_md.drop_ctl = 1;
                return;
            }
        }
        if (md.err != 0) {
            hdr.serene.aux = (bit<32>)hdr.serene.op;
            hdr.serene.op = SR_OP_ERROR;
            hdr.serene.status = md.err;
            hdr.serene.count = 0;
            hdr.vals[0].setInvalid();
            hdr.vals[1].setInvalid();
            hdr.vals[2].setInvalid();
            hdr.vals[3].setInvalid();
            hdr.vals[4].setInvalid();
            hdr.vals[5].setInvalid();
            hdr.vals[6].setInvalid();
            hdr.vals[7].setInvalid();
            unicast_back();
        }
    }
}

#endif /* SERENE_TNA_INGRESS_P4_ */
