/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.c - the data-path thread: the loop, sending and receiving, the
 * timers, and the services the operation modules use (engine.h).
 *
 * The loop takes the next queued op when none is current and hands it to
 * its class's begin; drains what has arrived and routes each answer to the
 * class that claimed its wire op (engine.h's sr_op_class); then resends
 * what the one retransmission engine (lib/reliab) reports expired (or lets
 * the op's class recover it, e.g. with a probe), or fails the current op
 * through its class when its deadline or retry limit is hit. A
 * retransmission is byte-identical but for the RETRANSMIT flag.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common/now.h"
#include "engine/engine.h"

/* ---- sending ------------------------------------------------------------ */

void sr_tx_send(sr_engine *e, struct iovec *msgs, unsigned n)
{
    unsigned off = 0;
    while (off < n) {
        int k = e->tp->send(e->tps, msgs + off, n - off);
        if (k <= 0) {
            /* Unsent packets count as lost; their timers resend them. */
            if (k < 0)
                SR_DEBUG(&e->log, "send: %s", serene_strerror(k));
            break;
        }
        for (unsigned i = off; i < off + (unsigned)k; i++) {
            SR_STAT_ADD(e, bytes_sent, msgs[i].iov_len);
            if (e->trace)
                sr_trace_packet(e->trace, SR_TRACE_TX, msgs[i].iov_base, msgs[i].iov_len);
        }
        SR_STAT_ADD(e, pkts_sent, (uint64_t)k);
        off += (unsigned)k;
    }
}

void sr_tx_flush(sr_engine *e)
{
    /* The first burst that could go as a train tests the path first. */
    if (e->ntx >= 2 && e->trains == SR_TRAINS_UNTESTED)
        sr_trains_test(e, sr_now_ns());
    sr_tx_send(e, e->txq, e->ntx);
    e->ntx = 0;
}

void sr_tx_queue(sr_engine *e, uint8_t *msg, uint32_t len)
{
    if (e->ntx == SR_TP_BURST)
        sr_tx_flush(e);
    e->txq[e->ntx].iov_base = msg;
    e->txq[e->ntx].iov_len = len;
    e->ntx++;
}

void sr_slot_send(sr_engine *e, uint32_t s, uint32_t payload_len, uint64_t now)
{
    sr_slot *sl = &e->slots[s];
    sl->len = SR_WIRE_HDR_LEN + payload_len;
    sr_tx_queue(e, sl->msg, sl->len);
    sr_rel_arm(&e->rel, s, now);
}

void sr_slot_resend(sr_engine *e, uint32_t s, uint64_t now)
{
    sr_slot *sl = &e->slots[s];
    sr_rel_resent(&e->rel, s, now);
    sl->msg[SR_WIRE_OFF_FLAGS] |= SR_FLAG_RETRANSMIT;
    sr_tx_queue(e, sl->msg, sl->len);
    SR_STAT_ADD(e, retransmissions, 1);
}

void sr_probe_send(sr_engine *e, uint8_t *buf, uint32_t s, uint8_t op)
{
    memcpy(buf, sr_slot_msg(e, s), SR_WIRE_HDR_LEN);
    buf[SR_WIRE_OFF_OP] = op;
    sr_put_be16(buf + SR_WIRE_OFF_COUNT, 0);
    buf[SR_WIRE_OFF_FLAGS] |= SR_FLAG_RETRANSMIT;
    sr_tx_queue(e, buf, SR_WIRE_HDR_LEN);
    SR_STAT_ADD(e, probes, 1);
}

void sr_probe_answered(sr_engine *e, uint64_t *last_ns, uint64_t now)
{
    if (*last_ns && now >= *last_ns)
        sr_rel_sample(&e->rel, now - *last_ns, now);
    *last_ns = 0;
    sr_rel_answer(&e->rel);
}

void sr_ctl_send(sr_engine *e, const sr_hdr *h, uint64_t now)
{
    sr_hdr_pack(e->ctl_msg, h);
    e->ctl_len = SR_WIRE_HDR_LEN + 4u * h->count;
    e->ctl_armed = 1;
    sr_tx_queue(e, e->ctl_msg, e->ctl_len);
    sr_rel_arm(&e->rel, 0, now);
}

void sr_side_own(sr_engine *e, void *self, void (*poll)(void *, sr_engine *, uint64_t),
                 int (*on_error)(void *, sr_engine *, const sr_hdr *))
{
    e->side.self = self;
    e->side.poll = poll;
    e->side.on_error = on_error;
}

void sr_side_send(sr_engine *e, const sr_hdr *h, uint64_t now)
{
    sr_hdr_pack(e->side.msg, h);
    e->side.armed = 1;
    sr_tx_queue(e, e->side.msg, SR_WIRE_HDR_LEN);
    sr_rel_arm(&e->side.rel, 0, now);
}

void sr_side_stop(sr_engine *e, uint64_t now)
{
    if (!e->side.armed)
        return;
    e->side.armed = 0;
    sr_rel_ack(&e->side.rel, 0, now);
}

/* The lane's timer: resend its request on every expiry (backed off). */
static void side_timers(sr_engine *e, uint64_t now)
{
    uint32_t idx, n;
    if (!e->side.armed)
        return;
    sr_rel_poll(&e->side.rel, now, &idx, 1, &n);
    if (n) {
        e->side.msg[SR_WIRE_OFF_FLAGS] |= SR_FLAG_RETRANSMIT;
        sr_tx_queue(e, e->side.msg, SR_WIRE_HDR_LEN);
        SR_STAT_ADD(e, retransmissions, 1);
    }
}

void sr_hdr_base(const sr_engine *e, sr_hdr *h, uint8_t op)
{
    memset(h, 0, sizeof *h);
    h->version = SR_WIRE_VERSION;
    h->op = op;
    h->job = (uint16_t)e->cfg.job_id;
    h->worker = (uint16_t)e->cfg.rank;
}

/* ---- op completion -------------------------------------------------------- */

void sr_op_finish(sr_engine *e, serene_op *op, int rc)
{
    op->result = rc;
    if (rc == 0)
        SR_STAT_ADD(e, ops_completed, 1);
    pthread_mutex_lock(&e->mu);
    atomic_store_explicit(&op->state, SR_OPS_DONE, memory_order_release);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (e->cur == op) {
        e->cur = NULL;
        e->ctl_armed = 0;
        sr_rel_reset(&e->rel);
    }
}

int sr_map_status(unsigned st)
{
    switch (st) {
    case SR_ST_UNKNOWN_JOB:
        return SERENE_ERR_NOJOB;
    case SR_ST_NOT_MEMBER:
        return SERENE_ERR_NOTMEMBER;
    case SR_ST_STALE:
        return SERENE_ERR_STALE;
    case SR_ST_MISMATCH:
        return SERENE_ERR_MISMATCH;
    case SR_ST_UNSUPPORTED:
        return SERENE_ERR_UNSUPPORTED;
    case SR_ST_RANGE:
        return SERENE_ERR_RANGE;
    case SR_ST_JOB_IN_USE:
        return SERENE_ERR_JOB_IN_USE;
    case SR_ST_DENIED:
        return SERENE_ERR_DENIED;
    default:
        return SERENE_ERR_PROTO;
    }
}

int sr_op_refused(sr_engine *e, const sr_hdr *h)
{
    SR_ERR(&e->log, "switch refused %s of job %d worker %d (slot %u): %s", sr_op_name(h->aux),
           e->cfg.job_id, e->cfg.rank, h->slot, sr_status_name(h->status));
    return sr_map_status(h->status);
}

/* ---- receive ------------------------------------------------------------- */

static void on_error(sr_engine *e, const sr_hdr *h)
{
    serene_op *op = e->cur;
    if (e->side.on_error && e->side.on_error(e->side.self, e, h))
        return;
    if (!op || !op->cls->on_error || !op->cls->on_error(op->self, e, op, h))
        SR_STAT_ADD(e, duplicates, 1);
}

static void on_message(sr_engine *e, const uint8_t *buf, uint32_t len, uint64_t now)
{
    sr_hdr h;
    const uint8_t *payload = NULL;
    int pr = len ? sr_msg_parse(buf, len, &h, &payload) : SR_PARSE_TRUNCATED;
    if (pr != SR_PARSE_OK || h.job != (uint16_t)e->cfg.job_id) {
        SR_STAT_ADD(e, rejected, 1);
        return;
    }
    SR_STAT_ADD(e, pkts_recv, 1);
    SR_STAT_ADD(e, bytes_recv, len);
    if (e->trains >= SR_TRAINS_TESTING && sr_trains_answer(e, &h))
        return;
    if (h.op == SR_OP_ERROR) {
        on_error(e, &h);
        return;
    }
    unsigned r = e->route[h.op];
    if (!r) { /* a request, or an answer no plugged class takes */
        SR_STAT_ADD(e, rejected, 1);
        return;
    }
    const sr_module *m = &e->mods[r - 1];
    if (e->cur && e->cur->cls == m->cls && m->cls->on_message)
        m->cls->on_message(m->self, e, e->cur, &h, payload, now);
    else if (m->cls->on_stray)
        m->cls->on_stray(m->self, e, &h, payload, now);
    else
        SR_STAT_ADD(e, duplicates, 1);
}

/* One burst of messages, lent by the transport where it can (no copy:
 * every message is handled before the burst is given back). */
static int rx_burst(sr_engine *e, uint64_t now)
{
    const uint8_t *msg[SR_TP_BURST];
    int lend = e->tp->recv_lend && e->tp->release;
    int k = lend ? e->tp->recv_lend(e->tps, e->rxbuf, msg, e->rxlen, SR_TP_BURST,
                                    SR_WIRE_MAX_MSG, &e->truncated)
                 : e->tp->recv(e->tps, e->rxbuf, e->rxlen, SR_TP_BURST, SR_WIRE_MAX_MSG,
                               &e->truncated);
    if (k < 0) {
        SR_DEBUG(&e->log, "recv: %s", serene_strerror(k));
        k = 0;
    }
    for (int i = 0; i < k; i++) {
        const uint8_t *m = lend ? msg[i] : e->rxbuf[i];
        /* Traced before parsing: malformed packets are what a trace is for.
         * A truncated one (length 0) left nothing to trace. */
        if (e->trace && e->rxlen[i])
            sr_trace_packet(e->trace, SR_TRACE_RX, m, e->rxlen[i]);
        on_message(e, m, e->rxlen[i], now);
    }
    if (lend)
        e->tp->release(e->tps);
    return k;
}

/* ---- timers ---------------------------------------------------------------- */

static void on_timers(sr_engine *e, uint64_t now)
{
    uint32_t idx[SR_TP_BURST], n;
    int st;
    serene_op *op = e->cur;
    do {
        st = sr_rel_poll(&e->rel, now, idx, SR_TP_BURST, &n);
        for (uint32_t i = 0; i < n; i++) {
            if (!e->ctl_armed && op->cls->on_expire) {
                op->cls->on_expire(op->self, e, op, idx[i], now);
            } else if (sr_rel_verdict(&e->rel, idx[i], 0, now) != SR_REL_PROBE) {
                continue; /* queued, or no answer paid for a resend yet */
            } else if (e->ctl_armed) {
                e->ctl_msg[SR_WIRE_OFF_FLAGS] |= SR_FLAG_RETRANSMIT;
                sr_tx_queue(e, e->ctl_msg, e->ctl_len);
                SR_STAT_ADD(e, retransmissions, 1);
            } else {
                sr_slot_resend(e, idx[i], now);
            }
        }
    } while (st == SR_REL_OK && n == SR_TP_BURST);
    if (st == SR_REL_OK)
        return;
    SR_STAT_ADD(e, timeouts, 1);
    if (op->cls->on_timeout) {
        op->cls->on_timeout(op->self, e, op, st);
        return;
    }
    SR_ERR(&e->log, "%s timed out", op->cls->name);
    sr_op_finish(e, op, SERENE_ERR_TIMEOUT);
}

/* ---- the loop ---------------------------------------------------------------- */

static void op_begin(sr_engine *e, serene_op *op, uint64_t now)
{
    e->cur = op;
    op->start_ns = now;
    if (e->trains == SR_TRAINS_TESTING)
        sr_trains_test(e, now); /* no answer yet: again, a few times */
    if (now >= op->deadline_ns) {
        if (op->cls->on_expired)
            op->cls->on_expired(op->self, e, op);
        else
            sr_op_finish(e, op, SERENE_ERR_TIMEOUT);
        return;
    }
    op->cls->begin(op->self, e, op, now);
}

static serene_op *ring_pop(sr_engine *e)
{
    unsigned head = atomic_load_explicit(&e->ring_head, memory_order_relaxed);
    if (head == atomic_load_explicit(&e->ring_tail, memory_order_acquire))
        return NULL;
    serene_op *op = &e->ops[e->ring[head % e->max_ops]];
    atomic_store_explicit(&e->ring_head, head + 1, memory_order_release);
    return op;
}

/* Sleep in the transport until a packet, a wake-up or the next timer. */
static void idle_wait(sr_engine *e)
{
    int64_t timeout = -1;
    uint64_t due = e->cur ? sr_rel_next_due(&e->rel) : SR_REL_NEVER;
    if (e->side.armed && sr_rel_next_due(&e->side.rel) < due)
        due = sr_rel_next_due(&e->side.rel);
    if (due != SR_REL_NEVER) {
        uint64_t t = sr_now_ns();
        timeout = due > t ? (int64_t)(due - t) : 0;
    }
    if (timeout == 0)
        return;
    e->tp->wait(e->tps, timeout, e->wake_fd);
    uint64_t drain;
    /* The eventfd is non-blocking; EAGAIN just means no wake-up. */
    if (read(e->wake_fd, &drain, sizeof drain) < 0 && errno != EAGAIN)
        SR_DEBUG(&e->log, "wake read: %s", strerror(errno));
}

static void *engine_main(void *arg)
{
    sr_engine *e = arg;
    while (!atomic_load_explicit(&e->stop, memory_order_acquire)) {
        uint64_t now = sr_now_ns();
        serene_op *op;
        /* The side lane first: its request is one header that a new op's
         * window of packets would otherwise queue ahead of. */
        if (e->side.poll)
            e->side.poll(e->side.self, e, now);
        while (!e->cur && (op = ring_pop(e)))
            op_begin(e, op, now);
        /* Drain what has arrived before looking at timers: an answer that
         * sits unread in the socket must not be mistaken for a loss. */
        int got = 0, k;
        do {
            k = rx_burst(e, now);
            got += k;
            sr_tx_flush(e);
        } while (k == SR_TP_BURST && got < 64 * SR_TP_BURST);
        side_timers(e, sr_now_ns());
        if (e->cur)
            on_timers(e, sr_now_ns());
        sr_tx_flush(e);
        /* Once per iteration, so a killed process leaves its trace up to
         * here; a no-op when nothing was traced. */
        if (e->trace)
            sr_trace_flush(e->trace);
        if (got)
            continue;
        if (!e->cur && atomic_load_explicit(&e->ring_head, memory_order_relaxed) !=
                           atomic_load_explicit(&e->ring_tail, memory_order_acquire))
            continue;
        idle_wait(e);
    }
    return NULL;
}

int sr_engine_start(sr_engine *e)
{
    int rc = pthread_create(&e->thread, NULL, engine_main, e);
    if (rc)
        return -rc;
    e->thread_started = 1;
    return 0;
}

void sr_engine_stop(sr_engine *e)
{
    if (!e->thread_started)
        return;
    atomic_store_explicit(&e->stop, 1, memory_order_release);
    sr_engine_wake(e);
    pthread_join(e->thread, NULL);
    e->thread_started = 0;
}
