/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene_tna.p4 - Tofino (TNA) proof of concept of Serene's aggregator:
 * the SSP barrier with its clock-indexed policy and a reduced parameter
 * store, within Tofino's limits (one access per register per packet, a
 * few stateful ALUs per stage, 32-bit words). No allreduce slots. What it
 * leaves out and why: p4/tna/README.md.
 * Build with the Intel P4 Studio compiler: bf-p4c --arch tna serene_tna.p4
 */
#include <core.p4>
#include <tna.p4>

#include "tna_egress.p4"
#include "tna_headers.p4"
#include "tna_ingress.p4"
#include "tna_parde.p4"

Pipeline(IngressParser(), Ingress(), IngressDeparser(), EgressParser(), Egress(),
         EgressDeparser()) pipe;

Switch(pipe) main;
