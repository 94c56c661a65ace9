/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allreduce_hello.c - the smallest complete Serene program.
 *
 * Run it under the launcher, which starts a software switch and N ranks:
 *     serene-run -n 4 -- ./allreduce_hello
 * or under Open MPI's mpirun against a switch started by hand (the
 * program does not link MPI: serene_config_from_env reads the rank and
 * size from OMPI_COMM_WORLD_RANK/SIZE; a fresh nonce for each run):
 *     serene-switch --listen 127.0.0.1:0 --job 0:3 --port-file sw.port &
 *     SERENE_SWITCH=127.0.0.1:$(cat sw.port) SERENE_JOB_NONCE=$RANDOM \
 *       mpirun -np 3 -x SERENE_SWITCH -x SERENE_JOB_NONCE ./allreduce_hello
 * Each rank contributes (rank + 1) * (i + 1) to element i; every rank gets
 * back sum_r (r + 1) * (i + 1) = N (N + 1) / 2 * (i + 1).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <serene/serene.h>

#define COUNT 1000

int main(void)
{
    serene_config cfg;
    serene_config_init(&cfg);
    if (serene_config_from_env(&cfg) != SERENE_OK)
        return 1;

    serene_ctx *ctx;
    int rc = serene_ctx_create(&ctx, &cfg);
    if (rc != SERENE_OK) {
        fprintf(stderr, "serene_ctx_create: %s\n", serene_strerror(rc));
        return 1;
    }

    float *grad = malloc(COUNT * sizeof *grad);
    if (!grad)
        return 1;
    for (int i = 0; i < COUNT; i++)
        grad[i] = (float)((cfg.rank + 1) * (i + 1));

    rc = serene_allreduce(ctx, grad, grad, COUNT, SERENE_SUM); /* in place */
    if (rc != SERENE_OK) {
        fprintf(stderr, "serene_allreduce: %s\n", serene_strerror(rc));
        serene_ctx_destroy(&ctx);
        return 1;
    }

    int n = cfg.world_size, wrong = 0;
    for (int i = 0; i < COUNT; i++) {
        double want = n * (n + 1) / 2.0 * (i + 1);
        if (fabs(grad[i] - want) > 1e-6 * want)
            wrong++;
    }
    printf("rank %d of %d: grad[0] = %g, grad[%d] = %g, %s\n", cfg.rank, n, grad[0], COUNT - 1,
           grad[COUNT - 1], wrong ? "WRONG" : "correct");

    free(grad);
    serene_ctx_destroy(&ctx);
    return wrong ? 1 : 0;
}
