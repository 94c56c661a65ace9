/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_wire.c - the per-packet cost of the wire format: nanoseconds per
 * packet to pack and unpack Serene messages (lib/proto/wire.h) and their
 * Ethernet/IPv4/UDP frames.
 *
 * Cases, each over a batch of --batch packets of --elems values:
 *   hdr_pack      sr_hdr_pack alone (28-byte header);
 *   msg_parse     sr_msg_parse of whole messages (header checks + length);
 *   pack/<kernel> what a worker does per packet it sends: maxabs of the
 *                 chunk (its exponent hint), quantize into the payload,
 *                 pack the header;
 *   unpack/<kernel> what it does per result: parse, dequantize;
 *   frame_pack    Ethernet/IPv4/UDP headers and both checksums around a
 *                 message (the DPDK transport's framing);
 *   frame_parse   the same frames checked and parsed.
 * ns/packet is in the extra column; GB/s counts message bytes (header +
 * payload; frames: whole frames). Each case is verified after timing: the
 * parsed headers equal the packed ones, the decoded values equal the C
 * reference, every frame checks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ar_data.h"
#include "harness.h"
#include "proto/wire.h"
#include "quant/quant.h"

typedef struct wctx {
    const sr_quant_kernels *k;
    size_t batch, elems, msg_len, frame_len;
    float mul, dmul;
    const float *src;     /* batch * elems values */
    uint8_t *msgs;        /* batch messages of msg_len */
    const uint8_t *ref_msgs; /* the same, packed with the C kernel */
    uint8_t *frames;      /* batch frames of frame_len */
    float *out;           /* batch * elems decoded values */
    const float *ref_out; /* C reference decode */
    sr_hdr *hdrs;         /* headers packed (the expected parse) */
    sr_hdr *parsed;
    sr_frame_addr fa;
    size_t bad;
} wctx;

static void hdr_of(const wctx *c, size_t p, sr_hdr *h)
{
    memset(h, 0, sizeof *h);
    h->version = SR_WIRE_VERSION;
    h->op = SR_OP_AR_DATA;
    h->job = 3;
    h->worker = (uint16_t)(p % 4);
    h->seq = (uint32_t)p;
    h->slot = (uint16_t)(p % SR_WIRE_DEF_SLOTS);
    h->shadow = (uint8_t)(p / SR_WIRE_DEF_SLOTS & 1);
    h->count = (uint16_t)c->elems;
    h->exp = 2;
    h->next_exp = 1;
    h->offset = (uint32_t)(p * c->elems);
}

static void run_hdr_pack(void *a)
{
    wctx *c = a;
    for (size_t p = 0; p < c->batch; p++)
        sr_hdr_pack(c->msgs + p * c->msg_len, &c->hdrs[p]);
}

static void run_msg_parse(void *a)
{
    wctx *c = a;
    size_t bad = 0;
    for (size_t p = 0; p < c->batch; p++)
        bad += sr_msg_parse(c->msgs + p * c->msg_len, c->msg_len, &c->parsed[p], NULL) != SR_PARSE_OK;
    c->bad = bad;
}

static void run_pack(void *a)
{
    wctx *c = a;
    size_t bad = 0;
    for (size_t p = 0; p < c->batch; p++) {
        uint8_t *m = c->msgs + p * c->msg_len;
        float mx;
        bad += c->k->maxabs(c->src + p * c->elems, c->elems, &mx);
        bad += c->k->encode(m + SR_WIRE_HDR_LEN, c->src + p * c->elems, c->elems, c->mul);
        sr_hdr h = c->hdrs[p];
        h.next_exp = (int8_t)sr_quant_exponent(mx);
        sr_hdr_pack(m, &h);
    }
    c->bad = bad;
}

static void run_unpack(void *a)
{
    wctx *c = a;
    size_t bad = 0;
    for (size_t p = 0; p < c->batch; p++) {
        const uint8_t *payload;
        if (sr_msg_parse(c->msgs + p * c->msg_len, c->msg_len, &c->parsed[p], &payload) != SR_PARSE_OK) {
            bad++;
            continue;
        }
        c->k->decode(c->out + p * c->elems, payload, c->parsed[p].count, c->dmul);
    }
    c->bad = bad;
}

static void run_frame_pack(void *a)
{
    wctx *c = a;
    size_t bad = 0;
    for (size_t p = 0; p < c->batch; p++)
        bad += sr_frame_pack(c->frames + p * c->frame_len, c->frame_len, &c->fa, c->msg_len) != c->frame_len;
    c->bad = bad;
}

static void run_frame_parse(void *a)
{
    wctx *c = a;
    size_t bad = 0;
    for (size_t p = 0; p < c->batch; p++) {
        sr_frame_addr fa;
        const uint8_t *pl;
        size_t pl_len;
        bad += sr_frame_parse(c->frames + p * c->frame_len, c->frame_len, &fa, &pl, &pl_len) != SR_FRAME_OK ||
               pl_len != c->msg_len;
    }
    c->bad = bad;
}

static int hdr_eq(const sr_hdr *a, const sr_hdr *b)
{
    return a->version == b->version && a->op == b->op && a->job == b->job && a->worker == b->worker &&
           a->seq == b->seq && a->slot == b->slot && a->shadow == b->shadow && a->count == b->count &&
           a->exp == b->exp && a->flags == b->flags && a->status == b->status && a->offset == b->offset &&
           a->aux == b->aux;
}

static int verify_parsed(void *a, char *why, size_t wl)
{
    wctx *c = a;
    if (c->bad) {
        snprintf(why, wl, "%zu packets failed", c->bad);
        return 1;
    }
    for (size_t p = 0; p < c->batch; p++) {
        sr_hdr h;
        if (sr_msg_parse(c->msgs + p * c->msg_len, c->msg_len, &h, NULL) != SR_PARSE_OK ||
            !hdr_eq(&h, &c->hdrs[p])) {
            snprintf(why, wl, "packet %zu does not parse back to its header", p);
            return 1;
        }
    }
    return 0;
}

static int verify_pack(void *a, char *why, size_t wl)
{
    wctx *c = a;
    if (verify_parsed(a, why, wl))
        return 1;
    for (size_t p = 0; p < c->batch; p++)
        if (memcmp(c->msgs + p * c->msg_len + SR_WIRE_HDR_LEN, c->ref_msgs + p * c->msg_len + SR_WIRE_HDR_LEN,
                   4 * c->elems)) {
            snprintf(why, wl, "payload of packet %zu differs from the C reference", p);
            return 1;
        }
    return 0;
}

static int verify_unpack(void *a, char *why, size_t wl)
{
    wctx *c = a;
    if (verify_parsed(a, why, wl))
        return 1;
    if (memcmp(c->out, c->ref_out, 4 * c->batch * c->elems)) {
        snprintf(why, wl, "decoded values differ from the C reference");
        return 1;
    }
    return 0;
}

static int verify_frames(void *a, char *why, size_t wl)
{
    wctx *c = a;
    if (c->bad) {
        snprintf(why, wl, "%zu frames failed", c->bad);
        return 1;
    }
    for (size_t p = 0; p < c->batch; p++) {
        sr_frame_addr fa;
        const uint8_t *pl;
        size_t pl_len;
        if (sr_frame_parse(c->frames + p * c->frame_len, c->frame_len, &fa, &pl, &pl_len) != SR_FRAME_OK ||
            pl_len != c->msg_len || memcmp(pl, c->msgs + p * c->msg_len, c->msg_len) ||
            fa.src_ip != c->fa.src_ip || fa.dst_port != c->fa.dst_port) {
            snprintf(why, wl, "frame %zu does not parse back", p);
            return 1;
        }
    }
    return 0;
}

static void *alloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench_wire: out of memory\n");
        exit(2);
    }
    memset(p, 0, bytes);
    return p;
}

/* Allocate base's buffers (batch and elems set), fill the input and pack
 * the reference messages (kept in ref_msgs too, to restore msgs from),
 * the frames' payloads and the decode, with the C kernels. */
static void setup_reference(wctx *base, size_t workers)
{
    const size_t batch = base->batch, elems = base->elems;
    base->msg_len = SR_WIRE_HDR_LEN + 4 * elems;
    base->frame_len = SR_FRAME_HLEN + base->msg_len;
    float *src = alloc(4 * batch * elems), *ref_out = alloc(4 * batch * elems);
    sr_ar_fill(src, batch * elems, 0, 7);
    base->src = src;
    base->msgs = alloc(batch * base->msg_len);
    base->frames = alloc(batch * base->frame_len);
    base->out = alloc(4 * batch * elems);
    base->hdrs = alloc(batch * sizeof *base->hdrs);
    base->parsed = alloc(batch * sizeof *base->parsed);
    for (size_t p = 0; p < batch; p++)
        hdr_of(base, p, &base->hdrs[p]);
    const int bits = sr_quant_bits((unsigned)workers), e = 8; /* |src| < 2^8 (ar_data.h) */
    base->mul = sr_quant_encode_mul(e, bits);
    base->dmul = sr_quant_decode_mul(e, bits);
    base->fa = (sr_frame_addr){.dst_mac = {2, 0, 0, 0, 0, 1}, .src_mac = {2, 0, 0, 0, 0, 2},
                               .src_ip = 0x0a000002u, .dst_ip = 0x0a000001u,
                               .src_port = 40000, .dst_port = SR_WIRE_UDP_PORT};
    /* Reference messages and their decode, with the C kernels. */
    sr_quant_kernels ref;
    sr_quant_init(&ref, 0);
    for (size_t p = 0; p < batch; p++) {
        uint8_t *m = base->msgs + p * base->msg_len;
        ref.encode(m + SR_WIRE_HDR_LEN, src + p * elems, elems, base->mul);
        sr_hdr_pack(m, &base->hdrs[p]);
        ref.decode(ref_out + p * elems, m + SR_WIRE_HDR_LEN, elems, base->dmul);
        memcpy(base->frames + p * base->frame_len + SR_FRAME_HLEN, m, base->msg_len);
    }
    base->ref_out = ref_out;
    uint8_t *ref_msgs = alloc(batch * base->msg_len);
    memcpy(ref_msgs, base->msgs, batch * base->msg_len);
    base->ref_msgs = ref_msgs;
}

static void free_buffers(wctx *base)
{
    free((void *)base->src);
    free((void *)base->ref_out);
    free((void *)base->ref_msgs);
    free(base->msgs);
    free(base->frames);
    free(base->out);
    free(base->hdrs);
    free(base->parsed);
}

typedef struct wcase {
    const char *name;
    void (*run)(void *);
    int (*verify)(void *, char *, size_t);
    int per_kernel, frames;
} wcase;

static const wcase wire_cases[] = {
    {"hdr_pack", run_hdr_pack, verify_parsed, 0, 0},
    {"msg_parse", run_msg_parse, verify_parsed, 0, 0},
    {"pack", run_pack, verify_pack, 1, 0},
    {"unpack", run_unpack, verify_unpack, 1, 0},
    {"frame_pack", run_frame_pack, verify_frames, 0, 1},
    {"frame_parse", run_frame_parse, verify_frames, 0, 1},
};

/* One case with kernels k (variant "-" for the cases without kernels),
 * reported in ns per packet; then base's messages are restored. */
static void run_wire_case(sr_bench *b, wctx *base, const wcase *wc, const sr_quant_kernels *k)
{
    const size_t batch = base->batch;
    sr_bench_result r;
    wctx c = *base;
    c.k = k;
    if (!strcmp(wc->name, "pack")) /* must be rebuilt by the case itself */
        memset(c.msgs, 0, batch * c.msg_len);
    memset(c.out, 0xff, 4 * batch * c.elems);
    size_t bytes = batch * (wc->frames ? c.frame_len : c.msg_len);
    sr_bench_case bc = {wc->name, wc->per_kernel ? k->name : "-", bytes, wc->run, wc->verify, &c};
    sr_bench_run(b, &bc, &r);
    snprintf(r.extra, sizeof r.extra, "ns_per_pkt=%.1f best_ns_per_pkt=%.1f Mpps=%.2f",
             r.median_s / (double)batch * 1e9, r.best_s / (double)batch * 1e9,
             (double)batch / r.median_s / 1e6);
    sr_bench_report(b, &r);
    /* pack rewrote the messages (next_exp hints): restore them */
    memcpy(base->msgs, base->ref_msgs, batch * base->msg_len);
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t elems = SR_WIRE_DEF_ELEMS, batch = 256, workers = 4;
    const sr_bench_opt opts[] = {
        {"--elems", "values per packet", &elems},
        {"--batch", "packets per timed call", &batch},
        {"--workers", "N, sets B = 30 - ceil(log2 N)", &workers},
    };
    sr_bench_init(&b, "bench_wire", 0);
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (elems == 0 || elems > SR_WIRE_MAX_ELEMS || batch == 0 || batch > 65536 || workers == 0 ||
        workers > SR_WIRE_MAX_WORKERS) {
        fprintf(stderr, "bench_wire: need 1 <= --elems <= %u, 1 <= --batch <= 65536, 1 <= --workers <= %u\n",
                SR_WIRE_MAX_ELEMS, SR_WIRE_MAX_WORKERS);
        return 2;
    }

    wctx base = {.batch = batch, .elems = elems};
    setup_reference(&base, workers);
    b.size_bytes = batch * base.msg_len;

    char config[160];
    snprintf(config, sizeof config, "elems %zu per packet (message %zu B, frame %zu B), batch %zu packets per call",
             elems, base.msg_len, base.frame_len, batch);
    sr_bench_begin(&b, config);

    static const unsigned variants[] = {0, SR_CPU_AVX2, SR_CPU_AVX512};
    for (size_t i = 0; i < sizeof wire_cases / sizeof wire_cases[0]; i++) {
        const wcase *wc = &wire_cases[i];
        for (size_t v = 0; v < (wc->per_kernel ? 3u : 1u); v++) {
            sr_quant_kernels k;
            if (sr_quant_init_variant(&k, variants[v]))
                continue;
            if (sr_bench_selected(&b, wc->name, wc->per_kernel ? k.name : "-"))
                run_wire_case(&b, &base, wc, &k);
        }
    }
    free_buffers(&base);
    return sr_bench_end(&b);
}
