/* SPDX-License-Identifier: Apache-2.0 */
/*
 * barrier.p4 - the SSP barrier: CLOCK answered with PROCEED or HOLD, and
 * RELEASE multicast when low advances; the software switch's
 * sr_barrier_job_clock and sr_barrier_clock (p4/swswitch/barrier.c). And
 * a STEP's part (sr_barrier_note, sr_barrier_job_record): every piece the
 * row took (step.p4) moves high to its clock, and the piece that completes
 * its worker's step records CLOCK(c) as a CLOCK does, unanswered.
 *
 * Per job: low_reg and high_reg (index: job id, as serene-ctl writes them;
 * declared outside the control because step.p4 reads low too) and R =
 * ring_mask + 1 ring entries (worker bitmaps) in ring_reg at blk *
 * SR_P4_RING + (c & ring_mask). The policy at clock c is policy.p4's,
 * already looked up. ring_epoch_reg tags each entry with the epoch it was
 * written in (ingress.p4): an entry of an earlier incarnation reads as
 * empty, as in the software switch's fresh ring (sr_barrier_job_renew).
 *
 * A STEP that moves low becomes the RELEASE itself, as a CLOCK does; its
 * row leaves in its clone (step.p4), queued before the packet's copies, so
 * each port sends the row first, then RELEASE: the software switch's order.
 *
 * Difference from the software switch: it walks the ring to fill in the
 * clocks of a lost CLOCK; this program has no loop. It relies on the
 * library, which goes past clock c only after an answer to CLOCK(c) (or,
 * stepping, after every row of step c, each sent once its piece was
 * applied), so the switch always sees a worker's clocks in order, each
 * CLOCK sets one bit, and the entry that fills is low + 1: low advances by
 * one at most.
 */
#ifndef SERENE_P4_BARRIER_P4_
#define SERENE_P4_BARRIER_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "lanes.p4"
#include "types.p4"

#define SR_RELEASE_NO_VAL(i) hdr.vals[i].setInvalid();

// Per job id (step.p4 reads low_reg for its CLOCK_AHEAD check).
@name(".low_reg") register<clock_t>(SR_P4_JOB_IDS) low_reg;
@name(".high_reg") register<clock_t>(SR_P4_JOB_IDS) high_reg;

control Barrier(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm,
                in bool reset_clocks) {
    @name(".ring_reg") register<bitmap_t>(SR_P4_RING_ENTRIES) ring_reg;
    @name(".ring_epoch_reg") register<bit<32>>(SR_P4_RING_ENTRIES) ring_epoch_reg;

    apply {
        bit<32> jid = (bit<32>)hdr.serene.job;
        clock_t c = hdr.serene.seq;
        clock_t low;
        clock_t high;
        bitmap_t e;
        bit<32> tag;
        bit<32> s = meta.pol_s;
        bool advanced = false;
        // A STEP the row took (not refused, not a late copy); its header is
        // already step.p4's answer.
        bool is_step = meta.step_note;
        index_t idx = meta.blk * SR_P4_RING + (c & meta.ring_mask & (SR_P4_RING - 1));

        if (reset_clocks) {
            // A new incarnation (membership.p4): clock -1 again.
            low_reg.write(jid, 0xffffffff);
            high_reg.write(jid, 0xffffffff);
            return;
        }
        // Else a CLOCK of a bound worker (from any other, dropped).
        if (!is_step && (hdr.serene.op != SR_OP_CLOCK || !meta.worker_ok)) {
            if (hdr.serene.op == SR_OP_CLOCK) {
                meta.route = SR_P4_OUT_DROP;
            }
            return;
        }
        low_reg.read(low, jid);
        high_reg.read(high, jid);
        if (is_step) {
            // sr_barrier_note: a row decided clock c, so no policy change
            // may take effect at c any more. step.p4 checked c - low <= R.
            if ((int<32>)(c - high) > 0) {
                high = c;
                high_reg.write(jid, high);
            }
        } else if ((int<32>)(c - low) > (int<32>)(meta.ring_mask + 1)) {
            meta.err = SR_ST_CLOCK_AHEAD; // beyond the ring: refused, nothing changes
            return;
        }
        if ((!is_step || meta.step_record) && (int<32>)(c - low) > 0) {
            ring_reg.read(e, idx);
            ring_epoch_reg.read(tag, idx);
            if (tag != meta.epoch) {
                e = 0; // written in an earlier incarnation
            }
            if ((e & meta.wbit) == 0) {
                e = e | meta.wbit;
                if ((int<32>)(c - high) > 0) {
                    high = c;
                    high_reg.write(jid, high);
                }
                if (e == meta.full_mask) {
                    e = 0; // free for the clock R later
                    low = c;
                    low_reg.write(jid, low);
                    advanced = true;
                }
                ring_reg.write(idx, e);
                ring_epoch_reg.write(idx, meta.epoch);
            }
        }
        if (is_step && !advanced) {
            return; // sr_barrier_job_record: no answer (the row is the answer)
        }
        if (!is_step) {
            meta.ans_op = (int<32>)(c - low) <= (int<32>)s ? SR_OP_PROCEED : SR_OP_HOLD;
            meta.ans_low = low;
            meta.ans_high = high;
            meta.ans_mode = (bit<32>)meta.pol_mode;
            meta.ans_s = s;
            meta.ans_job = hdr.serene.job;
        }
        if (advanced) {
            // RELEASE(low) to every rank; a CLOCK's answer goes back in a
            // clone (egress builds it from the ans_* fields), a STEP's row
            // in its clone (step.p4).
            hdr.serene.op = SR_OP_RELEASE;
            hdr.serene.seq = low;
            hdr.serene.aux = low;
            hdr.serene.offset = high;
            hdr.serene.count = 0;
            hdr.serene.shadow = 0;
            hdr.serene.slot = 0;
            hdr.serene.exp = 0;
            hdr.serene.next_exp = 0;
            hdr.serene.flags = 0;
            hdr.serene.status = 0;
            SR_LANES(SR_RELEASE_NO_VAL) // a STEP's piece
            if (!is_step) {
                clone_preserving_field_list(CloneType.I2E, (bit<32>)sm.ingress_port,
                                            SR_P4_CPU_CLONE_FL);
            }
            meta.route = SR_P4_OUT_MULTICAST;
        } else {
            meta.route = SR_P4_OUT_UNICAST; // egress writes the answer
        }
    }
}

#endif /* SERENE_P4_BARRIER_P4_ */
