/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_switch.c - packets per second per core of the software switch's
 * pipeline (p4/swswitch/pipeline.h, the same code serene-switch runs).
 *
 * One thread drives sr_pipe_process directly, without sockets: a job of N
 * workers (N = 2, 3, 4 by default, one case each) joins, then rounds of
 * streaming allreduce go through it as the workers would send them, slot
 * after slot, the shadow bit flipping each time a slot is reused, every
 * worker's contribution to a round in turn. For every action it also
 * packs each replica's header (sr_pipe_replica_hdr), the per-copy work the
 * daemon does before sending. It leaves out only the socket I/O, so this
 * is the pipeline's ceiling on one core; the end-to-end rate over UDP is
 * what bench_allreduce measures.
 *
 * Reported: input packets per second (Mpps) and ns per input packet; GB/s
 * counts input message bytes. Verified after timing: the job's counters show
 * one result per round and no drop, duplicate or mismatch, and the last
 * result holds the exact sums.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pipeline.h"
#include "proto/wire.h"

#define MAX_N 8

typedef struct sctx {
    sr_pipe *pipe;
    sr_pipe_out *out;
    unsigned n, elems, slots;
    size_t rounds;   /* rounds per call */
    size_t msg_len;
    uint8_t *msgs;   /* one message per worker, rewritten per round */
    sr_peer peer[MAX_N];
    uint32_t next_round; /* rounds done so far: slot, shadow and seq derive from it */
    uint64_t results, replicas;
    uint8_t hdr[SR_WIRE_HDR_LEN];
    int32_t last[SR_WIRE_MAX_ELEMS]; /* payload of the last result seen */
} sctx;

static void run_rounds(void *a)
{
    sctx *c = a;
    for (size_t k = 0; k < c->rounds; k++) {
        uint32_t r = c->next_round++;
        uint16_t slot = (uint16_t)(r % c->slots);
        unsigned shadow = (r / c->slots) & 1u;
        for (unsigned w = 0; w < c->n; w++) {
            uint8_t *m = c->msgs + w * c->msg_len;
            sr_put_be32(m + SR_WIRE_OFF_SEQ, r);
            sr_put_be16(m + SR_WIRE_OFF_SLOT, (uint16_t)(slot | (shadow ? SR_WIRE_SLOT_SHADOW : 0)));
            sr_put_be32(m + SR_WIRE_OFF_OFFSET, r * c->elems);
            sr_pipe_process(c->pipe, &c->peer[w], m, c->msg_len, c->out);
            for (unsigned i = 0; i < c->out->n; i++) {
                const sr_pipe_action *act = &c->out->act[i];
                for (unsigned d = 0; d < act->n_dests; d++)
                    sr_pipe_replica_hdr(act, d, c->hdr);
                c->replicas += act->n_dests;
                if (act->hdr.op == SR_OP_AR_RESULT) {
                    c->results++;
                    if (k + 1 == c->rounds)
                        for (unsigned e = 0; e < act->hdr.count; e++)
                            c->last[e] = (int32_t)sr_get_be32(act->payload + 4 * e);
                }
            }
        }
    }
}

static int verify_rounds(void *a, char *why, size_t wl)
{
    sctx *c = a;
    sr_pipe_job_counters jc;
    if (sr_pipe_job_counters_get(c->pipe, 1, &jc)) {
        snprintf(why, wl, "job gone");
        return 1;
    }
    if (jc.results != c->next_round || c->results != c->next_round || jc.mismatches || jc.stale_dropped ||
        jc.dup_dropped || jc.dropped_unbound || jc.errors_sent) {
        snprintf(why, wl, "rounds %u: results %llu/%llu, mismatches %llu, stale %llu, dups %llu, unbound %llu, errors %llu",
                 c->next_round, (unsigned long long)jc.results, (unsigned long long)c->results,
                 (unsigned long long)jc.mismatches, (unsigned long long)jc.stale_dropped,
                 (unsigned long long)jc.dup_dropped, (unsigned long long)jc.dropped_unbound,
                 (unsigned long long)jc.errors_sent);
        return 1;
    }
    /* worker w sends (w + 1) * q[e]: the sum is q[e] * N (N + 1) / 2 */
    for (unsigned e = 0; e < c->elems; e++) {
        int32_t q = (int32_t)(e * 2654435761u % 20001u) - 10000;
        if (c->last[e] != q * (int32_t)(c->n * (c->n + 1) / 2)) {
            snprintf(why, wl, "element %u of the last result is %d, want %d", e, c->last[e],
                     q * (int32_t)(c->n * (c->n + 1) / 2));
            return 1;
        }
    }
    return 0;
}

/* A pipeline with job 1 of n workers, all joined. */
static int setup(sctx *c)
{
    sr_pipe_job_params jp;
    sr_pipe_job_params_init(&jp);
    jp.n_workers = c->n;
    jp.elems_per_pkt = c->elems;
    jp.pool_slots = c->slots;
    jp.store_words = 0;
    if (sr_pipe_create(&c->pipe) || sr_pipe_job_add(c->pipe, 1, &jp))
        return -1;
    for (unsigned w = 0; w < c->n; w++) {
        c->peer[w] = (sr_peer){.ip = 0x7f000001u, .port = (uint16_t)(40000 + w)};
        sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_JOIN, .job = 1, .worker = (uint16_t)w,
                    .seq = 100 + w, .aux = 7};
        uint8_t m[SR_WIRE_HDR_LEN];
        sr_hdr_pack(m, &h);
        sr_pipe_process(c->pipe, &c->peer[w], m, sizeof m, c->out);
        if (c->out->n != 1 || c->out->act[0].hdr.op != SR_OP_JOIN_ACK)
            return -1;
        /* the worker's AR_DATA template; seq, slot and offset change per round */
        uint8_t *d = c->msgs + w * c->msg_len;
        sr_hdr dh = {.version = SR_WIRE_VERSION, .op = SR_OP_AR_DATA, .job = 1, .worker = (uint16_t)w,
                     .count = (uint16_t)c->elems, .exp = 3, .next_exp = 3};
        sr_hdr_pack(d, &dh);
        for (unsigned e = 0; e < c->elems; e++) {
            int32_t q = (int32_t)(e * 2654435761u % 20001u) - 10000;
            sr_put_be32(d + SR_WIRE_HDR_LEN + 4 * e, (uint32_t)(q * (int32_t)(w + 1)));
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t elems = SR_WIRE_DEF_ELEMS, slots = SR_WIRE_DEF_SLOTS, rounds = 1024;
    const sr_bench_opt opts[] = {
        {"--elems", "values per packet", &elems},
        {"--slots", "the job's pool of slots", &slots},
        {"--rounds", "allreduce rounds per timed call", &rounds},
    };
    sr_bench_init(&b, "bench_switch", 0);
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (elems == 0 || elems > SR_WIRE_MAX_ELEMS || slots == 0 || slots > SR_WIRE_MAX_SLOTS || rounds == 0 ||
        rounds > (1u << 20)) {
        fprintf(stderr, "bench_switch: need 1 <= --elems <= %u, 1 <= --slots <= %u, 1 <= --rounds <= 2^20\n",
                SR_WIRE_MAX_ELEMS, SR_WIRE_MAX_SLOTS);
        return 2;
    }
    size_t msg_len = SR_WIRE_HDR_LEN + 4 * elems;
    b.size_bytes = msg_len;
    char config[200];
    snprintf(config, sizeof config,
             "elems %zu per packet (message %zu B), pool %zu slots, %zu rounds per call; one core, no socket I/O",
             elems, msg_len, slots, rounds);
    sr_bench_begin(&b, config);

    sr_pipe_out *out = malloc(sizeof *out);
    uint8_t *msgs = malloc(MAX_N * msg_len);
    if (!out || !msgs) {
        fprintf(stderr, "bench_switch: out of memory\n");
        return 2;
    }
    static const unsigned ns[] = {2, 3, 4, 8};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        char variant[16];
        snprintf(variant, sizeof variant, "n%u", ns[i]);
        if (!sr_bench_selected(&b, "pipeline", variant))
            continue;
        sctx c = {.out = out, .n = ns[i], .elems = (unsigned)elems, .slots = (unsigned)slots, .rounds = rounds,
                  .msg_len = msg_len, .msgs = msgs};
        if (setup(&c)) {
            fprintf(stderr, "bench_switch: job setup failed for N = %u\n", ns[i]);
            sr_pipe_destroy(&c.pipe);
            return 1;
        }
        size_t pkts = rounds * ns[i];
        sr_bench_case bc = {"pipeline", variant, pkts * msg_len, run_rounds, verify_rounds, &c};
        sr_bench_result r;
        sr_bench_run(&b, &bc, &r);
        snprintf(r.extra, sizeof r.extra, "workers=%u Mpps=%.3f best_Mpps=%.3f ns_per_pkt=%.1f agg_Gelems_per_s=%.3f",
                 ns[i], (double)pkts / r.median_s / 1e6, (double)pkts / r.best_s / 1e6,
                 r.median_s / (double)pkts * 1e9, (double)(rounds * elems) / r.median_s / 1e9);
        sr_bench_report(&b, &r);
        sr_pipe_destroy(&c.pipe);
    }
    sr_bench_note(&b, "# Mpps = input packets (workers' contributions) per second on one core; "
                      "agg_Gelems_per_s = aggregated result elements per second");
    free(out);
    free(msgs);
    return sr_bench_end(&b);
}
