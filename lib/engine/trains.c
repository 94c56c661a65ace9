/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trains.c - trains (several messages of one length sent as one UDP GSO
 * send, cut into datagrams by the kernel) are proven before they are used.
 *
 * Some paths drop a train whole while single datagrams pass: a veth pair
 * hands it uncut to a packet socket (simple_switch's, mininet's hosts),
 * which reads one oversized frame and drops it. So once the job is joined,
 * trains are off, and before the first burst that could go as one the
 * engine sends the path test: two copies of a probe as one train, then
 * one copy alone, each marked in its offset (a job whose packets go one
 * at a time never pays for it). The switch answers a probe at once
 * without changing state (AR_NAK, AR_HELD, or an ERROR echoing it), in
 * order. An answer to the train proves that
 * trains pass: they go on. The single's answer with none to the train
 * sent before it means they are dropped: they stay off, with one warning
 * naming the cause and the fixes. No answer at all: the test goes again
 * at the next op (SR_TRAINS_TESTS in all), and trains stay off. (A path
 * that starts dropping trains after the test, a route that changed, is
 * not looked for: a silence is as likely a loaded host, and trains off
 * would cost every job on a good path its batching.)
 */
#include <stdint.h>

#include "engine/engine.h"

/* Offsets that mark the path test's probes (seq 0, slot 0: no call of
 * this worker has seq 0, so no round in flight is ever taken for it). */
#define MARK_TRAIN 1u
#define MARK_SINGLE 2u
#define SR_TRAINS_TESTS 3

static void trains_warn(sr_engine *e, const char *why)
{
    SR_WARN(&e->log,
            "%s: the path drops UDP GSO trains whole (e.g. a veth pair into BMv2's packet "
            "socket); sending one datagram per packet (SERENE_UDP_GSO=0 does it from the "
            "start; or `ip link set DEV gso_max_segs 1` on the worker's interface)",
            why);
}

void sr_trains_joined(sr_engine *e)
{
    if (e->trains == SR_TRAINS_NONE && e->tp->trains && e->tp->trains(e->tps, 0))
        e->trains = SR_TRAINS_UNTESTED;
}

void sr_trains_test(sr_engine *e, uint64_t now)
{
    if (e->trains == SR_TRAINS_TESTING &&
        (e->trains_tests >= SR_TRAINS_TESTS || now - e->trains_test_ns < e->rel.rto_cur_ns))
        return;
    if (e->trains != SR_TRAINS_UNTESTED && e->trains != SR_TRAINS_TESTING)
        return;
    e->trains = SR_TRAINS_TESTING;
    e->trains_tests++;
    e->trains_test_ns = now;
    for (unsigned k = 0; k < 2; k++) {
        sr_hdr h;
        sr_hdr_base(e, &h, SR_OP_AR_PROBE);
        h.offset = k ? MARK_SINGLE : MARK_TRAIN;
        sr_hdr_pack(e->trains_msg[k], &h);
    }
    struct iovec train[2] = {{e->trains_msg[0], SR_WIRE_HDR_LEN},
                             {e->trains_msg[0], SR_WIRE_HDR_LEN}};
    struct iovec single = {e->trains_msg[1], SR_WIRE_HDR_LEN};
    (void)e->tp->trains(e->tps, 1);
    sr_tx_send(e, train, 2);
    (void)e->tp->trains(e->tps, 0);
    sr_tx_send(e, &single, 1);
}

int sr_trains_answer(sr_engine *e, const sr_hdr *h)
{
    int answer = h->op == SR_OP_AR_NAK || h->op == SR_OP_AR_HELD ||
                 (h->op == SR_OP_ERROR && h->aux == SR_OP_AR_PROBE);
    if (!answer || h->seq != 0 || h->slot != 0 || h->worker != (uint16_t)e->cfg.rank ||
        (h->offset != MARK_TRAIN && h->offset != MARK_SINGLE))
        return 0;
    if (e->trains != SR_TRAINS_TESTING)
        return 1; /* a late or second answer to a test already decided */
    if (h->offset == MARK_TRAIN) {
        e->trains = SR_TRAINS_ON;
        (void)e->tp->trains(e->tps, 1);
        SR_DEBUG(&e->log, "the path passes UDP GSO trains: on");
    } else {
        e->trains = SR_TRAINS_OFF;
        trains_warn(e, "path test: a single datagram was answered, the train before it not");
    }
    return 1;
}
