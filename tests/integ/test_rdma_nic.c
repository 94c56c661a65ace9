/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rdma_nic.c - the rdma transport (lib/transport/rdma) driven for
 * real by libserene contexts, over an emulated RoCE NIC: this machine has
 * no RDMA device, so this test puts one under the transport.
 *
 * The test program defines the libibverbs calls the transport makes
 * (ibv_get_device_list, ibv_open_device, ibv_create_qp, ibv_modify_qp, ...;
 * an executable's definitions take precedence over libibverbs.so's for
 * libserene.so's calls) and fills each context's ops table (post_send,
 * post_recv, poll_cq, req_notify_cq). The emulated NIC does what a RoCE
 * NIC's UC QP does with the transport's work requests: each WRITE or SEND
 * with immediate becomes the one RoCEv2 packet of its message (BTH with
 * the QP's next PSN, RETH, ImmDt, ICRC; lib/proto/roce.c builds it, the
 * mapping itself is checked against Python's zlib and tshark elsewhere),
 * which goes to the software switch's RoCE port and pipeline (the same
 * code as serene-switch). The switch's answers are checked as a UC
 * responder checks them (ICRC, destination QP and address, opcode) and
 * land in the receive buffers the transport posted, with a completion
 * and a completion-channel event.
 *
 * What this does not test: a real NIC's behaviour (timing, its own PSN
 * and ICRC generation, MTU segmentation, RNR). lib/transport/rdma/README.md
 * says what was and was not run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "pipeline.h"
#include "proto/roce.h"
#include "roce.h"
#include "serene/serene.h"

#define JOB 7
#define NW 3                 /* workers */
#define ELEMS 256            /* values per packet: a 1052-byte SEND needs MTU 2048+ */
#define SLOTS 16
#define WORKER_IP 0x0a000001u /* the NIC's IPv4 address, in its RoCEv2 GID */
#define SWITCH_IP 0x0a0000feu
#define MAX_QPS 16
#define RING 4096            /* completions per CQ, receives per QP */

/* ---- the emulated NIC and the switch behind it --------------------------- */

typedef struct fake_cq {
    struct ibv_cq cq;
    struct ibv_wc wc[RING];
    unsigned head, n;
    int armed;
} fake_cq;

typedef struct fake_qp {
    struct ibv_qp qp;
    enum ibv_qp_state st;
    uint32_t dest_qpn, dgid_ip, psn;
    enum ibv_mtu mtu;
    struct {
        uint64_t wr_id, addr;
        uint32_t len;
    } rq[RING];
    unsigned rq_head, rq_n;
    int have_rx_psn;
    uint32_t rx_psn; /* the last PSN received from the switch */
} fake_qp;

static struct {
    pthread_mutex_t mu;
    struct ibv_device dev;
    struct ibv_device *list[2];
    sr_pipe *pipe;
    sr_roce_sw *sw;
    sr_pipe_out out;
    fake_qp *qps[MAX_QPS];
    uint32_t next_qpn;
    enum ibv_port_state port_state;
    enum ibv_mtu mtu;
    unsigned drop_data_every, drop_answer_every; /* 0: no loss */
    uint64_t writes, sends, answers, dropped, psn_gaps, refused;
    uint8_t frame[SR_ROCE_FRAME_MAX], msg[SR_WIRE_MAX_MSG];
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static fake_qp *qp_by_num(uint32_t qpn)
{
    for (unsigned i = 0; i < MAX_QPS; i++)
        if (F.qps[i] && F.qps[i]->qp.qp_num == qpn)
            return F.qps[i];
    return NULL;
}

static void cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
    fake_cq *c = (fake_cq *)cq;
    assert_true(c->n < RING);
    c->wc[(c->head + c->n++) % RING] = *wc;
    if (c->armed && cq->channel) {
        uint64_t one = 1;
        c->armed = 0;
        assert_int_equal(write(cq->channel->fd, &one, sizeof one), sizeof one);
    }
}

/* A frame from the switch reaches the worker's NIC: what a UC responder
 * accepts lands in the next posted receive buffer. */
static void nic_receive(const uint8_t *frame, size_t len)
{
    sr_roce_pkt p;
    if (sr_roce_frame_parse(frame, len, &p) != SR_ROCE_OK) {
        F.refused++;
        return;
    }
    fake_qp *q = qp_by_num(p.dst_qpn);
    if (!q || p.a.dst_ip != WORKER_IP || p.a.dst_port != SR_ROCE_UDP_PORT ||
        p.m.opcode != SR_ROCE_SEND_ONLY_IMM || q->st < IBV_QPS_RTR || !q->rq_n ||
        p.m.payload_len > q->rq[q->rq_head].len) {
        F.refused++; /* no such QP, not a SEND (no remote access), no receive posted */
        return;
    }
    if (q->have_rx_psn && p.psn != ((q->rx_psn + 1) & SR_ROCE_PSN_MASK))
        F.psn_gaps++;
    q->have_rx_psn = 1;
    q->rx_psn = p.psn;
    unsigned i = q->rq_head;
    q->rq_head = (q->rq_head + 1) % RING;
    q->rq_n--;
    memcpy((void *)(uintptr_t)q->rq[i].addr, p.m.payload, p.m.payload_len);
    struct ibv_wc wc = {.wr_id = q->rq[i].wr_id, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
                        .byte_len = (uint32_t)p.m.payload_len, .imm_data = htonl(p.m.imm),
                        .qp_num = q->qp.qp_num, .wc_flags = IBV_WC_WITH_IMM};
    cq_push(q->qp.recv_cq, &wc);
}

/* The switch: its RoCE port, the pipeline, the answers back out. */
static void switch_receive(const uint8_t *frame, size_t len)
{
    static uint8_t out_frame[SR_ROCE_FRAME_MAX];
    sr_peer src;
    sr_roce_req req;
    int n = sr_roce_sw_ingress(F.sw, frame, len, F.msg, &src, &req);
    assert_true(n > 0); /* every frame this NIC builds is one the switch takes */
    sr_pipe_process(F.pipe, &src, F.msg, (size_t)n, &F.out);
    sr_roce_sw_learn(F.sw, &req, &F.out);
    for (unsigned i = 0; i < F.out.n; i++) {
        const sr_pipe_action *a = &F.out.act[i];
        for (unsigned k = 0; k < a->n_dests; k++) {
            sr_frame_addr addr = {.src_ip = SWITCH_IP, .dst_ip = a->dests[k].peer.ip};
            assert_true(sr_roce_sw_is_roce(F.sw, &req, a, k));
            size_t m = sr_roce_sw_egress(F.sw, &req, a, k, &addr, out_frame, sizeof out_frame);
            assert_true(m > 0);
            F.answers++;
            if (F.drop_answer_every && F.answers % F.drop_answer_every == 0) {
                F.dropped++;
                continue;
            }
            nic_receive(out_frame, m);
        }
    }
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    fake_qp *q = (fake_qp *)qp;
    pthread_mutex_lock(&F.mu);
    for (; wr; wr = wr->next) {
        sr_roce_pkt p;
        memset(&p, 0, sizeof p);
        if (q->st != IBV_QPS_RTS || wr->num_sge > 1 ||
            (wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IBV_WR_SEND_WITH_IMM)) {
            *bad = wr;
            pthread_mutex_unlock(&F.mu);
            return EINVAL;
        }
        p.m.opcode = wr->opcode == IBV_WR_SEND_WITH_IMM ? SR_ROCE_SEND_ONLY_IMM
                                                         : SR_ROCE_WRITE_ONLY_IMM;
        p.m.imm = ntohl(wr->imm_data);
        p.m.va = wr->wr.rdma.remote_addr;
        p.m.rkey = wr->wr.rdma.rkey;
        p.m.payload = wr->num_sge ? (const uint8_t *)(uintptr_t)wr->sg_list[0].addr : NULL;
        p.m.payload_len = wr->num_sge ? wr->sg_list[0].length : 0;
        /* One packet per message: the transport keeps every message within
         * the path MTU (a real NIC would cut a longer one). */
        assert_true(p.m.payload_len <= (128u << q->mtu));
        p.a.src_ip = WORKER_IP;
        p.a.dst_ip = q->dgid_ip;
        p.a.src_port = (uint16_t)(0xc000u | (qp->qp_num & 0x3fffu)); /* as rxe does */
        p.a.dst_port = SR_ROCE_UDP_PORT;
        p.dst_qpn = q->dest_qpn;
        p.psn = q->psn;
        q->psn = (q->psn + 1) & SR_ROCE_PSN_MASK;
        size_t len = sr_roce_frame_pack(F.frame, sizeof F.frame, &p);
        assert_true(len > 0);
        int write = p.m.opcode == SR_ROCE_WRITE_ONLY_IMM;
        F.writes += write;
        F.sends += !write;
        if (write && F.drop_data_every && F.writes % F.drop_data_every == 0)
            F.dropped++; /* lost on the way: UC loses the whole message */
        else if (q->dgid_ip == SWITCH_IP)
            switch_receive(F.frame, len);
        if (wr->send_flags & IBV_SEND_SIGNALED) {
            struct ibv_wc wc = {.wr_id = wr->wr_id, .status = IBV_WC_SUCCESS,
                                .opcode = write ? IBV_WC_RDMA_WRITE : IBV_WC_SEND,
                                .qp_num = qp->qp_num};
            cq_push(qp->send_cq, &wc);
        }
    }
    pthread_mutex_unlock(&F.mu);
    return 0;
}

static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    fake_qp *q = (fake_qp *)qp;
    pthread_mutex_lock(&F.mu);
    for (; wr; wr = wr->next) {
        if (wr->num_sge != 1 || q->rq_n == RING) {
            *bad = wr;
            pthread_mutex_unlock(&F.mu);
            return ENOMEM;
        }
        unsigned i = (q->rq_head + q->rq_n++) % RING;
        q->rq[i].wr_id = wr->wr_id;
        q->rq[i].addr = wr->sg_list[0].addr;
        q->rq[i].len = wr->sg_list[0].length;
    }
    pthread_mutex_unlock(&F.mu);
    return 0;
}

static int f_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
    fake_cq *c = (fake_cq *)cq;
    int k = 0;
    pthread_mutex_lock(&F.mu);
    while (k < num && c->n) {
        wc[k++] = c->wc[c->head];
        c->head = (c->head + 1) % RING;
        c->n--;
    }
    pthread_mutex_unlock(&F.mu);
    return k;
}

static int f_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    pthread_mutex_lock(&F.mu);
    ((fake_cq *)cq)->armed = 1; /* an event for the next completion */
    pthread_mutex_unlock(&F.mu);
    return 0;
}

/* ---- the verbs the transport calls --------------------------------------- */

/* Exported (the project builds with hidden visibility), so that they take
 * libserene.so's calls; the names in parentheses where verbs.h makes them
 * macros. */
#define FAKE_API __attribute__((visibility("default")))

FAKE_API struct ibv_device **ibv_get_device_list(int *num)
{
    snprintf(F.dev.name, sizeof F.dev.name, "fake0");
    F.list[0] = &F.dev;
    F.list[1] = NULL;
    if (num)
        *num = 1;
    return F.list;
}

FAKE_API void ibv_free_device_list(struct ibv_device **list)
{
    (void)list;
}

FAKE_API const char *ibv_get_device_name(struct ibv_device *dev)
{
    return dev->name;
}

FAKE_API struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
    struct ibv_context *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->device = dev;
    c->ops.post_send = f_post_send;
    c->ops.post_recv = f_post_recv;
    c->ops.poll_cq = f_poll_cq;
    c->ops.req_notify_cq = f_req_notify_cq;
    c->abi_compat = NULL; /* not a verbs_context: ibv_query_port takes the call below */
    return c;
}

FAKE_API int ibv_close_device(struct ibv_context *c)
{
    free(c);
    return 0;
}

FAKE_API int(ibv_query_port)(struct ibv_context *c, uint8_t port,
                              struct _compat_ibv_port_attr *attr)
{
    struct ibv_port_attr *a = (struct ibv_port_attr *)(void *)attr;
    if (port != 1)
        return EINVAL;
    a->state = F.port_state;
    a->link_layer = IBV_LINK_LAYER_ETHERNET;
    a->active_mtu = F.mtu;
    a->max_mtu = IBV_MTU_4096;
    a->gid_tbl_len = 2;
    return 0;
}

FAKE_API const char *ibv_port_state_str(enum ibv_port_state s)
{
    return s == IBV_PORT_ACTIVE ? "PORT_ACTIVE" : "PORT_DOWN";
}

/* GID 0: RoCE v1 with a link-local IPv6 address; GID 1: RoCE v2 with the
 * IPv4 address, as a ConnectX port with one address lists them. */
FAKE_API int _ibv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index,
                      struct ibv_gid_entry *e, uint32_t flags, size_t size)
{
    if (port != 1 || index > 1)
        return EINVAL;
    memset(e, 0, size);
    e->gid_index = index;
    e->port_num = port;
    if (index == 0) {
        e->gid_type = IBV_GID_TYPE_ROCE_V1;
        e->gid.raw[0] = 0xfe;
        e->gid.raw[1] = 0x80;
    } else {
        e->gid_type = IBV_GID_TYPE_ROCE_V2;
        e->gid.raw[10] = e->gid.raw[11] = 0xff;
        e->gid.raw[12] = WORKER_IP >> 24;
        e->gid.raw[13] = WORKER_IP >> 16 & 0xff;
        e->gid.raw[14] = WORKER_IP >> 8 & 0xff;
        e->gid.raw[15] = WORKER_IP & 0xff;
    }
    return 0;
}

FAKE_API struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
    struct ibv_pd *pd = calloc(1, sizeof *pd);
    if (pd)
        pd->context = c;
    return pd;
}

FAKE_API int ibv_dealloc_pd(struct ibv_pd *pd)
{
    free(pd);
    return 0;
}

FAKE_API struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
    struct ibv_comp_channel *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    ch->context = c;
    ch->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ch->fd < 0) {
        free(ch);
        return NULL;
    }
    return ch;
}

FAKE_API int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
    close(ch->fd);
    free(ch);
    return 0;
}

FAKE_API struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
                             struct ibv_comp_channel *ch, int comp_vector)
{
    fake_cq *cq = calloc(1, sizeof *cq);
    if (!cq || cqe > RING) {
        free(cq);
        return NULL;
    }
    cq->cq.context = c;
    cq->cq.channel = ch;
    cq->cq.cq_context = cq_context;
    cq->cq.cqe = cqe;
    if (ch)
        ch->refcnt++;
    return &cq->cq;
}

FAKE_API int ibv_destroy_cq(struct ibv_cq *cq)
{
    free(cq);
    return 0;
}

/* The one CQ with a channel in a context is its receive CQ. */
FAKE_API int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
    uint64_t v;
    if (read(ch->fd, &v, sizeof v) != sizeof v)
        return -1;
    pthread_mutex_lock(&F.mu);
    *cq = NULL;
    for (unsigned i = 0; i < MAX_QPS && !*cq; i++)
        if (F.qps[i] && F.qps[i]->qp.recv_cq->channel == ch)
            *cq = F.qps[i]->qp.recv_cq;
    pthread_mutex_unlock(&F.mu);
    if (!*cq)
        return -1;
    *cq_context = (*cq)->cq_context;
    return 0;
}

FAKE_API void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
    (void)cq;
    (void)n;
}

FAKE_API struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    struct ibv_mr *mr = calloc(1, sizeof *mr);
    if (!mr)
        return NULL;
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->lkey = mr->rkey = 0x1234;
    return mr;
}

FAKE_API int ibv_dereg_mr(struct ibv_mr *mr)
{
    free(mr);
    return 0;
}

FAKE_API struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
    if (a->qp_type != IBV_QPT_UC || a->cap.max_recv_wr > RING || a->cap.max_send_wr > RING)
        return NULL;
    fake_qp *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_lock(&F.mu);
    unsigned i = 0;
    while (i < MAX_QPS && F.qps[i])
        i++;
    if (i == MAX_QPS) {
        pthread_mutex_unlock(&F.mu);
        free(q);
        return NULL;
    }
    F.qps[i] = q;
    q->qp.qp_num = F.next_qpn++;
    pthread_mutex_unlock(&F.mu);
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = a->send_cq;
    q->qp.recv_cq = a->recv_cq;
    q->qp.qp_type = a->qp_type;
    q->st = IBV_QPS_RESET;
    return &q->qp;
}

FAKE_API int ibv_destroy_qp(struct ibv_qp *qp)
{
    pthread_mutex_lock(&F.mu);
    for (unsigned i = 0; i < MAX_QPS; i++)
        if (F.qps[i] == (fake_qp *)qp)
            F.qps[i] = NULL;
    pthread_mutex_unlock(&F.mu);
    free(qp);
    return 0;
}

/* The transitions a UC QP takes, with what each requires. */
FAKE_API int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    fake_qp *q = (fake_qp *)qp;
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!(mask & IBV_QP_STATE))
        return EINVAL;
    switch (a->qp_state) {
    case IBV_QPS_INIT:
        if (q->st != IBV_QPS_RESET || a->port_num != 1 || !(mask & IBV_QP_PORT))
            return EINVAL;
        break;
    case IBV_QPS_RTR:
        if (q->st != IBV_QPS_INIT || (mask & (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN)) !=
                                         (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN) ||
            !a->ah_attr.is_global || a->ah_attr.grh.sgid_index != 1 ||
            memcmp(a->ah_attr.grh.dgid.raw, v4mapped, sizeof v4mapped) || a->path_mtu > F.mtu)
            return EINVAL;
        q->dest_qpn = a->dest_qp_num;
        q->dgid_ip = sr_get_be32(a->ah_attr.grh.dgid.raw + 12);
        q->mtu = a->path_mtu;
        break;
    case IBV_QPS_RTS:
        if (q->st != IBV_QPS_RTR || !(mask & IBV_QP_SQ_PSN))
            return EINVAL;
        q->psn = a->sq_psn & SR_ROCE_PSN_MASK;
        break;
    default:
        return EINVAL;
    }
    q->st = a->qp_state;
    return 0;
}

/* ---- the tests ------------------------------------------------------------ */

static char last_err[512];
static void capture_log(void *cookie, serene_log_level level, const char *msg)
{
    (void)cookie;
    if (level == SERENE_LOG_ERROR)
        snprintf(last_err, sizeof last_err, "%s", msg);
}

static int setup(void **state)
{
    (void)state;
    sr_pipe_job_params jp;
    sr_pipe_job_params_init(&jp);
    jp.n_workers = NW;
    jp.elems_per_pkt = ELEMS;
    jp.pool_slots = SLOTS;
    jp.store_words = 4 * ELEMS;
    F.port_state = IBV_PORT_ACTIVE;
    F.mtu = IBV_MTU_4096;
    F.next_qpn = 0x1a0;
    F.sw = sr_roce_sw_create();
    if (!F.sw || sr_pipe_create(&F.pipe) || sr_pipe_job_add(F.pipe, JOB, &jp))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sr_pipe_destroy(&F.pipe);
    sr_roce_sw_destroy(&F.sw);
    return 0;
}

static void cfg_of(serene_config *cfg, int rank, uint32_t nonce)
{
    serene_config_init(cfg);
    cfg->rank = rank;
    cfg->world_size = NW;
    cfg->job_id = JOB;
    cfg->job_nonce = nonce;
    cfg->timeout_ms = 10000;
    cfg->rto_us = 20000; /* the emulated path answers in microseconds; losses are injected */
    snprintf(cfg->switch_addr, sizeof cfg->switch_addr, "10.0.0.254:48200");
    snprintf(cfg->transport, sizeof cfg->transport, "rdma:fake0");
    cfg->log_fn = capture_log;
}

typedef struct rank_run {
    int rank;
    uint32_t nonce;
    size_t n;
    int ssp;
    int rc;
    serene_stats st;
} rank_run;

/* One rank: join, allreduce SUM of n values rank + i % 97 (exact in
 * float: small integers), check; with ssp, also push, clock and pull. */
static void *rank_main(void *arg)
{
    rank_run *r = arg;
    serene_config cfg;
    serene_ctx *ctx = NULL;
    float *x = malloc(r->n * sizeof *x), *y = malloc(r->n * sizeof *y);
    cfg_of(&cfg, r->rank, r->nonce);
    r->rc = x && y ? serene_ctx_create(&ctx, &cfg) : SERENE_ERR_NOMEM;
    for (int call = 0; !r->rc && call < 3; call++) {
        for (size_t i = 0; i < r->n; i++)
            x[i] = (float)(r->rank + (int)(i % 97) + call);
        r->rc = serene_allreduce(ctx, x, y, r->n, SERENE_SUM);
        for (size_t i = 0; !r->rc && i < r->n; i++) {
            float want = (float)(NW * ((int)(i % 97) + call) + NW * (NW - 1) / 2);
            if (y[i] != want) {
                fprintf(stderr, "rank %d call %d: y[%zu] = %g, want %g\n", r->rank, call, i,
                        (double)y[i], (double)want);
                r->rc = SERENE_ERR_MISMATCH;
            }
        }
    }
    if (!r->rc && r->ssp) {
        int32_t v[8], got[8];
        for (int i = 0; i < 8; i++)
            v[i] = r->rank + 1;
        r->rc = serene_push_i32(ctx, 0, v, 8);
        if (!r->rc)
            r->rc = serene_clock(ctx);
        if (!r->rc)
            r->rc = serene_clock(ctx); /* under BSP: every push of clock 0 is in */
        if (!r->rc)
            r->rc = serene_pull_i32(ctx, 0, got, 8, 0);
        for (int i = 0; !r->rc && i < 8; i++)
            if (got[i] != NW * (NW + 1) / 2)
                r->rc = SERENE_ERR_MISMATCH;
    }
    if (ctx)
        serene_get_stats(ctx, &r->st);
    serene_ctx_destroy(&ctx);
    free(x);
    free(y);
    return NULL;
}

static void run_ranks(uint32_t nonce, size_t n, int ssp, rank_run *runs)
{
    pthread_t t[NW];
    for (int r = 0; r < NW; r++) {
        runs[r] = (rank_run){.rank = r, .nonce = nonce, .n = n, .ssp = ssp};
        assert_int_equal(pthread_create(&t[r], NULL, rank_main, &runs[r]), 0);
    }
    for (int r = 0; r < NW; r++)
        assert_int_equal(pthread_join(t[r], NULL), 0);
}

/* Three contexts on the emulated NIC: allreduce (window of WRITEs, results
 * as SENDs) and the SSP store and barrier, all exact; the switch's PSNs
 * arrive in sequence on every QP. */
static void test_allreduce_and_ssp(void **state)
{
    (void)state;
    rank_run runs[NW];
    F.writes = F.sends = F.answers = F.psn_gaps = F.refused = 0;
    run_ranks(1, 100000, 1, runs);
    for (int r = 0; r < NW; r++) {
        if (runs[r].rc)
            print_message("rank %d: %s (%s)\n", r, serene_err_name(runs[r].rc), last_err);
        assert_int_equal(runs[r].rc, 0);
    }
    print_message("WRITEs %llu, SENDs %llu, answers %llu, PSN gaps %llu, refused %llu\n",
                  (unsigned long long)F.writes, (unsigned long long)F.sends,
                  (unsigned long long)F.answers, (unsigned long long)F.psn_gaps,
                  (unsigned long long)F.refused);
    /* 3 calls of 100000 values in 256-value packets, plus a hint round per slot. */
    assert_true(F.writes >= NW * 3 * (100000 / ELEMS + 1));
    assert_int_equal(F.psn_gaps, 0);
    assert_int_equal(F.refused, 0);
}

/* Lost WRITEs and lost answers: the engine's probes and resends recover
 * every slot, the sums stay exact. */
static void test_loss(void **state)
{
    (void)state;
    rank_run runs[NW];
    uint64_t retrans = 0;
    F.drop_data_every = 13;
    F.drop_answer_every = 17;
    F.dropped = 0;
    run_ranks(2, 20000, 0, runs);
    F.drop_data_every = F.drop_answer_every = 0;
    for (int r = 0; r < NW; r++) {
        assert_int_equal(runs[r].rc, 0);
        retrans += runs[r].st.retransmissions;
    }
    print_message("dropped %llu packets, %llu resent\n", (unsigned long long)F.dropped,
                  (unsigned long long)retrans);
    assert_true(F.dropped > 0);
    assert_true(retrans > 0);
}

/* Refusals that name their cause: a device of another name, a port that
 * is down, no RoCEv2 GID with the bind address; a path MTU too small for
 * the job's packets is said at once, and the call ends at its deadline. */
static void test_refusals(void **state)
{
    (void)state;
    serene_config cfg;
    serene_ctx *ctx = NULL;
    cfg_of(&cfg, 0, 3);
    snprintf(cfg.transport, sizeof cfg.transport, "rdma:mlx5_9");
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_NODEV);
    assert_non_null(strstr(last_err, "RDMA device \"mlx5_9\" not found (this host has: fake0)"));
    cfg_of(&cfg, 0, 3);
    F.port_state = IBV_PORT_DOWN;
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_TRANSPORT);
    assert_non_null(strstr(last_err, "fake0 port 1 is PORT_DOWN"));
    F.port_state = IBV_PORT_ACTIVE;
    snprintf(cfg.bind_addr, sizeof cfg.bind_addr, "10.9.9.9");
    assert_int_equal(serene_ctx_create(&ctx, &cfg), SERENE_ERR_CONFIG);
    assert_non_null(strstr(last_err, "no RoCEv2 GID with IPv4 address 10.9.9.9"));
    /* The GID of the bind address is the one used (index 1: checked by
     * ibv_modify_qp above); then a path MTU of 1024 for 256-value packets. */
    snprintf(cfg.bind_addr, sizeof cfg.bind_addr, "10.0.0.1");
    cfg.world_size = NW;
    cfg.timeout_ms = 2000; /* the join's deadline too: a busy machine may take 300 ms */
    F.mtu = IBV_MTU_1024;
    last_err[0] = '\0';
    int rc = serene_ctx_create(&ctx, &cfg);
    /* The other ranks are not there: the join itself completes (JOIN_ACK
     * does not wait for them), the MTU is said at once. */
    print_message("create: %s; %s\n", serene_err_name(rc), last_err);
    assert_non_null(strstr(last_err, "need a path MTU of 1052 bytes, this port's is 1024"));
    if (!rc) {
        float x[ELEMS] = {0}, y[ELEMS];
        assert_int_equal(serene_allreduce(ctx, x, y, ELEMS, SERENE_SUM), SERENE_ERR_TIMEOUT);
    }
    serene_ctx_destroy(&ctx);
    F.mtu = IBV_MTU_4096;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_and_ssp),
        cmocka_unit_test(test_loss),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
