/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ar_worker.c - one rank of the allreduce integration tests (run under
 * serene-run, which sets SERENE_RANK and friends).
 *
 * Every rank can generate every rank's input (a hash of seed, rank, call
 * and index, with magnitudes that vary by block), so each rank checks its
 * result against the float64 sum of all inputs without extra traffic:
 *   |result - exact| <= N * 2^(E - B) + ulp(result) / 2
 * with E the largest exponent of the element's packet on any rank and
 * B = 30 - ceil(log2 N) (the bound documented in the README and quant.h);
 * an average is rounded once, so its bound is that divided by N:
 *   |result - exact / N| <= 2^(E - B) + ulp(result) / 2.
 * It also checks that no call outlives its deadline and, on request, that
 * the statistics show retransmissions, or that a call times out, or (with
 * one rank entering every call late) that the ranks waiting for it only
 * probed: no packet resent, probes answered "held".
 * With --pace PPS (a switch or relay that serves PPS packets per second,
 * tests/integ/test_pace.sh) it checks that the worker sent at most twice
 * the packets the data needs (each chunk once, each slot's exponent hint
 * once; probes and resends count as sent), and reports each call's time
 * over what that rate allows (the N workers' packets and the switch's
 * answers to them, at PPS, plus with --pace-rtt-us R one round trip of R
 * us per round that must wait for the one before: a slot's hint, then its
 * chunks; an untimed call of one value before each lines the ranks up):
 * with SERENE_PACE_STRICT=1 a call above 3x fails.
 * With --until FILE the ranks stop after the first rep (of at most --reps)
 * at whose end any of them sees FILE (agreed by a one-value allreduce).
 * With --wire16 the calls carry 16-bit values (serene_allreduce_typed,
 * SERENE_WIRE16), checked against that bound: B = 15 - ceil(log2 N) and
 * one step 2^(E+1-B) per worker instead of half a step (quant16.h), a
 * packet holding 2 x --elems values (two to a word).
 *
 * Exit status: 0 all checks passed, 1 a check failed, 2 bad usage.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serene/serene.h"
#include "timing.h"
#include "worker.h"

#define MAX_SIZES 16

typedef struct opts {
    size_t sizes[MAX_SIZES];
    int nsizes, reps, elems, avg, inplace, nonblocking; /* elems: values per packet */
    int expect_retrans, expect_timeout, absent;
    int late_rank, late_ms, expect_no_resend, pace, pace_rtt_us, wire16;
    uint64_t seed;
    const char *until; /* stop after the rep in which it appeared (all ranks) */
} opts;

/* One call's buffers, for the largest size. */
typedef struct bufs {
    float *send, *recv;
    double *exact; /* the exact sum of every rank's inputs */
    float *pmax;   /* max |x| of the element's packet over ranks */
} bufs;

/* Input of rank r in call c at index i: uniform in (-1, 1) scaled by 2^k,
 * k in [-12, 12] constant over blocks of 100 values (so packets see both
 * uniform and mixed magnitudes), and exact zeros now and then. */
static float input(uint64_t seed, int r, int c, size_t i)
{
    uint64_t blk = tc_mix(seed ^ (uint64_t)r << 48 ^ (uint64_t)c << 32 ^ (i / 100));
    uint64_t h = tc_mix(seed * 31 + ((uint64_t)r << 56) + ((uint64_t)c << 40) + i);
    if ((h & 63) == 0)
        return 0.0f;
    int k = (int)(blk % 25) - 12;
    double u = (double)(h >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
    return (float)ldexp(u, k);
}

static int ceil_log2(int n)
{
    int b = 0;
    while ((1 << b) < n)
        b++;
    return b;
}

static int exponent_of(float maxabs)
{
    if (maxabs == 0.0f)
        return -96;
    int e = ilogbf(maxabs);
    return e < -96 ? -96 : e > 126 ? 126 : e;
}

static void usage(void)
{
    fprintf(stderr, "usage: ar_worker --elems E [--sizes N,N,...] [--reps R] [--seed S]\n"
                    "                 [--avg] [--inplace] [--nonblocking] [--expect-retrans]\n"
                    "                 [--expect-timeout] [--absent-rank R]\n"
                    "                 [--late-rank R --late-ms MS] [--expect-no-resend]\n"
                    "                 [--pace PPS [--pace-rtt-us R]] [--until FILE] [--wire16]\n");
}

static int parse(int argc, char **argv, opts *o)
{
    const tc_opt table[] = {
        {"--elems", TC_OPT_INT, &o->elems, NULL, 0, NULL},
        {"--sizes", TC_OPT_SIZES, o->sizes, &o->nsizes, MAX_SIZES, NULL},
        {"--reps", TC_OPT_INT, &o->reps, NULL, 0, NULL},
        {"--seed", TC_OPT_U64, &o->seed, NULL, 0, NULL},
        {"--absent-rank", TC_OPT_INT, &o->absent, NULL, 0, NULL},
        {"--avg", TC_OPT_FLAG, &o->avg, NULL, 0, NULL},
        {"--inplace", TC_OPT_FLAG, &o->inplace, NULL, 0, NULL},
        {"--nonblocking", TC_OPT_FLAG, &o->nonblocking, NULL, 0, NULL},
        {"--expect-retrans", TC_OPT_FLAG, &o->expect_retrans, NULL, 0, NULL},
        {"--expect-timeout", TC_OPT_FLAG, &o->expect_timeout, NULL, 0, NULL},
        {"--late-rank", TC_OPT_INT, &o->late_rank, NULL, 0, NULL},
        {"--late-ms", TC_OPT_INT, &o->late_ms, NULL, 0, NULL},
        {"--expect-no-resend", TC_OPT_FLAG, &o->expect_no_resend, NULL, 0, NULL},
        {"--pace", TC_OPT_INT, &o->pace, NULL, 0, NULL},
        {"--pace-rtt-us", TC_OPT_INT, &o->pace_rtt_us, NULL, 0, NULL},
        {"--until", TC_OPT_STR, &o->until, NULL, 0, NULL},
        {"--wire16", TC_OPT_FLAG, &o->wire16, NULL, 0, NULL},
        {NULL, TC_OPT_FLAG, NULL, NULL, 0, NULL},
    };

    memset(o, 0, sizeof *o);
    o->reps = 1;
    o->absent = -1;
    o->late_rank = -1;
    o->seed = 1;
    if (tc_parse_opts(argc, argv, 1, table))
        return -1;
    /* From here on, elems counts a packet's values: two per word on a
     * 16-bit wire (wire.h's SR_WIRE_AUX_V16). */
    if (o->wire16 && o->elems > 0)
        o->elems *= 2;
    return o->elems > 0 && o->nsizes > 0 && o->reps > 0 && o->late_ms >= 0 ? 0 : -1;
}

static int bufs_alloc(bufs *b, const opts *o)
{
    size_t maxn = 0;
    for (int s = 0; s < o->nsizes; s++)
        maxn = o->sizes[s] > maxn ? o->sizes[s] : maxn;
    b->send = malloc(maxn * sizeof *b->send);
    b->recv = malloc(maxn * sizeof *b->recv);
    b->exact = malloc(maxn * sizeof *b->exact);
    b->pmax = malloc(maxn * sizeof *b->pmax);
    return b->send && b->recv && b->exact && b->pmax ? 0 : -1;
}

static void bufs_free(bufs *b)
{
    free(b->send);
    free(b->recv);
    free(b->exact);
    free(b->pmax);
}

/* Every rank's inputs of call `call`: this rank's into send, their exact
 * sum and each packet's largest magnitude over ranks. */
static void make_inputs(const opts *o, int rank, int n, int call, size_t cnt, bufs *b)
{
    for (size_t i = 0; i < cnt; i++) {
        b->exact[i] = 0;
        b->pmax[i] = 0;
    }
    for (int r = 0; r < n; r++) {
        for (size_t p = 0; p < cnt; p += (size_t)o->elems) {
            size_t end = p + (size_t)o->elems < cnt ? p + (size_t)o->elems : cnt;
            float m = 0;
            for (size_t i = p; i < end; i++) {
                float x = input(o->seed, r, call, i);
                b->exact[i] += x;
                if (r == rank)
                    b->send[i] = x;
                m = fabsf(x) > m ? fabsf(x) : m;
            }
            for (size_t i = p; i < end; i++)
                b->pmax[i] = m > b->pmax[i] ? m : b->pmax[i];
        }
    }
}

/* One allreduce, blocking or started and then waited for. */
static int allreduce(serene_ctx *ctx, const opts *o, float *src, float *dst, size_t cnt)
{
    serene_reduce_op op = o->avg ? SERENE_AVG : SERENE_SUM;
    unsigned wire = o->wire16 ? SERENE_WIRE16 : SERENE_WIRE32;
    if (!o->nonblocking)
        return o->wire16 ? serene_allreduce_typed(ctx, src, dst, cnt, SERENE_FLOAT32, op, wire)
                         : serene_allreduce(ctx, src, dst, cnt, op);
    serene_op *h = NULL;
    double c0 = tc_now_ms();
    int rc = o->wire16 ? serene_allreduce_typed_start(ctx, src, dst, cnt, SERENE_FLOAT32, op, wire, &h)
                       : serene_allreduce_start(ctx, src, dst, cnt, op, &h);
    if (rc)
        return rc;
    /* Poll a little, as an application overlapping compute would. */
    while (serene_op_test(h) == SERENE_ERR_AGAIN && tc_now_ms() - c0 < 2.0)
        ;
    return serene_op_wait(&h);
}

/* --until FILE: whether any rank has seen FILE, agreed by a one-value SUM
 * so that every rank stops after the same call. */
static int until_seen(serene_ctx *ctx, const char *file, int *seen)
{
    float mine = access(file, F_OK) == 0 ? 1.0f : 0.0f, any = 0.0f;
    int rc = serene_allreduce(ctx, &mine, &any, 1, SERENE_SUM);
    *seen = any > 0.5f;
    return rc;
}

/* Every element of dst against the bound; returns how many are outside it
 * and raises *worst_rel to the worst err/bound ratio within it. */
static size_t check_result(const opts *o, int rank, int n, int call, size_t cnt, const float *dst,
                           const bufs *b, double *worst_rel)
{
    const int bits = o->wire16 ? 15 - ceil_log2(n) : 30 - ceil_log2(n);
    size_t bad = 0;
    for (size_t i = 0; i < cnt; i++) {
        double want = o->avg ? b->exact[i] / n : b->exact[i];
        int e = exponent_of(b->pmax[i]); /* (no packet here reaches E = 126) */
        double bound = n * ldexp(1.0, e + o->wire16 - bits) / (o->avg ? n : 1) +
                       0.5 * ldexp(1.0, ilogb(fabs(want) + 1e-300) - 23) + 1e-300;
        double err = fabs((double)dst[i] - want);
        if (!(err <= bound)) {
            if (bad++ < 5)
                fprintf(stderr, "rank %d: call %d [%zu] got %.9g want %.9g err %.3g > bound %.3g\n",
                        rank, call, i, (double)dst[i], want, err, bound);
        } else if (bound > 0 && err / bound > *worst_rel) {
            *worst_rel = err / bound;
        }
    }
    return bad;
}

/* The statistics line and the checks on them; returns failures found.
 * joined: the statistics right after the join, whose own retransmissions
 * the --expect-no-resend check leaves out. */
static int report_stats(serene_ctx *ctx, const opts *o, int rank, int calls, double worst_call_ms,
                        double worst_rel, const serene_stats *joined)
{
    serene_stats st;
    int failures = 0;
    serene_get_stats(ctx, &st);
    printf("rank %d: %d calls, worst call %.1f ms, worst err/bound %.3f, sent %llu recv %llu "
           "retrans %llu dup %llu rejected %llu timeouts %llu saturations %llu probes %llu "
           "held %llu results switch %llu fallback %llu\n",
           rank, calls, worst_call_ms, worst_rel, (unsigned long long)st.pkts_sent,
           (unsigned long long)st.pkts_recv, (unsigned long long)st.retransmissions,
           (unsigned long long)st.duplicates, (unsigned long long)st.rejected,
           (unsigned long long)st.timeouts, (unsigned long long)st.saturations,
           (unsigned long long)st.probes, (unsigned long long)st.held,
           (unsigned long long)st.results_switch, (unsigned long long)st.results_fallback);
    /* Waiting is not loss: no packet resent, and the ranks that waited for
     * the late one asked the switch, header only, and heard "held". */
    uint64_t resent = st.retransmissions - joined->retransmissions;
    if (o->expect_no_resend &&
        (resent != 0 || (rank != o->late_rank && (st.probes == 0 || st.held == 0)))) {
        fprintf(stderr, "rank %d: expected no resent packet%s while waiting, saw %llu resent, "
                        "%llu probes, %llu held\n",
                rank, rank != o->late_rank ? " and probes answered held" : "",
                (unsigned long long)resent, (unsigned long long)st.probes,
                (unsigned long long)st.held);
        failures++;
    }
    if (o->expect_retrans && st.retransmissions == 0) {
        fprintf(stderr, "rank %d: expected retransmissions under injected loss, saw none\n",
                rank);
        failures++;
    }
    if (st.saturations) {
        fprintf(stderr, "rank %d: %llu saturations: the exponent scheme must prevent them\n",
                rank, (unsigned long long)st.saturations);
        failures++;
    }
    return failures;
}

/* --pace: what the calls needed and took against what they sent. */
typedef struct pace {
    uint64_t needed, sent;
    double worst;    /* a call's time over the rate's allowance */
    double worst_ms; /* ... that call's time */
    size_t worst_cnt; /* ... and values */
} pace;

/* Packets of one call of cnt values: each chunk once, plus each slot's
 * exponent hint round (the slots: the window, or fewer chunks). */
static uint64_t call_packets(size_t cnt, int elems, int window)
{
    uint64_t chunks = cnt ? (cnt + (size_t)elems - 1) / (size_t)elems : 0;
    return chunks + (chunks < (uint64_t)window ? chunks : (uint64_t)window);
}

/* --pace: an untimed allreduce of one value before each timed call, so
 * that every rank enters it within a result's delivery of the others (a
 * rank still finishing the call before would otherwise count in the
 * others' time); its packets count as the data's (2 per rank). */
static int pace_sync(serene_ctx *ctx, pace *p)
{
    float one = 1.0f, out;
    int rc = serene_allreduce(ctx, &one, &out, 1, SERENE_SUM);
    if (rc)
        fprintf(stderr, "pace: the sync call: %s\n", serene_err_name(rc));
    p->needed += 2;
    return rc;
}

/* Rounds one after another in a call of cnt values: each slot's hint,
 * then its chunks (the switch's latency: each costs a round trip). */
static double call_rounds(size_t cnt, int elems, int window)
{
    uint64_t chunks = cnt ? (cnt + (size_t)elems - 1) / (size_t)elems : 0;
    return 1.0 + (double)((chunks + (uint64_t)window - 1) / (uint64_t)window);
}

static int pace_report(const opts *o, int rank, const pace *p)
{
    int strict = getenv("SERENE_PACE_STRICT") && !strcmp(getenv("SERENE_PACE_STRICT"), "1");
    printf("rank %d: pace %d/s: sent %llu packets for %llu the data needs (%.2fx); worst call "
           "%.2fx the rate's allowance (%zu values, %.1f ms)\n",
           rank, o->pace, (unsigned long long)p->sent, (unsigned long long)p->needed,
           p->needed ? (double)p->sent / (double)p->needed : 0.0, p->worst, p->worst_cnt,
           p->worst_ms);
    int bad = p->sent > 2 * p->needed;
    if (bad)
        fprintf(stderr, "rank %d: sent %llu packets, more than twice the %llu the data needs\n",
                rank, (unsigned long long)p->sent, (unsigned long long)p->needed);
    if (strict && p->worst > 3.0) {
        fprintf(stderr, "rank %d: a call took %.2fx what %d packets/s allow\n", rank, p->worst,
                o->pace);
        bad = 1;
    }
    return bad;
}

/* The reps x sizes calls. Returns failures, or -(3 or 1) when
 * --expect-timeout ended the run: the exit status, negated. */
static int run_calls(serene_ctx *ctx, const serene_config *cfg, const opts *o, bufs *b)
{
    const int rank = cfg->rank, n = cfg->world_size;
    double worst_call_ms = 0, worst_rel = 0;
    int call = 0, failures = 0, stop = 0;
    serene_stats joined, s0, s1;
    serene_get_stats(ctx, &joined);
    serene_config eff;
    serene_ctx_config(ctx, &eff);
    pace pc = {0};
    for (int rep = 0; rep < o->reps && !stop; rep++) {
        for (int s = 0; s < o->nsizes && !stop; s++, call++) {
            size_t cnt = o->sizes[s];
            make_inputs(o, rank, n, call, cnt, b);
            float *dst = o->inplace ? b->send : b->recv;
            if (rank == o->late_rank) /* the others enter the call and wait */
                tc_sleep_ms(o->late_ms);
            serene_get_stats(ctx, &s0);
            if (o->pace > 0 && pace_sync(ctx, &pc) != 0) {
                failures++;
                stop = 1;
                break;
            }
            double c0 = tc_now_ms();
            int rc = allreduce(ctx, o, b->send, dst, cnt);
            double ms = tc_now_ms() - c0;
            serene_get_stats(ctx, &s1);
            if (o->pace > 0) {
                uint64_t need = call_packets(cnt, o->elems, eff.window);
                double allowed_ms = 2.0 * n * (double)need * 1000.0 / o->pace +
                                    call_rounds(cnt, o->elems, eff.window) * o->pace_rtt_us / 1e3;
                pc.needed += need;
                pc.sent += s1.pkts_sent - s0.pkts_sent;
                if (ms / allowed_ms > pc.worst) {
                    pc.worst = ms / allowed_ms;
                    pc.worst_ms = ms;
                    pc.worst_cnt = cnt;
                }
            }
            worst_call_ms = ms > worst_call_ms ? ms : worst_call_ms;
            if (ms > cfg->timeout_ms + 1000.0) {
                fprintf(stderr, "rank %d: call %d took %.0f ms, deadline %d ms\n", rank, call, ms,
                        cfg->timeout_ms);
                failures++;
            }
            if (o->expect_timeout) {
                int ok = rc == SERENE_ERR_TIMEOUT;
                printf("rank %d: allreduce returned %s after %.0f ms (deadline %d ms): %s\n", rank,
                       serene_err_name(rc), ms, cfg->timeout_ms, ok ? "as expected" : "UNEXPECTED");
                fflush(stdout);
                /* Exit non-zero like a real application whose peer vanished. */
                return ok && ms <= cfg->timeout_ms + 1000.0 ? -3 : -1;
            }
            if (rc) {
                fprintf(stderr, "rank %d: call %d (%zu values): %s (%s)\n", rank, call, cnt,
                        serene_err_name(rc), serene_strerror(rc));
                failures++;
                stop = 1;
                break;
            }
            size_t bad = check_result(o, rank, n, call, cnt, dst, b, &worst_rel);
            if (bad) {
                fprintf(stderr, "rank %d: call %d: %zu of %zu values outside the bound\n", rank,
                        call, bad, cnt);
                failures++;
            }
        }
        if (o->until && !stop) { /* every rank stops after the same rep */
            int seen = 0, urc = until_seen(ctx, o->until, &seen);
            failures += urc != 0;
            stop = urc != 0 || seen;
        }
    }
    if (o->pace > 0)
        failures += pace_report(o, rank, &pc);
    return failures + report_stats(ctx, o, rank, call, worst_call_ms, worst_rel, &joined);
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o)) {
        usage();
        return 2;
    }
    serene_config cfg;
    if (tc_config_from_env(&cfg))
        return 2;
    if (cfg.rank == o.absent) {
        printf("rank %d: absent on purpose\n", cfg.rank);
        return 0;
    }
    serene_ctx *ctx = NULL;
    double t0 = tc_now_ms();
    if (tc_ctx_create(&ctx, &cfg))
        return 1;
    printf("rank %d/%d: joined in %.1f ms\n", cfg.rank, cfg.world_size, tc_now_ms() - t0);
    fflush(stdout); /* a test may wait for this line */
    bufs b = {NULL, NULL, NULL, NULL};
    int status = 1;
    if (bufs_alloc(&b, &o) == 0) {
        int failures = run_calls(ctx, &cfg, &o, &b);
        status = failures < 0 ? -failures : failures ? 1 : 0;
    }
    serene_ctx_destroy(&ctx);
    bufs_free(&b);
    return status;
}
