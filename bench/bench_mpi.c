/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_mpi.c - OpenMPI's MPI_Allreduce on the same tensors as
 * bench_allreduce, for a side-by-side comparison. Run under mpirun:
 *   mpirun -np 2 --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo \
 *       bench/bench_mpi --sizes 256k,16M --csv
 * Same inputs (ar_data.h), same out-of-place SUM of float32, same fixed
 * calls per sample on every rank, same columns; rank 0 reports. The
 * variant names the byte transfer layer actually asked for, read back from
 * the MCA environment mpirun passes to its ranks (OMPI_MCA_btl):
 *   mpi-tcp  btl tcp without shared memory (crosses the loopback TCP
 *            stack, as Serene crosses the UDP stack);
 *   mpi-shm  btl vader or sm (shared memory between ranks on one host:
 *            no network stack at all);
 *   mpi      anything else (OpenMPI's own choice).
 * Results are checked after timing against the exact sum within the
 * float-sum bound (ar_data.h).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ar_data.h"
#include "harness.h"

typedef struct mpi_ctx {
    int world;
    size_t n;
    float *send, *recv;
    uint64_t seed;
    int rc;
} mpi_ctx;

static void run_allreduce(void *a)
{
    mpi_ctx *c = a;
    int rc = MPI_Allreduce(c->send, c->recv, (int)c->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS && !c->rc)
        c->rc = rc;
}

static int verify_allreduce(void *a, char *why, size_t wl)
{
    mpi_ctx *c = a;
    if (c->rc) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(c->rc, msg, &len);
        snprintf(why, wl, "MPI_Allreduce failed: %s", msg);
        return 1;
    }
    return sr_ar_check(c->recv, c->n, c->world, c->seed, 0, why, wl) != 0;
}

static const char *btl_label(const char *btl)
{
    if (!btl)
        return "mpi";
    if (strstr(btl, "vader") || strstr(btl, "sm"))
        return strstr(btl, "tcp") ? "mpi" : "mpi-shm";
    return strstr(btl, "tcp") ? "mpi-tcp" : "mpi";
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    /* Errors come back as codes, to be reported, instead of aborting. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    sr_bench b;
    size_t sample_bytes = (size_t)32 << 20, seed = 1;
    const sr_bench_opt opts[] = {
        {"--sample-bytes", "tensor bytes per timed sample when --iters is 0", &sample_bytes},
        {"--seed", "input seed", &seed},
    };
    sr_bench_init(&b, "bench_mpi", (size_t)16 << 20);
    b.sweeps = 1;
    b.reps = 5;
    b.quiet = rank != 0;
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    size_t maxn = 0;
    for (unsigned i = 0; i < b.nsizes; i++) {
        if (b.sizes[i] % 4 || b.sizes[i] / 4 > INT32_MAX) {
            fprintf(stderr, "bench_mpi: size %zu is not a whole number of floats below 2^31\n", b.sizes[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        maxn = b.sizes[i] / 4 > maxn ? b.sizes[i] / 4 : maxn;
    }
    mpi_ctx c = {.world = world, .seed = seed};
    c.send = aligned_alloc(64, (4 * maxn + 63) / 64 * 64);
    c.recv = aligned_alloc(64, (4 * maxn + 63) / 64 * 64);
    if (!c.send || !c.recv) {
        fprintf(stderr, "bench_mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(c.recv, 0, 4 * maxn);

    const char *btl = getenv("OMPI_MCA_btl"), *pml = getenv("OMPI_MCA_pml");
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", config[400];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = 0;
    snprintf(config, sizeof config, "%s, ranks %d, pml %s, btl %s; MPI_Allreduce SUM float32 out of place; "
             "calls per sample %s%zu%s", lib, world, pml ? pml : "(default)", btl ? btl : "(default)",
             b.iters ? "" : "max(1, ", b.iters ? (size_t)b.iters : sample_bytes, b.iters ? " (fixed)" : " B / size)");
    sr_bench_begin(&b, config);

    const char *variant = btl_label(btl);
    const unsigned user_iters = b.iters;
    int failed = 0;
    for (unsigned s = 0; s < b.nsizes; s++) {
        c.n = b.sizes[s] / 4;
        c.seed = seed + s;
        c.rc = 0;
        sr_ar_fill(c.send, c.n, rank, c.seed);
        memset(c.recv, 0xff, 4 * c.n);
        if (!user_iters) {
            size_t it = sample_bytes / b.sizes[s];
            b.iters = it == 0 ? 1 : it > 4096 ? 4096 : (unsigned)it;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        sr_bench_result r;
        sr_bench_case bc = {"allreduce", variant, b.sizes[s], run_allreduce, verify_allreduce, &c};
        if (sr_bench_run(&b, &bc, &r))
            failed = 1;
        snprintf(r.extra, sizeof r.extra, "workers=%d elems_per_s=%.4g gbps=%.4g best_gbps=%.4g iters=%u",
                 world, (double)c.n / r.median_s, r.median_gbps * 8, r.best_gbps * 8, r.iters);
        sr_bench_report(&b, &r);
        if (c.rc)
            break;
    }
    free(c.send);
    free(c.recv);
    int end = sr_bench_end(&b);
    /* Any rank's failure is the run's failure. */
    int mine = end ? end : failed, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
