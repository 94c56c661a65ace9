/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upstream.p4 - a leaf of an aggregation tree: the software switch's
 * p4/swswitch/upstream.c, rule for rule where one packet in, one packet out
 * allows (p4/README.md, "Trees", lists where it differs). The cells' side
 * (a partial up, the parent's answers) is in allreduce.p4, as it is in
 * allreduce.c.
 *
 * - upstream_table: a leaf job's way up (the port toward the parent, the
 *   parent's address, its job of the leaves and this leaf's member id, this
 *   switch's own address) and the contributions a local round waits for.
 *   A job without an entry is no leaf: n_local = n_workers.
 * - parent_table: an answer (AR_RESULT, AR_NAK, AR_HELD, ERROR) from a
 *   parent (source address and port) about member `member` of its job
 *   `job` belongs to the leaf job named by the entry; any other answer is
 *   dropped, as before.
 * - relay: JOIN (once membership bound the worker), LEAVE, PUSH, PULL,
 *   CLOCK, STEP and STEP_PROBE of a leaf job go to the parent, unchanged but for the addresses:
 *   from this switch's address and port SR_P4_RELAY_PORT0 + rank, where the
 *   root binds the rank (its worker_table) and answers it (JOIN_ACK,
 *   PUSH_ACK, PULL_RESP, PROCEED, HOLD, RELEASE, STEP_RESP, STEP_HELD,
 *   STEP_NAK, ERROR). Such an answer is
 *   not to the switch's port, so it is no Serene request here: relay_table
 *   sends it on to the worker, from the switch's own address as the
 *   worker's connected socket requires (the software leaf's relay_down).
 *   The store and the barrier live at the root.
 * A parent is an ordinary job whose worker_table entries are the leaves'
 * addresses; its members are bound by the control plane (bound_reg), as
 * this program's bindings are fixed by worker_table anyway.
 */
#ifndef SERENE_P4_UPSTREAM_P4_
#define SERENE_P4_UPSTREAM_P4_

#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "types.p4"

// Each control below is applied at one place in ingress.p4 (a table is
// applied once per pipeline).

// relay_up: a request unchanged but for its addresses, to the parent.
action relay_up(inout headers_t hdr, inout meta_t meta) {
    hdr.ipv4.src_addr = meta.self_ip;
    hdr.udp.src_port = (bit<16>)SR_P4_RELAY_PORT0 + hdr.serene.worker;
    hdr.ipv4.dst_addr = meta.up_ip;
    hdr.udp.dst_port = meta.up_udp;
    meta.route = SR_P4_OUT_UP;
}

// The job's way up, after job_table: a leaf, or n_local = n_workers.
control UpstreamJob(inout headers_t hdr, inout meta_t meta) {
    @name(".set_upstream") action set_upstream(bit<9> port, bit<32> parent_addr,
                                               bit<16> parent_port, bit<16> up_job,
                                               bit<16> member, bit<32> self_addr,
                                               bit<32> n_local) {
        meta.leaf = true;
        meta.up_port = port;
        meta.up_ip = parent_addr;
        meta.up_udp = parent_port;
        meta.up_job = up_job;
        meta.up_member = member;
        meta.self_ip = self_addr;
        meta.n_local = n_local;
    }

    // A leaf job -> its way up (serene-switch's local=, up=, upjob=, member=).
    @name(".upstream_table") table upstream_table {
        key = { hdr.serene.job: exact @name("job"); }
        actions = { set_upstream; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        meta.leaf = false;
        meta.n_local = meta.n_workers;
        upstream_table.apply();
    }
}

// Is this answer from a leaf's parent, about the leaf's cells?
control ParentAnswer(inout headers_t hdr, inout meta_t meta) {
    // From here on it is the leaf job's packet (job_table, the cells, the
    // multicast down).
    @name(".set_from_parent") action set_from_parent(bit<16> leaf_job) {
        meta.from_parent = true;
        hdr.serene.job = leaf_job;
    }

    @name(".parent_table") table parent_table {
        key = {
            hdr.ipv4.src_addr: exact @name("src_addr");
            hdr.udp.src_port: exact @name("src_port");
            hdr.serene.job: exact @name("job");
            hdr.serene.worker: exact @name("member");
        }
        actions = { set_from_parent; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        meta.from_parent = false;
        parent_table.apply();
    }
}

// A root's answer to a request this leaf relayed (to port
// SR_P4_RELAY_PORT0 + rank): on to the worker, from this switch's Serene
// address (the software leaf's relay_down).
control RelayDown(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name(".relay_down") action relay_down(bit<32> worker_addr, bit<16> worker_port,
                                           bit<9> port) {
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = worker_addr;
        hdr.udp.src_port = SR_WIRE_UDP_PORT;
        hdr.udp.dst_port = worker_port;
        hdr.udp.checksum = 0; // the addresses changed; 0 is allowed over IPv4
        hdr.eth.src_addr = SR_P4_SWITCH_MAC;
        hdr.eth.dst_addr = 0xffffffffffff; // the job file names no MAC
        sm.egress_spec = port;
        meta.route = SR_P4_OUT_FORWARD;
    }

    // (this switch's address, SR_P4_RELAY_PORT0 + rank) -> the rank's worker.
    @name(".relay_table") table relay_table {
        key = {
            hdr.ipv4.dst_addr: exact @name("dst_addr");
            hdr.udp.dst_port: exact @name("dst_port");
        }
        actions = { relay_down; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    apply {
        if (hdr.udp.isValid()) {
            relay_table.apply();
        }
    }
}

#endif /* SERENE_P4_UPSTREAM_P4_ */
