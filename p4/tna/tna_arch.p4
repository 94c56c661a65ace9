/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_arch.p4 - the architecture the program is compiled for: T2NA for
 * Tofino 2 (p4c --target tofino2 --arch t2na), TNA for Tofino 1. The
 * compiler's driver defines __TARGET_TOFINO__ (1 or 2).
 */
#ifndef SERENE_TNA_ARCH_P4_
#define SERENE_TNA_ARCH_P4_

#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#endif /* SERENE_TNA_ARCH_P4_ */
