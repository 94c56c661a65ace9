/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sr_conform.c - the conformance tool of the P4 aggregator.
 *
 *   sr-conform gen     COMMON OUTDIR    write OUTDIR/NAME.in.pcap and
 *                                       NAME.out.pcap for every scenario,
 *                                       and NAME.ctl for one with control
 *                                       steps (conform.h)
 *   sr-conform replay  COMMON NAME DIR  feed DIR/NAME.in.pcap through the
 *                                       software switch (DIR/NAME.ctl's
 *                                       steps between its frames), compare
 *                                       with DIR/NAME.out.pcap in order
 *   sr-conform split   COMMON NAME DIR OUTDIR
 *                                       DIR/NAME.in.pcap -> OUTDIR/PORT_in.pcap
 *                                       per switch port (simple_switch
 *                                       --use-files input)
 *   sr-conform compare COMMON NAME DIR OUTDIR
 *                                       the expected frames of each port
 *                                       against OUTDIR/PORT_out.pcap, in order
 *   sr-conform check-constants CONSTANTS LANES
 *                                       the P4 program's sizes against the
 *                                       wire format (lib/proto/wire.h) and
 *                                       its lane list
 *
 *   sr-conform job     COMMON NAME      the job file of scenario NAME
 *
 * COMMON is three arguments: JOB.conf POLICY P4CONSTANTS (the job file and
 * policy that serene-ctl compiles for every target, and the P4 program's
 * constants file with SR_P4_ELEMS and SR_P4_SLOTS). A scenario with a job
 * of its own (share: a shared job) takes the file of that name beside
 * JOB.conf instead.
 *
 * Exit status: 0 the traces agree; 1 they differ (each difference is
 * printed); 2 bad usage or unreadable input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conform.h"

#define MAX_DIFFS 10 /* differences printed per comparison */

static void usage(void)
{
    fprintf(stderr,
            "usage: sr-conform gen     JOB POLICY CONSTANTS OUTDIR\n"
            "       sr-conform replay  JOB POLICY CONSTANTS NAME DIR\n"
            "       sr-conform split   JOB POLICY CONSTANTS NAME DIR OUTDIR\n"
            "       sr-conform compare JOB POLICY CONSTANTS NAME DIR OUTDIR\n"
            "       sr-conform job     JOB POLICY CONSTANTS NAME\n"
            "       sr-conform check-constants CONSTANTS LANES\n");
    exit(2);
}

/* The frame with its UDP checksum zeroed, the one field comparisons ignore
 * (conform.h). Frames that are not IPv4/UDP are left as they are. */
static void normalise(uint8_t *f, size_t len)
{
    if (len >= SR_FRAME_HLEN && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45 &&
        f[23] == SR_IPPROTO_UDP) {
        f[40] = 0;
        f[41] = 0;
    }
}

static void describe(const char *what, const cf_frame *f)
{
    static uint8_t msg[SR_WIRE_MAX_MSG];
    sr_roce_pkt p;
    sr_hdr h;
    int n;

    if (sr_roce_frame_parse(f->data, f->len, &p) == SR_ROCE_OK &&
        (n = sr_roce_to_msg(&p.m, p.dst_qpn, msg, sizeof msg)) > 0 &&
        sr_msg_parse(msg, (size_t)n, &h, NULL) == SR_PARSE_OK)
        fprintf(stderr, "    %s: %zu bytes, RoCEv2 opcode %#x qp %#x psn %u: %s job %u worker %u "
                        "seq %u slot %u/%u count %u status %u offset %u aux %u\n",
                what, f->len, p.m.opcode, p.dst_qpn, p.psn, sr_op_name(h.op), h.job, h.worker,
                h.seq, h.slot, h.shadow, h.count, h.status, h.offset, h.aux);
    else if (f->len >= SR_FRAME_HLEN + SR_WIRE_HDR_LEN &&
        sr_msg_parse(f->data + SR_FRAME_HLEN, f->len - SR_FRAME_HLEN, &h, NULL) == SR_PARSE_OK)
        fprintf(stderr, "    %s: %zu bytes, %s job %u worker %u seq %u slot %u/%u count %u "
                        "status %u offset %u aux %u\n",
                what, f->len, sr_op_name(h.op), h.job, h.worker, h.seq, h.slot, h.shadow,
                h.count, h.status, h.offset, h.aux);
    else
        fprintf(stderr, "    %s: %zu bytes (not a well-formed Serene frame)\n", what, f->len);
}

/* Compare two frame lists in order. Returns the number of differences. */
static unsigned compare_lists(const char *label, const cf_frames *want, const cf_frames *got)
{
    unsigned diffs = 0;
    size_t n = want->n > got->n ? want->n : got->n;

    for (size_t i = 0; i < n; i++) {
        const cf_frame *w = i < want->n ? &want->v[i] : NULL;
        const cf_frame *g = i < got->n ? &got->v[i] : NULL;
        int same = w && g && w->len == g->len;

        if (same) {
            normalise(w->data, w->len);
            normalise(g->data, g->len);
            same = !memcmp(w->data, g->data, w->len);
        }
        if (same)
            continue;
        if (++diffs <= MAX_DIFFS) {
            size_t at = 0;
            if (w && g)
                while (at < w->len && at < g->len && w->data[at] == g->data[at])
                    at++;
            fprintf(stderr, "%s: frame %zu differs (first at byte %zu)\n", label, i + 1, at);
            if (w)
                describe("expected", w);
            else
                fprintf(stderr, "    expected: nothing more\n");
            if (g)
                describe("got", g);
            else
                fprintf(stderr, "    got: nothing more\n");
        }
    }
    if (want->n != got->n)
        fprintf(stderr, "%s: expected %zu frames, got %zu\n", label, want->n, got->n);
    return diffs;
}

static const cf_scenario *find_scenario(const char *name)
{
    for (unsigned i = 0; i < cf_n_scenarios; i++)
        if (!strcmp(cf_scenarios[i].name, name))
            return &cf_scenarios[i];
    fprintf(stderr, "no scenario '%s'\n", name);
    exit(2);
}

static void path_of(char *out, size_t cap, const char *dir, const char *name, const char *ext)
{
    if ((size_t)snprintf(out, cap, "%s/%s%s", dir, name, ext) >= cap) {
        fprintf(stderr, "path too long: %s/%s%s\n", dir, name, ext);
        exit(2);
    }
}

/* The job file of scenario s: JOB, or its own beside JOB. */
static void job_of(char *out, size_t cap, const char *job_path, const cf_scenario *s)
{
    const char *slash = strrchr(job_path, '/');
    int dir = slash ? (int)(slash - job_path) : 1;

    if ((size_t)(s->job ? snprintf(out, cap, "%.*s/%s", dir, slash ? job_path : ".", s->job)
                        : snprintf(out, cap, "%s", job_path)) >= cap) {
        fprintf(stderr, "path too long: %s\n", job_path);
        exit(2);
    }
}

/* A fresh context for scenario s, with its job. */
static int ctx_open(cf_ctx *c, char **av, const cf_scenario *s)
{
    char job[4096];

    job_of(job, sizeof job, av[0], s);
    return cf_ctx_init(c, job, av[1], av[2]);
}

static int cmd_gen(char **av, const char *outdir)
{
    for (unsigned i = 0; i < cf_n_scenarios; i++) {
        char p[4096];
        cf_ctx c;

        if (ctx_open(&c, av, &cf_scenarios[i]))
            return 2;
        if (cf_scenarios[i].run(&c)) {
            fprintf(stderr, "scenario %s failed (bad job file for it?)\n", cf_scenarios[i].name);
            cf_ctx_fini(&c);
            return 2;
        }
        path_of(p, sizeof p, outdir, cf_scenarios[i].name, ".in.pcap");
        if (cf_pcap_write(p, &c.in)) {
            cf_ctx_fini(&c);
            return 2;
        }
        path_of(p, sizeof p, outdir, cf_scenarios[i].name, ".out.pcap");
        if (cf_pcap_write(p, &c.res)) {
            cf_ctx_fini(&c);
            return 2;
        }
        path_of(p, sizeof p, outdir, cf_scenarios[i].name, ".ctl");
        if (c.n_ctl ? cf_ctl_write(p, &c) : (unlink(p) && errno != ENOENT)) {
            cf_ctx_fini(&c);
            return 2;
        }
        printf("%s: %zu frames in, %zu out\n", cf_scenarios[i].name, c.in.n, c.res.n);
        cf_ctx_fini(&c);
    }
    return 0;
}

static int cmd_replay(char **av, const char *name, const char *dir)
{
    cf_frames in = {0}, want = {0};
    char p[4096];
    unsigned diffs, next = 0;
    cf_ctx c;

    if (ctx_open(&c, av, find_scenario(name)))
        return 2;
    path_of(p, sizeof p, dir, name, ".in.pcap");
    if (cf_pcap_read(p, &in))
        goto bad;
    path_of(p, sizeof p, dir, name, ".out.pcap");
    if (cf_pcap_read(p, &want))
        goto bad;
    path_of(p, sizeof p, dir, name, ".ctl");
    if (cf_ctl_read(p, &c))
        goto bad;
    for (size_t i = 0; i < in.n; i++)
        if (cf_ctl_apply(&c, in.v[i].ts_us, &next) ||
            cf_step(&c, in.v[i].data, in.v[i].len, in.v[i].ts_us, 0))
            goto bad;
    diffs = compare_lists(name, &want, &c.res);
    printf("%s: %zu frames in, %zu expected out, %zu out, %u differences\n", name, in.n, want.n,
           c.res.n, diffs);
    cf_frames_free(&in);
    cf_frames_free(&want);
    cf_ctx_fini(&c);
    return diffs ? 1 : 0;
bad:
    cf_frames_free(&in);
    cf_frames_free(&want);
    cf_ctx_fini(&c);
    return 2;
}

/* The switch port of the worker whose address is (ip, port) at offset
 * ip_off of the frame (26: source, 30: destination); 0 if none. A RoCEv2
 * answer goes to UDP port SR_ROCE_UDP_PORT, not to the worker's: it is the
 * worker's by its IPv4 address alone. */
static unsigned port_of(const cf_ctx *c, const cf_frame *f, unsigned ip_off)
{
    uint32_t ip;
    uint16_t udp;

    if (f->len < SR_FRAME_HLEN)
        return 0;
    ip = sr_get_be32(f->data + ip_off);
    udp = sr_get_be16(f->data + (ip_off == 26 ? 34 : 36));
    for (uint32_t r = 0; r < c->job.n_workers; r++)
        if (c->job.workers[r].addr == ip &&
            (c->job.workers[r].udp_port == udp || (ip_off == 30 && udp == SR_ROCE_UDP_PORT)))
            return c->job.workers[r].sw_port;
    if (c->job.fb_addr && c->job.fb_addr == ip && c->job.fb_udp_port == udp)
        return c->job.fb_sw_port;
    return 0;
}

/* Switch port k of the job: its workers' (each once), then a shared job's
 * fallback's; 0 past the last. */
static unsigned port_k(const cf_ctx *c, uint32_t k, unsigned *port)
{
    for (uint32_t r = 0; r < c->job.n_workers; r++) {
        int seen_before = 0;

        for (uint32_t q = 0; q < r; q++)
            seen_before |= c->job.workers[q].sw_port == c->job.workers[r].sw_port;
        if (!seen_before && k-- == 0) {
            *port = c->job.workers[r].sw_port;
            return 1;
        }
    }
    if (c->job.fb_addr && k == 0) {
        *port = c->job.fb_sw_port;
        return 1;
    }
    return 0;
}

/* split (want_out 0) or compare (1), per switch port of the job. */
static int cmd_ports(char **av, const char *name, const char *dir, const char *outdir,
                     int compare)
{
    cf_frames all = {0};
    char p[4096], port_name[16];
    unsigned diffs = 0;
    int rc = 0;
    cf_ctx c;

    if (ctx_open(&c, av, find_scenario(name)))
        return 2;
    path_of(p, sizeof p, dir, name, compare ? ".out.pcap" : ".in.pcap");
    if (cf_pcap_read(p, &all)) {
        cf_ctx_fini(&c);
        return 2;
    }
    unsigned port;
    for (uint32_t k = 0; !rc && port_k(&c, k, &port); k++) {
        cf_frames mine = {0}, got = {0};

        for (size_t i = 0; i < all.n && !rc; i++) {
            /* Inputs by source; outputs by destination. Input frames from
             * an address outside the job enter on rank 0's port. */
            unsigned fp = port_of(&c, &all.v[i], compare ? 30 : 26);
            if (!compare && fp == 0)
                fp = c.job.workers[0].sw_port;
            if (fp == port)
                rc = cf_frames_add(&mine, all.v[i].data, all.v[i].len, all.v[i].ts_us) ? 2 : 0;
        }
        snprintf(port_name, sizeof port_name, "%u", port);
        path_of(p, sizeof p, outdir, port_name, compare ? "_out.pcap" : "_in.pcap");
        if (!rc && !compare && cf_pcap_write(p, &mine))
            rc = 2;
        if (!rc && compare) {
            if (cf_pcap_read(p, &got))
                rc = 2;
            else {
                char label[64];
                snprintf(label, sizeof label, "%s port %u", name, port);
                unsigned d = compare_lists(label, &mine, &got);
                printf("%s: %zu expected, %zu got, %u differences\n", label, mine.n, got.n, d);
                diffs += d;
            }
        }
        cf_frames_free(&mine);
        cf_frames_free(&got);
    }
    cf_frames_free(&all);
    cf_ctx_fini(&c);
    if (rc)
        return rc;
    return diffs ? 1 : 0;
}

/* The P4 program's sizes (constants.p4) must fit the wire format they
 * are announced on, and lanes.p4 must unroll exactly SR_P4_ELEMS lanes. */
static int cmd_check_constants(const char *constants, const char *lanes)
{
    size_t len;
    char *text = cf_slurp(constants, &len), *ltext;
    uint32_t elems, log2, slots, workers, rows, words, ring, jobs, jbits, n_lanes = 0;
    int bad = 0;

    if (!text)
        return 2;
    elems = cf_p4_define(text, "SR_P4_ELEMS");
    log2 = cf_p4_define(text, "SR_P4_ELEMS_LOG2");
    slots = cf_p4_define(text, "SR_P4_SLOTS");
    workers = cf_p4_define(text, "SR_P4_MAX_WORKERS");
    rows = cf_p4_define(text, "SR_P4_STORE_ROWS");
    words = cf_p4_define(text, "SR_P4_STORE_WORDS");
    ring = cf_p4_define(text, "SR_P4_RING");
    jobs = cf_p4_define(text, "SR_P4_MAX_JOBS");
    jbits = cf_p4_define(text, "SR_P4_JOB_BITS");
    free(text);
#define CHECK(cond, what)                                                                         \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s: %s\n", constants, what);                                         \
            bad = 1;                                                                              \
        }                                                                                         \
    } while (0)
    CHECK(elems >= 1 && elems <= SR_WIRE_MAX_ELEMS, "SR_P4_ELEMS outside 1..SR_WIRE_MAX_ELEMS");
    CHECK(log2 < 32 && (1u << log2) == elems, "SR_P4_ELEMS is not 1 << SR_P4_ELEMS_LOG2");
    CHECK(slots >= 1 && slots <= SR_WIRE_MAX_SLOTS, "SR_P4_SLOTS outside 1..SR_WIRE_MAX_SLOTS");
    CHECK(workers == SR_WIRE_MAX_WORKERS, "SR_P4_MAX_WORKERS differs from SR_WIRE_MAX_WORKERS");
    CHECK(words == rows * elems, "SR_P4_STORE_WORDS is not SR_P4_STORE_ROWS * SR_P4_ELEMS");
    CHECK(ring >= 2 && ring <= SR_BARRIER_RING_MAX && !(ring & (ring - 1)),
          "SR_P4_RING is not a power of 2 within the software switch's ring limit");
    CHECK(jbits < 16 && (1u << jbits) == jobs, "SR_P4_MAX_JOBS is not 1 << SR_P4_JOB_BITS");
#undef CHECK
    ltext = cf_slurp(lanes, &len);
    if (!ltext)
        return 2;
    /* Lanes are listed as X(0) X(1) ... in order. */
    for (const char *p = strstr(ltext, "X(0)"); p; p = strstr(p + 1, "X(")) {
        if (strtoul(p + 2, NULL, 10) != n_lanes) {
            fprintf(stderr, "%s: lane %u out of order\n", lanes, n_lanes);
            bad = 1;
            break;
        }
        n_lanes++;
    }
    free(ltext);
    if (n_lanes != elems) {
        fprintf(stderr, "%s: %u lanes listed, SR_P4_ELEMS is %u\n", lanes, n_lanes, elems);
        bad = 1;
    }
    if (!bad)
        printf("P4 constants agree with the wire format: %u lanes, %u slots, %u workers\n", elems,
               slots, workers);
    return bad;
}

static int cmd_job(char **av, const char *name)
{
    char job[4096];

    job_of(job, sizeof job, av[0], find_scenario(name));
    printf("%s\n", job);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "check-constants"))
        return cmd_check_constants(argv[2], argv[3]);
    if (argc < 2)
        usage();
    if (!strcmp(argv[1], "gen") && argc == 6)
        return cmd_gen(argv + 2, argv[5]);
    if (!strcmp(argv[1], "replay") && argc == 7)
        return cmd_replay(argv + 2, argv[5], argv[6]);
    if (!strcmp(argv[1], "split") && argc == 8)
        return cmd_ports(argv + 2, argv[5], argv[6], argv[7], 0);
    if (!strcmp(argv[1], "job") && argc == 6)
        return cmd_job(argv + 2, argv[5]);
    if (!strcmp(argv[1], "compare") && argc == 8)
        return cmd_ports(argv + 2, argv[5], argv[6], argv[7], 1);
    usage();
    return 2;
}
