/* SPDX-License-Identifier: Apache-2.0 */
/*
 * step_out.p4 - a STEP_RESP copy in egress (the software switch's
 * answer_row and released in p4/swswitch/step.c, and the per-replica
 * fields of sr_pipe_replica_hdr). A STEP that answers with its row is
 * cloned to the job's multicast session (step.p4); the copy of rank x =
 * egress_rid is the STEP's header and piece as they came in, and becomes
 * the row's STEP_RESP here (the row, its low and length are in the
 * clone's metadata) only for a worker the row is for, with that worker's
 * clock (seq) and the policy in force at it (exp = mode, slot = s):
 * - x is the sender: when its piece was ready (meta.step_self), its clock
 *   from the header and the policy step.p4 looked up;
 * - x waited for the row when its low moved (meta.step_cand): x's clock
 *   c_x and s(c_x) from step_last_reg and step_pol_reg; released iff
 *   c_x - s(c_x) is the row's new low (step.p4 says why that is exact);
 * - anyone else: none (keep false; egress drops the copy).
 * Applied before egress.p4 writes the rank into the worker field, which
 * still names the sender here.
 */
#ifndef SERENE_P4_STEP_OUT_P4_
#define SERENE_P4_STEP_OUT_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "lanes.p4"
#include "step.p4"
#include "types.p4"

// Word i of the row, for i below its length.
#define SR_STEP_RESP_WORD(i)                                                \
    if (i < meta.step_words) {                                              \
        hdr.vals[i].setValid();                                             \
        hdr.vals[i].v = meta.step_w##i;                                     \
    } else {                                                                \
        hdr.vals[i].setInvalid();                                           \
    }

control StepReplica(inout headers_t hdr, in meta_t meta, in standard_metadata_t sm,
                    out bool keep) {
    apply {
        bit<16> x = sm.egress_rid;
        index_t idx = meta.step_base + (index_t)(x & (SR_P4_MAX_WORKERS - 1));
        clock_t cx;
        bit<32> pol;

        keep = false;
        if (x == hdr.serene.worker) {
            if (!meta.step_self) {
                return; // its piece waits; the others' copies go
            }
            hdr.serene.exp = meta.step_mode;
            hdr.serene.slot = meta.step_s;
        } else {
            if (x >= SR_P4_MAX_WORKERS || (meta.step_cand >> (bit<8>)x)[0:0] == 0) {
                return;
            }
            step_last_reg.read(cx, idx);
            step_pol_reg.read(pol, idx);
            if (cx - (bit<32>)pol[15:0] != meta.step_low) {
                return; // still waiting, or released by an earlier low
            }
            hdr.serene.seq = cx;
            hdr.serene.exp = pol[23:16];
            hdr.serene.slot = (bit<15>)pol[15:0];
        }
        keep = true;
        hdr.serene.op = SR_OP_STEP_RESP;
        hdr.serene.shadow = 0;
        hdr.serene.next_exp = 0;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        hdr.serene.offset = hdr.serene.offset & ~(bit<32>)(SR_P4_ELEMS - 1); // the row's first word
        hdr.serene.count = meta.step_words;
        hdr.serene.aux = meta.step_low;
        SR_LANES(SR_STEP_RESP_WORD)
    }
}

#endif /* SERENE_P4_STEP_OUT_P4_ */
