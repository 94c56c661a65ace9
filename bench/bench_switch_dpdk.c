/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_switch_dpdk.c - packets per second of the serene-switch process in
 * DPDK mode, on one core, fed over a memif link by a DPDK blaster.
 *
 * The program starts serene-switch itself ($SERENE_SWITCH_BIN, or --switch
 * PATH) as the memif server with one job of --workers workers, pinned to
 * --switch-cpu, and pins itself to --cpu. One thread then plays all N
 * workers on one memif client port (each its own IPv4 address and UDP
 * port, which the switch learns as it learns real workers), keeping
 * --window allreduce rounds in flight, each round one AR_DATA per worker.
 * Frames are built as the library's dpdk transport builds them
 * (sr_dpdk_frame: its template, the header, the payload; UDP checksum 0
 * where the port does not offload it) and answers parsed as it parses
 * them, but without the engine, quantization or retransmission, so the
 * figure is the switch's (and memif's).
 *
 * Needs root or the rights DPDK wants for memif (no hugepages: EAL runs
 * with --no-huge on both sides). Run it as
 *   SERENE_SWITCH_BIN=build/p4/swswitch/serene-switch build/bench/bench_switch_dpdk --workers 2
 *
 * Reported per call of --rounds rounds: input packets per second (the
 * workers' contributions the switch took) and result packets per second
 * (the copies it sent); GB/s counts input message bytes. Verified after
 * timing: every result arrived, in order, with the exact sums. A round
 * that does not complete within --stall-ms fails the case, as this
 * blaster does not retransmit. The switch's counter line is printed at
 * the end.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "harness.h"
#include "proto/wire.h"
#include "transport/dpdk/dpdk_port.h"

#define MAX_N 16
#define SW_IP 0x0a0000feu  /* 10.0.0.254: the switch's --listen address */
#define W_IP 0x0a000001u   /* 10.0.0.1 + w: worker w */
#define W_PORT 40000u      /* + w: worker w's UDP port */
#define NB_MBUFS 8191u
#define EAL_BASE "--no-huge -m 512 --no-pci --no-shconf --log-level=warning"

typedef struct bctx {
    unsigned n, elems, slots, window, job;
    size_t rounds, stall_ms;
    uint16_t port;
    struct rte_mempool *pool;
    sr_dpdk_tmpl tmpl[MAX_N];
    size_t msg_len;
    uint8_t *msg[MAX_N];  /* each worker's AR_DATA template */
    struct rte_mbuf *tx[SR_DPDK_BURST];
    unsigned tx_n;
    uint8_t scratch[SR_DPDK_MAX_FRAME];
    uint32_t sent;        /* rounds sent by every worker */
    uint32_t got[MAX_N];  /* results received per worker */
    uint64_t bad, results, tx_fail;
    char err[96];
} bctx;

static uint64_t now_ms(void)
{
    return sr_dpdk_now_ns() / 1000000u;
}

static int32_t q_of(unsigned e)
{
    return (int32_t)(e * 2654435761u % 20001u) - 10000;
}

/* ---- frames --------------------------------------------------------------------- */

static void tx_flush(bctx *c)
{
    unsigned off = 0;
    uint64_t start = sr_dpdk_now_ns();

    while (off < c->tx_n) {
        off += rte_eth_tx_burst(c->port, 0, c->tx + off, (uint16_t)(c->tx_n - off));
        if (off < c->tx_n && sr_dpdk_now_ns() - start > 100000000ull) {
            rte_pktmbuf_free_bulk(c->tx + off, c->tx_n - off);
            c->tx_fail += c->tx_n - off;
            break;
        }
    }
    c->tx_n = 0;
}

/* One message from worker w: hdr (hlen bytes) then payload. */
static void tx_msg(bctx *c, unsigned w, const uint8_t *hdr, size_t hlen, const uint8_t *pl, size_t plen)
{
    struct rte_mbuf *m = sr_dpdk_frame(c->pool, &c->tmpl[w], hdr, hlen, pl, plen);

    if (!m) {
        tx_flush(c);
        m = sr_dpdk_frame(c->pool, &c->tmpl[w], hdr, hlen, pl, plen);
        if (!m) {
            c->tx_fail++;
            return;
        }
    }
    c->tx[c->tx_n++] = m;
    if (c->tx_n == SR_DPDK_BURST)
        tx_flush(c);
}

static void send_round(bctx *c, uint32_t r)
{
    uint16_t slot = (uint16_t)((r % c->slots) | (((r / c->slots) & 1u) ? SR_WIRE_SLOT_SHADOW : 0));
    for (unsigned w = 0; w < c->n; w++) {
        uint8_t h[SR_WIRE_HDR_LEN];
        memcpy(h, c->msg[w], SR_WIRE_HDR_LEN);
        sr_put_be32(h + SR_WIRE_OFF_SEQ, r);
        sr_put_be16(h + SR_WIRE_OFF_SLOT, slot);
        sr_put_be32(h + SR_WIRE_OFF_OFFSET, r * c->elems);
        tx_msg(c, w, h, sizeof h, c->msg[w] + SR_WIRE_HDR_LEN, c->msg_len - SR_WIRE_HDR_LEN);
    }
}

/* One answer to worker w: the next result, with the exact sums. */
static void check_result(bctx *c, unsigned w, const uint8_t *buf, size_t len)
{
    const int32_t tri = (int32_t)(c->n * (c->n + 1) / 2);
    sr_hdr h;
    const uint8_t *pl;
    if (sr_msg_parse(buf, len, &h, &pl) == SR_PARSE_OK && h.op == SR_OP_JOIN_ACK)
        return; /* the answer to a JOIN sent again during set-up */
    if (sr_msg_parse(buf, len, &h, &pl) != SR_PARSE_OK || h.op != SR_OP_AR_RESULT || h.seq != c->got[w] ||
        h.count != c->elems || (int32_t)sr_get_be32(pl) != q_of(0) * tri ||
        (int32_t)sr_get_be32(pl + 4 * (c->elems - 1)) != q_of(c->elems - 1) * tri) {
        if (!c->bad && !c->err[0])
            snprintf(c->err, sizeof c->err, "worker %u: unexpected answer (op %s, seq %u, want %u)", w,
                     sr_op_name(h.op), h.seq, c->got[w]);
        c->bad++;
        return;
    }
    c->got[w]++;
    c->results++;
}

/* One burst from the port: each frame to its worker (by UDP port), handed
 * to fn. Returns the frames taken. */
static unsigned rx_burst(bctx *c, void (*fn)(bctx *, unsigned, const uint8_t *, size_t))
{
    struct rte_mbuf *rx[SR_DPDK_BURST];
    unsigned k = rte_eth_rx_burst(c->port, 0, rx, SR_DPDK_BURST);

    for (unsigned i = 0; i < k; i++) {
        sr_frame_addr a;
        const uint8_t *pl;
        size_t len;

        if (sr_dpdk_frame_parse(rx[i], c->scratch, &a, &pl, &len) == SR_FRAME_OK && a.dst_port >= W_PORT &&
            a.dst_port < W_PORT + c->n)
            fn(c, a.dst_port - W_PORT, pl, len);
    }
    if (k)
        rte_pktmbuf_free_bulk(rx, k);
    return k;
}

/* ---- the timed call ------------------------------------------------------------- */

static uint32_t min_got(const bctx *c)
{
    uint32_t m = c->got[0];
    for (unsigned w = 1; w < c->n; w++)
        m = c->got[w] < m ? c->got[w] : m;
    return m;
}

static void run_blast(void *a)
{
    bctx *c = a;
    uint32_t end = c->sent + (uint32_t)c->rounds, last_min = min_got(c);
    uint64_t last_progress = now_ms();
    while (!c->err[0]) {
        uint32_t done = min_got(c);
        while (c->sent < end && c->sent - done < c->window)
            send_round(c, c->sent++);
        tx_flush(c);
        if (done == end)
            break;
        while (rx_burst(c, check_result) == SR_DPDK_BURST)
            ;
        if (min_got(c) != last_min) {
            last_min = min_got(c);
            last_progress = now_ms();
        } else if (now_ms() - last_progress > c->stall_ms) {
            snprintf(c->err, sizeof c->err, "no result for %zu ms at round %u: frames lost (try a smaller --window)",
                     c->stall_ms, last_min);
        }
    }
}

static int verify_blast(void *a, char *why, size_t wl)
{
    bctx *c = a;
    if (c->err[0] || c->bad || c->tx_fail) {
        snprintf(why, wl, "%s", c->err[0] ? c->err : c->bad ? "bad answers" : "frames not sent");
        return 1;
    }
    for (unsigned w = 0; w < c->n; w++)
        if (c->got[w] != c->sent) {
            snprintf(why, wl, "worker %u has %u results of %u rounds", w, c->got[w], c->sent);
            return 1;
        }
    return 0;
}

/* ---- set-up: the switch, the port, JOIN ------------------------------------------- */

static void pin(int cpu)
{
    cpu_set_t s;
    if (cpu < 0)
        return;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s))
        fprintf(stderr, "bench_switch_dpdk: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

/* serene-switch in DPDK mode, memif server at sock, stderr to log. */
static pid_t start_switch(const char *bin, const char *sock, const char *log, unsigned n, int cpu)
{
    char eal[512], job[32], listen[32];
    snprintf(eal, sizeof eal, EAL_BASE " --vdev=net_memif0,role=server,bsize=16384,socket=%s", sock);
    snprintf(job, sizeof job, "1:%u", n);
    snprintf(listen, sizeof listen, "10.0.0.254:%u", SR_WIRE_UDP_PORT);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "w", stderr);
        (void)f;
        pin(cpu);
        execl(bin, bin, "--listen", listen, "--job", job, "--dpdk", eal, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    return pid;
}

/* Wait (10 s at most) for the switch's "listening" line: its memif server
 * is started, so a client that connects now is served (one that connects
 * earlier may never see its link come up). */
static int wait_switch(pid_t sw, const char *log)
{
    for (int i = 0; i < 1000; i++) {
        char line[512];
        int up = 0;
        FILE *f = fopen(log, "r");
        while (f && !up && fgets(line, sizeof line, f))
            up = strstr(line, "listening") != NULL;
        if (f)
            fclose(f);
        if (up)
            return 0;
        if (waitpid(sw, NULL, WNOHANG) == sw) {
            fprintf(stderr, "bench_switch_dpdk: serene-switch exited; its log: %s\n", log);
            return -1;
        }
        usleep(10000);
    }
    fprintf(stderr, "bench_switch_dpdk: serene-switch not listening after 10 s; its log: %s\n", log);
    return -1;
}

/* Where JOIN_ACKs land during set-up. */
static void on_join(bctx *c, unsigned w, const uint8_t *buf, size_t len)
{
    sr_hdr h;
    const uint8_t *pl;
    if (sr_msg_parse(buf, len, &h, &pl) != SR_PARSE_OK || h.op != SR_OP_JOIN_ACK || c->got[w])
        return;
    sr_join_params jp;
    sr_join_params_unpack(pl, &jp);
    c->elems = jp.elems_per_pkt;
    c->slots = jp.pool_slots;
    c->got[w] = 1;
}

/* Every worker JOINs (retried every 100 ms, for up to 10 s). */
static int join_all(bctx *c, uint32_t nonce)
{
    uint64_t give_up = now_ms() + 10000, next = 0;
    unsigned joined = 0;
    while (joined < c->n) {
        if (now_ms() > give_up) {
            fprintf(stderr, "bench_switch_dpdk: %u of %u workers joined within 10 s\n", joined, c->n);
            return -1;
        }
        if (now_ms() >= next) {
            for (unsigned w = 0; w < c->n; w++) {
                if (c->got[w])
                    continue;
                sr_hdr h = {.version = SR_WIRE_VERSION, .op = SR_OP_JOIN, .job = (uint16_t)c->job,
                            .worker = (uint16_t)w, .seq = 0x1000u + w, .aux = nonce};
                uint8_t m[SR_WIRE_HDR_LEN];
                sr_hdr_pack(m, &h);
                tx_msg(c, w, m, sizeof m, NULL, 0);
            }
            tx_flush(c);
            next = now_ms() + 100;
        }
        rx_burst(c, on_join);
        joined = 0;
        for (unsigned w = 0; w < c->n; w++)
            joined += c->got[w] != 0;
    }
    memset(c->got, 0, sizeof c->got);
    return 0;
}

/* EAL, the memif client port (waiting for the switch's server side), the
 * workers' frame templates. */
static int open_port(bctx *c, const char *sock)
{
    char eal[512], err[SR_DPDK_ERR_MAX];
    sr_dpdk_port_info info;
    int probed;
    snprintf(eal, sizeof eal, EAL_BASE " --vdev=net_memif0,role=client,bsize=16384,socket=%s", sock);
    if (sr_dpdk_eal_start(eal, "bench_switch_dpdk", err) < 0 ||
        sr_dpdk_port_find("net_memif0", &c->port, &probed, err) ||
        sr_dpdk_port_start(c->port, &c->pool, "blast_pool", NB_MBUFS, 0, sr_dpdk_now_ns() + 10000000000ull,
                           &info, err)) {
        fprintf(stderr, "bench_switch_dpdk: %s\n", err);
        return -1;
    }
    for (unsigned w = 0; w < c->n; w++) {
        sr_frame_addr a = {.src_ip = W_IP + w, .dst_ip = SW_IP, .src_port = (uint16_t)(W_PORT + w),
                           .dst_port = SR_WIRE_UDP_PORT};
        memcpy(a.src_mac, info.mac, 6);
        memset(a.dst_mac, 0xff, 6);
        sr_dpdk_tmpl_init(&c->tmpl[w], &a, info.csum_offload);
    }
    return 0;
}

/* ---- main ----------------------------------------------------------------------- */

static int make_msgs(bctx *c)
{
    c->msg_len = SR_WIRE_HDR_LEN + 4u * c->elems;
    for (unsigned w = 0; w < c->n; w++) {
        c->msg[w] = malloc(c->msg_len);
        if (!c->msg[w])
            return -1;
        sr_hdr dh = {.version = SR_WIRE_VERSION, .op = SR_OP_AR_DATA, .job = (uint16_t)c->job,
                     .worker = (uint16_t)w, .count = (uint16_t)c->elems, .exp = 3, .next_exp = 3};
        sr_hdr_pack(c->msg[w], &dh);
        for (unsigned e = 0; e < c->elems; e++)
            sr_put_be32(c->msg[w] + SR_WIRE_HDR_LEN + 4 * e, (uint32_t)(q_of(e) * (int32_t)(w + 1)));
    }
    return 0;
}

/* LEAVE every worker, stop the switch, print its last counter line. */
static void finish(bctx *c, pid_t sw, const char *log)
{
    for (unsigned w = 0; w < c->n; w++) {
        sr_hdr lh = {.version = SR_WIRE_VERSION, .op = SR_OP_LEAVE, .job = (uint16_t)c->job,
                     .worker = (uint16_t)w, .seq = 0x1000u + w};
        uint8_t m[SR_WIRE_HDR_LEN];
        sr_hdr_pack(m, &lh);
        tx_msg(c, w, m, sizeof m, NULL, 0);
        free(c->msg[w]);
    }
    tx_flush(c);
    kill(sw, SIGTERM);
    waitpid(sw, NULL, 0);
    FILE *f = fopen(log, "r");
    char line[2048], last[2048] = "";
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "serene-switch: switch ") || strstr(line, "error"))
            snprintf(last, sizeof last, "%s", line);
    if (f)
        fclose(f);
    fprintf(stderr, "# %s", last[0] ? last : "serene-switch printed no counters\n");
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t workers = 2, window = 32, rounds = 16384, stall_ms = 2000, cpu = 0, switch_cpu = 1;
    const sr_bench_opt opts[] = {
        {"--workers", "N: workers the blaster plays (the job's size)", &workers},
        {"--window", "rounds in flight (at most the job's pool)", &window},
        {"--rounds", "rounds per timed call", &rounds},
        {"--stall-ms", "fail when no round completes for this long", &stall_ms},
        {"--cpu", "CPU the blaster is pinned to (a large value: not pinned)", &cpu},
        {"--switch-cpu", "CPU the switch is pinned to (a large value: not pinned)", &switch_cpu},
    };
    sr_bench_init(&b, "bench_switch_dpdk", 0);
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;
    const char *bin = getenv("SERENE_SWITCH_BIN");
    if (workers < 1 || workers > MAX_N || window == 0 || rounds == 0 || rounds > (1u << 24) || stall_ms == 0 ||
        !bin) {
        fprintf(stderr, "bench_switch_dpdk: need SERENE_SWITCH_BIN, 1 <= --workers <= %d, --window, --rounds "
                        "(<= 2^24) and --stall-ms >= 1\n", MAX_N);
        return 2;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int my_cpu = (long)cpu < ncpu ? (int)cpu : -1, sw_cpu = (long)switch_cpu < ncpu ? (int)switch_cpu : -1;
    char dir[] = "/tmp/serene-bench-dpdk.XXXXXX", sock[64], log[64];
    if (!mkdtemp(dir))
        return 1;
    snprintf(sock, sizeof sock, "%s/memif.sock", dir);
    snprintf(log, sizeof log, "%s/switch.log", dir);
    bctx c = {.n = (unsigned)workers, .job = 1, .rounds = rounds, .stall_ms = stall_ms};
    pid_t sw = start_switch(bin, sock, log, c.n, sw_cpu);
    if (sw < 0 || wait_switch(sw, log) || open_port(&c, sock) ||
        join_all(&c, (uint32_t)time(NULL) ^ (uint32_t)getpid() << 8)) {
        if (sw > 0) {
            kill(sw, SIGTERM);
            waitpid(sw, NULL, 0);
        }
        return 1; /* the switch's log stays for a look */
    }
    pin(my_cpu);
    c.window = (unsigned)(window < c.slots ? window : c.slots);
    if (make_msgs(&c))
        return 1;
    b.size_bytes = c.msg_len;
    char config[300];
    snprintf(config, sizeof config,
             "serene-switch (dpdk, memif, CPU %d) fed by a blaster on CPU %d: job 1, %u workers, %u values per "
             "packet (message %zu B), pool %u, window %u rounds, %zu rounds per call",
             sw_cpu, my_cpu, c.n, c.elems, c.msg_len, c.slots, c.window, rounds);
    sr_bench_begin(&b, config);
    char variant[16];
    snprintf(variant, sizeof variant, "n%u", c.n);
    size_t pkts = rounds * c.n;
    sr_bench_case bc = {"switch_dpdk", variant, pkts * c.msg_len, run_blast, verify_blast, &c};
    sr_bench_result r;
    sr_bench_run(&b, &bc, &r);
    snprintf(r.extra, sizeof r.extra, "workers=%u Mpps=%.3f best_Mpps=%.3f out_Mpps=%.3f ns_per_pkt=%.1f", c.n,
             (double)pkts / r.median_s / 1e6, (double)pkts / r.best_s / 1e6, (double)pkts / r.median_s / 1e6,
             r.median_s / (double)pkts * 1e9);
    sr_bench_report(&b, &r);
    sr_bench_note(&b, "# Mpps = AR_DATA packets into the switch per second (it sends as many results back)");
    finish(&c, sw, log);
    unlink(sock);
    unlink(log);
    rmdir(dir);
    return sr_bench_end(&b);
}
