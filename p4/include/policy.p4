/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy.p4 - the policy in force at a request's clock: the software
 * switch's sr_barrier_policy_at (p4/swswitch/barrier.c) over the rules
 * serene-ctl installs. Applied once per CLOCK, STEP or STEP_PROBE, before
 * the controls that decide with it (step.p4 first, then barrier.p4): a
 * table can be applied once per packet, and both need the same answer.
 *
 * policy_table is a range match on the clock: the hot swap is a table
 * update effective at a clock above high, and every piece a row takes
 * moves high to its clock (barrier.p4), so the policy of a clock never
 * changes once a worker may have been answered for it.
 */
#ifndef SERENE_P4_POLICY_P4_
#define SERENE_P4_POLICY_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "types.p4"

control Policy(inout headers_t hdr, inout meta_t meta) {
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
        policy_table.apply();
        // The s the barrier applies (barrier.c's applied_s): BSP is s = 0;
        // ASP cannot be unbounded, it is SSP(R - 2), the most the ring allows.
        if (meta.pol_mode == 2) {
            meta.pol_s = meta.ring_mask - 1;
        } else if (meta.pol_mode == 0) {
            meta.pol_s = 0;
        }
    }
}

#endif /* SERENE_P4_POLICY_P4_ */
