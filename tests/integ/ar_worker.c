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
 * the statistics show retransmissions, or that a call times out.
 *
 * Exit status: 0 all checks passed, 1 a check failed, 2 bad usage.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serene/serene.h"

#define MAX_SIZES 16

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Input of rank r in call c at index i: uniform in (-1, 1) scaled by 2^k,
 * k in [-12, 12] constant over blocks of 100 values (so packets see both
 * uniform and mixed magnitudes), and exact zeros now and then. */
static float input(uint64_t seed, int r, int c, size_t i)
{
    uint64_t blk = mix(seed ^ (uint64_t)r << 48 ^ (uint64_t)c << 32 ^ (i / 100));
    uint64_t h = mix(seed * 31 + ((uint64_t)r << 56) + ((uint64_t)c << 40) + i);
    if ((h & 63) == 0)
        return 0.0f;
    int k = (int)(blk % 25) - 12;
    double u = (double)(h >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
    return (float)ldexp(u, k);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
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
                    "                 [--expect-timeout] [--absent-rank R]\n");
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES];
    int nsizes = 0, reps = 1, elems = 0, avg = 0, inplace = 0, nonblocking = 0;
    int expect_retrans = 0, expect_timeout = 0, absent = -1;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--elems") && v) {
            elems = atoi(v);
            i++;
        } else if (!strcmp(a, "--sizes") && v) {
            char *dup = strdup(v), *save = NULL;
            for (char *t = strtok_r(dup, ",", &save); t && nsizes < MAX_SIZES;
                 t = strtok_r(NULL, ",", &save))
                sizes[nsizes++] = (size_t)strtoull(t, NULL, 0);
            free(dup);
            i++;
        } else if (!strcmp(a, "--reps") && v) {
            reps = atoi(v);
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            seed = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--absent-rank") && v) {
            absent = atoi(v);
            i++;
        } else if (!strcmp(a, "--avg")) {
            avg = 1;
        } else if (!strcmp(a, "--inplace")) {
            inplace = 1;
        } else if (!strcmp(a, "--nonblocking")) {
            nonblocking = 1;
        } else if (!strcmp(a, "--expect-retrans")) {
            expect_retrans = 1;
        } else if (!strcmp(a, "--expect-timeout")) {
            expect_timeout = 1;
        } else {
            usage();
            return 2;
        }
    }
    if (elems <= 0 || nsizes == 0 || reps <= 0) {
        usage();
        return 2;
    }

    serene_config cfg;
    serene_config_init(&cfg);
    if (serene_config_from_env(&cfg))
        return 2;
    const int rank = cfg.rank, n = cfg.world_size;
    if (rank == absent) {
        printf("rank %d: absent on purpose\n", rank);
        return 0;
    }
    serene_ctx *ctx = NULL;
    double t0 = now_ms();
    int rc = serene_ctx_create(&ctx, &cfg);
    if (rc) {
        fprintf(stderr, "rank %d: serene_ctx_create: %s (%s)\n", rank, serene_err_name(rc),
                serene_strerror(rc));
        return 1;
    }
    printf("rank %d/%d: joined in %.1f ms\n", rank, n, now_ms() - t0);

    size_t maxn = 0;
    for (int s = 0; s < nsizes; s++)
        maxn = sizes[s] > maxn ? sizes[s] : maxn;
    float *send = malloc(maxn * sizeof *send), *recv = malloc(maxn * sizeof *recv);
    double *exact = malloc(maxn * sizeof *exact);
    float *pmax = malloc(maxn * sizeof *pmax); /* max |x| of the element's packet over ranks */
    if (!send || !recv || !exact || !pmax)
        return 1;

    const int bits = 30 - ceil_log2(n);
    double worst_call_ms = 0, worst_rel = 0;
    int call = 0, failures = 0;
    for (int rep = 0; rep < reps; rep++) {
        for (int s = 0; s < nsizes; s++, call++) {
            size_t cnt = sizes[s];
            for (size_t i = 0; i < cnt; i++) {
                exact[i] = 0;
                pmax[i] = 0;
            }
            for (int r = 0; r < n; r++) {
                for (size_t p = 0; p < cnt; p += (size_t)elems) {
                    size_t end = p + (size_t)elems < cnt ? p + (size_t)elems : cnt;
                    float m = 0;
                    for (size_t i = p; i < end; i++) {
                        float x = input(seed, r, call, i);
                        exact[i] += x;
                        if (r == rank)
                            send[i] = x;
                        m = fabsf(x) > m ? fabsf(x) : m;
                    }
                    for (size_t i = p; i < end; i++)
                        pmax[i] = m > pmax[i] ? m : pmax[i];
                }
            }
            float *src = send, *dst = inplace ? send : recv;
            double c0 = now_ms();
            if (nonblocking) {
                serene_op *op = NULL;
                rc = serene_allreduce_start(ctx, src, dst, cnt, avg ? SERENE_AVG : SERENE_SUM, &op);
                if (!rc) {
                    /* Poll a little, as an application overlapping compute would. */
                    while (serene_op_test(op) == SERENE_ERR_AGAIN && now_ms() - c0 < 2.0)
                        ;
                    rc = serene_op_wait(&op);
                }
            } else {
                rc = serene_allreduce(ctx, src, dst, cnt, avg ? SERENE_AVG : SERENE_SUM);
            }
            double ms = now_ms() - c0;
            worst_call_ms = ms > worst_call_ms ? ms : worst_call_ms;
            if (ms > cfg.timeout_ms + 1000.0) {
                fprintf(stderr, "rank %d: call %d took %.0f ms, deadline %d ms\n", rank, call, ms,
                        cfg.timeout_ms);
                failures++;
            }
            if (expect_timeout) {
                int ok = rc == SERENE_ERR_TIMEOUT;
                printf("rank %d: allreduce returned %s after %.0f ms (deadline %d ms): %s\n", rank,
                       serene_err_name(rc), ms, cfg.timeout_ms, ok ? "as expected" : "UNEXPECTED");
                fflush(stdout);
                serene_ctx_destroy(&ctx);
                free(send);
                free(recv);
                free(exact);
                free(pmax);
                /* Exit non-zero like a real application whose peer vanished. */
                return ok && ms <= cfg.timeout_ms + 1000.0 ? 3 : 1;
            }
            if (rc) {
                fprintf(stderr, "rank %d: call %d (%zu values): %s (%s)\n", rank, call, cnt,
                        serene_err_name(rc), serene_strerror(rc));
                failures++;
                goto out;
            }
            size_t bad = 0;
            for (size_t i = 0; i < cnt; i++) {
                double want = avg ? exact[i] / n : exact[i];
                double bound = n * ldexp(1.0, exponent_of(pmax[i]) - bits) / (avg ? n : 1) +
                               0.5 * ldexp(1.0, ilogb(fabs(want) + 1e-300) - 23) + 1e-300;
                double err = fabs((double)dst[i] - want);
                if (!(err <= bound)) {
                    if (bad++ < 5)
                        fprintf(stderr,
                                "rank %d: call %d [%zu] got %.9g want %.9g err %.3g > bound %.3g\n",
                                rank, call, i, (double)dst[i], want, err, bound);
                } else if (bound > 0 && err / bound > worst_rel) {
                    worst_rel = err / bound;
                }
            }
            if (bad) {
                fprintf(stderr, "rank %d: call %d: %zu of %zu values outside the bound\n", rank,
                        call, bad, cnt);
                failures++;
            }
        }
    }
out:;
    serene_stats st;
    serene_get_stats(ctx, &st);
    printf("rank %d: %d calls, worst call %.1f ms, worst err/bound %.3f, sent %llu recv %llu "
           "retrans %llu dup %llu rejected %llu timeouts %llu saturations %llu\n",
           rank, call, worst_call_ms, worst_rel, (unsigned long long)st.pkts_sent,
           (unsigned long long)st.pkts_recv, (unsigned long long)st.retransmissions,
           (unsigned long long)st.duplicates, (unsigned long long)st.rejected,
           (unsigned long long)st.timeouts, (unsigned long long)st.saturations);
    if (expect_retrans && st.retransmissions == 0) {
        fprintf(stderr, "rank %d: expected retransmissions under injected loss, saw none\n",
                rank);
        failures++;
    }
    if (st.saturations) {
        fprintf(stderr, "rank %d: %llu saturations: the exponent scheme must prevent them\n",
                rank, (unsigned long long)st.saturations);
        failures++;
    }
    serene_ctx_destroy(&ctx);
    free(send);
    free(recv);
    free(exact);
    free(pmax);
    return failures ? 1 : 0;
}
