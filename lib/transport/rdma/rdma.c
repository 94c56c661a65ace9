/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma.c - the rdma transport: Serene messages as RoCEv2 packets that the
 * NIC builds, through libibverbs, on one Unreliable Connected queue pair
 * per context.
 *
 * - Where each header field goes is lib/proto/roce.h's: AR_DATA is an RDMA
 *   WRITE with immediate whose RETH and ImmDt carry the header and whose
 *   payload is the values; every other message is a SEND with immediate
 *   carrying the Serene message, ImmDt = this QP's number. One message,
 *   one work request, one packet; send posts the whole burst (a window's
 *   packets) as one chained list: one doorbell.
 * - The peer is the switch's QP of (job, rank), SR_ROCE_QPN, at the GID
 *   ::ffff:<switch IPv4>; no connection manager: the switch learns this
 *   QP's number from the ImmDt of the JOIN. UC has no acknowledgements:
 *   a lost packet is recovered by the engine above (lib/reliab), as over
 *   udp.
 * - Memory: one registered region holds TX_SLOTS send buffers and RX_SLOTS
 *   receive buffers of SR_WIRE_MAX_MSG bytes; send copies each message in
 *   (the caller keeps its buffers), recv copies each received message out
 *   and posts its buffer again. No allocation after open.
 * - wait sleeps in poll on the receive CQ's completion channel and the
 *   wake descriptor; completions that came in before the CQ was armed are
 *   found by one poll after arming and kept for the next recv.
 * - Only the context's data-path thread calls send/recv/wait; open and
 *   close run in the thread that creates or destroys the context.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <infiniband/verbs.h>

#include "proto/roce.h"
#include "transport/transport.h"

#define TX_SLOTS 256u /* send buffers: work requests in flight at most */
#define RX_SLOTS 512u /* posted receives: answers that may arrive before recv runs */
#define PORT_NUM 1u   /* the device's port (RoCE NICs: one per netdev) */
#define HOP_LIMIT 64u

typedef struct rdma_state {
    const sr_log *log;
    struct ibv_context *dev;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *scq, *rcq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t *mem;      /* TX_SLOTS then RX_SLOTS buffers of SR_WIRE_MAX_MSG */
    unsigned tx_next;  /* next send buffer (a ring) */
    unsigned tx_busy;  /* posted sends not yet completed */
    unsigned mtu;      /* the path MTU in bytes: a RoCE payload's limit */
    uint32_t peer_qpn; /* the switch's QP of this (job, rank) */
    int armed;         /* the receive CQ is armed for one event */
    int mtu_said;      /* the path MTU's limit was logged (once per context) */
    int post_said;     /* an ibv_post_send failure was logged (once per context) */
    unsigned n_stash;  /* completions found by wait, handed out by recv first */
    struct ibv_wc stash[SR_TP_BURST];
    struct {
        uint64_t tx, rx, tx_full, rx_foreign, tx_err, rx_err, tx_mtu;
    } c;
} rdma_state;

static uint8_t *tx_buf(rdma_state *r, unsigned i)
{
    return r->mem + (size_t)i * SR_WIRE_MAX_MSG;
}

static uint8_t *rx_buf(rdma_state *r, unsigned i)
{
    return r->mem + (size_t)(TX_SLOTS + i) * SR_WIRE_MAX_MSG;
}

/* Post receive buffer i (wr_id = i). */
static int post_rx(rdma_state *r, unsigned i)
{
    struct ibv_sge sge = {.addr = (uintptr_t)rx_buf(r, i), .length = SR_WIRE_MAX_MSG,
                          .lkey = r->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad = NULL;
    return ibv_post_recv(r->qp, &wr, &bad);
}

static void rdma_close(void *state)
{
    rdma_state *r = state;
    if (!r)
        return;
    SR_INFO(r->log,
            "rdma: tx=%" PRIu64 " rx=%" PRIu64 " tx_full=%" PRIu64 " tx_err=%" PRIu64
            " tx_mtu=%" PRIu64 " rx_err=%" PRIu64 " rx_foreign=%" PRIu64,
            r->c.tx, r->c.rx, r->c.tx_full, r->c.tx_err, r->c.tx_mtu, r->c.rx_err,
            r->c.rx_foreign);
    if (r->qp)
        ibv_destroy_qp(r->qp);
    if (r->scq)
        ibv_destroy_cq(r->scq);
    if (r->rcq)
        ibv_destroy_cq(r->rcq);
    if (r->ch)
        ibv_destroy_comp_channel(r->ch);
    if (r->mr)
        ibv_dereg_mr(r->mr);
    free(r->mem);
    if (r->pd)
        ibv_dealloc_pd(r->pd);
    if (r->dev)
        ibv_close_device(r->dev);
    free(r);
}

/* The device cfg->transport names ("rdma:NAME"), or the first one
 * ("rdma"): opened into r->dev. Returns 0, SERENE_ERR_NODEV (none, or
 * none of that name; logged with the names there are) or
 * SERENE_ERR_TRANSPORT. */
static int open_device(rdma_state *r, const char *transport)
{
    const char *want = strchr(transport, ':') ? strchr(transport, ':') + 1 : NULL;
    int n = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n == 0) {
        SR_ERR(r->log,
               "rdma: no RDMA device found (ibv_get_device_list: %s): this host has no "
               "RDMA/RoCE NIC driver loaded (e.g. mlx5_ib, or a soft RoCE device: "
               "rdma link add rxe0 type rxe netdev IFACE)",
               list ? "0 devices"
               : errno == ENOSYS ? "the kernel has no RDMA support, no /sys/class/infiniband"
                                 : strerror(errno ? errno : ENODEV));
        if (list)
            ibv_free_device_list(list);
        return SERENE_ERR_NODEV;
    }
    struct ibv_device *pick = NULL;
    char names[256] = "";
    size_t used = 0;
    for (int i = 0; i < n && !pick; i++) {
        const char *name = ibv_get_device_name(list[i]);
        if (!want || !strcmp(name, want))
            pick = list[i];
        int k = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", name);
        if (k > 0 && (size_t)k < sizeof names - used)
            used += (size_t)k;
    }
    if (!pick) {
        SR_ERR(r->log, "rdma: RDMA device \"%s\" not found (this host has: %s)", want, names);
        ibv_free_device_list(list);
        return SERENE_ERR_NODEV;
    }
    r->dev = ibv_open_device(pick);
    int err = errno;
    const char *name = ibv_get_device_name(pick);
    if (!r->dev)
        SR_ERR(r->log, "rdma: cannot open device %s: %s", name, strerror(err));
    else
        SR_DEBUG(r->log, "rdma: device %s", name);
    ibv_free_device_list(list);
    return r->dev ? 0 : SERENE_ERR_TRANSPORT;
}

/* The GID index of the port's RoCEv2 GID with IPv4 address ip (host
 * order), or the first RoCEv2 IPv4 GID when ip is 0; -1 if none. */
static int find_gid(rdma_state *r, uint32_t ip, int gid_len)
{
    for (int i = 0; i < gid_len; i++) {
        struct ibv_gid_entry g;
        if (ibv_query_gid_ex(r->dev, PORT_NUM, (uint32_t)i, &g, 0) ||
            g.gid_type != IBV_GID_TYPE_ROCE_V2)
            continue;
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(g.gid.raw, v4mapped, sizeof v4mapped))
            continue;
        if (!ip || sr_get_be32(g.gid.raw + 12) == ip)
            return i;
    }
    return -1;
}

static unsigned mtu_bytes(enum ibv_mtu m)
{
    return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0u;
}

/* Bring the QP to RTS toward the switch: INIT, the receives posted, RTR
 * (path to the switch's GID and QP), RTS. */
static int connect_qp(rdma_state *r, const struct ibv_port_attr *port, int gid_index,
                      uint32_t switch_ip, uint32_t peer_qpn)
{
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = PORT_NUM;
    a.qp_access_flags = 0; /* answers are SENDs: no remote access to this memory */
    int rc = ibv_modify_qp(r->qp, &a,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    for (unsigned i = 0; !rc && i < RX_SLOTS; i++)
        rc = post_rx(r, i);
    if (rc)
        return rc;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = port->active_mtu;
    a.dest_qp_num = peer_qpn;
    a.rq_psn = 0; /* any: a UC responder starts a message at any "Only" PSN */
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = PORT_NUM;
    a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
    a.ah_attr.grh.hop_limit = HOP_LIMIT;
    a.ah_attr.grh.dgid.raw[10] = 0xff;
    a.ah_attr.grh.dgid.raw[11] = 0xff;
    sr_put_be32(a.ah_attr.grh.dgid.raw + 12, switch_ip);
    rc = ibv_modify_qp(r->qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                           IBV_QP_RQ_PSN);
    if (rc)
        return rc;
    uint32_t psn = 0;
    if (getrandom(&psn, sizeof psn, GRND_NONBLOCK) != (ssize_t)sizeof psn)
        psn = (uint32_t)(uintptr_t)r;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = psn & SR_ROCE_PSN_MASK;
    return ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int rdma_open(void **state, const serene_config *cfg, const sr_log *log)
{
    struct sockaddr_in peer, local;
    int rc = sr_parse_hostport(cfg->switch_addr, 0, &peer, log);
    if (rc || (rc = sr_parse_hostport(cfg->bind_addr[0] ? cfg->bind_addr : ":0", 0, &local, log)))
        return rc;
    if (peer.sin_addr.s_addr == htonl(INADDR_ANY)) {
        SR_ERR(log, "rdma: switch address \"%s\" has no IPv4 address", cfg->switch_addr);
        return SERENE_ERR_CONFIG;
    }
    rdma_state *r = calloc(1, sizeof *r);
    if (!r)
        return SERENE_ERR_NOMEM;
    r->log = log;
    if ((rc = open_device(r, cfg->transport))) {
        rdma_close(r);
        return rc;
    }
    const char *dev = ibv_get_device_name(r->dev->device);
    struct ibv_port_attr port;
    if (ibv_query_port(r->dev, PORT_NUM, &port)) {
        SR_ERR(log, "rdma: %s: cannot query port %u: %s", dev, PORT_NUM, strerror(errno));
        rdma_close(r);
        return SERENE_ERR_TRANSPORT;
    }
    if (port.state != IBV_PORT_ACTIVE || port.link_layer != IBV_LINK_LAYER_ETHERNET) {
        SR_ERR(log, "rdma: %s port %u is %s%s: RoCEv2 needs an active Ethernet port", dev,
               PORT_NUM, ibv_port_state_str(port.state),
               port.link_layer != IBV_LINK_LAYER_ETHERNET ? " and not Ethernet (InfiniBand?)" : "");
        rdma_close(r);
        return SERENE_ERR_TRANSPORT;
    }
    int gid = find_gid(r, ntohl(local.sin_addr.s_addr), port.gid_tbl_len);
    if (gid < 0) {
        SR_ERR(log, "rdma: %s port %u has no RoCEv2 GID with IPv4 address %s: give its netdev "
               "that address (SERENE_BIND picks among several)", dev, PORT_NUM,
               cfg->bind_addr[0] ? cfg->bind_addr : "(any)");
        rdma_close(r);
        return SERENE_ERR_CONFIG;
    }
    r->mtu = mtu_bytes(port.active_mtu);
    r->peer_qpn = SR_ROCE_QPN((uint32_t)cfg->job_id, (uint32_t)cfg->rank);
    /* Whole pages: registered memory is pinned by the page, and C11's
     * aligned_alloc wants a size that is a multiple of the alignment. */
    size_t bytes = ((size_t)(TX_SLOTS + RX_SLOTS) * SR_WIRE_MAX_MSG + 4095u) & ~(size_t)4095u;
    struct ibv_qp_init_attr qa;
    memset(&qa, 0, sizeof qa);
    qa.qp_type = IBV_QPT_UC;
    qa.cap.max_send_wr = TX_SLOTS;
    qa.cap.max_recv_wr = RX_SLOTS;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    if (!(r->pd = ibv_alloc_pd(r->dev)) || !(r->ch = ibv_create_comp_channel(r->dev)) ||
        !(r->scq = ibv_create_cq(r->dev, (int)TX_SLOTS, NULL, NULL, 0)) ||
        !(r->rcq = ibv_create_cq(r->dev, (int)RX_SLOTS, NULL, r->ch, 0)) ||
        !(r->mem = aligned_alloc(4096, bytes)) ||
        !(r->mr = ibv_reg_mr(r->pd, r->mem, bytes, IBV_ACCESS_LOCAL_WRITE))) {
        SR_ERR(log, "rdma: %s: cannot set up the PD, CQs or memory: %s", dev, strerror(errno));
        rdma_close(r);
        return SERENE_ERR_TRANSPORT;
    }
    qa.send_cq = r->scq;
    qa.recv_cq = r->rcq;
    if (!(r->qp = ibv_create_qp(r->pd, &qa)) ||
        (rc = connect_qp(r, &port, gid, ntohl(peer.sin_addr.s_addr), r->peer_qpn))) {
        SR_ERR(log, "rdma: %s: cannot create or connect the UC QP: %s", dev,
               strerror(r->qp ? rc : errno));
        rdma_close(r);
        return SERENE_ERR_TRANSPORT;
    }
    SR_INFO(log, "rdma: %s port %u gid %d mtu %u, qp %u -> switch qp %u", dev, PORT_NUM, gid,
            r->mtu, r->qp->qp_num, r->peer_qpn);
    *state = r;
    return 0;
}

/* Reap send completions: their buffers are free again. */
static void reap_tx(rdma_state *r)
{
    struct ibv_wc wc[SR_TP_BURST];
    int k;
    while (r->tx_busy && (k = ibv_poll_cq(r->scq, SR_TP_BURST, wc)) > 0)
        for (int i = 0; i < k; i++) {
            r->tx_busy--;
            r->c.tx_err += wc[i].status != IBV_WC_SUCCESS;
        }
}

static int rdma_send(void *state, const struct iovec *msgs, unsigned n)
{
    rdma_state *r = state;
    struct ibv_send_wr wr[SR_TP_BURST], *bad = NULL;
    struct ibv_sge sge[SR_TP_BURST];
    unsigned k = 0, taken = 0, msg_of[SR_TP_BURST];

    reap_tx(r);
    for (unsigned i = 0; i < n; i++, taken = i) {
        if (r->tx_busy + k == TX_SLOTS) {
            r->c.tx_full++; /* the queue is full: the rest count as lost */
            break;
        }
        uint8_t *buf = tx_buf(r, r->tx_next);
        sr_roce_msg m;
        /* The engine builds every message; one that is not Serene's is
         * counted and dropped, not posted. */
        if (msgs[i].iov_len > SR_WIRE_MAX_MSG) {
            r->c.tx_err++;
            continue;
        }
        memcpy(buf, msgs[i].iov_base, msgs[i].iov_len);
        if (sr_roce_from_msg(buf, msgs[i].iov_len, r->qp->qp_num, &m)) {
            r->c.tx_err++;
            continue;
        }
        /* One packet per message, and the switch's answer to an AR_DATA
         * (a SEND of its header and values) must fit one too. */
        size_t need = m.opcode == SR_ROCE_WRITE_ONLY_IMM ? SR_WIRE_HDR_LEN + m.payload_len
                                                          : m.payload_len;
        if (need > r->mtu) {
            if (!r->mtu_said++)
                SR_ERR(r->log, "rdma: a %zu-byte message exceeds the path MTU of %u bytes and "
                       "is not sent (the call will time out): use a job of at most %u values "
                       "per packet, or a larger MTU (lib/transport/rdma/README.md)",
                       need, r->mtu, (r->mtu - SR_WIRE_HDR_LEN) / 4u);
            r->c.tx_mtu++;
            continue;
        }
        memset(&wr[k], 0, sizeof wr[k]);
        sge[k].addr = (uintptr_t)m.payload;
        sge[k].length = (uint32_t)m.payload_len;
        sge[k].lkey = r->mr->lkey;
        wr[k].wr_id = r->tx_next;
        wr[k].sg_list = &sge[k];
        wr[k].num_sge = m.payload_len ? 1 : 0;
        wr[k].send_flags = IBV_SEND_SIGNALED;
        wr[k].imm_data = htonl(m.imm);
        if (m.opcode == SR_ROCE_WRITE_ONLY_IMM) {
            wr[k].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
            wr[k].wr.rdma.remote_addr = m.va;
            wr[k].wr.rdma.rkey = m.rkey;
        } else {
            wr[k].opcode = IBV_WR_SEND_WITH_IMM;
        }
        if (k)
            wr[k - 1].next = &wr[k];
        msg_of[k++] = i;
        r->tx_next = (r->tx_next + 1) % TX_SLOTS;
    }
    if (!k)
        return (int)taken; /* none, or all beyond the MTU (taken, and lost) */
    int rc = ibv_post_send(r->qp, wr, &bad);
    unsigned posted = rc ? (unsigned)(bad - wr) : k;
    r->tx_busy += posted;
    r->c.tx += posted;
    if (rc) {
        /* The QP refused work request `posted` on: its buffers are free
         * again, and its message and the later ones were not taken. */
        r->c.tx_err += k - posted;
        r->tx_next = (r->tx_next + TX_SLOTS - (k - posted)) % TX_SLOTS;
        if (!r->post_said++)
            SR_ERR(r->log, "rdma: ibv_post_send: %s", strerror(rc));
        return msg_of[posted] ? (int)msg_of[posted] : SERENE_ERR_TRANSPORT;
    }
    return (int)taken;
}

/* A JOIN_ACK names the job's values per packet: say at once, not at the
 * first call's deadline, when the answers would not fit the path MTU. */
static void check_join_ack(rdma_state *r, const uint8_t *msg, size_t len)
{
    sr_hdr h;
    const uint8_t *pl;
    sr_join_params jp;

    if (len < SR_WIRE_HDR_LEN || msg[SR_WIRE_OFF_OP] != SR_OP_JOIN_ACK ||
        sr_msg_parse(msg, len, &h, &pl) != SR_PARSE_OK || h.count < SR_JOIN_PARAMS_WORDS)
        return;
    sr_join_params_unpack(pl, &jp);
    if (SR_WIRE_HDR_LEN + 4ull * jp.elems_per_pkt > r->mtu && !r->mtu_said++)
        SR_ERR(r->log, "rdma: the job's %u values per packet need a path MTU of %u bytes, this "
               "port's is %u: allreduce calls will time out; use a job of at most %u values per "
               "packet, or a larger MTU (lib/transport/rdma/README.md)", jp.elems_per_pkt,
               SR_WIRE_HDR_LEN + 4u * jp.elems_per_pkt, r->mtu, (r->mtu - SR_WIRE_HDR_LEN) / 4u);
}

static int rdma_recv(void *state, uint8_t *const *bufs, uint32_t *lens, unsigned n, uint32_t cap,
                     uint64_t *truncated)
{
    rdma_state *r = state;
    struct ibv_wc wc[SR_TP_BURST];
    unsigned got = 0, k;

    if (n > SR_TP_BURST)
        n = SR_TP_BURST;
    if (r->n_stash) {
        k = r->n_stash < n ? r->n_stash : n;
        memcpy(wc, r->stash, k * sizeof wc[0]);
        memmove(r->stash, r->stash + k, (r->n_stash - k) * sizeof wc[0]);
        r->n_stash -= k;
    } else {
        int rc = ibv_poll_cq(r->rcq, (int)n, wc);
        if (rc < 0)
            return SERENE_ERR_TRANSPORT;
        k = (unsigned)rc;
    }
    for (unsigned i = 0; i < k; i++) {
        unsigned slot = (unsigned)wc[i].wr_id;
        const uint8_t *msg = rx_buf(r, slot);
        if (wc[i].status != IBV_WC_SUCCESS) {
            r->c.rx_err++;
        } else if (wc[i].opcode != IBV_WC_RECV || !(wc[i].wc_flags & IBV_WC_WITH_IMM) ||
                   ntohl(wc[i].imm_data) != r->peer_qpn) {
            r->c.rx_foreign++; /* not the switch's SEND on our connection */
        } else if (wc[i].byte_len > cap) {
            lens[got++] = 0;
            (*truncated)++;
        } else {
            memcpy(bufs[got], msg, wc[i].byte_len);
            lens[got++] = wc[i].byte_len;
            r->c.rx++;
            check_join_ack(r, msg, wc[i].byte_len);
        }
        /* A flushed buffer (QP in error) is not posted again. */
        if (wc[i].status != IBV_WC_WR_FLUSH_ERR && post_rx(r, slot))
            return SERENE_ERR_TRANSPORT;
    }
    return (int)got;
}

static int rdma_wait(void *state, int64_t timeout_ns, int wake_fd)
{
    rdma_state *r = state;
    if (r->n_stash)
        return 0;
    if (!r->armed) {
        if (ibv_req_notify_cq(r->rcq, 0))
            return SERENE_ERR_TRANSPORT;
        r->armed = 1;
        /* What arrived before the CQ was armed raises no event. */
        int k = ibv_poll_cq(r->rcq, SR_TP_BURST, r->stash);
        if (k > 0) {
            r->n_stash = (unsigned)k;
            return 0;
        }
    }
    struct pollfd p[2] = {{.fd = r->ch->fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        tsp = &ts;
    }
    if (ppoll(p, wake_fd >= 0 ? 2 : 1, tsp, NULL) < 0 && errno != EINTR)
        return -errno;
    if (p[0].revents & POLLIN) {
        struct ibv_cq *cq;
        void *ctx;
        if (!ibv_get_cq_event(r->ch, &cq, &ctx)) {
            ibv_ack_cq_events(cq, 1);
            r->armed = 0;
        }
    }
    return 0;
}

const sr_transport sr_transport_rdma = {
    .name = "rdma",
    .open = rdma_open,
    .close = rdma_close,
    .send = rdma_send,
    .recv = rdma_recv,
    .wait = rdma_wait,
};
