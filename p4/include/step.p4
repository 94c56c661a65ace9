/* SPDX-License-Identifier: Apache-2.0 */
/*
 * step.p4 - the SSP step: STEP and STEP_PROBE on the store's rows, the
 * software switch's sr_step_piece and sr_step_probe (p4/swswitch/step.c,
 * which explains the rules), rule for rule where one packet allows.
 *
 * State per store row (index blk * SR_P4_STORE_ROWS + row, as the store's):
 * step_on_reg (the workers that stepped it), step_wait_reg (those whose
 * piece waits for it), step_low_reg (its low clock); per (row, worker):
 * step_last_reg (the last clock the worker stepped the row at) and
 * step_pol_reg (mode << 16 | s in force at that clock); per (row, clock
 * mod R): step_cnt_reg (the workers that stepped the row at that clock);
 * per (job block, worker): step_clk_reg and step_n_reg (the clock whose
 * pieces it is stepping, and how many were applied).
 *
 * Incarnation tags (ingress.p4): step_epoch_reg per row (on, wait, low),
 * step_cnt_epoch_reg per count and step_wk_epoch_reg per worker entry: one
 * of an earlier epoch reads as cleared, as the software switch's
 * sr_epoch_touch_row and sr_membership_renew leave them. step_last_reg and
 * step_pol_reg need none: an entry is only read for a worker in the row's
 * step_on, which a piece of this epoch put there after writing the entry.
 *
 * The Store (store.p4) adds the piece's words and reads the row into the
 * metadata the STEP_RESP is built from; the Barrier (barrier.p4) moves
 * high and records the clock of a completed step; both run after this
 * control, from its meta.step_*.
 *
 * STEP_RESP goes to the job's group as an ingress clone (answer_row says
 * why) and each copy is built or dropped in egress (step_out.p4): the
 * sender's when its piece is ready, a waiting worker's when the row's new
 * low releases it, with that worker's clock and policy from step_last_reg
 * and step_pol_reg (declared outside the control: egress reads them;
 * written only before the copies that read them are queued, and a
 * worker's entry changes only with its next piece, which comes after its
 * row). v1model has no loop over the
 * waiting workers, so each copy checks its own worker: a worker waiting
 * at clock c_x is not ready at the old low (else it would not wait), and
 * the low moves by one, so the new low releases it iff c_x - s(c_x) is
 * that low, exactly. Ingress cannot know which bits that clears, so a
 * released worker's wait bit stays; its next piece or probe sets it again
 * or clears it, and until then the equality cannot hold again (the low
 * only grows). So the copies are the software switch's, bit for bit.
 */
#ifndef SERENE_P4_STEP_P4_
#define SERENE_P4_STEP_P4_

#include <core.p4>
#include <v1model.p4>

#include "barrier.p4"
#include "headers.p4"
#include "lanes.p4"
#include "types.p4"

// Per (row, worker): read per STEP_RESP copy in egress (step_out.p4).
@name(".step_last_reg") register<clock_t>(SR_P4_STEP_ENTRIES) step_last_reg;
@name(".step_pol_reg") register<bit<32>>(SR_P4_STEP_ENTRIES) step_pol_reg;

#define SR_STEP_NO_LANE(i) hdr.vals[i].setInvalid();

control Step(inout headers_t hdr, inout meta_t meta) {
    @name(".step_epoch_reg") register<bit<32>>(SR_P4_ROWS) step_epoch_reg;
    @name(".step_on_reg") register<bitmap_t>(SR_P4_ROWS) step_on_reg;
    @name(".step_wait_reg") register<bitmap_t>(SR_P4_ROWS) step_wait_reg;
    @name(".step_low_reg") register<clock_t>(SR_P4_ROWS) step_low_reg;
    @name(".step_cnt_reg") register<bit<8>>(SR_P4_STEP_CNT_ENTRIES) step_cnt_reg;
    @name(".step_cnt_epoch_reg") register<bit<32>>(SR_P4_STEP_CNT_ENTRIES) step_cnt_epoch_reg;
    @name(".step_clk_reg") register<clock_t>(SR_P4_WORKER_ENTRIES) step_clk_reg;
    @name(".step_n_reg") register<bit<32>>(SR_P4_WORKER_ENTRIES) step_n_reg;
    @name(".step_wk_epoch_reg") register<bit<32>>(SR_P4_WORKER_ENTRIES) step_wk_epoch_reg;

    // STEP_HELD or STEP_NAK (sr_svc_reply_hdr): the request's header
    // echoed, count 0, no flags, status 0, aux = the row's low (never
    // larger than the request).
    action answer_short(bit<8> op, clock_t low) {
        hdr.serene.op = op;
        hdr.serene.count = 0;
        hdr.serene.flags = 0;
        hdr.serene.status = 0;
        hdr.serene.aux = low;
        SR_LANES(SR_STEP_NO_LANE)
        meta.route = SR_P4_OUT_UNICAST;
    }

    // STEP_RESP: the row, after the piece (store.p4 keeps its words in the
    // metadata), to the workers it is for. It leaves as an ingress clone to
    // the job's multicast session (egress builds each copy, step_out.p4),
    // so that the packet itself is free to be the RELEASE that a completed
    // step may bring (barrier.p4): the clone's copies are queued before
    // the packet's, and each port sends the row first, as the software
    // switch does.
    action answer_row(clock_t low, bit<32> words) {
        meta.step_row = true;
        meta.step_low = low;
        meta.step_words = words > SR_P4_ELEMS ? (bit<16>)SR_P4_ELEMS : (bit<16>)words;
        meta.step_mode = meta.pol_mode;
        meta.step_s = (bit<15>)meta.pol_s;
        clone_preserving_field_list(CloneType.I2E, SR_P4_STEP_SESSION0 + meta.blk,
                                    SR_P4_CPU_CLONE_FL);
        meta.route = SR_P4_OUT_DROP; // unless barrier.p4 makes it the RELEASE
    }

    apply {
        bool probe = hdr.serene.op == SR_OP_STEP_PROBE;
        clock_t c = hdr.serene.seq;
        bit<32> off = hdr.serene.offset;
        bit<32> n32 = (bit<32>)hdr.serene.count;
        bit<32> ring = meta.ring_mask + 1;
        index_t row;
        index_t widx;
        index_t cidx;
        index_t kidx;
        bit<32> tag;
        bitmap_t on;
        bitmap_t wait;
        clock_t low;
        clock_t last;
        clock_t blow;
        bit<32> d;
        bit<8> cnt;
        clock_t clk;
        bit<32> done;
        bool mine;
        bool dup = false;
        bool old = false;
        bool fresh = false;
        bool moved = false;
        bool ready;

        if (!meta.worker_ok) {
            meta.route = SR_P4_OUT_DROP; // isolation: no answer at all
            return;
        }
        // check_piece (a probe's count is 0: its row by its offset alone).
        if (probe) {
            if (off >= meta.store_words) {
                meta.err = SR_ST_RANGE;
            }
        } else if (meta.too_many || n32 < 1 || n32 > SR_P4_ELEMS || hdr.serene.aux == 0) {
            meta.err = SR_ST_BAD_COUNT;
        } else if (n32 > meta.store_words || off > meta.store_words - n32 ||
                   (off >> SR_P4_ELEMS_LOG2) != ((off + n32 - 1) >> SR_P4_ELEMS_LOG2)) {
            meta.err = SR_ST_RANGE;
        }
        if (meta.err != 0) {
            return;
        }
        row = meta.blk * SR_P4_STORE_ROWS + (off >> SR_P4_ELEMS_LOG2);
        meta.step_base = row * SR_P4_MAX_WORKERS;
        widx = meta.step_base + (index_t)hdr.serene.worker; // worker_ok: worker < N <= 64
        step_epoch_reg.read(tag, row);
        step_on_reg.read(on, row);
        step_wait_reg.read(wait, row);
        step_low_reg.read(low, row);
        if (tag != meta.epoch) {
            on = 0; // never stepped in this incarnation
            wait = 0;
            low = 0;
        }
        step_last_reg.read(last, widx);
        low_reg.read(blow, (bit<32>)hdr.serene.job);

        // piece_state: new, applied already (dup), a late copy, or refused.
        mine = (on & meta.wbit) != 0;
        d = c - last;
        if (mine && d == 0) {
            dup = true;
        } else if (probe) {
            // Not applied, or refused: nothing to wait for (NAK below).
        } else if (mine && d[31:31] == 1) {
            old = true; // older than the last applied: a late copy, dropped
        } else if (mine && d != 1) {
            meta.err = SR_ST_MISMATCH; // a clock of this row skipped
        } else if (!mine && on != 0 && c != low + 1) {
            meta.err = SR_ST_MISMATCH; // not starting where the others started
        } else if (on != 0 && (int<32>)(c - low) > (int<32>)(ring - 1)) {
            meta.err = SR_ST_CLOCK_AHEAD; // its count entry still holds an older clock
        } else if ((int<32>)(c - blow) > (int<32>)ring) {
            meta.err = SR_ST_CLOCK_AHEAD; // the barrier's entry could not take it
        } else {
            fresh = true;
        }
        if (old || meta.err != 0) {
            meta.route = SR_P4_OUT_DROP; // ingress.p4 answers meta.err with ERROR
            return;
        }

        if (probe) {
            // sr_step_probe: STEP_HELD when applied and still waiting (its
            // wait bit set again: the row will come), else STEP_NAK.
            if (dup && (int<32>)(c - low) > (int<32>)meta.pol_s) {
                step_wait_reg.write(row, wait | meta.wbit);
                answer_short(SR_OP_STEP_HELD, low);
            } else {
                answer_short(SR_OP_STEP_NAK, low);
            }
            return;
        }

        meta.step_note = true;
        if (fresh) {
            // apply: the words (store.p4), the row's step state, the count
            // of the clock; the row's low moves when the entry of low + 1
            // fills (the only one that can: clocks are consecutive).
            if (on == 0) {
                low = c - 1; // the row's first step: nothing below c
            }
            on = on | meta.wbit;
            step_last_reg.write(widx, c);
            step_pol_reg.write(widx, (bit<32>)meta.pol_mode << 16 | (meta.pol_s & 0xffff));
            cidx = row * SR_P4_RING + (c & meta.ring_mask & (SR_P4_RING - 1));
            step_cnt_reg.read(cnt, cidx);
            step_cnt_epoch_reg.read(tag, cidx);
            if (tag != meta.epoch) {
                cnt = 0;
            }
            cnt = cnt + 1;
            if ((bit<32>)cnt >= meta.n_workers && c == low + 1) {
                cnt = 0; // free for the clock R later
                low = c;
                moved = true;
            }
            step_cnt_reg.write(cidx, cnt);
            step_cnt_epoch_reg.write(cidx, meta.epoch);
            step_on_reg.write(row, on);
            step_low_reg.write(row, low);
            step_epoch_reg.write(row, meta.epoch);
            meta.step_apply = true;

            // step_complete: is this the last of the step's aux pieces?
            kidx = meta.blk * SR_P4_MAX_WORKERS + (index_t)hdr.serene.worker;
            step_clk_reg.read(clk, kidx);
            step_n_reg.read(done, kidx);
            step_wk_epoch_reg.read(tag, kidx);
            if (tag != meta.epoch) {
                done = 0;
            }
            if (done == 0 || clk != c) {
                clk = c;
                done = 0;
            }
            done = done + 1;
            step_clk_reg.write(kidx, clk);
            step_n_reg.write(kidx, done);
            step_wk_epoch_reg.write(kidx, meta.epoch);
            meta.step_record = done == hdr.serene.aux;
        }

        // Who gets the row: the sender when c - low <= s(c); when the low
        // moved, the waiting workers it releases (egress checks each).
        ready = (int<32>)(c - low) <= (int<32>)meta.pol_s;
        meta.step_self = ready;
        meta.step_cand = moved ? wait & ~meta.wbit : 0;
        if (ready) {
            wait = wait & ~meta.wbit;
        } else {
            wait = wait | meta.wbit;
        }
        step_wait_reg.write(row, wait);
        if (ready || meta.step_cand != 0) {
            answer_row(low, meta.store_words - (off & ~(bit<32>)(SR_P4_ELEMS - 1)));
        } else if (dup) {
            answer_short(SR_OP_STEP_HELD, low);
        } else {
            meta.route = SR_P4_OUT_DROP; // waits for the row: no answer, as a contribution
        }
    }
}

#endif /* SERENE_P4_STEP_P4_ */
