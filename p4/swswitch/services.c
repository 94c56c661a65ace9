/* SPDX-License-Identifier: Apache-2.0 */
/*
 * services.c - what every control of the pipeline uses (see services.h):
 * the binding check, the actions a control emits and their counting, the
 * ERROR reply, and the payload's byte order. In the P4 program these are the ingress's worker_ok
 * metadata (membership.p4), its routes (ingress.p4) and its error path.
 */
#include <string.h>

#include "services.h"

int sr_svc_peer_eq(const sr_peer *a, const sr_peer *b)
{
    return a->ip == b->ip && a->port == b->port;
}

/* Isolation: a request counts only from a worker id bound in this
 * incarnation and from the address it joined from, so another tenant or a
 * spoofer can neither touch the job's state nor learn anything from it. */
int sr_svc_worker_ok(const sr_pipe_job *j, uint16_t w, const sr_peer *src)
{
    return w < j->n && (j->bound & ~j->left & (UINT64_C(1) << w)) &&
           sr_svc_peer_eq(&j->peer[w], src);
}

void sr_pipe_set_lazy_payload(sr_pipe *p, int on)
{
    p->lazy_payload = on != 0;
}

sr_pipe_action *sr_svc_action_new(sr_pipe_out *out)
{
    sr_pipe_action *a;

    if (out->n >= SR_PIPE_MAX_ACTIONS)
        return NULL;
    a = &out->act[out->n++];
    a->multicast = 0;
    a->dest_seq = 0;
    a->n_dests = 0;
    a->payload_len = 0;
    a->words = NULL;
    memset(&a->hdr, 0, sizeof a->hdr);
    a->hdr.version = SR_WIRE_VERSION;
    return a;
}

void sr_svc_unicast(sr_pipe_action *a, const sr_peer *src, uint16_t worker)
{
    a->multicast = 0;
    a->n_dests = 1;
    a->dests[0].peer = *src;
    a->dests[0].worker = worker;
}

void sr_svc_multicast(sr_pipe_action *a, const sr_pipe_job *j)
{
    a->multicast = 1;
    a->n_dests = 0;
    for (uint32_t i = 0; i < j->n; i++) {
        if (!(j->bound & ~j->left & (UINT64_C(1) << i)))
            continue;
        a->dests[a->n_dests].peer = j->peer[i];
        a->dests[a->n_dests].worker = (uint16_t)i;
        a->n_dests++;
    }
}

void sr_svc_count_tx(sr_pipe *p, sr_pipe_job *j, const sr_pipe_action *a)
{
    p->c.tx_total += a->n_dests;
    if (j)
        j->c.tx += a->n_dests;
}

sr_pipe_action *sr_svc_forward(sr_pipe *p, sr_pipe_job *j, const sr_peer *to, const sr_hdr *h,
                               const uint8_t *payload, size_t len, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);

    if (!a)
        return NULL;
    a->hdr = *h;
    a->payload_len = len;
    if (len)
        memcpy(a->payload, payload, len);
    sr_svc_unicast(a, to, h->worker);
    sr_svc_count_tx(p, j, a);
    return a;
}

sr_pipe_action *sr_svc_reply_hdr(sr_pipe *p, sr_pipe_job *j, const sr_peer *src,
                                 const sr_hdr *h, uint8_t op, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);

    if (!a)
        return NULL;
    a->hdr = *h;
    a->hdr.version = SR_WIRE_VERSION;
    a->hdr.op = op;
    a->hdr.count = 0;
    a->hdr.flags = 0;
    a->hdr.status = 0;
    sr_svc_unicast(a, src, h->worker);
    sr_svc_count_tx(p, j, a);
    return a;
}

void sr_svc_reply_error(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *req,
                        unsigned status, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);

    if (!a)
        return;
    a->hdr = *req;
    a->hdr.version = SR_WIRE_VERSION;
    a->hdr.op = SR_OP_ERROR;
    a->hdr.status = (uint8_t)status;
    a->hdr.aux = req->op;
    a->hdr.count = 0;
    sr_svc_unicast(a, src, req->worker);
    sr_svc_count_tx(p, j, a);
    if (j)
        j->c.errors_sent++;
}

/* ---- big-endian payload words ---------------------------------------------- */

/* The payload is big-endian int32 words and the cells hold host words, so
 * every value crosses a byte swap on the way in and out; done a byte at a
 * time (sr_get_be32, sr_put_be32) it was about 40% of the switch's cycles
 * over DPDK. These do it a word at a time, and 8 words at a time with AVX2
 * where the CPU has it (picked per call from the compiler's CPU probe: one
 * load and test, no state). Both are exact, so they agree bit for bit. */
static inline uint32_t be32_swap(uint32_t x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return x;
#else
    return __builtin_bswap32(x);
#endif
}

/* v[i] = word i of src (SR_BE32_SET) or v[i] += it (SR_BE32_ADD), i < n. */
static void be32_in_c(uint32_t *v, const uint8_t *src, unsigned n, int op)
{
    for (unsigned i = 0; i < n; i++) {
        uint32_t x;

        memcpy(&x, src + 4u * i, 4);
        v[i] = (op == SR_BE32_ADD ? v[i] : 0u) + be32_swap(x);
    }
}

/* dst (4 * n bytes) = the big-endian words of v[0..n). */
static void be32_out_c(uint8_t *dst, const uint32_t *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint32_t x = be32_swap(v[i]);

        memcpy(dst + 4u * i, &x, 4);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && \
    !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#include <immintrin.h>
#define AR_HAVE_AVX2 1

/* Reverses the bytes of each 32-bit word (vpshufb works per 128-bit lane). */
#define BE32_MASK                                                                     \
    _mm256_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, \
                    15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3)

__attribute__((target("avx2"))) static void be32_in_avx2(uint32_t *v, const uint8_t *src,
                                                          unsigned n, int op)
{
    const __m256i m = BE32_MASK;
    unsigned i = 0;

    for (; i + 8u <= n; i += 8u) {
        __m256i x = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(src + 4u * i)), m);

        if (op == SR_BE32_ADD)
            x = _mm256_add_epi32(x, _mm256_loadu_si256((const __m256i *)(v + i)));
        _mm256_storeu_si256((__m256i *)(v + i), x);
    }
    be32_in_c(v + i, src + 4u * i, n - i, op);
}

__attribute__((target("avx2"))) static void be32_out_avx2(uint8_t *dst, const uint32_t *v,
                                                           unsigned n)
{
    const __m256i m = BE32_MASK;
    unsigned i = 0;

    for (; i + 8u <= n; i += 8u) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(v + i));

        _mm256_storeu_si256((__m256i *)(dst + 4u * i), _mm256_shuffle_epi8(x, m));
    }
    be32_out_c(dst + 4u * i, v + i, n - i);
}
#endif

void sr_svc_be32_in(uint32_t *v, const uint8_t *src, unsigned n, int op)
{
#ifdef AR_HAVE_AVX2
    if (n >= 8u && __builtin_cpu_supports("avx2")) {
        be32_in_avx2(v, src, n, op);
        return;
    }
#endif
    be32_in_c(v, src, n, op);
}

void sr_svc_be32_out(uint8_t *dst, const uint32_t *v, unsigned n)
{
#ifdef AR_HAVE_AVX2
    if (n >= 8u && __builtin_cpu_supports("avx2")) {
        be32_out_avx2(dst, v, n);
        return;
    }
#endif
    be32_out_c(dst, v, n);
}

void sr_pipe_payload_write(const sr_pipe_action *a, uint8_t *dst)
{
    if (a->words)
        sr_svc_be32_out(dst, a->words, (unsigned)(a->payload_len / 4u));
    else if (a->payload_len)
        memcpy(dst, a->payload, a->payload_len);
}

void sr_pipe_payload_flatten(sr_pipe_action *a)
{
    if (!a->words)
        return;
    sr_svc_be32_out(a->payload, a->words, (unsigned)(a->payload_len / 4u));
    a->words = NULL;
}
