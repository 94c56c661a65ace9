/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_quant.c - throughput of the quantization kernels against memcpy.
 *
 * On one buffer of --size bytes of float32 (64 MiB by default, far beyond
 * the caches) it measures, in the same run:
 *   memcpy         src -> dst, the bandwidth yardstick;
 * and for every kernel variant this CPU runs:
 *   maxabs         one pass over src;
 *   encode         src -> wire words (whole buffer);
 *   decode         wire words -> dst (whole buffer);
 *   roundtrip      the worker's data path per packet: for each --chunk
 *                  elements, encode src into one packet buffer (it stays in
 *                  L1) and decode that packet into dst. Like memcpy it reads
 *                  src once and writes dst once, so the two compare
 *                  directly: the ratio printed is roundtrip / memcpy, with
 *                  memcpy measured again just before each round trip;
 *   enc_then_dec   encode the whole buffer, then decode it (two passes over
 *                  memory: at best half of memcpy when bandwidth-bound).
 * GB/s always counts the float input size (4 bytes per element), also for
 * the round trips. Every case is verified after timing against the C
 * reference computed once up front (decode(encode(x)) for the round trips).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto/wire.h"
#include "quant/quant.h"

typedef struct ctx {
    const sr_quant_kernels *k;
    size_t n;     /* elements */
    size_t chunk; /* elements per packet in roundtrip */
    float mul, dmul;
    const float *src;
    const uint8_t *ref_wire; /* C encode of src */
    const float *ref_out;    /* C decode of ref_wire */
    float ref_max;
    uint8_t *wire; /* whole-buffer words */
    uint8_t *pkt;  /* one packet, for roundtrip */
    float *dst;
    float max; /* maxabs result */
    size_t bad;
} ctx;

/* Gradients are smooth in sign but spread in magnitude: mantissas and
 * exponents over ~12 binades, no special values. */
static void fill(float *x, size_t n)
{
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        float m = (float)(s >> 40) / (float)(1 << 24);
        x[i] = ldexpf(s & 1 ? -m : m, -(int)((s >> 8) % 12));
    }
}

static void run_memcpy(void *a)
{
    ctx *c = a;
    memcpy(c->dst, c->src, 4 * c->n);
}

static void run_maxabs(void *a)
{
    ctx *c = a;
    c->bad = c->k->maxabs(c->src, c->n, &c->max);
}

static void run_encode(void *a)
{
    ctx *c = a;
    c->bad = c->k->encode(c->wire, c->src, c->n, c->mul);
}

static void run_decode(void *a)
{
    ctx *c = a;
    c->k->decode(c->dst, c->ref_wire, c->n, c->dmul);
}

static void run_roundtrip(void *a)
{
    ctx *c = a;
    size_t bad = 0;
    for (size_t i = 0; i < c->n; i += c->chunk) {
        size_t m = c->n - i < c->chunk ? c->n - i : c->chunk;
        bad += c->k->encode(c->pkt, c->src + i, m, c->mul);
        c->k->decode(c->dst + i, c->pkt, m, c->dmul);
    }
    c->bad = bad;
}

static void run_enc_then_dec(void *a)
{
    ctx *c = a;
    c->bad = c->k->encode(c->wire, c->src, c->n, c->mul);
    c->k->decode(c->dst, c->wire, c->n, c->dmul);
}

static int differs(const void *got, const void *want, size_t len, char *why, size_t wl)
{
    const uint8_t *g = got, *w = want;
    for (size_t i = 0; i < len; i++)
        if (g[i] != w[i]) {
            snprintf(why, wl, "byte %zu differs from the C reference", i);
            return 1;
        }
    return 0;
}

static int verify_memcpy(void *a, char *why, size_t wl)
{
    ctx *c = a;
    return differs(c->dst, c->src, 4 * c->n, why, wl);
}

static int verify_maxabs(void *a, char *why, size_t wl)
{
    ctx *c = a;
    if (c->bad || memcmp(&c->max, &c->ref_max, 4)) {
        snprintf(why, wl, "max %a (%zu non-finite), reference %a", (double)c->max, c->bad, (double)c->ref_max);
        return 1;
    }
    return 0;
}

static int verify_encode(void *a, char *why, size_t wl)
{
    ctx *c = a;
    if (c->bad) {
        snprintf(why, wl, "%zu saturated", c->bad);
        return 1;
    }
    return differs(c->wire, c->ref_wire, 4 * c->n, why, wl);
}

static int verify_out(void *a, char *why, size_t wl)
{
    ctx *c = a;
    if (c->bad) {
        snprintf(why, wl, "%zu saturated", c->bad);
        return 1;
    }
    return differs(c->dst, c->ref_out, 4 * c->n, why, wl);
}

static void *alloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_quant: out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    memset(p, 0, bytes); /* fault the pages in before any timing */
    return p;
}

/* Allocate the buffers of base (n and chunk set), fill the input and
 * compute the C reference with the exponent the scheme would pick. Writes
 * B and E for the config line. Returns 0, or 1 if the reference saturated. */
static int setup_reference(ctx *base, size_t workers, int *bits, int *e)
{
    size_t bytes = 4 * base->n;
    float *src = alloc(bytes), *ref_out = alloc(bytes);
    uint8_t *ref_wire = alloc(bytes);
    base->wire = alloc(bytes);
    base->dst = alloc(bytes);
    base->pkt = alloc(4 * base->chunk);
    fill(src, base->n);
    base->src = src;
    base->ref_wire = ref_wire;
    base->ref_out = ref_out;

    sr_quant_kernels ref;
    sr_quant_init(&ref, 0);
    ref.maxabs(src, base->n, &base->ref_max);
    *bits = sr_quant_bits((unsigned)workers);
    *e = sr_quant_exponent(base->ref_max);
    base->mul = sr_quant_encode_mul(*e, *bits);
    base->dmul = sr_quant_decode_mul(*e, *bits);
    if (ref.encode(ref_wire, src, base->n, base->mul)) {
        fprintf(stderr, "bench_quant: reference encode saturated\n");
        return 1;
    }
    ref.decode(ref_out, ref_wire, base->n, base->dmul);
    return 0;
}

static void free_buffers(ctx *base)
{
    free((void *)base->src);
    free((void *)base->ref_out);
    free((void *)base->ref_wire);
    free(base->wire);
    free(base->dst);
    free(base->pkt);
}

typedef struct kernel_case {
    const char *name;
    void (*run)(void *);
    int (*verify)(void *, char *, size_t);
} kernel_case;

static const kernel_case kernel_cases[] = {
    {"maxabs", run_maxabs, verify_maxabs},       {"encode", run_encode, verify_encode},
    {"decode", run_decode, verify_out},          {"roundtrip", run_roundtrip, verify_out},
    {"enc_then_dec", run_enc_then_dec, verify_out},
};

/* The best round trip against memcpy, over the kernels. */
typedef struct rt_best {
    double median, best; /* roundtrip / memcpy */
    const char *kernel;  /* static storage; NULL: none verified */
} rt_best;

/* Time memcpy on a fresh copy of base into *r. */
static void run_memcpy_case(sr_bench *b, const ctx *base, sr_bench_result *r)
{
    ctx c = *base;
    sr_bench_case mc = {"memcpy", "libc", 4 * base->n, run_memcpy, verify_memcpy, &c};
    sr_bench_run(b, &mc, r);
}

/* One kernel case with kernels k, reported with its ratio to memcpy
 * (memcpy_gbps 0: no ratio). The round trips are compared with a memcpy
 * measured just before them, so that load from other processes on a
 * shared host skews both alike. */
static void run_kernel_case(sr_bench *b, const ctx *base, const sr_quant_kernels *k,
                            const kernel_case *kc, double memcpy_gbps, double memcpy_best,
                            rt_best *rt)
{
    size_t bytes = 4 * base->n;
    sr_bench_result r;
    double ref_gbps = memcpy_gbps, ref_best = memcpy_best;
    int roundtrip = kc->run == run_roundtrip;

    if (roundtrip && memcpy_gbps > 0) {
        run_memcpy_case(b, base, &r);
        ref_gbps = r.median_gbps;
        ref_best = r.best_gbps;
    }
    ctx c = *base;
    c.k = k;
    memset(c.dst, 0, bytes); /* a stale right answer must not pass */
    memset(c.wire, 0, bytes);
    sr_bench_case bc = {kc->name, k->name, bytes, kc->run, kc->verify, &c};
    sr_bench_run(b, &bc, &r);
    if (memcpy_gbps > 0)
        snprintf(r.extra, sizeof r.extra, "vs_memcpy=%.2f best_vs_memcpy=%.2f%s",
                 r.median_gbps / ref_gbps, r.best_gbps / ref_best,
                 roundtrip ? " memcpy_ref=adjacent" : "");
    if (memcpy_gbps > 0 && roundtrip && r.verified != 0 && r.median_gbps / ref_gbps > rt->median) {
        rt->median = r.median_gbps / ref_gbps;
        rt->best = r.best_gbps / ref_best;
        rt->kernel = k->name; /* static storage */
    }
    sr_bench_report(b, &r);
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t chunk = SR_WIRE_DEF_ELEMS, workers = 4;
    const sr_bench_opt opts[] = {
        {"--chunk", "elements per packet in roundtrip", &chunk},
        {"--workers", "N, sets B = 30 - ceil(log2 N)", &workers},
    };
    sr_bench_init(&b, "bench_quant", (size_t)64 << 20);
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (chunk == 0 || workers == 0 || workers > SR_WIRE_MAX_WORKERS) {
        fprintf(stderr, "bench_quant: need --chunk >= 1 and 1 <= --workers <= %u\n", SR_WIRE_MAX_WORKERS);
        return 2;
    }

    ctx base = {.n = b.size_bytes / 4, .chunk = chunk};
    if (base.n == 0) {
        fprintf(stderr, "bench_quant: --size must hold at least one float\n");
        return 2;
    }
    int bits, e;
    if (setup_reference(&base, workers, &bits, &e))
        return 1;

    char config[160];
    snprintf(config, sizeof config, "elements %zu, chunk %zu, workers %zu (B=%d, E=%d); GB/s counts float input bytes",
             base.n, chunk, workers, bits, e);
    sr_bench_begin(&b, config);

    /* memcpy is always measured (the ratios need it); reported when selected. */
    sr_bench_result r;
    run_memcpy_case(&b, &base, &r);
    double memcpy_gbps = r.median_gbps, memcpy_best = r.best_gbps;
    if (sr_bench_selected(&b, "memcpy", "libc"))
        sr_bench_report(&b, &r);

    static const unsigned variants[] = {0, SR_CPU_AVX2, SR_CPU_AVX512};
    rt_best rt = {0, 0, NULL};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        sr_quant_kernels k;
        if (sr_quant_init_variant(&k, variants[v]))
            continue;
        for (size_t i = 0; i < sizeof kernel_cases / sizeof kernel_cases[0]; i++)
            if (sr_bench_selected(&b, kernel_cases[i].name, k.name))
                run_kernel_case(&b, &base, &k, &kernel_cases[i], memcpy_gbps, memcpy_best, &rt);
    }
    if (memcpy_gbps > 0)
        sr_bench_note(&b, "# vs_memcpy = median GB/s / memcpy median GB/s, best_vs_memcpy the same for the "
                          "best (less noisy on a busy host); target: roundtrip >= 0.8");
    if (rt.kernel)
        sr_bench_note(&b, "# quantize + dequantize (roundtrip), best kernel %s: %.2fx memcpy (median), %.2fx (best); "
                          "target 0.8x: %s", rt.kernel, rt.median, rt.best,
                      rt.median >= 0.8 ? "met" : rt.best >= 0.8 ? "met on best samples only" : "NOT met");

    free_buffers(&base);
    return sr_bench_end(&b);
}
