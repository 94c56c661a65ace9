/* SPDX-License-Identifier: Apache-2.0 */
/*
 * train.c - serene-train: data-parallel training of an MLP 784-100-10 on
 * MNIST digits through Serene, with injected stragglers. One process per
 * rank, started by serene-run (SERENE_RANK, SERENE_WORLD_SIZE, ... are read
 * with serene_config_from_env).
 *
 * Modes (--mode):
 *   store      the model lives in the switch's SSP store (fixed point,
 *              --frac-bits). Each iteration: gradient of a minibatch of
 *              this rank's shard at the local (possibly stale) weights;
 *              the injected straggler delay; serene_step: push -lr * grad,
 *              end the clock under the barrier of the job's policy (BSP,
 *              SSP(s), ASP) and read the whole model back, as one
 *              pipelined operation. The policy is the switch's, not this
 *              program's.
 *   allreduce  synchronous data parallelism for comparison: serene_allreduce
 *              (SUM) of the gradients every iteration, then w -= lr * sum,
 *              the same update as the store under BSP.
 *   stream     SSP over the streaming allreduce (the stream mode): the model
 *              stays here; each iteration's gradient goes out with
 *              serene_stale_start, and before the next one every earlier
 *              iteration's sum that the switch's staleness bound s (from
 *              serene_stale_bound) requires is applied, in order, as
 *              w -= lr * sum (and any sum that has already arrived). The
 *              same update as the store under the same policy, and the
 *              switch holds the allreduce's window, not the model.
 *
 * Timing and waiting (documented in examples/train/README.md):
 *   time of an iteration = wall time from the start of its gradient to the
 *   end of its step (store) or allreduce;
 *   wait = its step or allreduce time minus the fastest one this rank saw
 *   in the run (the bare transfer time).
 *
 * Accuracy is measured after the run on snapshots of the local weights
 * taken every --eval-every iterations, so that evaluation never slows the
 * timed iterations. Outputs, in --out DIR: rank<R>.csv (one row per
 * iteration) and rank<R>.summary (key=value lines). Rank 0 prints
 * "progress I/N" every --eval-every iterations.
 *
 * Exit status: 0 done; 1 a Serene call or the data failed; 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data.h"
#include "mlp.h"
#include "serene/serene.h"
#include "straggler.h"

#define INIT_SEED 42u  /* model initialisation: identical for every run */
#define SPLIT_SEED 7u  /* test split and shards: identical for every run */
#define MAX_ITERS 1000000L
#define STREAM_RING 16 /* stream mode: gradients in flight at most (max_ops) */

enum { MODE_STORE, MODE_ALLREDUCE, MODE_STREAM };

typedef struct opts {
    const char *data, *out, *straggler, *ranks, *split, *metrics;
    int store_mode; /* mode == MODE_STORE */
    int mode;
    int wire_bits; /* allreduce, stream: 16 or 32 (default) */
    double noniid; /* --split noniid:F: F; -1 for iid */
    long iters, batch, hidden, eval_every, warmup, train_eval, test_eval, frac_bits;
    double lr, mean_iter_ms, test_frac, target;
    unsigned long long seed;
} opts;

typedef struct row {
    double t, loss, batch_acc, compute, straggle, comm, wait;
} row;

static const char usage_text[] =
    "usage: serene-train --data FILE --out DIR [options]   (one rank; run it with serene-run)\n"
    "  --mode store|allreduce|stream  model in the SSP store (default), allreduce of\n"
    "                           gradients, or SSP over the streaming allreduce\n"
    "  --wire-bits 16|32        allreduce and stream: bits per value on the wire (32)\n"
    "  --iters N                iterations per rank (default 300)\n"
    "  --batch B                images per rank and iteration (default 32)\n"
    "  --lr LR                  learning rate of each rank's update (default 0.05)\n"
    "  --hidden H               hidden units (default 100)\n"
    "  --straggler SPEC         none | slow:P:MIN:MAX | fail:P:MS | hetero:F |\n"
    "                           burst:F:START:LEN (default none)\n"
    "  --split iid|noniid:F     shards: every N-th training image (iid, default), or each\n"
    "                           image to the rank owning its class (label % N) with\n"
    "                           probability F, else to the ranks in turn\n"
    "  --straggler-ranks LIST   ranks that straggle, e.g. 0,2 (default: all)\n"
    "  --mean-iter-ms T         mean iteration time the delays scale with; default: this\n"
    "                           rank's mean over the warm-up iterations\n"
    "  --warmup W               first W iterations without stragglers (default 10)\n"
    "  --seed S                 straggler and minibatch seed (default 1)\n"
    "  --eval-every E           accuracy snapshot every E iterations (default 10)\n"
    "  --train-eval N           training images scored for train accuracy (default 1000)\n"
    "  --test-eval N            test images scored per snapshot (default 1000; the final\n"
    "                           model is scored on the whole test split)\n"
    "  --test-frac F            share of the images held out for testing (default 0.2)\n"
    "  --metrics FILE           rank 0 appends 'CLOCK LOSS' (the mean training loss of the\n"
    "                           last --eval-every iterations) at every snapshot, for\n"
    "                           serene-ctl run --metrics\n"
    "  --target-acc A           test accuracy for time-to-accuracy (default 0.91)\n"
    "  --frac-bits B            store fixed-point fraction bits (default 24)\n";

__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("serene-train: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fputs(usage_text, stderr);
    exit(2);
}

static long opt_long(const char *name, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        usage_error("%s: '%s' is not a number in %ld..%ld", name, s, lo, hi);
    return v;
}

static double opt_double(const char *name, const char *s, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        usage_error("%s: '%s' is not a number in %g..%g", name, s, lo, hi);
    return v;
}

static int rank_listed(const char *list, int rank);

static void parse_opts(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {
        {"data", required_argument, NULL, 'd'},        {"out", required_argument, NULL, 'o'},
        {"mode", required_argument, NULL, 'm'},        {"iters", required_argument, NULL, 'i'},
        {"batch", required_argument, NULL, 'b'},       {"lr", required_argument, NULL, 'l'},
        {"hidden", required_argument, NULL, 'H'},      {"straggler", required_argument, NULL, 's'},
        {"straggler-ranks", required_argument, NULL, 'R'},
        {"mean-iter-ms", required_argument, NULL, 'T'}, {"warmup", required_argument, NULL, 'w'},
        {"seed", required_argument, NULL, 'S'},        {"eval-every", required_argument, NULL, 'e'},
        {"train-eval", required_argument, NULL, 'E'},  {"test-eval", required_argument, NULL, 'X'},
        {"test-frac", required_argument, NULL, 'f'},   {"split", required_argument, NULL, 'P'},
        {"metrics", required_argument, NULL, 'M'},
        {"target-acc", required_argument, NULL, 'a'},  {"frac-bits", required_argument, NULL, 'F'},
        {"wire-bits", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0},
    };
    *o = (opts){.store_mode = 1, .mode = MODE_STORE, .wire_bits = 32, .iters = 300, .batch = 32, .hidden = 100, .eval_every = 10,
                .warmup = 10, .train_eval = 1000, .test_eval = 1000, .frac_bits = 24,
                .lr = 0.05, .test_frac = 0.2, .target = 0.91, .seed = 1, .straggler = "none",
                .split = "iid", .noniid = -1};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'd': o->data = optarg; break;
        case 'o': o->out = optarg; break;
        case 'm':
            if (strcmp(optarg, "store") && strcmp(optarg, "allreduce") && strcmp(optarg, "stream"))
                usage_error("--mode: '%s' is not store, allreduce or stream", optarg);
            o->mode = !strcmp(optarg, "store") ? MODE_STORE
                      : !strcmp(optarg, "allreduce") ? MODE_ALLREDUCE : MODE_STREAM;
            o->store_mode = o->mode == MODE_STORE;
            break;
        case 'W':
            o->wire_bits = (int)opt_long("--wire-bits", optarg, 16, 32);
            if (o->wire_bits != 16 && o->wire_bits != 32)
                usage_error("--wire-bits: %d is not 16 or 32", o->wire_bits);
            break;
        case 'i': o->iters = opt_long("--iters", optarg, 1, MAX_ITERS); break;
        case 'b': o->batch = opt_long("--batch", optarg, 1, 65536); break;
        case 'l': o->lr = opt_double("--lr", optarg, 0, 100); break;
        case 'H': o->hidden = opt_long("--hidden", optarg, 1, 4096); break;
        case 's': o->straggler = optarg; break;
        case 'R': o->ranks = optarg; break;
        case 'T': o->mean_iter_ms = opt_double("--mean-iter-ms", optarg, 0, 3600000); break;
        case 'w': o->warmup = opt_long("--warmup", optarg, 0, MAX_ITERS); break;
        case 'S': o->seed = (unsigned long long)opt_long("--seed", optarg, 0, 0x7fffffffL); break;
        case 'e': o->eval_every = opt_long("--eval-every", optarg, 1, MAX_ITERS); break;
        case 'E': o->train_eval = opt_long("--train-eval", optarg, 0, 1000000); break;
        case 'X': o->test_eval = opt_long("--test-eval", optarg, 1, 1000000); break;
        case 'f': o->test_frac = opt_double("--test-frac", optarg, 0.01, 0.9); break;
        case 'P':
            o->split = optarg;
            if (strcmp(optarg, "iid") == 0)
                o->noniid = -1;
            else if (strncmp(optarg, "noniid:", 7) == 0)
                o->noniid = opt_double("--split noniid:F", optarg + 7, 0, 1);
            else
                usage_error("--split: '%s' is not iid or noniid:F (0 <= F <= 1)", optarg);
            break;
        case 'M': o->metrics = optarg; break;
        case 'a': o->target = opt_double("--target-acc", optarg, 0, 1); break;
        case 'F': o->frac_bits = opt_long("--frac-bits", optarg, 0, 30); break;
        case 'h': fputs(usage_text, stdout); exit(0);
        default: usage_error("unknown option");
        }
    }
    if (optind != argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (!o->data || !o->out)
        usage_error("--data and --out are required");
    char why[512];
    straggler probe;
    if (straggler_parse(&probe, o->straggler, why, sizeof why))
        usage_error("--straggler: %s", why);
    if (o->ranks)
        (void)rank_listed(o->ranks, 0); /* exits on a malformed list */
    if (o->warmup == 0 && o->mean_iter_ms <= 0 && strcmp(o->straggler, "none"))
        usage_error("--warmup 0 needs --mean-iter-ms (T is measured over the warm-up)");
    if (o->warmup >= o->iters && strcmp(o->straggler, "none"))
        usage_error("--warmup %ld leaves no iteration of %ld for the stragglers", o->warmup,
                    o->iters);
}

/* Is rank in the comma list (NULL: every rank)? */
static int rank_listed(const char *list, int rank)
{
    if (!list)
        return 1;
    for (const char *p = list; *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || (*end && *end != ',') || v < 0 || v > 63)
            usage_error("--straggler-ranks: '%s' is not a comma list of ranks 0..63", list);
        if (v == rank)
            return 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long long real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fail_call(int rank, const char *what, long iter, int rc)
{
    fprintf(stderr, "serene-train: rank %d: %s (iteration %ld) failed: %s (%s)\n", rank, what,
            iter, serene_strerror(rc), serene_err_name(rc));
    return 1;
}

/* The next minibatch: consecutive images of the shard, reshuffled at the
 * start of every pass. */
static void next_batch(uint32_t *shard, size_t n, size_t *pos, uint64_t *rng, uint32_t *idx,
                       size_t batch)
{
    for (size_t i = 0; i < batch; i++) {
        if (*pos == 0)
            for (size_t k = n - 1; k > 0; k--) {
                size_t j = (size_t)(rng_next(rng) % (k + 1));
                uint32_t t = shard[k];
                shard[k] = shard[j];
                shard[j] = t;
            }
        idx[i] = shard[*pos];
        *pos = (*pos + 1) % n;
    }
}

/* Everything one rank holds. */
typedef struct run {
    opts o;
    int rank, world;
    serene_ctx *ctx;
    digit_set ds;
    mlp m;
    float *w, *g, *snaps;
    uint32_t *shard, *idx, *train_idx;
    size_t n_shard, n_snaps, n_train_idx, n_test_idx;
    row *rows;
    long *snap_iter;
    straggler strag;
    int straggles;
    double mean_s, t_start;
    long long start_ns, end_ns;
    /* stream mode: the gradients in flight (iteration it in slot it %
     * STREAM_RING) and how many iterations' sums w holds */
    float *sg[STREAM_RING], *own[STREAM_RING]; /* in flight: for the sums, own copies */
    float *base, *pend;                        /* the replica; own updates in flight */
    serene_op *sop[STREAM_RING];
    long applied;
} run;

/* Rank 0 writes the initial model into the store; a one-float allreduce
 * is the barrier after which every rank pulls it (and the start line of
 * the timed run for all modes). */
static int start_barrier(run *r)
{
    float one = 1.0f, sum = 0.0f;
    int rc;
    if (r->o.store_mode && r->rank == 0 && (rc = serene_push(r->ctx, 0, r->w, r->m.n_params)))
        return fail_call(r->rank, "serene_push of the initial model", 0, rc);
    if ((rc = serene_allreduce(r->ctx, &one, &sum, 1, SERENE_SUM)))
        return fail_call(r->rank, "serene_allreduce (start barrier)", 0, rc);
    if (r->o.store_mode && (rc = serene_pull(r->ctx, 0, r->w, r->m.n_params, 0)))
        return fail_call(r->rank, "serene_pull of the initial model", 0, rc);
    return 0;
}

/* Stream mode: wait for iteration `applied`'s sum and apply it to the
 * replica (base: every rank's is the same), then make the working weights
 * w the replica plus this rank's own updates of the iterations still in
 * flight (pend, their sum: read-my-writes, as the store gives it: a rank
 * sees its own updates at once and the others' within the bound). With
 * none in flight w is the replica, bit for bit. */
static int stream_apply(run *r, long it)
{
    long k = r->applied;
    size_t n = r->m.n_params;
    int rc = serene_op_wait(&r->sop[k % STREAM_RING]);
    if (rc)
        return fail_call(r->rank, "the stream mode's allreduce", k, rc);
    const float *sum = r->sg[k % STREAM_RING], *own = r->own[k % STREAM_RING];
    float lr = (float)r->o.lr;
    r->applied = k + 1;
    if (r->applied > it) { /* nothing of its own in flight: w is the replica */
        for (size_t j = 0; j < n; j++)
            r->w[j] = r->base[j] -= lr * sum[j];
        memset(r->pend, 0, n * sizeof *r->pend);
        return 0;
    }
    for (size_t j = 0; j < n; j++) {
        r->base[j] -= lr * sum[j];
        r->pend[j] -= own[j];
        r->w[j] = r->base[j] - lr * r->pend[j];
    }
    return 0;
}

/* Stream mode: end iteration it (the clock it): its gradient out, then
 * every sum the bound requires before the next gradient (clocks <= it -
 * s, s of the clock before: serene.h), and the ones already arrived, in
 * order. */
static int stream_step(run *r, long it)
{
    float *g = r->sg[it % STREAM_RING];
    uint32_t s;
    memcpy(g, r->g, r->m.n_params * sizeof *g);
    memcpy(r->own[it % STREAM_RING], r->g, r->m.n_params * sizeof *g);
    for (size_t j = 0; j < r->m.n_params; j++) { /* its own update, at once */
        r->pend[j] += r->g[j];
        r->w[j] -= (float)r->o.lr * r->g[j];
    }
    int rc = serene_stale_start(r->ctx, g, g, r->m.n_params, SERENE_FLOAT32, SERENE_SUM,
                                r->o.wire_bits == 16 ? SERENE_WIRE16 : SERENE_WIRE32,
                                &r->sop[it % STREAM_RING]);
    if (!rc)
        rc = serene_stale_bound(r->ctx, (uint32_t)(it ? it - 1 : 0), NULL, &s);
    if (rc)
        return fail_call(r->rank, "serene_stale_start", it, rc);
    while (r->applied <= it &&
           (r->applied <= it - (long)s || it + 1 - r->applied >= STREAM_RING ||
            serene_op_test(r->sop[r->applied % STREAM_RING]) == 0))
        if (stream_apply(r, it))
            return 1;
    return 0;
}

/* One training iteration; fills rows[it]. */
static int iterate(run *r, long it, uint64_t *batch_rng, size_t *pos, double *ar_min)
{
    row *rw = &r->rows[it];
    const opts *o = &r->o;
    double t0 = mono_s();
    size_t correct = 0;
    int rc;
    next_batch(r->shard, r->n_shard, pos, batch_rng, r->idx, (size_t)o->batch);
    rw->loss = mlp_grad(&r->m, r->w, r->ds.x, r->ds.y, r->idx, (size_t)o->batch, r->g, &correct);
    rw->batch_acc = (double)correct / (double)o->batch;
    double t1 = mono_s();
    rw->compute = t1 - t0;
    if (it >= o->warmup && r->straggles) {
        if (it == o->warmup && r->mean_s <= 0) /* measured over the warm-up */
            r->mean_s = (t0 - r->t_start) / (double)o->warmup;
        rw->straggle = straggler_delay(&r->strag, r->mean_s);
        straggler_sleep(rw->straggle);
    }
    double t2 = mono_s();
    if (o->store_mode) {
        for (size_t k = 0; k < r->m.n_params; k++)
            r->g[k] *= (float)-o->lr;
        if ((rc = serene_step(r->ctx, 0, r->g, r->w, r->m.n_params, 0)))
            return fail_call(r->rank, "serene_step", it, rc);
    } else if (o->mode == MODE_STREAM) {
        if (stream_step(r, it))
            return 1;
    } else {
        if ((rc = serene_allreduce_typed(r->ctx, r->g, r->g, r->m.n_params, SERENE_FLOAT32,
                                         SERENE_SUM,
                                         o->wire_bits == 16 ? SERENE_WIRE16 : SERENE_WIRE32)))
            return fail_call(r->rank, "serene_allreduce", it, rc);
        for (size_t k = 0; k < r->m.n_params; k++)
            r->w[k] -= (float)o->lr * r->g[k];
    }
    rw->wait = mono_s() - t2; /* the fastest is subtracted at the end */
    if (rw->wait < *ar_min)
        *ar_min = rw->wait;
    double t3 = mono_s();
    rw->comm = t3 - t2;
    rw->t = t3 - r->t_start;
    return 0;
}

/* Write rank<R>.csv and rank<R>.summary; the accuracies come from the
 * snapshots, scored now that the timed part is over. */
static int write_outputs(run *r, double final_acc, double cum_wait)
{
    const opts *o = &r->o;
    char path[4096];
    double tta = -1.0;
    snprintf(path, sizeof path, "%s/rank%d.csv", o->out, r->rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "serene-train: rank %d: cannot write %s: %s\n", r->rank, path,
                strerror(errno));
        return 1;
    }
    fprintf(f, "iter,time_s,loss,batch_acc,train_acc,test_acc,compute_s,straggle_s,comm_s,wait_s,"
               "cum_wait_s\n");
    size_t s = 0;
    double cum = 0.0, delay = 0.0;
    long delayed = 0;
    for (long it = 0; it < o->iters; it++) {
        const row *rw = &r->rows[it];
        cum += rw->wait;
        delay += rw->straggle;
        delayed += rw->straggle > 0;
        char acc[64] = ",";
        if (s < r->n_snaps && r->snap_iter[s] == it) {
            const float *p = r->snaps + s * r->m.n_params;
            double tr = mlp_eval(&r->m, p, r->ds.x, r->ds.y, r->train_idx, r->n_train_idx, NULL);
            double te = mlp_eval(&r->m, p, r->ds.x, r->ds.y, r->ds.perm, r->n_test_idx, NULL);
            snprintf(acc, sizeof acc, "%.4f,%.4f", tr, te);
            if (tta < 0 && te >= o->target)
                tta = rw->t;
            s++;
        }
        fprintf(f, "%ld,%.6f,%.6f,%.4f,%s,%.6f,%.6f,%.6f,%.6f,%.6f\n", it + 1, rw->t, rw->loss,
                rw->batch_acc, acc, rw->compute, rw->straggle, rw->comm, rw->wait, cum);
    }
    if (fclose(f)) {
        fprintf(stderr, "serene-train: rank %d: writing %s: %s\n", r->rank, path, strerror(errno));
        return 1;
    }
    serene_stats st;
    serene_get_stats(r->ctx, &st);
    snprintf(path, sizeof path, "%s/rank%d.summary", o->out, r->rank);
    if (!(f = fopen(path, "w"))) {
        fprintf(stderr, "serene-train: rank %d: cannot write %s: %s\n", r->rank, path,
                strerror(errno));
        return 1;
    }
    fprintf(f,
            "rank=%d\nworld=%d\nmode=%s\niters=%ld\nbatch=%ld\nlr=%g\nparams=%zu\n"
            "mean_iter_ms=%.3f\nstraggler=%s\ndelayed_iters=%ld\ndelay_s=%.6f\nstart_ns=%lld\n"
            "end_ns=%lld\n"
            "wall_s=%.6f\ncum_wait_s=%.6f\nfinal_test_acc=%.4f\ntime_to_target_s=%.6f\n"
            "split=%s\nshard_images=%zu\ntarget_acc=%.4f\nsaturations=%llu\nretransmissions=%llu\nholds=%llu\n",
            r->rank, r->world,
            o->mode == MODE_STORE ? "store" : o->mode == MODE_STREAM ? "stream" : "allreduce",
            o->iters, o->batch, o->lr,
            r->m.n_params, r->mean_s * 1e3, r->straggles ? o->straggler : "none", delayed, delay,
            r->start_ns, r->end_ns, r->rows[o->iters - 1].t, cum_wait, final_acc, tta, o->split,
            r->n_shard, o->target,
            (unsigned long long)st.saturations, (unsigned long long)st.retransmissions,
            (unsigned long long)st.holds);
    fprintf(f, "shard_classes=");
    for (uint32_t c = 0; c < r->ds.classes; c++) {
        size_t nc = 0;
        for (size_t i = 0; i < r->n_shard; i++)
            nc += r->ds.y[r->shard[i]] == c;
        fprintf(f, "%s%zu", c ? "," : "", nc);
    }
    fputc('\n', f);
    if (fclose(f)) {
        fprintf(stderr, "serene-train: rank %d: writing %s: %s\n", r->rank, path, strerror(errno));
        return 1;
    }
    return 0;
}

/* Allocate the model, the shard and the per-iteration records. */
static int setup(run *r)
{
    const opts *o = &r->o;
    char why[512];
    if (digit_set_load(&r->ds, o->data, why, sizeof why)) {
        fprintf(stderr, "serene-train: %s\n", why);
        return 1;
    }
    digit_set_split(&r->ds, SPLIT_SEED, o->test_frac);
    if (mlp_init(&r->m, r->ds.dim, (uint32_t)o->hidden, r->ds.classes)) {
        fprintf(stderr, "serene-train: out of memory\n");
        return 1;
    }
    r->n_shard = o->noniid < 0 ? digit_set_shard(&r->ds, r->rank, r->world, &r->shard)
                               : digit_set_shard_noniid(&r->ds, r->rank, r->world, o->noniid,
                                                        SPLIT_SEED, &r->shard);
    if (r->n_shard == 0) {
        fprintf(stderr, "serene-train: rank %d of %d gets no training image (%u images)\n",
                r->rank, r->world, r->ds.n - r->ds.n_test);
        return 1;
    }
    r->n_train_idx = (size_t)o->train_eval < r->ds.n - r->ds.n_test
                         ? (size_t)o->train_eval
                         : r->ds.n - r->ds.n_test;
    r->train_idx = r->ds.perm + r->ds.n_test; /* the first training images */
    r->n_test_idx = (size_t)o->test_eval < r->ds.n_test ? (size_t)o->test_eval : r->ds.n_test;
    r->n_snaps = (size_t)((o->iters + o->eval_every - 1) / o->eval_every);
    size_t np = r->m.n_params;
    r->w = malloc(np * sizeof *r->w);
    r->g = malloc(np * sizeof *r->g);
    r->idx = malloc((size_t)o->batch * sizeof *r->idx);
    r->rows = calloc((size_t)o->iters, sizeof *r->rows);
    r->snap_iter = malloc(r->n_snaps * sizeof *r->snap_iter);
    r->snaps = malloc(r->n_snaps * np * sizeof *r->snaps);
    for (int k = 0; o->mode == MODE_STREAM && k < STREAM_RING; k++)
        if (!(r->sg[k] = malloc(np * sizeof *r->sg[k])) ||
            !(r->own[k] = malloc(np * sizeof *r->own[k])))
            return fprintf(stderr, "serene-train: out of memory\n"), 1;
    if (o->mode == MODE_STREAM && (!(r->base = malloc(np * sizeof *r->base)) ||
                                   !(r->pend = calloc(np, sizeof *r->pend))))
        return fprintf(stderr, "serene-train: out of memory\n"), 1;
    if (!r->w || !r->g || !r->idx || !r->rows || !r->snap_iter || !r->snaps) {
        fprintf(stderr, "serene-train: out of memory (%zu snapshots of %zu parameters)\n",
                r->n_snaps, np);
        return 1;
    }
    if (straggler_parse(&r->strag, o->straggler, why, sizeof why)) {
        fprintf(stderr, "serene-train: --straggler: %s\n", why);
        return 1;
    }
    straggler_seed(&r->strag, o->seed, r->rank);
    r->straggles = r->strag.kind != STRAG_NONE && rank_listed(o->ranks, r->rank);
    r->mean_s = o->mean_iter_ms / 1e3;
    mlp_init_params(&r->m, r->w, INIT_SEED);
    if (r->base)
        memcpy(r->base, r->w, np * sizeof *r->w);
    return 0;
}


/* The weights after iteration it, kept for the evaluation at the end; the
 * mean loss since the previous snapshot to --metrics; a progress line. */
static void snapshot(run *r, long it, size_t *s, FILE *mf)
{
    size_t np = r->m.n_params;
    memcpy(r->snaps + *s * np, r->w, np * sizeof *r->w);
    r->snap_iter[(*s)++] = it;
    if (mf) { /* the clock this iteration ended is it */
        double sum = 0;
        long k0 = *s > 1 ? r->snap_iter[*s - 2] + 1 : 0;
        for (long k = k0; k <= it; k++)
            sum += r->rows[k].loss;
        fprintf(mf, "%ld %.6f\n", it, sum / (double)(it + 1 - k0));
        fflush(mf);
    }
    if (r->rank == 0) {
        printf("progress %ld/%ld\n", it + 1, r->o.iters);
        fflush(stdout);
    }
}

static int train(run *r)
{
    const opts *o = &r->o;
    serene_config cfg;
    serene_config_init(&cfg);
    int rc = serene_config_from_env(&cfg);
    if (rc)
        return fail_call(-1, "serene_config_from_env", 0, rc);
    cfg.store_frac_bits = (int)o->frac_bits;
    r->rank = cfg.rank;
    r->world = cfg.world_size;
    if (setup(r)) /* the data first: a bad file fails before joining */
        return 1;
    if ((rc = serene_ctx_create(&r->ctx, &cfg)))
        return fail_call(cfg.rank, "serene_ctx_create", 0, rc);
    size_t np = r->m.n_params;
    if (o->store_mode && serene_store_capacity(r->ctx) < np) {
        fprintf(stderr,
                "serene-train: the model has %zu parameters but the switch's store holds %zu "
                "words: start the switch with --job ID:N:E:S,store=%zu or more\n",
                np, serene_store_capacity(r->ctx), np);
        return 1;
    }
    FILE *mf = NULL;
    if (o->metrics && r->rank == 0 && !(mf = fopen(o->metrics, "w"))) {
        fprintf(stderr, "serene-train: cannot write --metrics %s: %s\n", o->metrics,
                strerror(errno));
        return 1;
    }
    if (start_barrier(r)) {
        if (mf)
            fclose(mf);
        return 1;
    }
    r->start_ns = real_ns();
    r->t_start = mono_s();
    uint64_t batch_rng = o->seed * 0x2545f4914f6cdd1dull + (uint64_t)r->rank;
    size_t pos = 0, s = 0;
    double ar_min = INFINITY;
    for (long it = 0; it < o->iters; it++) {
        if (iterate(r, it, &batch_rng, &pos, &ar_min)) {
            if (mf)
                fclose(mf);
            return 1;
        }
        if ((it + 1) % o->eval_every == 0 || it + 1 == o->iters)
            snapshot(r, it, &s, mf);
    }
    r->end_ns = real_ns();
    r->n_snaps = s;
    if (mf && fclose(mf)) {
        fprintf(stderr, "serene-train: writing --metrics %s: %s\n", o->metrics, strerror(errno));
        return 1;
    }
    double cum_wait = 0.0;
    for (long it = 0; it < o->iters; it++) {
        r->rows[it].wait -= ar_min;
        cum_wait += r->rows[it].wait;
    }
    /* Stream mode: the sums still in flight, so that every rank ends
     * with the same model. */
    while (o->mode == MODE_STREAM && r->applied < o->iters)
        if (stream_apply(r, o->iters - 1))
            return 1;
    /* The final model: every rank's last push is in the store once all
     * ranks reached this barrier. */
    float one = 1.0f, sum = 0.0f;
    if ((rc = serene_allreduce(r->ctx, &one, &sum, 1, SERENE_SUM)))
        return fail_call(r->rank, "serene_allreduce (end barrier)", o->iters, rc);
    if (o->store_mode && (rc = serene_pull(r->ctx, 0, r->w, np, 0)))
        return fail_call(r->rank, "serene_pull of the final model", o->iters, rc);
    double final_acc = mlp_eval(&r->m, r->w, r->ds.x, r->ds.y, r->ds.perm, r->ds.n_test, NULL);
    if (write_outputs(r, final_acc, cum_wait))
        return 1;
    serene_stats st;
    serene_get_stats(r->ctx, &st);
    if (st.saturations) {
        fprintf(stderr, "serene-train: rank %d: %llu values saturated in the store's fixed point "
                        "(--frac-bits %ld is too many for the weights)\n",
                r->rank, (unsigned long long)st.saturations, o->frac_bits);
        return 1;
    }
    printf("rank %d: %ld iterations in %.2f s, waited %.2f s, straggler %s, final test "
           "accuracy %.4f\n",
           r->rank, o->iters, r->rows[o->iters - 1].t, cum_wait,
           r->straggles ? o->straggler : "none", final_acc);
    return 0;
}

static void run_free(run *r)
{
    serene_ctx_destroy(&r->ctx);
    for (int k = 0; k < STREAM_RING; k++) {
        free(r->sg[k]);
        free(r->own[k]);
    }
    free(r->base);
    free(r->pend);
    digit_set_free(&r->ds);
    mlp_free(&r->m);
    free(r->w);
    free(r->g);
    free(r->snaps);
    free(r->shard);
    free(r->idx);
    free(r->rows);
    free(r->snap_iter);
}

int main(int argc, char **argv)
{
    run r;
    memset(&r, 0, sizeof r);
    parse_opts(argc, argv, &r.o);
    int rc = train(&r);
    run_free(&r);
    return rc;
}
