/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.p4 - the SSP parameter store: PUSH (applied once per row, worker
 * and push number, then acknowledged) and PULL; the software switch's
 * sr_store_push and sr_store_pull (p4/swswitch/store.c).
 *
 * A job's store is SR_P4_STORE_ROWS rows of SR_P4_ELEMS words: word k of
 * row r sits in st_reg_k at index blk * SR_P4_STORE_ROWS + r. A request
 * stays within one row but may start anywhere in it, so payload word i
 * maps to register lane (offset mod SR_P4_ELEMS) + i: each lane picks its
 * payload word with a run-time header-stack index (BMv2 supports it; the
 * Tofino proof of concept keeps requests row-aligned instead).
 * push_last_reg holds, per (job block, row, worker), the last push number
 * applied; numbers compare in serial arithmetic.
 *
 * Incarnation tags (ingress.p4): row_epoch_reg per row, push_epoch_reg per
 * push entry. A row whose tag is not the job's epoch reads as zeros, and a
 * push entry whose tag is not as 0 (nothing applied), as the software
 * switch's sr_epoch_touch_row leaves them; the first PUSH applied to a
 * stale row writes every lane (zero where it pushes nothing) and the tag.
 *
 * STEP (step.p4 decided what it does, and checked it): a new piece's
 * words are added as a PUSH's (meta.step_apply), and the whole row after
 * it goes into the metadata the STEP_RESP is built from in egress
 * (meta.step_row; step_out.p4), word i = lane i.
 */
#ifndef SERENE_P4_STORE_P4_
#define SERENE_P4_STORE_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "lanes.p4"
#include "types.p4"

#define SR_ST_REG(i) register<bit<32>>(SR_P4_ROWS) st_reg_##i;
// Lane i of the row: the payload word it receives, if any (PUSH).
#define SR_PUSH_LANE(i)                                                     \
    {                                                                       \
        bit<8> pi_##i = (bit<8>)i - lane0;                                  \
        if ((bit<16>)pi_##i < n) {                                          \
            bit<32> acc_##i;                                                \
            st_reg_##i.read(acc_##i, row);                                  \
            if (stale) {                                                    \
                acc_##i = 0;                                                \
            }                                                               \
            st_reg_##i.write(row, acc_##i + hdr.vals[pi_##i].v);            \
        } else if (stale) {                                                 \
            st_reg_##i.write(row, 0);                                       \
        }                                                                   \
    }
// Payload word validity for a PULL answer of n words.
#define SR_PULL_VALID(i)                                                    \
    if (i < n) {                                                            \
        hdr.vals[i].setValid();                                             \
    } else {                                                                \
        hdr.vals[i].setInvalid();                                           \
    }
// Lane i of the row into the payload word it answers, if any (PULL).
#define SR_PULL_LANE(i)                                                     \
    {                                                                       \
        bit<8> pi_##i = (bit<8>)i - lane0;                                  \
        if ((bit<16>)pi_##i < n) {                                          \
            bit<32> word_##i;                                               \
            st_reg_##i.read(word_##i, row);                                 \
            hdr.vals[pi_##i].v = stale ? 32w0 : word_##i;                   \
        }                                                                   \
    }
#define SR_DROP_VAL(i) hdr.vals[i].setInvalid();
// STEP: lane i of the row (zero when stale) plus its payload word, if the
// piece has one; then the row into the metadata the STEP_RESP is built from.
#define SR_STEP_WORD(i) bit<32> sw_##i;
#define SR_STEP_LANE(i)                                                     \
    {                                                                       \
        bit<8> pi_##i = (bit<8>)i - lane0;                                  \
        st_reg_##i.read(sw_##i, row);                                       \
        if (stale) {                                                        \
            sw_##i = 0;                                                     \
        }                                                                   \
        if (meta.step_apply && (bit<16>)pi_##i < n) {                       \
            sw_##i = sw_##i + hdr.vals[pi_##i].v;                           \
            st_reg_##i.write(row, sw_##i);                                  \
        } else if (meta.step_apply && stale) {                              \
            st_reg_##i.write(row, 0);                                       \
        }                                                                   \
    }
#define SR_STEP_OUT(i) meta.step_w##i = sw_##i;

control Store(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name(".push_last_reg") register<bit<32>>(SR_P4_PUSH_ENTRIES) push_last_reg;
    @name(".push_epoch_reg") register<bit<32>>(SR_P4_PUSH_ENTRIES) push_epoch_reg;
    @name(".row_epoch_reg") register<bit<32>>(SR_P4_ROWS) row_epoch_reg;
    SR_LANES(SR_ST_REG)

    // PUSH_ACK / PULL_RESP keep job, worker, seq and offset.
    action answer(bit<8> op, bit<16> count, bit<32> aux) {
        hdr.serene.op = op;
        hdr.serene.count = count;
        hdr.serene.aux = aux;
        hdr.serene.shadow = 0;
        hdr.serene.slot = 0;
        hdr.serene.exp = 0;
        hdr.serene.next_exp = 0;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        meta.route = SR_P4_OUT_UNICAST;
    }

    apply {
        bool is_push = hdr.serene.op == SR_OP_PUSH;
        bool is_step = meta.step_apply || meta.step_row; // step.p4's decision

        // Words accessed: count for PUSH and STEP, aux for PULL (whose count is 0).
        bit<32> n32 = is_push || is_step ? (bit<32>)hdr.serene.count : hdr.serene.aux;
        bit<16> n = (bit<16>)n32;
        bit<32> off = hdr.serene.offset;
        bit<8> lane0 = (bit<8>)(off & (SR_P4_ELEMS - 1));
        index_t row = meta.blk * SR_P4_STORE_ROWS + (off >> SR_P4_ELEMS_LOG2);
        index_t pidx;
        bit<32> last;
        bit<32> tag;
        bool stale;

        if (is_step) {
            // Run when the piece is new or answered (step.p4 decided).
            SR_LANES(SR_STEP_WORD)
            row_epoch_reg.read(tag, row);
            stale = tag != meta.epoch;
            SR_LANES(SR_STEP_LANE)
            if (meta.step_apply) {
                row_epoch_reg.write(row, meta.epoch);
            }
            if (meta.step_row) {
                SR_LANES(SR_STEP_OUT) // the whole row: egress sends step_words of it
            }
            return;
        }
        if (!meta.worker_ok) {
            meta.route = SR_P4_OUT_DROP;
            return;
        }
        // check_access: BAD_COUNT, then RANGE (beyond the store or a row).
        if (n32 < 1 || n32 > SR_P4_ELEMS) {
            meta.err = SR_ST_BAD_COUNT;
            return;
        }
        if (n32 > meta.store_words || off > meta.store_words - n32 ||
            (off >> SR_P4_ELEMS_LOG2) != ((off + n32 - 1) >> SR_P4_ELEMS_LOG2)) {
            meta.err = SR_ST_RANGE;
            return;
        }
        row_epoch_reg.read(tag, row);
        stale = tag != meta.epoch;
        if (is_push) {
            pidx = row * SR_P4_MAX_WORKERS + (index_t)hdr.serene.worker;
            push_last_reg.read(last, pidx);
            push_epoch_reg.read(tag, pidx);
            if (tag != meta.epoch) {
                last = 0;
            }
            if ((int<32>)(hdr.serene.seq - last) > 0) {
                SR_LANES(SR_PUSH_LANE)
                row_epoch_reg.write(row, meta.epoch);
                push_last_reg.write(pidx, hdr.serene.seq);
                push_epoch_reg.write(pidx, meta.epoch);
                answer(SR_OP_PUSH_ACK, 0, 1);
            } else {
                answer(SR_OP_PUSH_ACK, 0, 0); // a duplicate: acked, not added
            }
            SR_LANES(SR_DROP_VAL)
        } else {
            SR_LANES(SR_PULL_VALID)
            SR_LANES(SR_PULL_LANE)
            answer(SR_OP_PULL_RESP, n, 0);
        }
    }
}

#endif /* SERENE_P4_STORE_P4_ */
