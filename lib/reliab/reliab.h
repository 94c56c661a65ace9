/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reliab.h - the one retransmission engine, under every transport and op.
 *
 * It owns timers, not packets: entry i stands for one packet in flight
 * (the engine maps it to a switch slot or a request), and the caller
 * recovers that packet when sr_rel_poll reports it: it resends it, or asks
 * the switch whether it holds it (an allreduce probe). Each entry has its
 * own retransmission timeout, doubled on every expiry up to rto_max
 * (exponential backoff); an optional retry limit caps the expiries of one
 * entry without news from the switch (sr_rel_held is news: waiting is not
 * loss); and the current operation has an absolute deadline. Time is
 * passed in by the caller (nanoseconds, monotonic), so the module is pure
 * and tests drive it with a fake clock.
 *
 * The timeout of a new packet adapts: RFC 6298's srtt + 4 * rttvar over
 * the answer delays of packets that never expired (Karn's rule), and never
 * below the longest stall reported in the last 0.5 to 1 s (sr_rel_stall),
 * all clamped to [rto_ns, rto_max_ns]. A stall is an answer that came late
 * although nothing was lost, e.g. while the switch or a process was off
 * its core: such delays come back, and a timeout below them only fires
 * for nothing.
 *
 * Cost: arm/disarm O(1); sr_rel_poll scans the entries only once the
 * earliest timer is due (the cached minimum may be early after a disarm,
 * which costs one extra scan, never a missed timer).
 */
#ifndef SERENE_RELIAB_RELIAB_H
#define SERENE_RELIAB_RELIAB_H

#include <stdint.h>

#define SR_REL_NEVER UINT64_MAX

typedef struct sr_rel_params {
    uint64_t rto_ns;      /* first and smallest timeout of a packet, > 0 */
    uint64_t rto_max_ns;  /* cap of the doubled timeout, >= rto_ns */
    uint32_t retry_limit; /* expiries allowed per entry; 0 = unlimited */
} sr_rel_params;

typedef struct sr_rel_entry {
    uint64_t due_ns; /* SR_REL_NEVER when disarmed */
    uint64_t sent_ns; /* first transmission, for RTT samples */
    uint64_t xmit_ns; /* last transmission (first, or its last resend) */
    uint64_t rto_ns;
    uint32_t retries; /* expiries since armed, or since the last sr_rel_held */
    uint32_t expired; /* it expired at least once, or was resent: no RTT sample (Karn) */
    uint32_t rack;    /* reported as overtaken since its last transmission */
    uint32_t queued;  /* reported by sr_rel_poll as queued, not expired */
} sr_rel_entry;

typedef struct sr_rel {
    sr_rel_params p;
    sr_rel_entry *e;
    uint32_t n;
    uint32_t armed;      /* entries currently armed */
    uint64_t min_due_ns; /* <= every armed entry's due_ns */
    uint64_t deadline_ns;/* of the current operation; SR_REL_NEVER if none */
    uint64_t retransmits;/* total expiries reported */
    uint64_t srtt_ns;    /* smoothed answer delay; 0 = no sample yet */
    uint64_t rttvar_ns;
    uint64_t rto_cur_ns; /* timeout given to newly armed entries */
    uint64_t stall_ns[2];   /* longest stall reported in this period and the one before */
    uint64_t stall_from_ns; /* when this period began */
    uint64_t answer_ns;     /* when an entry was last acked (0: never) */
    uint64_t acked_xmit_ns; /* latest last transmission of an acked entry */
    uint32_t probe_tokens;  /* probes (or resends) the answers have paid for */
    uint64_t free_probe_ns; /* when the last unpaid one went (0: never) */
    uint64_t rack_scan_ns;  /* no scan for overtaken packets before it */
} sr_rel;

/* Probes the answers pay for, at most, in one burst: each answer (an ack,
 * a HELD, a NAK) pays for one; without them, one per round trip goes. */
#define SR_REL_PROBE_BURST 16u

/* The smallest reordering window: an armed packet sent before one that
 * was answered is reported (once) when it is older than srtt + max(srtt /
 * 4, this); and scans for such packets come at most this often. */
#define SR_REL_REO_MIN_NS 1000000ull

/* Stalls are remembered for one to two periods. */
#define SR_REL_STALL_PERIOD_NS 500000000ull

enum sr_rel_status {
    SR_REL_OK = 0,
    SR_REL_DEADLINE = 1,    /* the operation's deadline passed */
    SR_REL_RETRY_LIMIT = 2, /* an entry expired more than retry_limit times */
};

/* Allocate n entries, all disarmed. Returns 0 or -ENOMEM / -EINVAL. */
int sr_rel_init(sr_rel *r, uint32_t n, const sr_rel_params *p);
void sr_rel_fini(sr_rel *r);

/* Start the timer of a packet sent for the first time: timeout rto_ns,
 * retry count 0. Re-arming an armed entry restarts it. */
void sr_rel_arm(sr_rel *r, uint32_t i, uint64_t now_ns);
/* The packet was answered: stop its timer. Idempotent. */
void sr_rel_disarm(sr_rel *r, uint32_t i);
/* Like sr_rel_disarm, and if the packet was never resent, feed its answer
 * delay to the adaptive timeout. */
void sr_rel_ack(sr_rel *r, uint32_t i, uint64_t now_ns);
/* An answer delay measured outside the entries (a probe's: the switch
 * answers it at once, so it is the path's round trip, queues included):
 * fed to the adaptive timeout as sr_rel_ack feeds a clean answer. */
void sr_rel_sample(sr_rel *r, uint64_t rtt_ns, uint64_t now_ns);
/* Probe pacing: a packet whose last probe went at last_ns (0: none
 * unanswered) is probed again only once that probe has had a measured
 * round trip (srtt, which probe answers teach: sr_rel_sample; before any
 * sample, rto_ns) to come back: a switch that answers slowly gets fewer probes, not more. (The
 * whole timeout would be too long a wait on a fast path whose probe was
 * lost, where probes are what recovers losses.) */
int sr_rel_probe_due(const sr_rel *r, uint64_t last_ns, uint64_t now_ns);
/* The switch holds entry i's packet and waits for others: it was not lost.
 * Its retry count restarts, so the retry limit counts only expiries without
 * news; its timer and backed-off timeout stay (the next expiry asks again,
 * later). No RTT sample comes from it. A disarmed entry is left alone. */
void sr_rel_held(sr_rel *r, uint32_t i);
/* A packet was answered delay_ns after it was sent although nothing was
 * lost: the caller knows its timer fired for nothing (the switch answered
 * the probe after the result). Until the stall is forgotten, new packets
 * get a timeout of at least delay_ns. */
void sr_rel_stall(sr_rel *r, uint64_t delay_ns, uint64_t now_ns);
/* An answer that is no ack (a HELD or NAK to a probe): it pays for a
 * probe (sr_rel_verdict). */
void sr_rel_answer(sr_rel *r);

/* Entry i's packet was resent whole at now_ns (sr_rel_verdict's "sent
 * after" counts from its last transmission). Its timer stays. */
void sr_rel_resent(sr_rel *r, uint32_t i, uint64_t now_ns);

/*
 * The recovery rule every op shares: what the owner of entry i, just
 * reported expired by sr_rel_poll, does about it at now_ns. probe_out_ns
 * is when its last unanswered probe went (0: none; pass 0 where the op
 * resends instead of probing).
 *   SR_REL_WAIT   send nothing now: its last probe may still be answered
 *                 (sr_rel_probe_due), or no answer has paid for another
 *                 probe (below); then it is due again in a round trip.
 *   SR_REL_QUEUED answers keep coming (one within the current timeout,
 *                 after it was sent), and none to a packet sent after it:
 *                 it is queued behind them (a slow switch, or a round
 *                 that waits for a peer), a delay and not a loss. Nothing
 *                 is sent. sr_rel_poll reported it so without counting an
 *                 expiry: no backoff, no retry, due again a timeout later
 *                 (a lost tail is probed that soon once answers stop).
 *                 Its answer is no RTT sample: the owner's congestion
 *                 window learns such delays (allreduce's sr_arw_rtt), the
 *                 timeout does not.
 *   SR_REL_PROBE  recover it (probe, or resend): a packet sent after it
 *                 was answered (it, or a peer's part of its round, was
 *                 likely lost: answers overtook it), or nothing is
 *                 answered at all (a late peer, a stalled path or a lost
 *                 tail; each entry asks for itself, since in-network
 *                 aggregation can wait in a cycle: this worker's round A
 *                 for a peer's lost part while the peer's round B waits
 *                 for this worker's).
 * Probes are clocked by answers: each answer (sr_rel_ack, sr_rel_answer)
 * pays for one, up to SR_REL_PROBE_BURST saved; unpaid, one goes per
 * smoothed round trip. So a switch that answers slowly gets fewer probes,
 * and a worker whose rounds all wait for a late peer asks at the pace the
 * switch answers, not once per round in flight.
 */
enum sr_rel_verdict { SR_REL_PROBE = 0, SR_REL_QUEUED = 1, SR_REL_WAIT = 2 };
int sr_rel_verdict(sr_rel *r, uint32_t i, uint64_t probe_out_ns, uint64_t now_ns);

/* Disarm every entry and clear the deadline (the learnt timeout stays). */
void sr_rel_reset(sr_rel *r);

/* Absolute deadline of the current operation (SR_REL_NEVER for none). */
void sr_rel_set_deadline(sr_rel *r, uint64_t deadline_ns);

/*
 * Report expired entries at now_ns: up to max indices go to out[] (the
 * caller resends or probes those packets, as sr_rel_verdict says). An
 * entry is also reported, once per transmission, when a packet sent after
 * it was answered and it is older than a round trip and a reordering
 * window (RACK, RFC 8985's rule: a loss is found when answers overtake
 * it, not a whole timeout later); its timer is left as it is. An entry
 * whose timer expired while it is queued (sr_rel_verdict's SR_REL_QUEUED)
 * is reported too, due again a timeout later, with no backoff and no
 * retry. Each other entry reported because its timer expired has its
 * retry count grow,
 * its timeout doubles (capped) and it is due again at now + timeout.
 * *n_out gets the number reported. Returns SR_REL_DEADLINE when the
 * deadline has passed (nothing reported), SR_REL_RETRY_LIMIT when an entry
 * would exceed the retry limit (*n_out entries before it are reported),
 * else SR_REL_OK. Entries beyond max stay due and are reported next call.
 */
int sr_rel_poll(sr_rel *r, uint64_t now_ns, uint32_t *out, uint32_t max, uint32_t *n_out);

/* When the caller must call sr_rel_poll next: the earlier of the first due
 * timer and the deadline; SR_REL_NEVER if neither. */
uint64_t sr_rel_next_due(const sr_rel *r);

#endif /* SERENE_RELIAB_RELIAB_H */
