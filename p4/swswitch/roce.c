/* SPDX-License-Identifier: Apache-2.0 */
/*
 * roce.c - the software switch's RoCEv2 port (roce.h): frames in, Serene
 * messages to the pipeline, its answers out as RoCEv2 frames, and the QP
 * table that makes them acceptable to each worker's UC QP (roce.h).
 *
 * The table is open addressing with linear probing on SR_ROCE_QPN(job,
 * worker); entries are never removed (a binding that moves to another QP
 * or address overwrites its entry at the next JOIN_ACK), so a probe ends
 * at the key or at the first free entry.
 */
#include "roce.h"

#include <stdlib.h>
#include <string.h>

typedef struct roce_qp {
    uint32_t key;  /* SR_ROCE_QPN(job, worker): the switch's QP; 0 = free */
    uint32_t qpn;  /* the worker's QP */
    uint32_t psn;  /* next PSN sent on it */
    sr_peer peer;  /* where the binding's packets come from */
    int live;      /* 0: the binding rejoined over UDP */
} roce_qp;

struct sr_roce_sw {
    roce_qp qp[SR_ROCE_SW_QPS];
    sr_roce_sw_counters c;
    uint8_t msg[SR_WIRE_MAX_MSG]; /* egress: the replica's Serene message */
};

_Static_assert((SR_ROCE_SW_QPS & (SR_ROCE_SW_QPS - 1u)) == 0, "the table's size is a power of 2");

sr_roce_sw *sr_roce_sw_create(void)
{
    return calloc(1, sizeof(sr_roce_sw));
}

void sr_roce_sw_destroy(sr_roce_sw **s)
{
    if (s) {
        free(*s);
        *s = NULL;
    }
}

/* The entry of key, or the free one where it would go; NULL when the
 * table is full and key is not in it. */
static roce_qp *slot_of(const sr_roce_sw *s, uint32_t key)
{
    unsigned i = (key * 2654435761u) >> 20 & (SR_ROCE_SW_QPS - 1u);
    for (unsigned n = 0; n < SR_ROCE_SW_QPS; n++, i = (i + 1u) & (SR_ROCE_SW_QPS - 1u))
        if (s->qp[i].key == key || !s->qp[i].key)
            return (roce_qp *)&s->qp[i];
    return NULL;
}

int sr_roce_sw_ingress(sr_roce_sw *s, const uint8_t *frame, size_t len, uint8_t *msg,
                       sr_peer *src, sr_roce_req *req)
{
    sr_roce_pkt p;
    int rc = sr_roce_frame_parse(frame, len, &p);
    if (rc == SR_ROCE_OK)
        rc = sr_roce_to_msg(&p.m, p.dst_qpn, msg, SR_WIRE_MAX_MSG);
    if (rc < 0) {
        s->c.rejected[-rc]++;
        return rc;
    }
    src->ip = p.a.src_ip;
    src->port = p.a.src_port;
    req->opcode = p.m.opcode;
    req->src_qpn = p.m.opcode == SR_ROCE_SEND_ONLY_IMM ? p.m.imm & SR_ROCE_QPN_MASK : 0;
    req->dst_qpn = p.dst_qpn;
    s->c.rx++;
    return rc;
}

void sr_roce_sw_learn(sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_out *out)
{
    for (unsigned i = 0; i < out->n; i++)
        sr_roce_sw_learn_action(s, req, &out->act[i]);
}

void sr_roce_sw_learn_action(sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_action *a)
{
    if ((req && req->opcode != SR_ROCE_SEND_ONLY_IMM) || a->hdr.op != SR_OP_JOIN_ACK ||
        a->multicast || a->n_dests != 1 || a->dests[0].worker >= SR_WIRE_MAX_WORKERS)
        return;
    uint32_t key = SR_ROCE_QPN(a->hdr.job, a->dests[0].worker);
    if (!req) { /* a UDP JOIN: the binding is UDP's now */
        roce_qp *q = slot_of(s, key);
        if (q && q->key == key)
            q->live = 0;
        return;
    }
    roce_qp *q = key == req->dst_qpn ? slot_of(s, key) : NULL;
    if (!q) {
        s->c.qp_full += key == req->dst_qpn;
        return;
    }
    if (q->key != key || !q->live || q->qpn != req->src_qpn || q->peer.ip != a->dests[0].peer.ip ||
        q->peer.port != a->dests[0].peer.port) {
        q->key = key;
        q->qpn = req->src_qpn;
        q->psn = 0;
        q->peer = a->dests[0].peer;
        q->live = 1;
        s->c.learnt++;
    }
}

/* The learnt QP of replica k's binding, from the replica's address. */
static roce_qp *qp_of(const sr_roce_sw *s, const sr_pipe_action *a, unsigned k)
{
    roce_qp *q = slot_of(s, SR_ROCE_QPN(a->hdr.job, a->dests[k].worker));
    const sr_peer *p = &a->dests[k].peer;
    return q && q->key && q->live && q->peer.ip == p->ip && q->peer.port == p->port ? q : NULL;
}

int sr_roce_sw_is_roce(const sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_action *a,
                       unsigned k)
{
    return (req && !a->multicast) || qp_of(s, a, k) != NULL;
}

/* The SEND of msg (len bytes) from switch QP src_qpn to worker QP
 * dst_qpn with PSN *psn, which goes up on success. */
static size_t send_frame(sr_roce_sw *s, uint32_t src_qpn, uint32_t dst_qpn, uint32_t *psn,
                         const uint8_t *msg, size_t len, const sr_frame_addr *addr,
                         uint8_t *frame, size_t cap)
{
    sr_roce_pkt p;

    /* The switch answers with SENDs only (roce.h): no answer is an AR_DATA. */
    if (sr_roce_from_msg(msg, len, src_qpn, &p.m) || p.m.opcode != SR_ROCE_SEND_ONLY_IMM)
        return 0;
    p.a = *addr;
    p.a.src_port = (uint16_t)(SR_ROCE_SPORT_BASE | (src_qpn & SR_ROCE_SPORT_QP_MASK));
    p.a.dst_port = SR_ROCE_UDP_PORT;
    p.dst_qpn = dst_qpn;
    p.psn = *psn;
    size_t n = sr_roce_frame_pack(frame, cap, &p);
    if (n) {
        *psn = (*psn + 1u) & SR_ROCE_PSN_MASK;
        s->c.tx++;
    }
    return n;
}

size_t sr_roce_sw_egress_msg(sr_roce_sw *s, const sr_peer *dst, const uint8_t *msg, size_t len,
                             const sr_frame_addr *addr, uint8_t *frame, size_t cap)
{
    sr_hdr h;

    if (sr_msg_parse(msg, len, &h, NULL) != SR_PARSE_OK || h.worker >= SR_WIRE_MAX_WORKERS)
        return 0;
    roce_qp *q = slot_of(s, SR_ROCE_QPN(h.job, h.worker));
    if (!q || !q->key || !q->live || q->peer.ip != dst->ip || q->peer.port != dst->port)
        return 0;
    return send_frame(s, q->key, q->qpn, &q->psn, msg, len, addr, frame, cap);
}

size_t sr_roce_sw_egress(sr_roce_sw *s, const sr_roce_req *req, const sr_pipe_action *a,
                         unsigned k, const sr_frame_addr *addr, uint8_t *frame, size_t cap)
{
    roce_qp *q = qp_of(s, a, k);
    size_t len = SR_WIRE_HDR_LEN + a->payload_len;
    uint32_t zero_psn = 0, *psn, dst_qpn, src_qpn;

    if (req && !a->multicast && req->opcode == SR_ROCE_SEND_ONLY_IMM) {
        /* The SEND's source QP; its PSN is the table's when it is the
         * binding's learnt QP. */
        dst_qpn = req->src_qpn;
        src_qpn = req->dst_qpn;
        psn = q && q->qpn == dst_qpn ? &q->psn : &zero_psn;
    } else if (q) {
        dst_qpn = q->qpn;
        src_qpn = q->key;
        psn = &q->psn;
    } else {
        s->c.no_qp++;
        return 0;
    }
    sr_pipe_replica_hdr(a, k, s->msg);
    sr_pipe_payload_write(a, s->msg + SR_WIRE_HDR_LEN);
    size_t n = send_frame(s, src_qpn, dst_qpn, psn, s->msg, len, addr, frame, cap);
    s->c.no_qp += n == 0;
    return n;
}

void sr_roce_sw_counters_get(const sr_roce_sw *s, sr_roce_sw_counters *c)
{
    *c = s->c;
}
