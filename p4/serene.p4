/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene.p4 - Serene's in-network aggregator for v1model (BMv2
 * simple_switch): streaming allreduce with a shadow copy, the SSP
 * parameter store, the SSP step (push, clock and pull of a row as one
 * packet) and the barrier with its clock-indexed policy, with the
 * semantics of the software switch (p4/swswitch) on the wire format of
 * lib/proto/wire.h. Includes and the pipeline only; see p4/README.md for
 * how to compile, run and configure it, and where it differs.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/egress.p4"
#include "include/headers.p4"
#include "include/ingress.p4"
#include "include/parser.p4"
#include "include/types.p4"

V1Switch(SereneParser(), SereneVerifyChecksum(), SereneIngress(), SereneEgress(),
         SereneComputeChecksum(), SereneDeparser()) main;
