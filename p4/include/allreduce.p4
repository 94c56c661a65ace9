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
 *
 * Incarnation tag (ingress.p4): slot_epoch_reg, per slot (both cells).
 * A slot whose tag is not the job's epoch reads as idle, both cells, as
 * the software switch's sr_epoch_touch_slot leaves it; the contribution
 * that opens its first round writes the tag and clears the other cell's
 * round (its sums need no clearing: a round's first contribution sets
 * them, and only a complete round is read back).
 *
 * A leaf of a tree (upstream.p4; allreduce.c's leaf functions): a round
 * completes after n_local contributions and its sums leave as one AR_DATA
 * of member up_member to the parent's job (up_wait set); the parent's
 * AR_RESULT comes in (from_parent), replaces the cell's sums (the shadow
 * copy of the whole tree's result) and its next_exp, and is multicast to
 * the leaf's workers. A worker's resend or probe of a cell awaiting its
 * result becomes an AR_PROBE to the parent (at most once per
 * SR_P4_UP_RESEND_US per cell); the parent's AR_NAK brings the partial up
 * again, read from the cell; its ERROR MISMATCH poisons the cell. A round
 * poisoned here sends the parent the marker (exp SR_WIRE_EXP_NONE, count
 * 0) that matches no real round.
 */
#ifndef SERENE_P4_ALLREDUCE_P4_
#define SERENE_P4_ALLREDUCE_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "lanes.p4"
#include "types.p4"

#define SR_VAL_REG(i) register<bit<32>>(SR_P4_CELLS) val_reg_##i;
// The parent's result lane into the cell: the leaf's shadow copy.
#define SR_UP_LANE(i)                                                       \
    if (hdr.vals[i].isValid()) {                                            \
        val_reg_##i.write(vcell, hdr.vals[i].v);                            \
    }
// A leaf's AR_PROBE or AR_RESULT to the parent may not go more often
// (ingress_global_timestamp is in microseconds): serene-switch's
// SR_UP_RESEND_MS.
#define SR_P4_UP_RESEND_US 2000
// Add the packet's lane to the cell's (or start the sum), and carry the sum.
#define SR_AR_LANE(i)                                                       \
    if (hdr.vals[i].isValid()) {                                            \
        bit<32> acc_##i;                                                    \
        val_reg_##i.read(acc_##i, vcell);                                   \
        if (first) {                                                        \
            acc_##i = hdr.vals[i].v;                                        \
        } else {                                                            \
            acc_##i = acc_##i + hdr.vals[i].v;                              \
        }                                                                   \
        val_reg_##i.write(vcell, acc_##i);                                  \
        hdr.vals[i].v = acc_##i;                                            \
    }
// A header-only answer: no payload.
#define SR_AR_NO_LANE(i) hdr.vals[i].setInvalid();
// The cell's lane i as payload word i, for i < the round's count.
#define SR_RESULT_LANE(i)                                                   \
    if (i < m_count) {                                                      \
        hdr.vals[i].setValid();                                             \
        val_reg_##i.read(hdr.vals[i].v, vcell);                             \
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
    @name(".upwait_reg") register<bit<8>>(SR_P4_CELLS) upwait_reg; // 1: partial up, result awaited
    @name(".upts_reg") register<bit<48>>(SR_P4_CELLS) upts_reg;    // when it last went up
    @name(".slot_epoch_reg") register<bit<32>>(SR_P4_SLOT_ENTRIES) slot_epoch_reg;
    // A shared job (share.p4): each slot's leased block + 1 (0: none), by the
    // control plane; where each cell's round is summed (SR_P4_CELL_*).
    @name(".lease_reg") register<bit<16>>(SR_P4_SLOT_ENTRIES) lease_reg;
    @name(".relay_reg") register<bit<8>>(SR_P4_CELLS) relay_reg;
    // ... and a block the control plane takes back (1), handed over after
    // the slot's next round, summed at the fallback (2 + its version).
    @name(".take_reg") register<bit<8>>(SR_P4_SLOT_ENTRIES) take_reg;
    // For the control plane that leases (p4/bmv2_pool.py): a round of the
    // slot found no block (1; the control plane clears it), and when the
    // slot last had a packet (us).
    @name(".want_reg") register<bit<8>>(SR_P4_SLOT_ENTRIES) want_reg;
    @name(".slot_ts_reg") register<bit<48>>(SR_P4_SLOT_ENTRIES) slot_ts_reg;

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
        hdr.serene.status = meta.stamp; // a shared job's window; 0 for any other
        hdr.serene.aux = m_total;
    }

    // The slot's first write in this incarnation: its tag, and the round
    // of its other cell o cleared (the caller writes its own cell's).
    action fresh_slot(in index_t sidx_, in index_t o) {
        slot_epoch_reg.write(sidx_, meta.epoch);
        cnt_reg.write(o, 0);
        mseq_reg.write(o, 0);
        moff_reg.write(o, 0);
        mtotal_reg.write(o, 0);
        mcount_reg.write(o, 0);
        mexp_reg.write(o, 0);
        nexp_reg.write(o, 0);
        upwait_reg.write(o, 0);
        relay_reg.write(o, SR_P4_CELL_GONE);
    }

    // Cell c's round is the request's from now on.
    action start_round(in index_t c) {
        mseq_reg.write(c, hdr.serene.seq);
        moff_reg.write(c, hdr.serene.offset);
        mtotal_reg.write(c, hdr.serene.aux);
        mcount_reg.write(c, hdr.serene.count);
        mexp_reg.write(c, hdr.serene.exp);
    }

    // A shared job's request to its fallback, unchanged (egress writes the
    // addresses); one the fallback has not bound first sends its JOIN again,
    // in this packet's ingress clone (share.p4).
    action to_fallback() {
        meta.route = SR_P4_OUT_FALLBACK;
        meta.fb_clone = !meta.fb_bound;
        meta.fb_rejoin = !meta.fb_bound;
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

    // The packet becomes the leaf's message about the cell to its parent
    // (route SR_P4_OUT_UP: egress keeps these addresses).
    action to_parent(bit<8> op, bit<32> m_seq, bit<32> m_off, bit<8> m_exp, bit<8> nexp,
                     bit<32> m_total) {
        hdr.serene.op = op;
        hdr.serene.job = meta.up_job;
        hdr.serene.worker = meta.up_member;
        hdr.serene.seq = m_seq;
        hdr.serene.offset = m_off;
        hdr.serene.exp = m_exp;
        hdr.serene.next_exp = nexp;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        hdr.serene.aux = m_total;
        hdr.ipv4.src_addr = meta.self_ip;
        hdr.ipv4.dst_addr = meta.up_ip;
        hdr.udp.src_port = SR_WIRE_UDP_PORT;
        hdr.udp.dst_port = meta.up_udp;
        meta.route = SR_P4_OUT_UP;
    }

    apply {
        index_t cell = ((meta.blk * SR_P4_SLOTS + (index_t)hdr.serene.slot) << 1) |
                       (index_t)hdr.serene.shadow;
        index_t other = cell ^ 1;
        index_t sidx = meta.blk * SR_P4_SLOTS + (index_t)hdr.serene.slot;
        index_t vcell = cell; // the cell's values: a shared job's are in its leased block
        bit<16> lease;
        bit<8> relay;
        bit<8> relay_other;
        bit<8> take;
        bit<32> tag;
        bool stale;
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
        bit<8> upwait;
        bit<48> upts;
        bool up_due;
        bool ours;

        if (meta.from_fallback) {
            // sr_fb_answer: on to the worker it names, if bound here; an
            // away round's result with the window of its next call.
            if (!meta.worker_ok ||
                (hdr.serene.op == SR_OP_ERROR && hdr.serene.aux != (bit<32>)SR_OP_AR_DATA &&
                 hdr.serene.aux != (bit<32>)SR_OP_AR_PROBE) ||
                (hdr.serene.op != SR_OP_AR_RESULT && hdr.serene.op != SR_OP_AR_HELD &&
                 hdr.serene.op != SR_OP_AR_NAK && hdr.serene.op != SR_OP_ERROR)) {
                meta.route = SR_P4_OUT_DROP;
                return;
            }
            if (hdr.serene.op == SR_OP_AR_RESULT && (bit<32>)hdr.serene.slot < SR_P4_SLOTS) {
                relay_reg.read(relay, cell);
                mseq_reg.read(m_seq, cell);
                moff_reg.read(m_off, cell);
                slot_epoch_reg.read(tag, sidx);
                if (tag == meta.epoch && relay == SR_P4_CELL_AWAY && hdr.serene.seq == m_seq &&
                    hdr.serene.offset == m_off) {
                    hdr.serene.status = meta.stamp;
                    // sr_pool_away_done: the round that hands the slot's
                    // block over is complete; the block is free, and the
                    // other cell's round here can no longer answer.
                    take_reg.read(take, sidx);
                    if (take == 2 + (bit<8>)hdr.serene.shadow) {
                        lease_reg.write(sidx, 0);
                        take_reg.write(sidx, 0);
                        relay_reg.read(relay_other, other);
                        if (relay_other == SR_P4_CELL_HERE) {
                            relay_reg.write(other, SR_P4_CELL_GONE);
                        }
                    }
                }
            }
            meta.route = SR_P4_OUT_RANK;
            return;
        }
        if (meta.from_parent) {
            // sr_allreduce_up_answer: the parent about this leaf's cell.
            if ((bit<32>)hdr.serene.slot >= SR_P4_SLOTS) {
                meta.route = SR_P4_OUT_DROP;
                return;
            }
            upwait_reg.read(upwait, cell);
            mseq_reg.read(m_seq, cell);
            moff_reg.read(m_off, cell);
            mtotal_reg.read(m_total, cell);
            mcount_reg.read(m_count, cell);
            mexp_reg.read(m_exp, cell);
            nexp_reg.read(nexp, cell);
            slot_epoch_reg.read(tag, sidx);
            if (tag != meta.epoch) {
                upwait = 0; // a slot of an earlier incarnation awaits nothing
            }
            ours = upwait == 1 && hdr.serene.seq == m_seq && hdr.serene.offset == m_off &&
                    hdr.serene.exp == m_exp;
            if (hdr.serene.op == SR_OP_AR_RESULT) {
                ours = ours && hdr.serene.count == m_count && hdr.serene.aux == m_total;
            } else if (hdr.serene.op == SR_OP_AR_NAK) {
                ours = ours && hdr.serene.aux == m_total;
            } else {
                ours = ours && hdr.serene.op == SR_OP_ERROR &&
                        hdr.serene.status == SR_ST_MISMATCH &&
                        (hdr.serene.aux == (bit<32>)SR_OP_AR_DATA ||
                         hdr.serene.aux == (bit<32>)SR_OP_AR_PROBE);
            }
            if (!ours) {
                meta.route = SR_P4_OUT_DROP; // late, duplicate, AR_HELD: nothing to do
                return;
            }
            if (hdr.serene.op == SR_OP_AR_NAK) {
                // Lost on the way up or down: the partial again, from the cell.
                to_parent(SR_OP_AR_DATA, m_seq, m_off, m_exp, nexp, m_total);
                hdr.serene.count = m_count;
                SR_LANES(SR_RESULT_LANE)
                upts_reg.write(cell, sm.ingress_global_timestamp);
                return;
            }
            upwait_reg.write(cell, 0);
            if (hdr.serene.op == SR_OP_ERROR) {
                mcount_reg.write(cell, SR_WIRE_COUNT_POISON); // the leaves disagree
                meta.route = SR_P4_OUT_DROP;
                return;
            }
            // The tree's sums: the cell's shadow copy, and to every local worker.
            SR_LANES(SR_UP_LANE)
            nexp_reg.write(cell, hdr.serene.next_exp);
            hdr.serene.flags = 0;
            hdr.eth.dst_addr = SR_P4_SWITCH_MAC; // egress: each copy from it
            meta.route = SR_P4_OUT_MULTICAST;
            return;
        }
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
        upwait_reg.read(upwait, cell);
        upts_reg.read(upts, cell);
        relay_reg.read(relay, cell);
        lease_reg.read(lease, sidx);
        if ((bit<32>)lease > SR_P4_SLOT_ENTRIES) {
            lease = 0; // no block the program has: the control plane's slip
        }
        take_reg.read(take, sidx);
        slot_epoch_reg.read(tag, sidx);
        stale = tag != meta.epoch;
        if (stale) {
            // Written in an earlier incarnation: both cells read as idle.
            seen = 0;
            seen_other = 0;
            cnt = 0;
            cnt_other = 0;
            m_seq = 0;
            m_off = 0;
            m_total = 0;
            m_count = 0;
            m_exp = 0;
            nexp = 0;
            upwait = 0;
            relay = SR_P4_CELL_GONE;
        }
        up_due = sm.ingress_global_timestamp - upts >= SR_P4_UP_RESEND_US;
        meta_eq = hdr.serene.seq == m_seq && hdr.serene.offset == m_off &&
                  hdr.serene.count == m_count && hdr.serene.exp == m_exp &&
                  hdr.serene.aux == m_total;
        // Older piece than the cell's round: call (serial), then offset.
        dseq = hdr.serene.seq - m_seq;
        older = dseq[31:31] == 1 || (dseq == 0 && hdr.serene.offset < m_off);

        if (meta.shared) {
            // shared_data and shared_probe (p4/swswitch/allreduce.c): each
            // round is summed in one place, chosen when it starts.
            slot_ts_reg.write(sidx, sm.ingress_global_timestamp);
            if (probe) {
                if (relay == SR_P4_CELL_AWAY && hdr.serene.seq == m_seq &&
                    hdr.serene.offset == m_off && hdr.serene.exp == m_exp &&
                    hdr.serene.aux == m_total) {
                    to_fallback();
                    return;
                }
            } else if (relay == SR_P4_CELL_HERE && (cnt != 0 || meta_eq)) {
                if (lease == 0) {
                    meta.route = SR_P4_OUT_DROP; // the control plane took the block
                    return;
                }
            } else if (meta_eq) {
                if (relay == SR_P4_CELL_AWAY) {
                    to_fallback(); // a copy of the away round
                } else {
                    meta.route = SR_P4_OUT_DROP; // its block went back: lease lost
                }
                return;
            } else if (cnt_other != 0 || (relay == SR_P4_CELL_AWAY && older)) {
                meta.route = SR_P4_OUT_DROP; // stale
                return;
            } else if (lease != 0 && take == 0) {
                // A new round in the slot's block, with seen cleared: the
                // workers cleared their bits in the rounds that went away.
                relay_reg.write(cell, SR_P4_CELL_HERE);
                seen = 0;
            } else {
                // A new round with no block, or the first after the block
                // was taken back (which hands it over when it completes):
                // the fallback's, and its metadata the cell's, so that
                // every copy follows it.
                if (lease != 0 && take == 1) {
                    take_reg.write(sidx, 2 + (bit<8>)hdr.serene.shadow);
                } else if (lease == 0) {
                    want_reg.write(sidx, 1);
                }
                if (stale) {
                    // This cell's bitmaps, count and exponents too: a round
                    // away writes no others.
                    fresh_slot(sidx, other);
                    seen_reg.write(cell, 0);
                    seen_reg.write(other, 0);
                    cnt_reg.write(cell, 0);
                    nexp_reg.write(cell, 0);
                    upwait_reg.write(cell, 0);
                }
                relay_reg.write(cell, SR_P4_CELL_AWAY);
                start_round(cell);
                to_fallback();
                return;
            }
            if (lease != 0) {
                vcell = (((index_t)lease - 1) << 1) | (index_t)hdr.serene.shadow;
            }
        }

        if (m_count == SR_WIRE_COUNT_POISON) {
            meta.err = SR_ST_MISMATCH; // poisoned: everyone learns it
            return;
        }
        if ((seen & meta.wbit) != 0 && upwait == 1) {
            // up_pending: a leaf's round awaiting its parent's result. The
            // software switch also answers the worker AR_HELD; one packet
            // here, so the worker's timer simply backs off.
            if (!up_due) {
                meta.route = SR_P4_OUT_DROP;
                return;
            }
            upts_reg.write(cell, sm.ingress_global_timestamp);
            to_parent(SR_OP_AR_PROBE, m_seq, m_off, m_exp, nexp, m_total);
            hdr.serene.count = 0;
            SR_LANES(SR_AR_NO_LANE)
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
            if (meta.leaf) {
                // up_poison: the parent learns it (the worker, from its
                // next resend or probe).
                upts_reg.write(cell, sm.ingress_global_timestamp);
                to_parent(SR_OP_AR_DATA, m_seq, m_off, SR_WIRE_EXP_NONE, SR_WIRE_EXP_NONE,
                          m_total);
                hdr.serene.count = 0;
                SR_LANES(SR_AR_NO_LANE)
                return;
            }
            meta.err = SR_ST_MISMATCH;
            return;
        }

        seen_reg.write(cell, seen | meta.wbit);
        seen_reg.write(other, seen_other & ~meta.wbit);
        if (stale) {
            fresh_slot(sidx, other); // this cell's is written below
        }
        first = cnt == 0;
        if (first) {
            // A new round: what a leaf's parent still says about the
            // cell's last one no longer applies (swswitch contribute()).
            upwait_reg.write(cell, 0);
            start_round(cell);
            nexp = hdr.serene.next_exp;
        } else if ((hdr.serene.next_exp ^ 0x80) > (nexp ^ 0x80)) {
            nexp = hdr.serene.next_exp; // signed max: bit 7 flipped
        }
        nexp_reg.write(cell, nexp);
        SR_LANES(SR_AR_LANE)
        if ((bit<32>)cnt + 1 == meta.n_local) {
            cnt = 0;
        } else {
            cnt = cnt + 1;
        }
        cnt_reg.write(cell, cnt);
        if (cnt != 0) {
            meta.route = SR_P4_OUT_DROP; // waiting for the others
            return;
        }
        if (meta.leaf) {
            // up_partial: the sums, already in the packet, as one
            // contribution to the parent.
            upwait_reg.write(cell, 1);
            upts_reg.write(cell, sm.ingress_global_timestamp);
            to_parent(SR_OP_AR_DATA, hdr.serene.seq, hdr.serene.offset, hdr.serene.exp, nexp,
                      hdr.serene.aux);
            return;
        }
        // Round complete: the sums, already in the packet, to every worker.
        result_hdr(hdr.serene.seq, hdr.serene.offset, hdr.serene.count, hdr.serene.exp, nexp,
                   hdr.serene.aux);
        meta.route = SR_P4_OUT_MULTICAST;
    }
}

#endif /* SERENE_P4_ALLREDUCE_P4_ */
