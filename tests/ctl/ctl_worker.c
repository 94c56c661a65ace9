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
 * serene_clock. Writes DIR/rank<R>.csv, the clock log of tests/common/
 * worker.h that ssp_worker writes too, so that ssp_check clocks can check
 * it. Exit status: 0 ok; 1 a call failed; 2 bad usage.
 */
#include <stdint.h>
#include <stdio.h>

#include "serene/serene.h"
#include "timing.h"
#include "worker.h"

int main(int argc, char **argv)
{
    long clocks = 0, compute_ms = 5, slow_rank = -1, slow_ms = 0, slow_after = 0;
    const char *out = NULL;
    const tc_opt table[] = {
        {"--clocks", TC_OPT_LONG, &clocks, NULL, 0, NULL},
        {"--compute-ms", TC_OPT_LONG, &compute_ms, NULL, 0, NULL},
        {"--slow-rank", TC_OPT_LONG, &slow_rank, NULL, 0, NULL},
        {"--slow-ms", TC_OPT_LONG, &slow_ms, NULL, 0, NULL},
        {"--slow-after", TC_OPT_LONG, &slow_after, NULL, 0, NULL},
        {"--out", TC_OPT_STR, &out, NULL, 0, NULL},
        {NULL, TC_OPT_FLAG, NULL, NULL, 0, NULL},
    };

    if (tc_parse_opts(argc, argv, 1, table) || clocks <= 0 || !out) {
        fprintf(stderr, "usage: ctl_worker --clocks C --out DIR [--compute-ms M] [--slow-rank R "
                        "--slow-ms S --slow-after K]\n");
        return 2;
    }
    serene_config cfg;
    if (tc_config_from_env(&cfg))
        return 2;
    serene_ctx *ctx = NULL;
    if (tc_ctx_create(&ctx, &cfg))
        return 1;
    tc_clock_log lg;
    if (tc_clock_log_open(&lg, out, cfg.rank)) {
        serene_ctx_destroy(&ctx);
        return 1;
    }
    int status = 0;
    for (long c = 0; c < clocks; c++) {
        tc_sleep_ms(cfg.rank == slow_rank && c >= slow_after ? slow_ms : compute_ms);
        uint64_t t_call = tc_now_ns();
        int rc = serene_clock(ctx);
        uint64_t t_ret = tc_now_ns();
        if (rc) {
            fprintf(stderr, "ctl_worker: rank %d: clock %ld: %s\n", cfg.rank, c,
                    serene_strerror(rc));
            status = 1;
            break;
        }
        serene_clock_info ci;
        serene_get_clock_info(ctx, &ci);
        tc_clock_log_row(&lg, c, t_call, t_ret, &ci);
    }
    if (tc_clock_log_close(&lg, ctx))
        status = 1;
    serene_ctx_destroy(&ctx);
    return status;
}
