/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allreduce.p4 - streaming allreduce slots with a shadow copy: the software
 * switch's sr_allreduce_data (p4/swswitch/allreduce.c, which explains why
 * the rules below are correct), rule for rule.
 *
 * A cell is (job block, slot, version): index 2 * (blk * SR_P4_SLOTS +
 * slot) + shadow. Per cell: the workers seen in its round, the count of
 * contributors mod N (0: idle or complete), the round's metadata (seq,
 * offset, count, exp, and the call's total count from aux), the max of the
 * next exponents, and one accumulator per lane (val_reg_0 .. val_reg_31).
 * The packet that completes a round leaves as the AR_RESULT, multicast to
 * the job's group; a retransmission to a complete cell gets the cell's
 * result back alone. A contribution that disagrees with an open round
 * poisons it (count SR_WIRE_COUNT_POISON): from then on every contribution
 * to the cell is answered MISMATCH, so the workers that came first learn
 * it from their retransmissions.
 *
 * Waiting is not loss: a copy of a contribution that the cell's open round
 * already holds is answered AR_HELD, header only, back to the sender. An
 * AR_PROBE (header only, the fields of the contribution it stands for)
 * reads the cell and writes nothing: MISMATCH on a poisoned round, AR_HELD
 * when the open round holds the worker's contribution, AR_NAK otherwise
 * (sr_allreduce_probe). Both answers are the request with its op changed,
 * count 0, its lanes invalid and flags and status 0 (egress sets the
 * lengths): never larger than the request.
 */
#ifndef SERENE_P4_ALLREDUCE_P4_
#define SERENE_P4_ALLREDUCE_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "lanes.p4"
#include "types.p4"

#define SR_VAL_REG(i) register<bit<32>>(SR_P4_CELLS) val_reg_##i;
// Add the packet's lane to the cell's (or start the sum), and carry the sum.
#define SR_AR_LANE(i)                                                       \
    if (hdr.vals[i].isValid()) {                                            \
        bit<32> acc_##i;                                                    \
        val_reg_##i.read(acc_##i, cell);                                    \
        if (first) {                                                        \
            acc_##i = hdr.vals[i].v;                                        \
        } else {                                                            \
            acc_##i = acc_##i + hdr.vals[i].v;                              \
        }                                                                   \
        val_reg_##i.write(cell, acc_##i);                                   \
        hdr.vals[i].v = acc_##i;                                            \
    }
// A header-only answer: no payload.
#define SR_AR_NO_LANE(i) hdr.vals[i].setInvalid();
// The cell's lane i as payload word i, for i < the round's count.
#define SR_RESULT_LANE(i)                                                   \
    if (i < m_count) {                                                      \
        hdr.vals[i].setValid();                                             \
        val_reg_##i.read(hdr.vals[i].v, cell);                              \
    } else {                                                                \
        hdr.vals[i].setInvalid();                                           \
    }

control Allreduce(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name(".seen_reg") register<bitmap_t>(SR_P4_CELLS) seen_reg;
    @name(".cnt_reg") register<bit<8>>(SR_P4_CELLS) cnt_reg;
    @name(".mseq_reg") register<bit<32>>(SR_P4_CELLS) mseq_reg;
    @name(".moff_reg") register<bit<32>>(SR_P4_CELLS) moff_reg;
    @name(".mtotal_reg") register<bit<32>>(SR_P4_CELLS) mtotal_reg;
    @name(".mcount_reg") register<bit<16>>(SR_P4_CELLS) mcount_reg;
    @name(".mexp_reg") register<bit<8>>(SR_P4_CELLS) mexp_reg;
    @name(".nexp_reg") register<bit<8>>(SR_P4_CELLS) nexp_reg;
    SR_LANES(SR_VAL_REG)

    // The AR_RESULT header of a cell; payload set by the caller.
    action result_hdr(bit<32> m_seq, bit<32> m_off, bit<16> m_count, bit<8> m_exp,
                      bit<8> nexp, bit<32> m_total) {
        hdr.serene.op = SR_OP_AR_RESULT;
        hdr.serene.seq = m_seq;
        hdr.serene.offset = m_off;
        hdr.serene.count = m_count;
        hdr.serene.exp = m_exp;
        hdr.serene.next_exp = nexp;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        hdr.serene.aux = m_total;
    }

    // AR_HELD or AR_NAK: the request's header, back to the sender alone.
    action answer_hdr(bit<8> op) {
        hdr.serene.op = op;
        hdr.serene.count = 0;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        SR_LANES(SR_AR_NO_LANE)
        meta.route = SR_P4_OUT_UNICAST;
    }

    apply {
        index_t cell = ((meta.blk * SR_P4_SLOTS + (index_t)hdr.serene.slot) << 1) |
                       (index_t)hdr.serene.shadow;
        index_t other = cell ^ 1;
        bitmap_t seen;
        bitmap_t seen_other;
        bit<8> cnt;
        bit<8> cnt_other;
        bit<32> m_seq;
        bit<32> m_off;
        bit<32> m_total;
        bit<16> m_count;
        bit<8> m_exp;
        bit<8> nexp;
        bool meta_eq;
        bool older;
        bit<32> dseq;
        bool first;
        bool probe = hdr.serene.op == SR_OP_AR_PROBE;

        if (!meta.worker_ok) {
            meta.route = SR_P4_OUT_DROP; // isolation: no answer at all
            return;
        }
        if ((bit<32>)hdr.serene.slot >= SR_P4_SLOTS) {
            meta.err = SR_ST_BAD_SLOT;
            return;
        }
        if (meta.too_many || (probe && hdr.serene.count != 0)) {
            meta.err = SR_ST_BAD_COUNT; // a probe is header only
            return;
        }
        seen_reg.read(seen, cell);
        seen_reg.read(seen_other, other);
        cnt_reg.read(cnt, cell);
        cnt_reg.read(cnt_other, other);
        mseq_reg.read(m_seq, cell);
        moff_reg.read(m_off, cell);
        mtotal_reg.read(m_total, cell);
        mcount_reg.read(m_count, cell);
        mexp_reg.read(m_exp, cell);
        nexp_reg.read(nexp, cell);
        meta_eq = hdr.serene.seq == m_seq && hdr.serene.offset == m_off &&
                  hdr.serene.count == m_count && hdr.serene.exp == m_exp &&
                  hdr.serene.aux == m_total;
        // Older piece than the cell's round: call (serial), then offset.
        dseq = hdr.serene.seq - m_seq;
        older = dseq[31:31] == 1 || (dseq == 0 && hdr.serene.offset < m_off);

        if (m_count == SR_WIRE_COUNT_POISON) {
            meta.err = SR_ST_MISMATCH; // poisoned: everyone learns it
            return;
        }
        if (probe) {
            // sr_allreduce_probe: no state changes.
            if ((seen & meta.wbit) != 0 && cnt != 0) {
                answer_hdr(SR_OP_AR_HELD);
            } else {
                answer_hdr(SR_OP_AR_NAK); // not held, or complete: resend in full
            }
            return;
        }
        if ((seen & meta.wbit) != 0) {
            if (cnt == 0) {
                // Complete: the worker lost its result; the shadow copy.
                result_hdr(m_seq, m_off, m_count, m_exp, nexp, m_total);
                SR_LANES(SR_RESULT_LANE)
                meta.route = SR_P4_OUT_UNICAST;
            } else {
                answer_hdr(SR_OP_AR_HELD); // the first copy already counted
            }
            return;
        }
        // A stale copy from a worker that moved on.
        if (cnt_other != 0 || (cnt == 0 && (seen_other & meta.wbit) != 0 && meta_eq) ||
            (cnt != 0 && older)) {
            meta.route = SR_P4_OUT_DROP;
            return;
        }
        if (cnt != 0 && !meta_eq) {
            mcount_reg.write(cell, SR_WIRE_COUNT_POISON); // the round cannot complete
            meta.err = SR_ST_MISMATCH;
            return;
        }

        seen_reg.write(cell, seen | meta.wbit);
        seen_reg.write(other, seen_other & ~meta.wbit);
        first = cnt == 0;
        if (first) {
            mseq_reg.write(cell, hdr.serene.seq);
            moff_reg.write(cell, hdr.serene.offset);
            mtotal_reg.write(cell, hdr.serene.aux);
            mcount_reg.write(cell, hdr.serene.count);
            mexp_reg.write(cell, hdr.serene.exp);
            nexp = hdr.serene.next_exp;
        } else if ((hdr.serene.next_exp ^ 0x80) > (nexp ^ 0x80)) {
            nexp = hdr.serene.next_exp; // signed max: bit 7 flipped
        }
        nexp_reg.write(cell, nexp);
        SR_LANES(SR_AR_LANE)
        if ((bit<32>)cnt + 1 == meta.n_workers) {
            cnt = 0;
        } else {
            cnt = cnt + 1;
        }
        cnt_reg.write(cell, cnt);
        if (cnt != 0) {
            meta.route = SR_P4_OUT_DROP; // waiting for the others
            return;
        }
        // Round complete: the sums, already in the packet, to every worker.
        result_hdr(hdr.serene.seq, hdr.serene.offset, hdr.serene.count, hdr.serene.exp, nexp,
                   hdr.serene.aux);
        meta.route = SR_P4_OUT_MULTICAST;
    }
}

#endif /* SERENE_P4_ALLREDUCE_P4_ */
