/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wire.c - wire format: golden vectors, round trips, malformed input.
 *
 * The golden vectors (the .hex files of tests/vectors, format in its README.md) were
 * derived by hand and checked with independent tools, never with the code
 * under test. So that a bug cannot cancel itself out, this file reads and
 * writes the expected bytes with its own helpers (rd16/rd32), and keeps
 * its own tables of valid ops and result names. vectors.c loads the files.
 *
 * Every parse runs on a copy that ends exactly at an inaccessible page
 * (guarded()), so a read past len faults here even without ASan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/wire.h"
#include "vectors.h"

/* ---- independent helpers ------------------------------------------------ */

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) << 16 | rd16(p + 2); }
static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v >> 16); wr16(p + 2, v); }
static int64_t as_s32(uint32_t u) { return (int64_t)u - (u >> 31 ? 4294967296LL : 0); }

/* splitmix64: tiny, seedable, reproducible everywhere. */
static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct named { const char *name; int value; };
static const struct named ops[] = {
    {"JOIN", 1}, {"JOIN_ACK", 2}, {"ERROR", 3}, {"LEAVE", 4}, {"AR_DATA", 16}, {"AR_RESULT", 17},
    {"AR_PROBE", 19}, {"AR_HELD", 20}, {"AR_NAK", 21}, {"PUSH", 32}, {"PUSH_ACK", 33}, {"PULL", 34}, {"PULL_RESP", 35}, {"CLOCK", 36},
    {"PROCEED", 37}, {"RELEASE", 38}, {"HOLD", 39}, {"STEP", 40}, {"STEP_PROBE", 41},
    {"STEP_RESP", 42}, {"STEP_HELD", 43}, {"STEP_NAK", 44}};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))
static const struct named msg_results[] = {
    {"ok", SR_PARSE_OK}, {"truncated", SR_PARSE_TRUNCATED}, {"foreign", SR_PARSE_FOREIGN},
    {"bad_version", SR_PARSE_BAD_VERSION}, {"bad_op", SR_PARSE_BAD_OP},
    {"bad_count", SR_PARSE_BAD_COUNT}, {"bad_length", SR_PARSE_BAD_LENGTH}, {NULL, 0}};
static const struct named frame_results[] = {
    {"ok", SR_FRAME_OK}, {"truncated", SR_FRAME_TRUNCATED}, {"not_ipv4", SR_FRAME_NOT_IPV4},
    {"not_udp", SR_FRAME_NOT_UDP}, {"bad_csum", SR_FRAME_BAD_CSUM},
    {"bad_length", SR_FRAME_BAD_LENGTH}, {NULL, 0}};

static int lookup(const struct named *t, const char *name)
{
    for (; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t->value;
    fail_msg("unknown expect=%s", name);
    return 1;
}

/* A copy of src[0..len) ending exactly where an inaccessible page begins. */
struct guard { uint8_t *map; size_t maplen; uint8_t *p; };

static uint8_t *guarded(struct guard *g, const void *src, size_t len)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t data_pages = (len + pg - 1) / pg;
    g->maplen = (data_pages + 1) * pg;
    void *m = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    g->map = m;
    assert_int_equal(mprotect(g->map + data_pages * pg, pg, PROT_NONE), 0);
    g->p = g->map + data_pages * pg - len;
    if (len)
        memcpy(g->p, src, len);
    return g->p;
}
static void unguard(struct guard *g) { munmap(g->map, g->maplen); }

/* ---- vector files (loaded by vectors.c) --------------------------------- */

static int setup(void **state)
{
    struct vectors *vs = NULL;
    int rc = vectors_load(getenv("SERENE_VECTORS"), &vs);
    *state = vs;
    return rc;
}

static int teardown(void **state)
{
    vectors_free(*state);
    return 0;
}

/* Every field of sr_hdr; a vector names them the same way. */
#define HDR_FIELDS(X)                                                                         \
    X(version) X(op) X(job) X(worker) X(seq) X(shadow) X(slot) X(count) X(exp) X(next_exp)    \
    X(flags) X(status) X(offset) X(aux)

#define CHECK_FIELD(f)                                                                        \
    if ((long long)h->f != vnum(v, #f))                                                       \
        fail_msg("%s: " #f " = %lld, expected %lld", v->name, (long long)h->f, vnum(v, #f));

/* The addresses a frame vector names (dst_mac=aa:bb:.. src_ip=a.b.c.d ..). */
static void vmac(const struct vector *v, const char *key, uint8_t mac[6])
{
    unsigned m[6];
    if (!vget(v, key) || sscanf(vget(v, key), "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3],
                                &m[4], &m[5]) != 6)
        fail_msg("%s: bad or missing %s=", v->name, key);
    for (int k = 0; k < 6; k++)
        mac[k] = (uint8_t)m[k];
}

static uint32_t vip(const struct vector *v, const char *key)
{
    unsigned o[4];
    if (!vget(v, key) || sscanf(vget(v, key), "%u.%u.%u.%u", &o[0], &o[1], &o[2], &o[3]) != 4)
        fail_msg("%s: bad or missing %s=", v->name, key);
    return o[0] << 24 | o[1] << 16 | o[2] << 8 | o[3];
}

static void vaddr(const struct vector *v, sr_frame_addr *a)
{
    vmac(v, "dst_mac", a->dst_mac);
    vmac(v, "src_mac", a->src_mac);
    a->src_ip = vip(v, "src_ip");
    a->dst_ip = vip(v, "dst_ip");
    a->src_port = (uint16_t)vnum(v, "src_port");
    a->dst_port = (uint16_t)vnum(v, "dst_port");
}

/* Value i of a payload of 16-bit values (wire.h's SR_WIRE_AUX_V16): word
 * i / 2 = a * 2^16 + b modulo 2^32, b its low 16 bits as an int16, a the
 * high 16 bits of word - b. */
static int32_t get_v16(const uint8_t *payload, unsigned i)
{
    uint32_t w = rd32(payload + 4 * (i / 2));
    int32_t b = (int16_t)(w & 0xffffu);
    int32_t a = (int16_t)((w - (uint32_t)b) >> 16);
    return i % 2 ? b : a;
}

/* Compare a parsed header and its payload with the vector's key=values. */
static void check_msg_fields(const struct vector *v, const sr_hdr *h, const uint8_t *payload)
{
    HDR_FIELDS(CHECK_FIELD)
    if (vget(v, "op_name"))
        assert_string_equal(sr_op_name(h->op), vget(v, "op_name"));
    if (vget(v, "status_name"))
        assert_string_equal(sr_status_name(h->status), vget(v, "status_name"));
    if (vget(v, "payload")) {
        char *list = strdup(vget(v, "payload")), *save = NULL;
        unsigned i = 0;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save), i++) {
            assert_true(i < h->count);
            assert_int_equal(as_s32(rd32(payload + 4 * i)), strtoll(t, NULL, 0));
        }
        assert_int_equal(i, h->count);
        free(list);
    }
    if (vget(v, "payload16")) { /* 16-bit values, two to a word: SR_WIRE_AUX_V16 */
        char *list = strdup(vget(v, "payload16")), *save = NULL;
        unsigned i = 0;
        assert_true(h->aux & SR_WIRE_AUX_V16);
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save), i++) {
            assert_true(i / 2 < h->count);
            assert_int_equal(get_v16(payload, i), strtoll(t, NULL, 0));
        }
        assert_int_equal(sr_wire_v16_words(i), h->count);
        free(list);
    }
    if (vget(v, "n_workers")) {
        sr_join_params p;
        sr_join_params_unpack(payload, &p);
        assert_int_equal(h->count, SR_JOIN_PARAMS_WORDS);
        assert_int_equal(p.n_workers, vnum(v, "n_workers"));
        assert_int_equal(p.elems_per_pkt, vnum(v, "elems_per_pkt"));
        assert_int_equal(p.pool_slots, vnum(v, "pool_slots"));
        assert_int_equal(p.store_capacity, vnum(v, "store_capacity"));
    }
}

/* Build the message a vector describes: header from its fields, payload
 * from payload= or the join parameters. Returns its length. */
static size_t build_msg(const struct vector *v, uint8_t *out)
{
    sr_hdr h;
#define SET_FIELD(f) h.f = (__typeof__(h.f))vnum(v, #f);
    HDR_FIELDS(SET_FIELD)
    sr_hdr_pack(out, &h);
    if (vget(v, "payload")) {
        char *list = strdup(vget(v, "payload")), *save = NULL;
        unsigned i = 0;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
            wr32(out + SR_WIRE_HDR_LEN + 4 * i++, (uint32_t)strtoll(t, NULL, 0));
        free(list);
    } else if (vget(v, "payload16")) {
        char *list = strdup(vget(v, "payload16")), *save = NULL;
        int32_t x[2 * SR_WIRE_MAX_ELEMS] = {0};
        unsigned i = 0;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
            x[i++] = (int32_t)strtoll(t, NULL, 0);
        for (unsigned k = 0; 2 * k < i; k++) /* a * 2^16 + b, modulo 2^32 */
            wr32(out + SR_WIRE_HDR_LEN + 4 * k, (uint32_t)x[2 * k] * 65536u + (uint32_t)x[2 * k + 1]);
        free(list);
    } else if (vget(v, "n_workers")) {
        sr_join_params p = {(uint32_t)vnum(v, "n_workers"), (uint32_t)vnum(v, "elems_per_pkt"),
                            (uint32_t)vnum(v, "pool_slots"), (uint32_t)vnum(v, "store_capacity")};
        sr_join_params_pack(out + SR_WIRE_HDR_LEN, &p);
    }
    return SR_WIRE_HDR_LEN + 4u * (size_t)h.count;
}

static void assert_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, got[i], want[i]);
}

/* Parse the first len bytes of v as its kind, in a guarded copy. A
 * rejection must leave the outputs untouched; on success, with full set,
 * every field the vector lists is compared. */
static int parse_guarded(const struct vector *v, size_t len, int full)
{
    struct guard g;
    uint8_t *p = guarded(&g, v->bytes, len);
    int rc;
    if (is(v, "kind", "msg")) {
        sr_hdr h, h0;
        const uint8_t *pl = (const uint8_t *)&h0;
        memset(&h, 0xa5, sizeof(h));
        memcpy(&h0, &h, sizeof(h));
        rc = sr_msg_parse(p, len, &h, &pl);
        if (rc != SR_PARSE_OK) {
            assert_memory_equal(&h, &h0, sizeof(h));
            assert_ptr_equal(pl, (const uint8_t *)&h0);
        } else {
            assert_ptr_equal(pl, p + SR_WIRE_HDR_LEN);
            if (full)
                check_msg_fields(v, &h, pl);
        }
    } else {
        sr_frame_addr a, a0, ea;
        const uint8_t *pl = NULL;
        size_t plen = 12345;
        memset(&a, 0xa5, sizeof(a));
        memcpy(&a0, &a, sizeof(a));
        rc = sr_frame_parse(p, len, &a, &pl, &plen);
        if (rc != SR_FRAME_OK) {
            assert_memory_equal(&a, &a0, sizeof(a));
            assert_null(pl);
            assert_int_equal(plen, 12345);
        } else {
            assert_ptr_equal(pl, p + SR_FRAME_HLEN);
        }
        if (rc == SR_FRAME_OK && full) {
            memcpy(&ea, &a, sizeof(ea)); /* same padding, if any */
            vaddr(v, &ea);
            assert_memory_equal(&a, &ea, sizeof(a));
            assert_int_equal(plen, vnum(v, "payload_len"));
            if (vget(v, "op")) { /* the Serene message inside */
                sr_hdr h;
                const uint8_t *mp;
                assert_int_equal(sr_msg_parse(pl, plen, &h, &mp), SR_PARSE_OK);
                check_msg_fields(v, &h, mp);
            }
        }
    }
    unguard(&g);
    return rc;
}

/* Check expect= on the whole vector and, with prefixes=all, on every
 * shorter prefix too; returns the expected result. */
static int check_expect(const struct vector *v)
{
    int msg = is(v, "kind", "msg");
    int want = lookup(msg ? msg_results : frame_results, vget(v, "expect"));
    for (size_t n = is(v, "prefixes", "all") ? 0 : v->len; n <= v->len; n++) {
        int rc = parse_guarded(v, n, n == v->len);
        if (rc != want)
            fail_msg("%s, first %zu bytes: result %d, expected %s", v->name, n, rc,
                     vget(v, "expect"));
    }
    if (msg)
        assert_string_equal(sr_parse_result_name(want), vget(v, "expect"));
    return want;
}

/* ---- golden vectors ----------------------------------------------------- */

static void test_vectors_present(void **state)
{
    static const char *const required[] = {
        "join.hex", "join_ack.hex", "error.hex", "ar_data.hex", "ar_result.hex",
        "max_fields.hex", "trunc_header.hex", "foreign_magic.hex", "bad_version.hex",
        "bad_op_0.hex", "bad_count_2049.hex", "bad_length_short.hex", "frame_ar_data.hex",
        "frame_csum_ffff.hex", "frame_bad_ip_csum.hex", "frame_frag_mf.hex",
        "frame_frag_offset.hex", "frame_tcp.hex", "frame_truncated.hex"};
    const struct vectors *vs = *state;
    for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++) {
        size_t i = 0;
        while (i < vs->n && strcmp(vs->v[i].name, required[r]) != 0)
            i++;
        if (i == vs->n)
            fail_msg("missing vector %s", required[r]);
    }
    /* Every file must say what it is, or it would be skipped silently. */
    for (size_t i = 0; i < vs->n; i++) {
        const struct vector *v = &vs->v[i];
        if (!(is(v, "kind", "msg") || is(v, "kind", "frame")) || !vget(v, "expect"))
            fail_msg("%s: needs kind=msg|frame and expect=", v->name);
        (void)lookup(is(v, "kind", "msg") ? msg_results : frame_results, vget(v, "expect"));
        assert_true(v->len > 0);
    }
}

static void test_msg_vectors_parse(void **state)
{
    const struct vectors *vs = *state;
    int seen = 0;
    for (size_t i = 0; i < vs->n; i++)
        if (is(&vs->v[i], "kind", "msg")) {
            (void)check_expect(&vs->v[i]);
            seen++;
        }
    assert_true(seen >= 20);
}

static void test_msg_vectors_pack(void **state)
{
    const struct vectors *vs = *state;
    int seen = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct vector *v = &vs->v[i];
        if (!is(v, "kind", "msg") || !is(v, "expect", "ok"))
            continue;
        struct guard g;
        uint8_t *out = guarded(&g, v->bytes, v->len);
        memset(out, 0xee, v->len);
        assert_int_equal(build_msg(v, out), v->len);
        assert_bytes(v->name, out, v->bytes, v->len);
        unguard(&g);
        seen++;
    }
    assert_true(seen >= 6);
}

static void test_frame_vectors_parse(void **state)
{
    const struct vectors *vs = *state;
    int seen = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct vector *v = &vs->v[i];
        if (!is(v, "kind", "frame"))
            continue;
        (void)check_expect(v);
        /* Checksum known answers, derived independently (README.md). */
        const uint8_t *ip = v->bytes + SR_ETH_HLEN;
        if (vget(v, "ip_csum"))
            assert_int_equal(sr_csum_ipv4(ip), vnum(v, "ip_csum"));
        if (vget(v, "udp_csum"))
            assert_int_equal(sr_csum_udp(ip, ip + 20, rd16(ip + 2) - 20), vnum(v, "udp_csum"));
        seen++;
    }
    assert_true(seen >= 15);
}

static void test_frame_vectors_pack(void **state)
{
    const struct vectors *vs = *state;
    int seen = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct vector *v = &vs->v[i];
        if (!is(v, "kind", "frame") || !is(v, "pack", "1"))
            continue;
        sr_frame_addr a;
        vaddr(v, &a);

        struct guard g;
        uint8_t *f = guarded(&g, v->bytes, v->len);
        memset(f, 0xee, v->len);
        size_t plen = build_msg(v, f + SR_FRAME_HLEN);
        assert_int_equal(plen, vnum(v, "payload_len"));
        /* cap exactly the frame length: one byte more would be written past. */
        assert_int_equal(sr_frame_pack(f, v->len, &a, plen), v->len);
        assert_bytes(v->name, f, v->bytes, v->len);
        unguard(&g);
        seen++;
    }
    assert_true(seen >= 2);
}

/* ---- header properties -------------------------------------------------- */

static void random_hdr(uint64_t *s, sr_hdr *h)
{
    memset(h, 0, sizeof(*h));
    uint64_t r = rnd(s), q = rnd(s);
    h->version = SR_WIRE_VERSION;
    h->op = (uint8_t)ops[r % N_OPS].value;
    h->job = (uint16_t)(r >> 8);
    h->worker = (uint16_t)(r >> 24);
    h->seq = (uint32_t)(r >> 32);
    h->slot = (uint16_t)(q & SR_WIRE_SLOT_MASK);
    h->shadow = (uint8_t)(q >> 15 & 1);
    /* Mostly short payloads for speed, but reach the limit regularly. */
    h->count = (uint16_t)((q >> 16) % 8 == 0 ? SR_WIRE_MAX_ELEMS - (q >> 19) % 3
                                              : (q >> 19) % 64);
    h->exp = (int8_t)((int)(q >> 32 & 0xff) - 128);
    h->next_exp = (int8_t)((int)(q >> 40 & 0xff) - 128);
    h->flags = (uint8_t)(q >> 48);
    h->status = (uint8_t)(q >> 56);
    h->offset = (uint32_t)rnd(s);
    h->aux = (uint32_t)rnd(s);
}

static void assert_hdr_equal(const sr_hdr *a, const sr_hdr *b)
{
#define EQ_FIELD(f) assert_int_equal(a->f, b->f);
    HDR_FIELDS(EQ_FIELD)
}

static void test_hdr_roundtrip_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 2000; seed++) {
        uint64_t s = seed;
        sr_hdr h, back;
        random_hdr(&s, &h);
        size_t len = SR_WIRE_HDR_LEN + 4u * h.count;
        uint8_t *m = malloc(len);
        assert_non_null(m);
        sr_hdr_pack(m, &h);
        for (size_t i = SR_WIRE_HDR_LEN; i < len; i++)
            m[i] = (uint8_t)rnd(&s);
        /* The bytes where the diagram in wire.h puts them, laid out here
         * independently (literal offsets, not the SR_WIRE_OFF_* macros). */
        uint8_t ref[28];
        wr16(ref, 0x5345); ref[2] = h.version; ref[3] = h.op;
        wr16(ref + 4, h.job); wr16(ref + 6, h.worker); wr32(ref + 8, h.seq);
        wr16(ref + 12, h.slot | (h.shadow ? 0x8000u : 0u)); wr16(ref + 14, h.count);
        ref[16] = (uint8_t)(h.exp & 0xff); ref[17] = (uint8_t)(h.next_exp & 0xff);
        ref[18] = h.flags; ref[19] = h.status;
        wr32(ref + 20, h.offset); wr32(ref + 24, h.aux);
        assert_bytes("packed header", m, ref, sizeof(ref));

        struct guard g;
        uint8_t *p = guarded(&g, m, len);
        const uint8_t *pl = NULL;
        int rc = sr_msg_parse(p, len, &back, &pl);
        if (rc != SR_PARSE_OK)
            fail_msg("seed %llu: %s", (unsigned long long)seed, sr_parse_result_name(rc));
        assert_hdr_equal(&h, &back);
        assert_ptr_equal(pl, p + SR_WIRE_HDR_LEN);
        unguard(&g);
        free(m);
    }
}

static void test_hdr_pack_exact(void **state)
{
    (void)state;
    uint8_t buf[SR_WIRE_HDR_LEN + 8];
    sr_hdr h = {.version = 1, .op = SR_OP_AR_DATA, .slot = 0xffff, .shadow = 0};
    memset(buf, 0xee, sizeof(buf));
    sr_hdr_pack(buf + 4, &h);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(buf[i], 0xee);
        assert_int_equal(buf[sizeof(buf) - 1 - i], 0xee);
    }
    /* A stray bit 15 in slot must not set the shadow bit; shadow != 0 is 1. */
    assert_int_equal(rd16(buf + 4 + SR_WIRE_OFF_SLOT), 0x7fff);
    h.slot = 3;
    h.shadow = 2;
    sr_hdr_pack(buf + 4, &h);
    assert_int_equal(rd16(buf + 4 + SR_WIRE_OFF_SLOT), 0x8003);
    /* The version is written as given, so a test can forge other versions. */
    h.version = 9;
    sr_hdr_pack(buf + 4, &h);
    assert_int_equal(buf[4 + SR_WIRE_OFF_VERSION], 9);
}

static uint8_t *valid_join(uint8_t m[SR_WIRE_HDR_LEN])
{
    sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_JOIN, .job = 1, .worker = 2};
    sr_hdr_pack(m, &h);
    return m;
}

static int parse_bytes(const uint8_t *m, size_t len)
{
    struct guard g;
    sr_hdr h;
    int rc = sr_msg_parse(guarded(&g, m, len), len, &h, NULL);
    unguard(&g);
    return rc;
}

static void test_parse_every_op_version_magic(void **state)
{
    (void)state;
    uint8_t m[SR_WIRE_HDR_LEN];
    for (unsigned op = 0; op < 256; op++) {
        int valid = 0;
        for (size_t i = 0; i < N_OPS; i++)
            valid |= (unsigned)ops[i].value == op;
        valid_join(m)[SR_WIRE_OFF_OP] = (uint8_t)op;
        assert_int_equal(parse_bytes(m, sizeof(m)), valid ? SR_PARSE_OK : SR_PARSE_BAD_OP);
    }
    for (unsigned ver = 0; ver < 256; ver++) {
        valid_join(m)[SR_WIRE_OFF_VERSION] = (uint8_t)ver;
        assert_int_equal(parse_bytes(m, sizeof(m)),
                         ver == SR_WIRE_VERSION ? SR_PARSE_OK : SR_PARSE_BAD_VERSION);
    }
    for (unsigned bit = 0; bit < 16; bit++) {
        valid_join(m)[SR_WIRE_OFF_MAGIC + bit / 8] ^= (uint8_t)(1u << bit % 8);
        assert_int_equal(parse_bytes(m, sizeof(m)), SR_PARSE_FOREIGN);
    }
}

static void test_parse_count_and_length(void **state)
{
    (void)state;
    static uint8_t m[SR_WIRE_MAX_MSG + 8];
    static const unsigned counts[] = {0, 1, 2, 255, 256, 2047, SR_WIRE_MAX_ELEMS};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_AR_DATA,
                    .count = (uint16_t)counts[c]};
        size_t len = SR_WIRE_HDR_LEN + 4u * counts[c];
        sr_hdr_pack(m, &h);
        assert_int_equal(parse_bytes(m, len), SR_PARSE_OK);
        static const int delta[] = {-4, -3, -1, 1, 3, 4};
        for (size_t d = 0; d < 6; d++)
            if ((long)len + delta[d] >= (long)SR_WIRE_HDR_LEN)
                assert_int_equal(parse_bytes(m, (size_t)((long)len + delta[d])),
                                 SR_PARSE_BAD_LENGTH);
    }
    for (unsigned count = SR_WIRE_MAX_ELEMS + 1; count <= 0xffff; count += 97) {
        sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_AR_DATA, .count = (uint16_t)count};
        sr_hdr_pack(m, &h);
        assert_int_equal(parse_bytes(m, SR_WIRE_HDR_LEN), SR_PARSE_BAD_COUNT);
        assert_int_equal(parse_bytes(m, sizeof(m)), SR_PARSE_BAD_COUNT);
    }
    /* NULL outputs are allowed: validation only. */
    valid_join(m);
    assert_int_equal(sr_msg_parse(m, SR_WIRE_HDR_LEN, NULL, NULL), SR_PARSE_OK);
}

/* Random bytes and mutated vectors: parsers return a defined reason and
 * stay inside the buffer (guarded) whatever the bytes claim. */
static void test_parse_fuzz(void **state)
{
    const struct vectors *vs = *state;
    uint64_t s = 42;
    uint8_t buf[128];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len;
        const struct vector *v = &vs->v[rnd(&s) % vs->n];
        if (iter % 2) {
            len = rnd(&s) % sizeof(buf);
            for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)rnd(&s);
            if (len >= 2 && iter % 4 == 1) { /* get past the magic check often */
                buf[0] = 0x53;
                buf[1] = 0x45;
            }
        } else {
            len = v->len < sizeof(buf) ? v->len : sizeof(buf);
            memcpy(buf, v->bytes, len);
            buf[rnd(&s) % len] ^= (uint8_t)(1u << rnd(&s) % 8);
            len -= rnd(&s) % 3 == 0 ? rnd(&s) % (len + 1) : 0;
        }
        struct guard g;
        uint8_t *p = guarded(&g, buf, len);
        sr_hdr h;
        int rc = sr_msg_parse(p, len, &h, NULL);
        assert_true(rc <= 0 && rc > -SR_PARSE_NREASONS);
        if (rc == SR_PARSE_OK)
            assert_int_equal(len, SR_WIRE_HDR_LEN + 4u * h.count);
        const uint8_t *pl;
        size_t plen;
        rc = sr_frame_parse(p, len, NULL, &pl, &plen);
        assert_true(rc <= 0 && rc >= SR_FRAME_BAD_LENGTH);
        if (rc == SR_FRAME_OK)
            assert_true(pl + plen <= p + len);
        unguard(&g);
    }
}

static void test_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_OPS; i++)
        assert_string_equal(sr_op_name((unsigned)ops[i].value), ops[i].name);
    /* 257 would alias JOIN if the name lookup truncated to 8 bits. */
    static const unsigned bad_ops[] = {0, 5, 15, 18, 31, 45, 255, 257, 0xffffffffu};
    for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++)
        assert_string_equal(sr_op_name(bad_ops[i]), "op?");

    static const char *const st[] = {"OK",       "UNKNOWN_JOB", "NOT_MEMBER",
                                     "STALE",    "MISMATCH",    "BAD_COUNT",
                                     "BAD_SLOT", "UNSUPPORTED", "RANGE",
                                     "CLOCK_AHEAD", "JOB_IN_USE", "DENIED", "UNPROVEN"};
    for (unsigned i = 0; i < 13; i++)
        assert_string_equal(sr_status_name(i), st[i]);
    assert_string_equal(sr_status_name(13), "status?");
    assert_string_equal(sr_status_name(256), "status?");
    assert_string_equal(sr_status_name(0xffffffffu), "status?");

    for (const struct named *n = msg_results; n->name; n++)
        assert_string_equal(sr_parse_result_name(n->value), n->name);
    assert_int_equal(sizeof(msg_results) / sizeof(msg_results[0]) - 1, SR_PARSE_NREASONS);
    static const int bad_results[] = {1, -SR_PARSE_NREASONS, -100, 0x7fffffff, -0x7fffffff - 1};
    for (size_t i = 0; i < sizeof(bad_results) / sizeof(bad_results[0]); i++)
        assert_string_equal(sr_parse_result_name(bad_results[i]), "parse?");
}

static void test_join_params(void **state)
{
    (void)state;
    static const uint8_t want[16] = {0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x08, 0x00,
                                     0x00, 0x00, 0x80, 0x00, 0x12, 0x34, 0x56, 0x78};
    sr_join_params p = {64, 2048, 32768, 0x12345678}, back;
    uint8_t out[16 + 1];
    out[16] = 0xee;
    sr_join_params_pack(out, &p);
    assert_memory_equal(out, want, 16);
    assert_int_equal(out[16], 0xee);
    sr_join_params_unpack(want, &back);
    assert_int_equal(back.n_workers, 64);
    assert_int_equal(back.elems_per_pkt, 2048);
    assert_int_equal(back.pool_slots, 32768);
    assert_int_equal(back.store_capacity, 0x12345678);
}

/* ---- checksums and frames ----------------------------------------------- */

static void test_csum_known_answers(void **state)
{
    (void)state;
    /* RFC 1071 section 3 example: the words 0001 f203 f4f5 f6f7 sum to
     * 0xddf2, checksum 0x220d. Zero words do not change a ones'-complement
     * sum, so they pad it to an IPv4 header; the checksum field (bytes
     * 10-11) holds junk that must be ignored. */
    uint8_t rfc[20] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7, 0, 0, 0xbe, 0xef};
    assert_int_equal(sr_csum_ipv4(rfc), 0x220d);

    /* A textbook IPv4 header (192.168.0.1 -> 192.168.0.199), checksum b861. */
    uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                      0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    assert_int_equal(sr_csum_ipv4(ip), 0xb861);
    ip[10] = ip[11] = 0;
    assert_int_equal(sr_csum_ipv4(ip), 0xb861);

    /* UDP over that header, values from tests/vectors/csum.py and
     * confirmed by tcpdump -vv: an odd length pads with a zero byte. */
    uint8_t udp[11] = {0x12, 0x34, 0x56, 0x78, 0x00, 0x0b, 0xaa, 0x55, 'a', 'b', 'c'};
    struct guard g;
    assert_int_equal(sr_csum_udp(ip, guarded(&g, udp, 11), 11), 0x50b0);
    unguard(&g);
    uint8_t empty[8] = {0x12, 0x34, 0x56, 0x78, 0x00, 0x08, 0xbe, 0xef};
    assert_int_equal(sr_csum_udp(ip, guarded(&g, empty, 8), 8), 0x1519);
    unguard(&g);
}

static void test_frame_roundtrip(void **state)
{
    (void)state;
    static uint8_t f[SR_FRAME_HLEN + 65535 + 64];
    uint64_t s = 7;
    for (int iter = 0; iter < 300; iter++) {
        sr_frame_addr a, b;
        memset(&a, 0, sizeof(a)); /* padding, if any, compares equal */
        memset(&b, 0, sizeof(b));
        for (int k = 0; k < 6; k++) {
            a.dst_mac[k] = (uint8_t)rnd(&s);
            a.src_mac[k] = (uint8_t)rnd(&s);
        }
        a.src_ip = (uint32_t)rnd(&s);
        a.dst_ip = (uint32_t)rnd(&s);
        a.src_port = (uint16_t)rnd(&s);
        a.dst_port = (uint16_t)rnd(&s);
        size_t plen = iter == 0 ? 65535 - 28 : iter == 1 ? 0 : rnd(&s) % 300;
        for (size_t i = 0; i < plen; i++)
            f[SR_FRAME_HLEN + i] = (uint8_t)rnd(&s);
        size_t len = SR_FRAME_HLEN + plen;
        assert_int_equal(sr_frame_pack(f, len, &a, plen), len);
        /* The fixed choices of the format, read independently. */
        assert_int_equal(rd16(f + 12), 0x0800);
        assert_int_equal(f[14], 0x45);
        assert_int_equal(rd16(f + 16), 28 + plen);
        assert_int_equal(rd32(f + 18), 0x00004000); /* id 0, DF, offset 0 */
        assert_int_equal(f[22], 64);
        assert_int_equal(f[23], 17);
        assert_int_equal(rd16(f + 38), 8 + plen);
        assert_int_not_equal(rd16(f + 40), 0); /* a computed 0 goes out as 0xffff */

        /* Ethernet padding after the IP datagram is ignored. */
        size_t pad = (size_t)iter % 50;
        memset(f + len, iter, pad);
        struct guard g;
        uint8_t *p = guarded(&g, f, len + pad);
        const uint8_t *pl;
        size_t got;
        assert_int_equal(sr_frame_parse(p, len + pad, &b, &pl, &got), SR_FRAME_OK);
        assert_memory_equal(&a, &b, sizeof(a));
        assert_int_equal(got, plen);
        assert_ptr_equal(pl, p + SR_FRAME_HLEN);
        /* Ones'-complement sums catch every single-bit error, so a flip
         * anywhere past the MACs must be rejected (unless it zeroes the UDP
         * checksum, which means "none"). */
        if (iter < 40) {
            for (size_t bit = 12 * 8; bit < len * 8 && bit < 200 * 8; bit++) {
                p[bit / 8] ^= (uint8_t)(1u << bit % 8);
                if (rd16(p + 40) != 0)
                    assert_int_not_equal(sr_frame_parse(p, len + pad, &b, &pl, &got),
                                         SR_FRAME_OK);
                p[bit / 8] ^= (uint8_t)(1u << bit % 8);
            }
        }
        unguard(&g);
    }
}

static void test_frame_pack_limits(void **state)
{
    (void)state;
    static uint8_t f[SR_FRAME_HLEN + 65536];
    sr_frame_addr a = {{0}, {0}, 1, 2, 3, 4};
    memset(f, 0xee, sizeof(f));
    assert_int_equal(sr_frame_pack(f, SR_FRAME_HLEN + 99, &a, 100), 0);
    assert_int_equal(sr_frame_pack(f, SR_FRAME_HLEN - 1, &a, 0), 0);
    assert_int_equal(sr_frame_pack(f, sizeof(f), &a, 65535 - 27), 0);
    assert_int_equal(sr_frame_pack(f, sizeof(f), &a, (size_t)-1), 0);
    assert_int_equal(sr_frame_pack(f, 0, &a, (size_t)-1 - 20), 0);
    for (size_t i = 0; i < SR_FRAME_HLEN; i++) /* a refused pack writes nothing */
        assert_int_equal(f[i], 0xee);
    assert_int_equal(sr_frame_pack(f, SR_FRAME_HLEN, &a, 0), SR_FRAME_HLEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_present),
        cmocka_unit_test(test_msg_vectors_parse),
        cmocka_unit_test(test_msg_vectors_pack),
        cmocka_unit_test(test_frame_vectors_parse),
        cmocka_unit_test(test_frame_vectors_pack),
        cmocka_unit_test(test_hdr_roundtrip_random),
        cmocka_unit_test(test_hdr_pack_exact),
        cmocka_unit_test(test_parse_every_op_version_magic),
        cmocka_unit_test(test_parse_count_and_length),
        cmocka_unit_test(test_parse_fuzz),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_join_params),
        cmocka_unit_test(test_csum_known_answers),
        cmocka_unit_test(test_frame_roundtrip),
        cmocka_unit_test(test_frame_pack_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
