/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_allreduce.c - Serene's allreduce goodput, one rank per process.
 *
 * Run it under the launcher, which starts the switch and the ranks:
 *   serene-run -n 2 -- bench/bench_allreduce --sizes 256k,16M,256M --csv
 * The transport comes from the normal configuration (SERENE_TRANSPORT=udp
 * or dpdk, with its SERENE_DPDK_* variables), like any Serene program.
 *
 * Every rank reduces the same sequence of tensors (ar_data.h: rank r holds
 * (r + 1) * base), out of place, SERENE_SUM, back to back: each call
 * synchronises all ranks through the switch, so a rank's time per call is
 * the job's. Rank 0 reports (the others are quiet), per size:
 *   goodput = elements / time per call (elements/s) and
 *             elements * 32 bit / time (Gbps of float32 gradient data).
 * The harness's GB/s column is the same goodput in bytes (Gbps = 8 * GB/s).
 * Every rank checks its last result after timing against the exact sum
 * within the quantization bound, and a failed call fails the case.
 *
 * Calls per sample are fixed (all ranks must make the same calls): by
 * default enough for --sample-bytes of tensor (at least 1 call).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ar_data.h"
#include "harness.h"
#include "serene/serene.h"

typedef struct ar_ctx {
    serene_ctx *ctx;
    int world;
    size_t n;
    float *send, *recv;
    uint64_t seed;
    int rc;      /* first failure of any call, 0 if none */
    size_t calls;
} ar_ctx;

static void run_allreduce(void *a)
{
    ar_ctx *c = a;
    int rc = serene_allreduce(c->ctx, c->send, c->recv, c->n, SERENE_SUM);
    if (rc && !c->rc)
        c->rc = rc;
    c->calls++;
}

static int verify_allreduce(void *a, char *why, size_t wl)
{
    ar_ctx *c = a;
    if (c->rc) {
        snprintf(why, wl, "a call returned %s (%s)", serene_err_name(c->rc), serene_strerror(c->rc));
        return 1;
    }
    size_t bad = sr_ar_check(c->recv, c->n, c->world, c->seed, 1, why, wl);
    return bad != 0;
}

static void *alloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p)
        memset(p, 0, bytes); /* fault the pages in before any timing */
    return p;
}

/* Packets resent in full, packets sent and probes between the snapshots a
 * and b, summed over the ranks into t (one more allreduce, which every rank
 * calls; counts below 2^24 sum exactly). t is left as it is after a failed
 * call (rc): the context is broken. */
static void resend_totals(serene_ctx *ctx, const serene_stats *a, const serene_stats *b, int rc,
                          float t[3])
{
    float cnt[3] = {(float)(b->retransmissions - a->retransmissions),
                    (float)(b->pkts_sent - a->pkts_sent), (float)(b->probes - a->probes)};
    if (!rc && serene_allreduce(ctx, cnt, cnt, 3, SERENE_SUM) == 0)
        memcpy(t, cnt, sizeof cnt);
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t sample_bytes = (size_t)32 << 20, seed = 1;
    const sr_bench_opt opts[] = {
        {"--sample-bytes", "tensor bytes per timed sample when --iters is 0", &sample_bytes},
        {"--seed", "input seed (all ranks must agree)", &seed},
    };
    sr_bench_init(&b, "bench_allreduce", (size_t)16 << 20);
    b.sweeps = 1;
    b.reps = 5;
    b.warmup = 2;
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;

    serene_config cfg;
    serene_config_init(&cfg);
    if (serene_config_from_env(&cfg)) {
        fprintf(stderr, "bench_allreduce: bad SERENE_* environment (see the message above)\n");
        return 2;
    }
    b.quiet = cfg.rank != 0;
    size_t maxn = 0;
    for (unsigned i = 0; i < b.nsizes; i++) {
        if (b.sizes[i] % 4) {
            fprintf(stderr, "bench_allreduce: size %zu is not a whole number of floats\n", b.sizes[i]);
            return 2;
        }
        maxn = b.sizes[i] / 4 > maxn ? b.sizes[i] / 4 : maxn;
    }
    serene_ctx *ctx = NULL;
    rc = serene_ctx_create(&ctx, &cfg);
    if (rc) {
        fprintf(stderr, "bench_allreduce: rank %d: serene_ctx_create: %s (%s)\n", cfg.rank,
                serene_err_name(rc), serene_strerror(rc));
        return 1;
    }
    serene_config eff;
    serene_ctx_config(ctx, &eff);

    ar_ctx c = {.ctx = ctx, .world = cfg.world_size, .seed = seed};
    c.send = alloc(4 * maxn);
    c.recv = alloc(4 * maxn);
    if (!c.send || !c.recv) {
        fprintf(stderr, "bench_allreduce: out of memory (2 x %zu bytes)\n", 4 * maxn);
        serene_ctx_destroy(&ctx);
        return 1;
    }

    char config[384], iters_desc[64];
    if (b.iters)
        snprintf(iters_desc, sizeof iters_desc, "%u (fixed)", b.iters);
    else
        snprintf(iters_desc, sizeof iters_desc, "max(1, %zu B / size)", sample_bytes);
    snprintf(config, sizeof config,
             "serene %s, transport %s, workers %d, switch %s, window %d, timeout %d ms, rto %d us; "
             "SUM out of place; goodput counts float32 input bytes; calls per sample %s",
             serene_version(), eff.transport, eff.world_size, eff.switch_addr, eff.window, eff.timeout_ms,
             eff.rto_us, iters_desc);
    sr_bench_begin(&b, config);

    char variant[32];
    snprintf(variant, sizeof variant, "serene-%s", eff.transport);
    const unsigned user_iters = b.iters;
    int failed = 0;
    for (unsigned s = 0; s < b.nsizes; s++) {
        c.n = b.sizes[s] / 4;
        sr_ar_fill(c.send, c.n, cfg.rank, seed + s);
        c.seed = seed + s;
        c.rc = 0;
        memset(c.recv, 0xff, 4 * c.n); /* NaN: a stale right answer must not pass */
        if (!user_iters) {
            size_t it = sample_bytes / b.sizes[s];
            b.iters = it == 0 ? 1 : it > 4096 ? 4096 : (unsigned)it;
        }
        serene_stats st0, st1;
        serene_get_stats(ctx, &st0);
        sr_bench_result r;
        sr_bench_case bc = {"allreduce", variant, b.sizes[s], run_allreduce, verify_allreduce, &c};
        if (sr_bench_run(&b, &bc, &r))
            failed = 1;
        serene_get_stats(ctx, &st1);
        float t[3] = {0, 0, 0}; /* resent, sent, probes */
        resend_totals(ctx, &st0, &st1, c.rc, t);
        snprintf(r.extra, sizeof r.extra, "workers=%d elems_per_s=%.4g gbps=%.4g best_gbps=%.4g iters=%u retrans_pct=%.2f probes_pct=%.2f resent=%.0f sent=%.0f",
                 cfg.world_size, (double)c.n / r.median_s, r.median_gbps * 8, r.best_gbps * 8, r.iters,
                 t[1] > 0 ? 100.0 * t[0] / t[1] : 0.0, t[1] > 0 ? 100.0 * t[2] / t[1] : 0.0, t[0], t[1]);
        sr_bench_report(&b, &r);
        /* After a failed call the context is broken: every later call would
         * fail at once, so stop here. */
        if (c.rc)
            break;
    }
    sr_bench_note(&b, "# goodput: Gbps = elements * 32 bit / median time per call (rank 0's clock)");
    serene_ctx_destroy(&ctx);
    free(c.send);
    free(c.recv);
    int end = sr_bench_end(&b);
    return end ? end : failed;
}
