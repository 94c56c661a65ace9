/* SPDX-License-Identifier: Apache-2.0 */
/*
 * barrier.p4 - the SSP barrier: CLOCK answered with PROCEED or HOLD, and
 * RELEASE multicast when low advances; the software switch's
 * sr_barrier_job_clock and sr_barrier_clock (p4/swswitch/barrier.c).
 *
 * Per job: low_reg and high_reg (index: job id, as serene-ctl writes them)
 * and R = ring_mask + 1 ring entries (worker bitmaps) in ring_reg at
 * blk * SR_P4_RING + (c & ring_mask). The policy at clock c comes from
 * policy_table, a range match on the clock filled by serene-ctl: the hot
 * swap is a table update effective at a clock above high. ring_epoch_reg
 * tags each entry with the epoch it was written in (ingress.p4): an entry
 * of an earlier incarnation reads as empty, as in the software switch's
 * fresh ring (sr_barrier_job_renew).
 *
 * Difference from the software switch: it walks the ring to fill in the
 * clocks of a lost CLOCK; this program has no loop. It relies on the
 * library, which goes past clock c only after an answer to CLOCK(c), so
 * the switch always sees a worker's clocks in order, each CLOCK sets one
 * bit, and the entry that fills is low + 1: low advances by one at most.
 */
#ifndef SERENE_P4_BARRIER_P4_
#define SERENE_P4_BARRIER_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "types.p4"

control Barrier(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm,
                in bool reset_clocks) {
    @name(".low_reg") register<clock_t>(SR_P4_JOB_IDS) low_reg;
    @name(".high_reg") register<clock_t>(SR_P4_JOB_IDS) high_reg;
    @name(".ring_reg") register<bitmap_t>(SR_P4_RING_ENTRIES) ring_reg;
    @name(".ring_epoch_reg") register<bit<32>>(SR_P4_RING_ENTRIES) ring_epoch_reg;

    @name(".set_policy") action set_policy(bit<8> mode, bit<32> s) {
        meta.pol_mode = mode;
        meta.pol_s = s;
    }

    // (job, clock) -> (mode, s); mode 0 BSP, 1 SSP, 2 ASP. Ranges of one
    // job never overlap; a job with no entry runs BSP.
    @name(".policy_table") table policy_table {
        key = {
            hdr.serene.job: exact @name("job");
            hdr.serene.seq: range @name("clock");
        }
        actions = { set_policy; }
        default_action = set_policy(0, 0);
        size = 1024;
    }

    apply {
        bit<32> jid = (bit<32>)hdr.serene.job;
        clock_t c = hdr.serene.seq;
        clock_t low;
        clock_t high;
        bitmap_t e;
        bit<32> tag;
        bit<32> s;
        bool advanced = false;
        index_t idx = meta.blk * SR_P4_RING + (c & meta.ring_mask & (SR_P4_RING - 1));

        if (reset_clocks) {
            // A new incarnation (membership.p4): clock -1 again.
            low_reg.write(jid, 0xffffffff);
            high_reg.write(jid, 0xffffffff);
            return;
        }
        if (hdr.serene.op != SR_OP_CLOCK) {
            return;
        }
        if (!meta.worker_ok) {
            meta.route = SR_P4_OUT_DROP;
            return;
        }
        policy_table.apply();
        if (meta.pol_mode == 2) {
            s = meta.ring_mask - 1; // ASP: SSP(R - 2), the most the ring allows
        } else if (meta.pol_mode == 0) {
            s = 0;
        } else {
            s = meta.pol_s;
        }
        low_reg.read(low, jid);
        high_reg.read(high, jid);
        if ((int<32>)(c - low) > (int<32>)(meta.ring_mask + 1)) {
            meta.err = SR_ST_CLOCK_AHEAD; // beyond the ring: refused, nothing changes
            return;
        }
        if ((int<32>)(c - low) > 0) {
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
        meta.ans_op = (int<32>)(c - low) <= (int<32>)s ? SR_OP_PROCEED : SR_OP_HOLD;
        meta.ans_low = low;
        meta.ans_high = high;
        meta.ans_mode = (bit<32>)meta.pol_mode;
        meta.ans_s = s;
        meta.ans_job = hdr.serene.job;
        if (advanced) {
            // RELEASE(low) to every rank; the answer goes back in a clone
            // (egress builds it from the ans_* fields).
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
            clone_preserving_field_list(CloneType.I2E, (bit<32>)sm.ingress_port,
                                        SR_P4_CPU_CLONE_FL);
            meta.route = SR_P4_OUT_MULTICAST;
        } else {
            meta.route = SR_P4_OUT_UNICAST; // egress writes the answer
        }
    }
}

#endif /* SERENE_P4_BARRIER_P4_ */
