/* SPDX-License-Identifier: Apache-2.0 */
/*
 * roce.h - the software switch's RoCEv2 port: RoCEv2 frames (UDP 4791, as
 * a worker's UC queue pair emits them; lib/proto/roce.h maps the fields)
 * into the same pipeline (pipeline.h) as UDP datagrams, and the pipeline's
 * answers back as RoCEv2 frames that the worker's UC QP accepts.
 *
 * The switch plays one QP per binding (job, worker), numbered
 * SR_ROCE_QPN(job, worker). What it keeps per QP: the worker's QP number
 * (the ImmDt of the worker's JOIN, learnt when the pipeline answers that
 * JOIN with JOIN_ACK, so a refused JOIN changes nothing), the address the
 * binding's packets come from, and the PSN of the next packet it sends on
 * it (+1 a packet; from 0 for a newly learnt QP). A fixed table of
 * SR_ROCE_SW_QPS entries, allocated with the port: nothing allocates per
 * packet. The ICRC of every frame received is checked, and computed for
 * every frame sent (roce.h says which fields are masked).
 *
 * A unicast answer to a RoCE request goes out as RoCE, to the request's
 * source QP (a SEND's ImmDt; for a WRITE, the QP learnt for the binding),
 * or not at all. A multicast replica goes out as RoCE when its worker's
 * binding was made over RoCE from the replica's address; otherwise it is
 * the caller's to send as UDP (a job may mix both kinds of workers). An
 * answer to a QP not in the table (a refused JOIN's ERROR) uses PSN 0.
 */
#ifndef SERENE_SWSWITCH_ROCE_H
#define SERENE_SWSWITCH_ROCE_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"
#include "proto/roce.h"

#define SR_ROCE_SW_QPS 4096u /* RoCE bindings the switch holds at most (a power of 2) */

#define SR_ROCE_SW_COUNTERS(X)                                                                    \
    X(rx)       /* RoCE frames handed to the pipeline */                                         \
    X(tx)       /* RoCE frames built */                                                           \
    X(learnt)   /* worker QPs learnt or changed by a JOIN_ACK */                                   \
    X(no_qp)    /* answers to a worker with no RoCE QP from that address: not sent */             \
    X(qp_full)  /* JOIN_ACKs whose binding found no free entry: its answers are not sent */

typedef struct sr_roce_sw_counters {
#define SR_ROCE_X_FIELD(name) uint64_t name;
    SR_ROCE_SW_COUNTERS(SR_ROCE_X_FIELD)
#undef SR_ROCE_X_FIELD
    uint64_t rejected[SR_ROCE_NREASONS]; /* by -sr_roce_frame_parse / to_msg result; [0] unused */
} sr_roce_sw_counters;

typedef struct sr_roce_sw sr_roce_sw;

/* A request as it came in: its source QP (a SEND's ImmDt; 0 for a WRITE)
 * and the binding its DestQP names. */
typedef struct sr_roce_req {
    uint32_t src_qpn;
    uint32_t dst_qpn;
    uint8_t opcode;
} sr_roce_req;

/* Allocate a port with an empty QP table; NULL when out of memory. */
sr_roce_sw *sr_roce_sw_create(void);
/* Free it; accepts NULL and *s == NULL, sets *s to NULL. */
void sr_roce_sw_destroy(sr_roce_sw **s);

/* A frame of len bytes to UDP port 4791: parsed and checked (ICRC
 * included), its Serene message written to msg (SR_WIRE_MAX_MSG bytes),
 * *src set to the address the pipeline sees (IPv4, UDP source port) and
 * *req to the RoCE fields the answer needs. Returns the message's length
 * (> 0) for sr_pipe_process, or an SR_ROCE_* result < 0 (counted): the
 * frame is then dropped. */
int sr_roce_sw_ingress(sr_roce_sw *s, const uint8_t *frame, size_t len, uint8_t *msg,
                       sr_peer *src, sr_roce_req *req);

/* After sr_pipe_process of a request (req NULL: it came over UDP): a
 * JOIN_ACK answering a SEND binds the QP of (job, worker) to the SEND's
 * source QP and address; one answering a UDP JOIN ends the binding's RoCE
 * QP (its answers go as UDP from then on). */
void sr_roce_sw_learn(sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_out *out);
/* The same for one action. */
void sr_roce_sw_learn_action(sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_action *a);

/* Whether replica k of a, the answer to req (NULL: a UDP request), goes
 * out as RoCE (above). */
int sr_roce_sw_is_roce(const sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_action *a,
                       unsigned k);

/* Replica k of a (the answer to req, NULL for a UDP request) as a RoCE
 * frame into frame (cap bytes): MACs and IPv4 addresses from addr, UDP
 * source port SR_ROCE_SPORT_BASE | the switch QP's low 14 bits,
 * destination port 4791, DestQP the worker's, the QP's next PSN, ImmDt the
 * switch's QP. Returns the length, or 0 (counted in no_qp) when the
 * replica has no RoCE QP or the frame would not fit. */
size_t sr_roce_sw_egress(sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_action *a,
                         unsigned k, const sr_frame_addr *addr, uint8_t *frame, size_t cap);

/* A message of len bytes (header and payload) to dst, out of any
 * request's context (a copy the fault injector held): RoCE when its
 * header's (job, worker) has a QP learnt from dst, as sr_roce_sw_egress
 * sends a multicast replica. Returns the frame's length, or 0 when it is
 * not RoCE's (no QP; not counted) or does not fit. */
size_t sr_roce_sw_egress_msg(sr_roce_sw *s, const sr_peer *dst, const uint8_t *msg, size_t len,
                             const sr_frame_addr *addr, uint8_t *frame, size_t cap);

void sr_roce_sw_counters_get(const sr_roce_sw *s, sr_roce_sw_counters *c);

#endif /* SERENE_SWSWITCH_ROCE_H */
