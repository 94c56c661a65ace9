/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_worker.c - one rank of tests/ctl/test_ctl_dynamic.sh, through the
 * public libserene API only. ssp_worker's clocks mode slows a rank for the
 * whole run; this test needs a rank that turns straggler mid-run, hence
 * this small worker.
 *
 *   ctl_worker --clocks C --out DIR [--compute-ms M] [--slow-rank R]
 *              [--slow-ms S] [--slow-after K]
 *
 * Each iteration c sleeps M ms (S ms on rank R once c >= K), then calls
 * serene_clock. Writes DIR/rank<R>.csv in ssp_worker's format, so that
 * ssp_check clocks can check it:
 *     clock,t_call_ns,t_return_ns,mode,s,low,high
 * (CLOCK_MONOTONIC; mode and s of the clock just finished, from
 * serene_get_clock_info) and a last line
 *     #stats holds=H releases=R clock_wait_ns=W retrans=T
 * Exit status: 0 ok; 1 a call failed; 2 bad usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serene/serene.h"

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static const char *mode_name(serene_sync_mode m)
{
    return m == SERENE_SYNC_BSP ? "BSP" : m == SERENE_SYNC_SSP ? "SSP" : m == SERENE_SYNC_ASP ? "ASP" : "?";
}

int main(int argc, char **argv)
{
    long clocks = 0, compute_ms = 5, slow_rank = -1, slow_ms = 0, slow_after = 0;
    const char *out = NULL;

    for (int i = 1; i + 1 < argc; i += 2) {
        long *v = !strcmp(argv[i], "--clocks")       ? &clocks
                  : !strcmp(argv[i], "--compute-ms") ? &compute_ms
                  : !strcmp(argv[i], "--slow-rank")  ? &slow_rank
                  : !strcmp(argv[i], "--slow-ms")    ? &slow_ms
                  : !strcmp(argv[i], "--slow-after") ? &slow_after
                                                     : NULL;
        if (v)
            *v = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--out"))
            out = argv[i + 1];
        else
            clocks = -1;
    }
    if (clocks <= 0 || !out || (argc - 1) % 2) {
        fprintf(stderr, "usage: ctl_worker --clocks C --out DIR [--compute-ms M] [--slow-rank R "
                        "--slow-ms S --slow-after K]\n");
        return 2;
    }
    serene_config cfg;
    serene_config_init(&cfg);
    if (serene_config_from_env(&cfg))
        return 2;
    serene_ctx *ctx = NULL;
    int rc = serene_ctx_create(&ctx, &cfg);
    if (rc) {
        fprintf(stderr, "ctl_worker: serene_ctx_create: %s\n", serene_strerror(rc));
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d.csv", out, cfg.rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ctl_worker: cannot write %s: %s\n", path, strerror(errno));
        serene_ctx_destroy(&ctx);
        return 1;
    }
    fprintf(f, "clock,t_call_ns,t_return_ns,mode,s,low,high\n");
    int status = 0;
    for (long c = 0; c < clocks; c++) {
        sleep_ms(cfg.rank == slow_rank && c >= slow_after ? slow_ms : compute_ms);
        uint64_t t_call = now_ns();
        rc = serene_clock(ctx);
        uint64_t t_ret = now_ns();
        if (rc) {
            fprintf(stderr, "ctl_worker: rank %d: clock %ld: %s\n", cfg.rank, c,
                    serene_strerror(rc));
            status = 1;
            break;
        }
        serene_clock_info ci;
        serene_get_clock_info(ctx, &ci);
        fprintf(f, "%ld,%llu,%llu,%s,%u,%u,%u\n", c, (unsigned long long)t_call,
                (unsigned long long)t_ret, mode_name(ci.mode), ci.staleness, ci.low, ci.high);
    }
    serene_stats st;
    serene_get_stats(ctx, &st);
    fprintf(f, "#stats holds=%llu releases=%llu clock_wait_ns=%llu retrans=%llu\n",
            (unsigned long long)st.holds, (unsigned long long)st.releases,
            (unsigned long long)st.clock_wait_ns, (unsigned long long)st.retransmissions);
    if (fclose(f))
        status = 1;
    serene_ctx_destroy(&ctx);
    return status;
}
