/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lanes.p4 - SR_LANES(X) applies the macro X to every lane number
 * 0 .. SR_P4_ELEMS - 1. v1model has no loops, so per-value work (one
 * register array per lane, one add per lane) is unrolled through it.
 * It must list exactly SR_P4_ELEMS lanes: change both together.
 */
#ifndef SERENE_P4_LANES_P4_
#define SERENE_P4_LANES_P4_

#include "constants.p4"

#define SR_LANES(X) \
    X(0) \
    X(1) \
    X(2) \
    X(3) \
    X(4) \
    X(5) \
    X(6) \
    X(7) \
    X(8) \
    X(9) \
    X(10) \
    X(11) \
    X(12) \
    X(13) \
    X(14) \
    X(15) \
    X(16) \
    X(17) \
    X(18) \
    X(19) \
    X(20) \
    X(21) \
    X(22) \
    X(23) \
    X(24) \
    X(25) \
    X(26) \
    X(27) \
    X(28) \
    X(29) \
    X(30) \
    X(31)

#endif /* SERENE_P4_LANES_P4_ */
