/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness.h - the shared benchmark harness for bench/ (zstd's benchzstd and
 * SwitchML's allreduce_benchmark are the models).
 *
 * A benchmark describes each case (a run callback, the bytes one call
 * processes, an optional verify callback) and the harness:
 * - parses the common options (--size, --reps, --warmup, --min-time,
 *   --iters, --filter, --csv, --json; --sizes for benchmarks that sweep)
 *   plus the benchmark's own numeric ones;
 * - prints the effective config and the CPU (model name, SR_CPU_* flags)
 *   first;
 * - warms each case up, then times `reps` samples; a sample repeats the
 *   call until it lasts --min-time, so tiny sizes still measure well;
 * - reports the median and the best (minimum) time per call, and GB/s as
 *   size_bytes / time / 1e9;
 * - verifies the output after timing, so checking never pollutes a sample.
 *
 * Benchmarks that run as several processes (one per rank, each timing its
 * own calls) set --iters so that every rank makes the same number of calls
 * (calibration would differ per rank), and set `quiet` on every rank but
 * one so that a single rank reports.
 *
 * Output: a human line per case on stdout; with --csv or --json, stdout
 * carries only the machine-readable form (fixed columns, below) and the
 * human lines go to stderr.
 *   CSV columns: name,variant,size_bytes,reps,median_s,best_s,median_gbps,
 *                best_gbps,verified,extra
 *   JSON: {"bench":..., "config":{...}, "cpu":{...}, "results":[{same keys}]}
 * verified is "ok", "FAILED" or "none"; extra is a free per-case string.
 *
 * Not thread-safe; one sr_bench per process is the intended use.
 */
#ifndef SERENE_BENCH_HARNESS_H
#define SERENE_BENCH_HARNESS_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SR_BENCH_MAX_SIZES 32

typedef enum sr_bench_format {
    SR_BENCH_HUMAN = 0,
    SR_BENCH_CSV,
    SR_BENCH_JSON,
} sr_bench_format;

typedef struct sr_bench {
    const char *prog;      /* benchmark name, printed in the config */
    size_t size_bytes;     /* --size (suffixes k, M, G: powers of 1024) */
    unsigned reps;         /* --reps: timed samples per case (default 11) */
    unsigned warmup;       /* --warmup: untimed calls first (default 2) */
    double min_sample_s;   /* --min-time: a sample lasts at least this (default 0.01) */
    const char *filter;    /* --filter: run only cases whose "name/variant" contains it */
    /* --sizes: a comma-separated list (same suffixes) for benchmarks that
     * sweep sizes; when absent it holds the one entry size_bytes. */
    size_t sizes[SR_BENCH_MAX_SIZES];
    unsigned nsizes;
    /* --iters: calls per timed sample, fixed (0, the default: calibrated
     * so that a sample lasts --min-time). */
    unsigned iters;
    int sweeps;            /* set by the benchmark before parsing: it takes --sizes */
    int quiet;             /* set by the benchmark: print nothing (a non-reporting rank) */
    sr_bench_format format;
    /* harness state */
    FILE *human;     /* where human lines go */
    unsigned nrows;  /* rows printed, for JSON separators */
    unsigned nfails; /* cases whose verify failed */
} sr_bench;

/* A benchmark-specific numeric option, e.g. {"--chunk", "elements per
 * packet", &chunk}; parsed with the same suffixes as --size. */
typedef struct sr_bench_opt {
    const char *name;
    const char *help;
    size_t *value;
} sr_bench_opt;

typedef struct sr_bench_case {
    const char *name;    /* what is measured: "encode" */
    const char *variant; /* which implementation: "avx2" */
    size_t size_bytes;   /* bytes one call processes, for GB/s */
    void (*run)(void *arg);
    /* After timing: 0 if the output is right, else nonzero with a reason
     * written into why. NULL when there is nothing to check. */
    int (*verify)(void *arg, char *why, size_t why_len);
    void *arg;
} sr_bench_case;

typedef struct sr_bench_result {
    const char *name;
    const char *variant;
    size_t size_bytes;
    unsigned reps;
    unsigned iters;   /* calls per timed sample */
    double median_s;  /* per call */
    double best_s;    /* per call */
    double median_gbps;
    double best_gbps;
    int verified;     /* 1 ok, 0 failed, -1 no verify callback */
    char why[128];    /* verify's reason on failure */
    char extra[160];  /* free column, filled by the benchmark before reporting */
} sr_bench_result;

/* Parse "256k,1M,..." (suffixes k, M, G: powers of 1024) into out[0..max).
 * Returns the count (>= 1), or -1 on a malformed, zero or extra entry. */
int sr_bench_parse_sizes(const char *s, size_t *out, unsigned max);

/* "256 KiB", "16 MiB", "1.5 GiB", "100 B": for human lines and tables. */
const char *sr_bench_size_str(size_t bytes, char *buf, size_t len);

/* Defaults: reps 11, warmup 2, min-time 0.01 s, human output. */
void sr_bench_init(sr_bench *b, const char *prog, size_t default_size);

/* Parse argv. Returns 0 to go on, 1 after printing --help (exit 0), -1 on
 * a bad option (a message was printed; exit 2). */
int sr_bench_parse(sr_bench *b, int argc, char **argv, const sr_bench_opt *opts, size_t nopts);

/* Print the effective config (plus the benchmark's own config line, may be
 * NULL) and the CPU, then the CSV header or the JSON preamble. */
void sr_bench_begin(sr_bench *b, const char *config);

/* Whether --filter selects this case. */
int sr_bench_selected(const sr_bench *b, const char *name, const char *variant);

/* Warm up, time and verify one case into *r (extra empty). Returns 0, or
 * -1 if verification failed (also counted for sr_bench_end). */
int sr_bench_run(sr_bench *b, const sr_bench_case *c, sr_bench_result *r);

/* Print r: its human line and, if selected, its CSV/JSON row. */
void sr_bench_report(sr_bench *b, const sr_bench_result *r);

/* A human-only line (summaries such as ratios), printf-style. */
void sr_bench_note(sr_bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Close the JSON document. Returns the exit status: 0, or 1 if any case
 * failed verification. */
int sr_bench_end(sr_bench *b);

#ifdef __cplusplus
}
#endif

#endif /* SERENE_BENCH_HARNESS_H */
