/* SPDX-License-Identifier: Apache-2.0 */
/*
 * constants.p4 - the P4 program's own sizes (the wire format's constants
 * are in wire_constants.p4, generated from lib/proto/wire.h).
 *
 * These are written as #define lines because sr-conform (p4/conformance)
 * reads SR_P4_ELEMS and SR_P4_SLOTS from this file to set up the software
 * switch's job the same way: this file is their one source.
 */
#ifndef SERENE_P4_CONSTANTS_P4_
#define SERENE_P4_CONSTANTS_P4_

// Values per packet, unrolled as lanes: v1model has no loops, so each lane
// is one header-stack element and one register array. 32 is the row of the
// paper's store and keeps BMv2's per-packet work small; a job on this
// program uses elems_per_pkt = 32 (JOIN_ACK says so).
#define SR_P4_ELEMS 32
#define SR_P4_ELEMS_LOG2 5 // store rows: word offset >> this = row

// Allreduce slots per job (pool_slots in JOIN_ACK): each holds two cells
// (version 0 and 1, the shadow copy). 64 slots x 32 lanes x 4 bytes x 2
// = 16 KiB per job: enough to keep a window of 64 packets in flight.
#define SR_P4_SLOTS 64

// Jobs with state in the registers at once. A job's block of slot, store
// and ring registers is its job id modulo this number, so jobs sharing one
// switch need distinct job ids modulo SR_P4_MAX_JOBS (p4/README.md).
#define SR_P4_JOB_BITS 2
#define SR_P4_MAX_JOBS 4

// Store rows of SR_P4_ELEMS words per job: 64 x 32 = 2048 words. A job's
// store_words (job_table) above this is cut to it: accesses beyond are
// refused with RANGE.
#define SR_P4_STORE_ROWS 64
#define SR_P4_STORE_WORDS 2048

// Workers per job: one 64-bit bitmap per slot cell, ring entry and job
// (bound and left), as in the software switch (SR_WIRE_MAX_WORKERS).
#define SR_P4_MAX_WORKERS 64

// Barrier ring entries per job: the job's ring R (ring_mask + 1 in
// job_table) must not exceed it. 64 is serene-ctl's default ring.
#define SR_P4_RING 64

// Register sizes derived from the above.
#define SR_P4_CELLS (SR_P4_MAX_JOBS * SR_P4_SLOTS * 2)
#define SR_P4_SLOT_ENTRIES (SR_P4_MAX_JOBS * SR_P4_SLOTS)
#define SR_P4_ROWS (SR_P4_MAX_JOBS * SR_P4_STORE_ROWS)
#define SR_P4_PUSH_ENTRIES (SR_P4_ROWS * SR_P4_MAX_WORKERS)
#define SR_P4_STEP_ENTRIES (SR_P4_ROWS * SR_P4_MAX_WORKERS) // per (row, worker): step.p4
#define SR_P4_STEP_CNT_ENTRIES (SR_P4_ROWS * SR_P4_RING)    // per (row, clock mod R)
#define SR_P4_RING_ENTRIES (SR_P4_MAX_JOBS * SR_P4_RING)
#define SR_P4_WORKER_ENTRIES (SR_P4_MAX_JOBS * SR_P4_MAX_WORKERS)
// Per-job registers indexed by the 16-bit job id itself (low_reg and
// high_reg, as serene-ctl's command file writes them).
#define SR_P4_JOB_IDS 65536

// A leaf relays a worker's JOIN, LEAVE, PUSH, PULL, CLOCK and STEP to the root
// from its own address and UDP port SR_P4_RELAY_PORT0 + rank (upstream.p4):
// the root binds rank R at that port (worker_table) and answers there, and
// the leaf's relay_table sends the answer on to the worker. Above the
// switch's port, out of the usual ephemeral range's start.
#define SR_P4_RELAY_PORT0 49000

// The switches' Ethernet address in a tree: a leaf's frames to its parent,
// and the relayed answers to its workers, come from it (the workers reach a
// switch through a static neighbour entry with this address, as on
// bench/fabric_net.sh's rack; BMv2 answers no ARP).
#define SR_P4_SWITCH_MAC 0x0253450000fe

// v1model plumbing.
#define SR_P4_CPU_CLONE_FL 1 // field list preserved in the clone of a CLOCK or STEP answer
// A STEP's STEP_RESP leaves as an ingress clone to mirror session
// SR_P4_STEP_SESSION0 + (job id mod SR_P4_MAX_JOBS), which serene-ctl
// points at the job's multicast group (mirroring_add_mc): above every
// port's session (a port is 9 bits; sessions are 15).
#define SR_P4_STEP_SESSION0 512
// A shared job's JOIN also goes to its fallback aggregator as an ingress
// clone to mirror session SR_P4_FB_SESSION0 + (job id mod SR_P4_MAX_JOBS),
// which serene-ctl points at the fallback's port (mirroring_add).
#define SR_P4_FB_SESSION0 516
#define SR_P4_DROP_PORT 511  // v1model's drop port

#endif /* SERENE_P4_CONSTANTS_P4_ */
