/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scenarios_roce.c - the conformance scenario of the RoCEv2 port: the
 * frames a worker's UC queue pair emits for the rdma transport
 * (lib/proto/roce.h: AR_DATA as RDMA WRITE Only with Immediate, every
 * other message as SEND Only with Immediate; a PSN per QP, +1 a packet;
 * UDP checksum 0; the ICRC), through the software switch's RoCE port into
 * the same pipeline, and its RoCEv2 answers. Each case names the rule it
 * covers.
 */
#include <errno.h>
#include <string.h>

#include "conform.h"

#define NONCE 0x5e4e0002u
#define TOKEN(w) (0x72000000u + (w))
#define WQPN(w) (0x0001a0u + (w))       /* worker w's QP number, as its NIC gave it */
#define WPSN0(w) (0x3a5c00u + 0x1000u * (w)) /* its first PSN (random on a NIC) */
#define STRANGER_IP 0x0a000063u
#define CALL_TOTAL(seq) (8192u + (seq))

typedef struct roce_run {
    cf_ctx *c;
    uint32_t psn[SR_WIRE_MAX_WORKERS]; /* next PSN of each worker's QP */
} roce_run;

/* The frame worker w's QP emits for the Serene message (h, vals), to the
 * switch's QP dst_qpn (0: the binding's, SR_ROCE_QPN(job, w)), from
 * src_ip (0: the worker's address from the job file). corrupt flips a bit
 * of the ICRC. */
static int send_raw(roce_run *r, unsigned w, uint32_t src_ip, uint32_t dst_qpn, const sr_hdr *h,
                    const uint32_t *vals, unsigned n, int corrupt)
{
    static uint8_t msg[SR_WIRE_MAX_MSG], frame[SR_ROCE_FRAME_MAX];
    cf_ctx *c = r->c;
    sr_roce_pkt p;
    size_t len;
    int rc;

    if (n > SR_WIRE_MAX_ELEMS || w >= c->job.n_workers)
        return -EINVAL;
    sr_hdr_pack(msg, h);
    for (unsigned i = 0; i < n; i++)
        sr_put_be32(msg + SR_WIRE_HDR_LEN + 4u * i, vals[i]);
    memset(&p, 0, sizeof p);
    if (sr_roce_from_msg(msg, SR_WIRE_HDR_LEN + 4u * (size_t)n, WQPN(w), &p.m))
        return -EINVAL;
    p.a.src_mac[0] = 0x02, p.a.src_mac[1] = 0x53, p.a.src_mac[2] = 0x45;
    p.a.src_mac[5] = src_ip ? 0x63 : (uint8_t)(w + 1);
    p.a.dst_mac[0] = 0x02, p.a.dst_mac[1] = 0x53, p.a.dst_mac[2] = 0x45, p.a.dst_mac[5] = 0xfe;
    p.a.src_ip = src_ip ? src_ip : c->job.workers[w].addr;
    /* The QP's UDP source port: pinned to the job file's (mlx5:
     * mlx5dv_modify_qp_udp_sport), so the P4 worker_table matches it. */
    p.a.src_port = c->job.workers[w].udp_port;
    p.a.dst_ip = CF_SWITCH_IP;
    p.a.dst_port = SR_ROCE_UDP_PORT;
    p.dst_qpn = dst_qpn ? dst_qpn : SR_ROCE_QPN(c->job.id, w);
    p.psn = r->psn[w];
    r->psn[w] = (r->psn[w] + 1u) & SR_ROCE_PSN_MASK;
    len = sr_roce_frame_pack(frame, sizeof frame, &p);
    if (!len)
        return -EINVAL;
    if (corrupt)
        frame[len - 1] ^= 0x01;
    rc = cf_step(c, frame, len, c->ts, 1);
    c->ts += CF_STEP_US;
    return rc;
}

static int send_msg(roce_run *r, unsigned w, const sr_hdr *h, const uint32_t *vals, unsigned n)
{
    return send_raw(r, w, 0, 0, h, vals, n, 0);
}

static int join(roce_run *r, unsigned w, uint64_t adm)
{
    sr_hdr h = cf_req(r->c, SR_OP_JOIN, w, TOKEN(w));
    uint32_t v[SR_JOIN_REQ_WORDS] = {(uint32_t)(adm >> 32), (uint32_t)adm, 0, 0};

    h.aux = NONCE;
    h.count = SR_JOIN_REQ_WORDS;
    return send_msg(r, w, &h, v, SR_JOIN_REQ_WORDS);
}

static sr_hdr ar_hdr(const cf_ctx *c, unsigned w, unsigned slot, unsigned shadow, uint32_t seq,
                     uint32_t off, int exp, int next_exp, unsigned n)
{
    sr_hdr h = cf_req(c, SR_OP_AR_DATA, w, seq);

    h.slot = (uint16_t)slot;
    h.shadow = (uint8_t)shadow;
    h.count = (uint16_t)n;
    h.offset = off;
    h.exp = (int8_t)exp;
    h.next_exp = (int8_t)next_exp;
    h.aux = CALL_TOTAL(seq);
    return h;
}

/* AR_DATA of worker w (an RDMA WRITE with immediate): n values
 * base + i * step. */
static int ar(roce_run *r, unsigned w, unsigned slot, unsigned shadow, uint32_t seq, uint32_t off,
              int exp, int next_exp, unsigned n, uint32_t base, uint32_t step)
{
    uint32_t v[SR_WIRE_MAX_ELEMS];
    sr_hdr h = ar_hdr(r->c, w, slot, shadow, seq, off, exp, next_exp, n);

    for (unsigned i = 0; i < n; i++)
        v[i] = base + i * step;
    return send_msg(r, w, &h, v, n);
}

static int probe(roce_run *r, unsigned w, unsigned slot, unsigned shadow, uint32_t seq,
                 uint32_t off, int exp, int next_exp)
{
    sr_hdr h = ar_hdr(r->c, w, slot, shadow, seq, off, exp, next_exp, 0);

    h.op = SR_OP_AR_PROBE;
    return send_msg(r, w, &h, NULL, 0);
}

int cf_run_roce(cf_ctx *c)
{
    unsigned n = c->job.n_workers, E = c->elems;
    roce_run r;
    sr_hdr h;

    memset(&r, 0, sizeof r);
    r.c = c;
    for (unsigned w = 0; w < n; w++)
        r.psn[w] = WPSN0(w);

    /* A JOIN without the job's token: ERROR DENIED, a SEND to the JOIN's
     * source QP (PSN 0: no QP learnt); nothing learnt. */
    TRY(join(&r, 0, c->job.token ^ 1));
    /* JOINs (SENDs): each JOIN_ACK teaches the switch the worker's QP
     * (the ImmDt), and is the first packet on it (PSN 0). */
    for (unsigned w = 0; w < n; w++)
        TRY(join(&r, w, c->job.token));
    /* A SEND to worker 0's QP whose header speaks for worker 1: dropped. */
    h = cf_req(c, SR_OP_AR_PROBE, 1, 1);
    TRY(send_raw(&r, 0, 0, SR_ROCE_QPN(c->job.id, 0), &h, NULL, 0, 0));
    /* A frame whose ICRC is wrong: dropped. */
    TRY(send_raw(&r, 1, 0, 0, &h, NULL, 0, 1));

    /* Call 1, the exponent round: header-only WRITEs (DMA length 0) carry
     * next_exp; the result max-reduces it. */
    for (unsigned w = 0; w < n; w++)
        TRY(ar(&r, w, 0, 0, 1, 0, 0, 3 + (int)w, 0, 0, 0));
    /* Round 2 of slot 0 (version 1): values. Worker 0 resends while the
     * round is open (its WRITE came twice): AR_HELD, not added twice. */
    TRY(ar(&r, 0, 0, 1, 1, 0, 5, SR_WIRE_EXP_NONE, E, 0x7fffffffu, 7u));
    TRY(ar(&r, 0, 0, 1, 1, 0, 5, SR_WIRE_EXP_NONE, E, 0x7fffffffu, 7u));
    /* Worker 2 probes (a SEND) the open round it has not sent to: AR_NAK. */
    TRY(probe(&r, 2, 0, 1, 1, 0, 5, SR_WIRE_EXP_NONE));
    /* Worker 1 wraps lane 0 past INT32_MAX; worker 2 completes the round:
     * the result, a SEND to every worker's QP, each with its QP's PSN. */
    TRY(ar(&r, 1, 0, 1, 1, 0, 5, SR_WIRE_EXP_NONE, E, 1u, (uint32_t)-3));
    TRY(ar(&r, 2, 0, 1, 1, 0, 5, SR_WIRE_EXP_NONE, E, 2000u, 11u));
    /* Worker 1 lost its result (UC dropped the message): its timer fires,
     * it probes (AR_NAK: the round is complete), resends in full and the
     * shadow copy answers it alone. */
    TRY(probe(&r, 1, 0, 1, 1, 0, 5, SR_WIRE_EXP_NONE));
    TRY(ar(&r, 1, 0, 1, 1, 0, 5, SR_WIRE_EXP_NONE, E, 1u, (uint32_t)-3));
    /* Slot 1: a partial packet (a tensor's tail), negative exponents. */
    for (unsigned w = 0; w < n; w++)
        TRY(ar(&r, w, 1, 0, 1, E, -3, -(int)w, E / 4 + 3, (uint32_t)-50, 11u));
    /* A WRITE to worker 2's QP from an address not bound to it: dropped. */
    h = ar_hdr(c, 2, 2, 0, 1, 2 * E, 0, 0, 0);
    TRY(send_raw(&r, 2, STRANGER_IP, 0, &h, NULL, 0, 0));
    /* A WRITE for a slot beyond the pool: ERROR BAD_SLOT, a SEND to the
     * binding's learnt QP. */
    TRY(ar(&r, 0, c->slots, 0, 1, 0, 0, 0, E, 1u, 0u));
    /* LEAVE of worker 2 (a SEND; no answer). */
    h = cf_req(c, SR_OP_LEAVE, 2, TOKEN(2));
    TRY(send_msg(&r, 2, &h, NULL, 0));
    return 0;
}
