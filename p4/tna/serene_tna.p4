/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene_tna.p4 - Serene's aggregator for Tofino 1 (TNA) and Tofino 2
 * (T2NA): the streaming allreduce (32 values per packet), the SSP barrier
 * with its clock-indexed policy and the store, within Tofino's limits (one
 * access per register per packet, 4 stateful ALUs per stage, 32-bit
 * words). What it gives up and why, and how to compile it:
 * p4/tna/README.md.
 */
#include <core.p4>
#include "tna_arch.p4"

#include "tna_egress.p4"
#include "tna_headers.p4"
#include "tna_ingress.p4"
#include "tna_parde.p4"

Pipeline(IngressParser(), Ingress(), IngressDeparser(), EgressParser(), Egress(),
         EgressDeparser()) pipe;

Switch(pipe) main;
