/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stale_worker.c - one rank of the stream mode's integration tests (run
 * under serene-run; the public API only): SSP for a model of COUNT floats
 * over the streaming allreduce, clock after clock, as serene.h's loop says.
 *
 *   stale_worker --count N --clocks K [--wire16] [--slow-rank R --slow-ms MS]
 *
 * Clock c's "gradient" of rank r is x_r[i] = ((i * 7 + r * 13 + c * 5) % 17
 * - 8) / 16: multiples of 2^-4 below 1/2 in magnitude, which both wire
 * widths carry exactly for any N <= 16 (the packet's E is -1, a step
 * 2^(E+1-B) divides 2^-4), so every sum is checked for equality. Each
 * clock: serene_stale_start, serene_stale_bound (of the clock before, as
 * serene.h's loop), then wait for and check
 * every clock <= c - s not yet done, in order (and any later one already
 * done); the bound is checked as the loop goes (before "computing" clock
 * c + 1 every clock <= c - s is done). The slow rank sleeps before each
 * clock, so the others run ahead. Prints the clocks, the most in flight,
 * the policy and the time per clock.
 * Exit status: 0 all checks passed, 1 a check failed, 2 bad usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serene/serene.h"
#include "timing.h"
#include "worker.h"

#define RING 16 /* buffers: more than the max_ops (16) clocks in flight never are */

static float value(size_t i, int r, uint32_t c)
{
    return (float)((int)((i * 7 + (size_t)r * 13 + (size_t)c * 5) % 17) - 8) / 16.0f;
}

/* Clock c's sum, element by element; returns the first wrong index + 1. */
static size_t check_sum(const float *sum, size_t n, int world, uint32_t c)
{
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < world; r++)
            want += value(i, r, c);
        if (sum[i] != want)
            return i + 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int clocks = 0, wire16 = 0, slow_rank = -1, slow_ms = 0;
    const tc_opt table[] = {
        {"--count", TC_OPT_SIZE, &count, NULL, 0, NULL},
        {"--clocks", TC_OPT_INT, &clocks, NULL, 0, NULL},
        {"--wire16", TC_OPT_FLAG, &wire16, NULL, 0, NULL},
        {"--slow-rank", TC_OPT_INT, &slow_rank, NULL, 0, NULL},
        {"--slow-ms", TC_OPT_INT, &slow_ms, NULL, 0, NULL},
        {NULL, TC_OPT_FLAG, NULL, NULL, 0, NULL},
    };
    if (tc_parse_opts(argc, argv, 1, table) || !count || clocks < 1 || slow_ms < 0) {
        fprintf(stderr, "usage: stale_worker --count N --clocks K [--wire16] "
                        "[--slow-rank R --slow-ms MS]\n");
        return 2;
    }
    serene_config cfg;
    serene_ctx *ctx;
    if (tc_config_from_env(&cfg))
        return 2;
    if (tc_ctx_create(&ctx, &cfg))
        return 1;
    const int rank = cfg.rank, world = cfg.world_size;
    float *buf[RING];
    serene_op *op[RING] = {0};
    for (int k = 0; k < RING; k++)
        if (!(buf[k] = malloc(count * sizeof(float))))
            return 1;
    uint32_t done = 0, s = 0, max_ahead = 0;
    serene_sync_mode mode = SERENE_SYNC_BSP;
    int fails = 0;
    double t0 = tc_now_ms();
    unsigned flags = wire16 ? SERENE_WIRE16 : SERENE_WIRE32;
    for (uint32_t c = 0; c < (uint32_t)clocks && !fails; c++) {
        if (rank == slow_rank)
            usleep((useconds_t)slow_ms * 1000u);
        float *g = buf[c % RING];
        for (size_t i = 0; i < count; i++)
            g[i] = value(i, rank, c);
        int rc = serene_stale_start(ctx, g, g, count, SERENE_FLOAT32, SERENE_SUM, flags,
                                    &op[c % RING]);
        if (!rc)
            rc = serene_stale_bound(ctx, c ? c - 1 : 0, &mode, &s);
        if (rc) {
            fprintf(stderr, "rank %d: clock %u: %s\n", rank, c, serene_err_name(rc));
            return 1;
        }
        /* Done before computing c + 1: every clock <= c - s, the oldest
         * first, and any later one that already ended; at most RING - 1
         * in flight. */
        while (done <= c &&
               ((int64_t)done <= (int64_t)c - s || c + 1 - done >= RING ||
                serene_op_test(op[done % RING]) == 0)) {
            rc = serene_op_wait(&op[done % RING]);
            size_t bad = rc ? 0 : check_sum(buf[done % RING], count, world, done);
            if (rc || bad) {
                fprintf(stderr, "rank %d: clock %u's sum: %s%s [%zu]\n", rank, done,
                        rc ? serene_err_name(rc) : "wrong at", "", bad ? bad - 1 : 0);
                fails++;
                break;
            }
            done++;
        }
        if ((int64_t)done < (int64_t)c - s + 1) {
            fprintf(stderr, "rank %d: would compute clock %u with %u clocks done (s = %u)\n",
                    rank, c + 1, done, s);
            fails++;
        }
        max_ahead = c + 1 - done > max_ahead ? c + 1 - done : max_ahead;
    }
    while (!fails && done < (uint32_t)clocks) {
        int rc = serene_op_wait(&op[done % RING]);
        size_t bad = rc ? 0 : check_sum(buf[done % RING], count, world, done);
        if (rc || bad) {
            fprintf(stderr, "rank %d: clock %u's sum: %s [%zu]\n", rank, done,
                    rc ? serene_err_name(rc) : "wrong at", bad ? bad - 1 : 0);
            fails++;
        }
        done++;
    }
    double ms = tc_now_ms() - t0;
    printf("rank %d: %d clocks of %zu floats (%s wire), policy %s s=%u, at most %u clocks "
           "in flight, %.0f ms a clock: %s\n",
           rank, clocks, count, wire16 ? "16-bit" : "32-bit",
           mode == SERENE_SYNC_BSP ? "bsp" : mode == SERENE_SYNC_SSP ? "ssp" : "asp", s,
           max_ahead, ms / clocks, fails ? "FAILED" : "every sum exact, the bound kept");
    for (int k = 0; k < RING; k++) {
        if (op[k])
            serene_op_wait(&op[k]);
        free(buf[k]);
    }
    serene_ctx_destroy(&ctx);
    return fails ? 1 : 0;
}
