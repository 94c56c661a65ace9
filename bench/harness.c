/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness.c - option parsing, timing, statistics and output for bench/
 * (see harness.h for the contract and the output columns).
 *
 * Timing uses CLOCK_MONOTONIC around whole samples; a sample repeats the
 * call `iters` times, chosen once per case so that it lasts --min-time,
 * which keeps clock resolution and call overhead out of small cases.
 */
#include "harness.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quant/quant.h"

#define MAX_REPS 1000u

void sr_bench_init(sr_bench *b, const char *prog, size_t default_size)
{
    memset(b, 0, sizeof *b);
    b->prog = prog;
    b->size_bytes = default_size;
    b->reps = 11;
    b->warmup = 2;
    b->min_sample_s = 0.01;
    b->format = SR_BENCH_HUMAN;
    b->human = stdout;
    b->sizes[0] = default_size;
    b->nsizes = 1;
}

/* "64M", "1048576", "4k": powers of 1024. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

int sr_bench_parse_sizes(const char *s, size_t *out, unsigned max)
{
    char buf[512];
    if (!s || strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    unsigned n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == max || parse_size(t, &out[n]) || out[n] == 0)
            return -1;
        n++;
    }
    return n ? (int)n : -1;
}

const char *sr_bench_size_str(size_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
    unsigned u = 0;
    double v = (double)bytes;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, v == (double)(size_t)v ? "%.0f %s" : "%.1f %s", v, unit[u]);
    return buf;
}

static void usage(const sr_bench *b, const sr_bench_opt *opts, size_t nopts)
{
    printf("usage: %s [options]\n"
           "  --size N       bytes per case (k/M/G suffixes), default %zu\n"
           "  --reps N       timed samples per case, default %u (max %u)\n"
           "  --warmup N     untimed calls before timing, default %u\n"
           "  --min-time S   seconds a sample lasts at least, default %g\n"
           "  --iters N      calls per timed sample, fixed (default 0: calibrated to --min-time)\n"
           "  --filter STR   only cases whose name/variant contains STR\n"
           "  --csv | --json machine-readable results on stdout\n",
           b->prog, b->size_bytes, b->reps, MAX_REPS, b->warmup, b->min_sample_s);
    if (b->sweeps)
        printf("  --sizes LIST   comma-separated sizes to sweep (k/M/G suffixes), default --size\n");
    for (size_t i = 0; i < nopts; i++)
        printf("  %-14s %s, default %zu\n", opts[i].name, opts[i].help, *opts[i].value);
}

int sr_bench_parse(sr_bench *b, int argc, char **argv, const sr_bench_opt *opts, size_t nopts)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        char name[64];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, arg, len);
        name[len] = 0;
        if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
            usage(b, opts, nopts);
            return 1;
        }
        if (!strcmp(name, "--csv") || !strcmp(name, "--json")) {
            b->format = name[2] == 'c' ? SR_BENCH_CSV : SR_BENCH_JSON;
            b->human = stderr;
            continue;
        }
        /* every other option takes a value: --opt=V or --opt V */
        val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!val) {
            fprintf(stderr, "%s: %s needs a value\n", b->prog, name);
            return -1;
        }
        size_t v = 0;
        int bad = 0;
        if (!strcmp(name, "--filter")) {
            b->filter = val;
        } else if (!strcmp(name, "--min-time")) {
            char *end;
            b->min_sample_s = strtod(val, &end);
            bad = *end || !(b->min_sample_s >= 0 && b->min_sample_s < 60);
        } else if (!strcmp(name, "--size")) {
            bad = parse_size(val, &b->size_bytes) || b->size_bytes == 0;
            b->sizes[0] = b->size_bytes;
            b->nsizes = 1;
        } else if (!strcmp(name, "--sizes") && b->sweeps) {
            int n = sr_bench_parse_sizes(val, b->sizes, SR_BENCH_MAX_SIZES);
            bad = n < 0;
            b->nsizes = n < 0 ? 0 : (unsigned)n;
            if (!bad)
                b->size_bytes = b->sizes[0];
        } else if (!strcmp(name, "--iters")) {
            bad = parse_size(val, &v) || v > (1u << 30);
            b->iters = (unsigned)v;
        } else if (!strcmp(name, "--reps")) {
            bad = parse_size(val, &v) || v == 0 || v > MAX_REPS;
            b->reps = (unsigned)v;
        } else if (!strcmp(name, "--warmup")) {
            bad = parse_size(val, &v) || v > 1000000;
            b->warmup = (unsigned)v;
        } else {
            size_t k = 0;
            while (k < nopts && strcmp(name, opts[k].name))
                k++;
            if (k == nopts) {
                fprintf(stderr, "%s: unknown option %s (see --help)\n", b->prog, name);
                return -1;
            }
            bad = parse_size(val, opts[k].value);
        }
        if (bad) {
            fprintf(stderr, "%s: bad value '%s' for %s\n", b->prog, val, name);
            return -1;
        }
    }
    return 0;
}

/* ---- environment --------------------------------------------------------- */

static void cpu_model(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp)
        return;
    char line[512];
    while (fgets(line, sizeof line, fp)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon)
            continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out, len, "%s", colon);
        break;
    }
    fclose(fp);
}

static void cpu_flags(char *out, size_t len)
{
    unsigned f = sr_cpu_features();
    snprintf(out, len, "%s%s%s", f & SR_CPU_AVX2 ? "avx2" : "", f & SR_CPU_AVX2 && f & SR_CPU_AVX512 ? " " : "",
             f & SR_CPU_AVX512 ? "avx512" : f & SR_CPU_AVX2 ? "" : "none");
}

#if defined(__clang__)
#define COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define COMPILER "gcc " __VERSION__
#else
#define COMPILER "unknown compiler"
#endif

static const char *build_kind(void)
{
#if defined(__OPTIMIZE__) && defined(NDEBUG)
    return "optimized, asserts off";
#elif defined(__OPTIMIZE__)
    return "optimized, asserts on";
#else
    return "NOT optimized";
#endif
}

/* JSON string body: escapes quotes, backslashes and control bytes. */
static void json_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

/* CSV field: always quoted, quotes doubled. */
static void csv_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; s && *s; s++) {
        if (*s == '"')
            fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

void sr_bench_begin(sr_bench *b, const char *config)
{
    char model[256], flags[64];
    if (b->quiet)
        return;
    cpu_model(model, sizeof model);
    cpu_flags(flags, sizeof flags);
    FILE *h = b->human;
    fprintf(h, "# %s: size %zu B (%.1f MiB), reps %u, warmup %u, ", b->prog, b->size_bytes,
            (double)b->size_bytes / (1 << 20), b->reps, b->warmup);
    if (b->iters)
        fprintf(h, "iters %u per sample (fixed), ", b->iters);
    else
        fprintf(h, "min-time %g s, ", b->min_sample_s);
    fprintf(h, "filter %s\n", b->filter ? b->filter : "-");
    if (b->nsizes > 1 || (b->sweeps && b->sizes[0] != b->size_bytes)) {
        fprintf(h, "# sizes:");
        for (unsigned i = 0; i < b->nsizes; i++)
            fprintf(h, "%s %zu", i ? "," : "", b->sizes[i]);
        fputc('\n', h);
    }
    fprintf(h, "# cpu: %s; serene cpu flags: %s\n", model, flags);
    fprintf(h, "# build: %s, %s\n", COMPILER, build_kind());
    if (config)
        fprintf(h, "# %s\n", config);
    fprintf(h, "# GB/s = size_bytes / time per call / 1e9; median and best (min) of reps samples\n");
    if (b->format == SR_BENCH_CSV) {
        printf("name,variant,size_bytes,reps,median_s,best_s,median_gbps,best_gbps,verified,extra\n");
    } else if (b->format == SR_BENCH_JSON) {
        printf("{\"bench\": ");
        json_str(stdout, b->prog);
        printf(",\n \"config\": {\"size_bytes\": %zu, \"reps\": %u, \"warmup\": %u, \"min_time_s\": %g, "
               "\"iters\": %u, \"filter\": ", b->size_bytes, b->reps, b->warmup, b->min_sample_s, b->iters);
        json_str(stdout, b->filter ? b->filter : "");
        printf(", \"extra\": ");
        json_str(stdout, config ? config : "");
        printf("},\n \"cpu\": {\"model\": ");
        json_str(stdout, model);
        printf(", \"flags\": ");
        json_str(stdout, flags);
        printf(", \"compiler\": ");
        json_str(stdout, COMPILER);
        printf(", \"build\": ");
        json_str(stdout, build_kind());
        printf("},\n \"results\": [");
    }
    fflush(stdout);
}

int sr_bench_selected(const sr_bench *b, const char *name, const char *variant)
{
    if (!b->filter)
        return 1;
    char full[128];
    snprintf(full, sizeof full, "%s/%s", name, variant);
    return strstr(full, b->filter) != NULL;
}

/* ---- timing ---------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double time_calls(const sr_bench_case *c, unsigned iters)
{
    double t0 = now_s();
    for (unsigned i = 0; i < iters; i++)
        c->run(c->arg);
    return now_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int sr_bench_run(sr_bench *b, const sr_bench_case *c, sr_bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->name = c->name;
    r->variant = c->variant;
    r->size_bytes = c->size_bytes;
    r->reps = b->reps;

    for (unsigned i = 0; i < b->warmup; i++)
        c->run(c->arg);
    /* Calibrate iters so a sample lasts min_sample_s (these calls warm up
     * too). Growth is bounded so a slow first call cannot overshoot. */
    unsigned iters = b->iters ? b->iters : 1;
    for (; !b->iters;) {
        double t = time_calls(c, iters);
        if (t >= b->min_sample_s || iters >= (1u << 30))
            break;
        double want = t > 0 ? ceil(iters * b->min_sample_s / t * 1.1) : iters * 10.0;
        iters = want > iters * 10.0 ? iters * 10 : want < iters + 1.0 ? iters + 1 : (unsigned)want;
    }
    r->iters = iters;

    double s[MAX_REPS];
    for (unsigned i = 0; i < b->reps; i++)
        s[i] = time_calls(c, iters) / iters;
    qsort(s, b->reps, sizeof s[0], cmp_double);
    r->best_s = s[0];
    r->median_s = b->reps & 1 ? s[b->reps / 2] : (s[b->reps / 2 - 1] + s[b->reps / 2]) / 2;
    r->median_gbps = r->median_s > 0 ? (double)c->size_bytes / r->median_s / 1e9 : 0;
    r->best_gbps = r->best_s > 0 ? (double)c->size_bytes / r->best_s / 1e9 : 0;

    r->verified = -1;
    if (c->verify) {
        r->verified = c->verify(c->arg, r->why, sizeof r->why) == 0;
        if (!r->verified) {
            b->nfails++;
            return -1;
        }
    }
    return 0;
}

static const char *verified_str(int v)
{
    return v > 0 ? "ok" : v == 0 ? "FAILED" : "none";
}

void sr_bench_report(sr_bench *b, const sr_bench_result *r)
{
    if (b->quiet) {
        if (r->verified == 0)
            fprintf(stderr, "%s: %s/%s %zu B FAILED: %s\n", b->prog, r->name, r->variant, r->size_bytes,
                    r->why);
        return;
    }
    fprintf(b->human, "%-14s %-7s %11zu B  median %8.3f GB/s (%10.6f s)  best %8.3f GB/s  %-6s%s%s%s%s\n",
            r->name, r->variant, r->size_bytes, r->median_gbps, r->median_s, r->best_gbps,
            verified_str(r->verified), r->extra[0] ? "  " : "", r->extra, r->verified == 0 ? "  " : "",
            r->verified == 0 ? r->why : "");
    if (b->format == SR_BENCH_CSV) {
        csv_str(stdout, r->name);
        putchar(',');
        csv_str(stdout, r->variant);
        printf(",%zu,%u,%.9g,%.9g,%.6g,%.6g,%s,", r->size_bytes, r->reps, r->median_s, r->best_s,
               r->median_gbps, r->best_gbps, verified_str(r->verified));
        csv_str(stdout, r->extra);
        putchar('\n');
    } else if (b->format == SR_BENCH_JSON) {
        printf("%s\n  {\"name\": ", b->nrows ? "," : "");
        json_str(stdout, r->name);
        printf(", \"variant\": ");
        json_str(stdout, r->variant);
        printf(", \"size_bytes\": %zu, \"reps\": %u, \"median_s\": %.9g, \"best_s\": %.9g, "
               "\"median_gbps\": %.6g, \"best_gbps\": %.6g, \"verified\": \"%s\", \"extra\": ",
               r->size_bytes, r->reps, r->median_s, r->best_s, r->median_gbps, r->best_gbps,
               verified_str(r->verified));
        json_str(stdout, r->extra);
        putchar('}');
    }
    b->nrows++;
    fflush(stdout);
}

void sr_bench_note(sr_bench *b, const char *fmt, ...)
{
    va_list ap;
    if (b->quiet)
        return;
    va_start(ap, fmt);
    vfprintf(b->human, fmt, ap);
    va_end(ap);
    fputc('\n', b->human);
}

int sr_bench_end(sr_bench *b)
{
    if (b->format == SR_BENCH_JSON && !b->quiet)
        printf("\n ]}\n");
    fflush(stdout);
    if (b->nfails)
        fprintf(b->quiet ? stderr : b->human, "# %u case(s) FAILED verification\n", b->nfails);
    return b->nfails ? 1 : 0;
}
