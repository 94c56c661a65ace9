/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_cells.p4 - the Ingress control's per-lane and per-round pieces, as
 * macros it expands (tna_ingress.p4): a lane's register, RegisterActions
 * and table, and the update of a cell's round that its three copies share.
 * They use the control's hdr and md.
 */
#ifndef SERENE_TNA_CELLS_P4_
#define SERENE_TNA_CELLS_P4_

// Lane i: an allreduce cell's sum of word i, or store row word i.
#define SR_TNA_LANE(i)                                                      \
    Register<bit<32>, bit<16>>(SR_TNA_LANE_ENTRIES, 0) lane_reg_##i;        \
    RegisterAction<bit<32>, bit<16>, bit<32>>(lane_reg_##i) lane_set_##i = { \
        void apply(inout bit<32> value, out bit<32> rv) {                   \
            value = hdr.vals[i].v;                                          \
            rv = value;                                                     \
        }                                                                   \
    };                                                                      \
    RegisterAction<bit<32>, bit<16>, bit<32>>(lane_reg_##i) lane_add_##i = { \
        void apply(inout bit<32> value, out bit<32> rv) {                   \
            value = value + hdr.vals[i].v;                                  \
            rv = value;                                                     \
        }                                                                   \
    };                                                                      \
    RegisterAction<bit<32>, bit<16>, bit<32>>(lane_reg_##i) lane_read_##i = { \
        void apply(inout bit<32> value, out bit<32> rv) {                   \
            rv = value;                                                     \
        }                                                                   \
    };
// Lane i's one table: lop and the round's flags (or the push number and
// the row check) pick the access at lidx, for the words the packet has.
// One table per lane (Tofino 1 has 16 logical tables per stage).
#define SR_TNA_LANE_TABLE(i)                                                \
    action l_set_##i() { hdr.vals[i].v = lane_set_##i.execute(md.lidx); }   \
    action l_add_##i() { hdr.vals[i].v = lane_add_##i.execute(md.lidx); }   \
    action l_read_##i() { hdr.vals[i].v = lane_read_##i.execute(md.lidx); } \
    table lane_tbl_##i {                                                    \
        key = {                                                             \
            md.lop: ternary;                                                \
            md.k_same: ternary;                                             \
            md.k_dup: ternary;                                              \
            md.k_done: ternary;                                             \
            md.k_new: ternary;                                              \
            md.push_new: ternary;                                           \
            md.k_range: ternary;                                            \
            hdr.vals[i].isValid(): ternary;                                 \
        }                                                                   \
        actions = { l_set_##i; l_add_##i; l_read_##i; NoAction; }           \
        const default_action = NoAction();                                  \
        size = 8;                                                           \
        const entries = {                                                   \
            (SR_TNA_LOP_AR, 1, 0, _, _, _, _, true) : l_add_##i();          \
            (SR_TNA_LOP_AR, 1, 1, 1, _, _, _, true) : l_read_##i();         \
            (SR_TNA_LOP_AR, _, _, _, 1, _, _, true) : l_set_##i();          \
            (SR_TNA_LOP_PUSH, _, _, _, _, 1, 0, true) : l_add_##i();        \
            (SR_TNA_LOP_PULL, _, _, _, _, _, 0, true) : l_read_##i();       \
        }                                                                   \
    }
#define SR_TNA_LANE_APPLY(i) lane_tbl_##i.apply();
#define SR_TNA_LANES(X)                                                     \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12)    \
    X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)      \
    X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)

// A cell's round (round_t): the contribution's update, the same in the
// three copies; a probe's read writes nothing. fp - lo > 0 (signed), as
// high_raise's serial test: the piece's round number (fp's top byte) is 1
// to 127 after the cell's, whatever the low 24 bits; with the same number
// it is the CRCs' order, so a disagreeing piece may replace the open round
// (README: either way that round fails). A stateful ALU takes two PHV
// inputs: fp and fx.
#define SR_TNA_ROUND_NEWER ((int<32>)(md.fp - value.lo) > 0)
#define SR_TNA_ROUND_UPDATE                                                 \
    if (SR_TNA_ROUND_NEWER) {                                               \
        value.lo = md.fp; /* a new round, whatever the cell held */         \
        value.hi = md.fx;                                                   \
    } else if (value.lo == md.fp) {                                         \
        value.hi = value.hi & md.fx; /* the round: the worker in */         \
    }

#endif /* SERENE_TNA_CELLS_P4_ */
