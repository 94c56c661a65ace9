/* SPDX-License-Identifier: Apache-2.0 */
/*
 * share.p4 - a shared job: its slots' accumulators are blocks of the
 * switch's memory leased by the control plane, and a round in a slot with
 * no block is summed at the job's fallback aggregator, a host (the
 * software switch's pool.c and fallback.c; p4/README.md, "Shared jobs").
 *
 * - share_table: a shared job's fallback (address, UDP port, switch port)
 *   and the window (status) its answers announce: the blocks leased when
 *   fewer than the slots, 0 otherwise, as serene-switch's first-come pool
 *   stamps them.
 * - lease_reg (allreduce.p4), per (job block, slot): the block + 1 whose
 *   value registers hold the slot's two cells, 0 for none. The control
 *   plane writes it (serene-ctl compile). The cells' other state (seen,
 *   count, round metadata) stays the job's, as in the software switch.
 * - relay_reg (allreduce.p4), per cell, under the slot's incarnation tag:
 *   where the cell's round is summed (SR_P4_CELL_*), chosen when it starts;
 *   an away round's metadata is the cell's, so its copies and probes follow
 *   it there.
 * - To the fallback, unchanged but for the addresses (from this switch's
 *   address and port, as serene-switch relays): every AR_DATA and
 *   AR_PROBE of an away round, the workers' LEAVE, and a copy of every
 *   JOIN this switch accepts (an ingress clone to SR_P4_FB_SESSION0 +
 *   block). A worker the fallback has not bound yet (fb_bound_reg, set by
 *   its JOIN_ACK) first gets its JOIN sent again, built in that clone
 *   from its binding (sr_fb_relay's rejoin).
 * - fallback_table: what the fallback answers (AR_RESULT, AR_HELD, AR_NAK,
 *   ERROR about a round; JOIN_ACK) about a worker bound here goes on to it
 *   (down_table), marked SR_FLAG_FALLBACK; an away round's result carries
 *   the window. Anything else from it is dropped.
 * - take_reg (allreduce.p4), per (job block, slot): the control plane
 *   takes the slot's block back (1, serene-switch's `pool take`): the
 *   slot's next round goes to the fallback (2 + its version), and when
 *   its result comes back the lease is cleared (the block is free for the
 *   control plane to lease again) and the other version's round here can
 *   no longer answer (sr_pool_away_done). serene-switch also hands a
 *   taken block over at once, or at the job's next call, when no worker
 *   asks about the slot; here the control plane does that itself, by
 *   clearing lease_reg.
 * - want_reg and slot_ts_reg (allreduce.p4), per (job block, slot): a
 *   round found no block (the control plane clears it when it leases
 *   one), and the slot's last packet: what p4/bmv2_pool.py, the control
 *   plane that runs the pool (first come, fair or priority), reads.
 * A shared
 * job's workers use UDP here: a JOIN over RoCEv2 is refused UNSUPPORTED
 * (the relays would carry its RoCE headers to the fallback), where
 * serene-switch relays a RoCE worker's requests as UDP.
 */
#ifndef SERENE_P4_SHARE_P4_
#define SERENE_P4_SHARE_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "types.p4"

// The job's fallback, after job_table: a shared job, or none.
control ShareJob(inout headers_t hdr, inout meta_t meta) {
    @name(".set_share") action set_share(bit<32> fb_addr, bit<16> fb_udp_port, bit<9> port,
                                         bit<8> window) {
        meta.shared = true;
        meta.fb_ip = fb_addr;
        meta.fb_udp = fb_udp_port;
        meta.fb_port = port;
        meta.stamp = window;
    }

    @name(".share_table") table share_table {
        key = { hdr.serene.job: exact @name("job"); }
        actions = { set_share; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        share_table.apply();
    }
}

// Is this answer from a shared job's fallback?
control FallbackAnswer(inout headers_t hdr, inout meta_t meta) {
    @name(".set_from_fallback") action set_from_fallback() {
        meta.from_fallback = true;
    }

    @name(".fallback_table") table fallback_table {
        key = {
            hdr.ipv4.src_addr: exact @name("src_addr");
            hdr.udp.src_port: exact @name("src_port");
            hdr.serene.job: exact @name("job");
        }
        actions = { set_from_fallback; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        fallback_table.apply();
    }
}

// The fallback's answer on to the worker it names, from this switch's
// address and port (to which the fallback sent it).
control RankDown(inout headers_t hdr, inout meta_t meta) {
    @name(".to_rank") action to_rank(bit<32> addr, bit<16> udp_port, bit<9> port) {
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = addr;
        hdr.udp.src_port = hdr.udp.dst_port;
        hdr.udp.dst_port = udp_port;
        hdr.eth.src_addr = hdr.eth.dst_addr;
        hdr.eth.dst_addr = 0xffffffffffff; // the job file names no MAC
        hdr.serene.flags = hdr.serene.flags | SR_FLAG_FALLBACK;
        meta.rank_port = port;
    }

    @name(".drop_answer") action drop_answer() {
        meta.route = SR_P4_OUT_DROP;
    }

    // (job, rank) -> the rank's address and port.
    @name(".down_table") table down_table {
        key = {
            hdr.serene.job: exact @name("job");
            hdr.serene.worker: exact @name("rank");
        }
        actions = { to_rank; drop_answer; }
        default_action = drop_answer();
        size = 4096;
    }

    apply {
        down_table.apply();
    }
}

#endif /* SERENE_P4_SHARE_P4_ */
