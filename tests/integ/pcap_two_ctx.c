/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcap_two_ctx.c - two contexts in one process, each with its own packet
 * trace (test_pcap.sh): ranks 0 and 1 of one 2-worker job, created from one
 * config whose pcap_path holds "%r", so each writes its own file. Both start
 * an allreduce of COUNT values, then both wait; the sums are checked
 * exactly (small integers). Prints one line per context:
 *   ctx R: sent S recv V rejected X
 * The switch, job and timeout come from the SERENE_* environment.
 *
 * usage: pcap_two_ctx PCAP_PATTERN COUNT
 * Exit status: 0 passed, 1 failed, 2 bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serene/serene.h"
#include "worker.h"

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) < 1) {
        fprintf(stderr, "usage: pcap_two_ctx PCAP_PATTERN COUNT\n");
        return 2;
    }
    size_t n = (size_t)atoi(argv[2]);
    serene_config cfg;
    if (tc_config_from_env(&cfg))
        return 2;
    if (strlen(argv[1]) >= sizeof cfg.pcap_path) {
        fprintf(stderr, "pcap_two_ctx: pattern longer than %zu bytes\n", sizeof cfg.pcap_path - 1);
        return 2;
    }
    strcpy(cfg.pcap_path, argv[1]);
    cfg.world_size = 2;

    serene_ctx *ctx[2] = {NULL, NULL};
    float *in[2], *out[2];
    int fails = 0;
    for (int r = 0; r < 2; r++) {
        cfg.rank = r;
        int rc = serene_ctx_create(&ctx[r], &cfg);
        if (rc) {
            fprintf(stderr, "ctx %d: serene_ctx_create: %s\n", r, serene_err_name(rc));
            serene_ctx_destroy(&ctx[0]);
            return 1;
        }
        in[r] = malloc(n * sizeof(float));
        out[r] = malloc(n * sizeof(float));
        if (!in[r] || !out[r])
            return 1;
        for (size_t i = 0; i < n; i++)
            in[r][i] = (float)((i % 1000) * (size_t)(r + 1));
    }
    serene_op *op[2];
    for (int r = 0; r < 2; r++) {
        int rc = serene_allreduce_start(ctx[r], in[r], out[r], n, SERENE_SUM, &op[r]);
        if (rc) {
            fprintf(stderr, "ctx %d: allreduce_start: %s\n", r, serene_err_name(rc));
            return 1;
        }
    }
    for (int r = 0; r < 2; r++) {
        int rc = serene_op_wait(&op[r]);
        if (rc) {
            fprintf(stderr, "ctx %d: allreduce: %s\n", r, serene_err_name(rc));
            fails++;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (out[r][i] != (float)((i % 1000) * 3)) {
                fprintf(stderr, "ctx %d: element %zu is %g, expected %g\n", r, i, out[r][i],
                        (double)((i % 1000) * 3));
                fails++;
                break;
            }
        }
    }
    for (int r = 0; r < 2; r++) {
        serene_stats st;
        serene_get_stats(ctx[r], &st);
        printf("ctx %d: sent %llu recv %llu rejected %llu\n", r, (unsigned long long)st.pkts_sent,
               (unsigned long long)st.pkts_recv, (unsigned long long)st.rejected);
        serene_ctx_destroy(&ctx[r]);
        free(in[r]);
        free(out[r]);
    }
    return fails ? 1 : 0;
}
