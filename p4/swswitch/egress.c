/* SPDX-License-Identifier: Apache-2.0 */
/*
 * egress.c - the per-copy rewrite of p4/include/egress.p4: each replica of
 * an action is its header template with the worker id of its destination.
 * The addresses are the daemon's to write (its I/O sends each replica to
 * its sr_peer); the payload goes out unchanged.
 */
#include "pipeline.h"

void sr_pipe_replica_hdr(const sr_pipe_action *a, unsigned k, uint8_t *out)
{
    sr_hdr h = a->hdr;

    h.worker = a->dests[k].worker;
    if (a->dest_seq) {
        h.seq = a->dests[k].seq;
        h.exp = (int8_t)a->dests[k].mode;
        h.slot = a->dests[k].s;
    }
    sr_hdr_pack(out, &h);
}
