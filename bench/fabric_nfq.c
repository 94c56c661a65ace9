/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric_nfq.c - link impairments for bench/fabric.sh without sch_netem:
 * loss, duplication, delay and the reordering that random delays cause,
 * each packet decided by a seeded generator.
 *
 *   fabric_nfq --queue Q [--loss P] [--dup P] [--delay MIN-MAX] [--seed S]
 *              [--mark M] [--max-held N] [--ready FILE]
 *
 * It runs in one network namespace (`ip netns exec NS fabric_nfq ...`) and
 * serves NFQUEUE queue Q of that namespace, where fabric.sh sends every
 * IPv4 packet leaving on a fabric link (iptables -t mangle POSTROUTING
 * -o IF -m mark ! --mark M -j NFQUEUE --queue-num Q). Per packet, in the
 * order they arrive:
 *   - with probability P_loss the verdict is NF_DROP;
 *   - else with probability P_dup a copy goes out at once through a raw
 *     socket marked M (the rule lets it pass; the link's qdisc shapes it
 *     like any packet), and the packet itself goes on as below;
 *   - the packet is held for a delay drawn uniformly from MIN..MAX ms
 *     (microsecond steps) and then accepted; packets held for different
 *     delays overtake each other, which is the reordering.
 * Verdicts are given out of order, as NFQUEUE allows. Without --delay a
 * packet that is not lost is accepted at once.
 *
 * The generator is splitmix64 from --seed: the same packets in the same
 * order get the same fate. Once bound it writes --ready FILE (fabric.sh
 * waits for it before any traffic: the rule has no bypass, so a packet
 * reaches the link only through this program). SIGINT or SIGTERM ends it:
 * held packets are accepted, and one line of counters goes to stderr:
 *   fabric_nfq: queue=Q seen=... dropped=... duplicated=... dup_failed=...
 *   delayed=... reordered=... held_full=... rx_lost=...
 * reordered counts packets accepted after one that arrived later; rx_lost
 * counts netlink overruns (packets the kernel dropped because this
 * program was behind). Exit status 0; 1 on a setup error; 2 on usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libnetfilter_queue/libnetfilter_queue.h>

#define PROG "fabric_nfq"
#define MAX_PKT 65535u

typedef struct held {
    uint64_t at_ns; /* release time, CLOCK_MONOTONIC */
    uint64_t seq;   /* arrival order */
    uint32_t id;    /* NFQUEUE packet id */
} held;

typedef struct nfq_opts {
    unsigned queue;
    double loss, dup;
    uint64_t delay_min_us, delay_max_us;
    uint64_t seed;
    uint32_t mark;
    unsigned max_held;
    const char *ready;
} nfq_opts;

typedef struct nfq_state {
    nfq_opts o;
    struct nfq_handle *h;
    struct nfq_q_handle *qh;
    int raw;          /* IPPROTO_RAW socket for the copies, marked */
    uint64_t rng;
    held *heap;       /* min-heap on at_ns */
    unsigned nheld;
    uint64_t seq, last_released_seq;
    int released_any;
    uint64_t seen, dropped, duplicated, dup_failed, delayed, reordered, held_full, rx_lost;
} nfq_state;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: small, seedable, and good enough for coin flips. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A uniform double in [0, 1). */
static double coin(nfq_state *st)
{
    return (double)(next_rand(&st->rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- the heap of held packets -------------------------------------------- */

static void heap_push(nfq_state *st, held e)
{
    unsigned i = st->nheld++;
    while (i > 0) {
        unsigned p = (i - 1) / 2;
        if (st->heap[p].at_ns <= e.at_ns)
            break;
        st->heap[i] = st->heap[p];
        i = p;
    }
    st->heap[i] = e;
}

static held heap_pop(nfq_state *st)
{
    held top = st->heap[0], last = st->heap[--st->nheld];
    unsigned i = 0, n = st->nheld;
    for (;;) {
        unsigned c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && st->heap[c + 1].at_ns < st->heap[c].at_ns)
            c++;
        if (last.at_ns <= st->heap[c].at_ns)
            break;
        st->heap[i] = st->heap[c];
        i = c;
    }
    if (n)
        st->heap[i] = last;
    return top;
}

static void accept_pkt(nfq_state *st, uint32_t id, uint64_t seq)
{
    if (st->released_any && seq < st->last_released_seq)
        st->reordered++;
    else
        st->last_released_seq = seq;
    st->released_any = 1;
    nfq_set_verdict(st->qh, id, NF_ACCEPT, 0, NULL);
}

/* Accept every held packet whose time has come (all of them with all). */
static void release_due(nfq_state *st, int all)
{
    uint64_t t = now_ns();
    while (st->nheld && (all || st->heap[0].at_ns <= t)) {
        held e = heap_pop(st);
        accept_pkt(st, e.id, e.seq);
    }
}

/* ---- one packet ---------------------------------------------------------- */

static void send_copy(nfq_state *st, const unsigned char *pkt, int len)
{
    if (len < (int)sizeof(struct iphdr) || (pkt[0] >> 4) != 4) {
        st->dup_failed++;
        return;
    }
    struct sockaddr_in dst = {.sin_family = AF_INET};
    memcpy(&dst.sin_addr, pkt + 16, 4); /* the IPv4 destination */
    if (sendto(st->raw, pkt, (size_t)len, MSG_DONTWAIT, (struct sockaddr *)&dst, sizeof dst) == len)
        st->duplicated++;
    else
        st->dup_failed++;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *arg)
{
    (void)qh;
    (void)msg;
    nfq_state *st = arg;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    if (!ph)
        return 0;
    uint32_t id = ntohl(ph->packet_id);
    uint64_t seq = st->seq++;
    st->seen++;
    if (st->o.loss > 0 && coin(st) < st->o.loss) {
        st->dropped++;
        nfq_set_verdict(st->qh, id, NF_DROP, 0, NULL);
        return 0;
    }
    if (st->o.dup > 0 && coin(st) < st->o.dup) {
        unsigned char *pkt = NULL;
        int len = nfq_get_payload(nfa, &pkt);
        send_copy(st, pkt, len);
    }
    if (st->o.delay_max_us == 0) {
        accept_pkt(st, id, seq);
        return 0;
    }
    if (st->nheld == st->o.max_held) {
        st->held_full++;
        accept_pkt(st, id, seq);
        return 0;
    }
    uint64_t span = st->o.delay_max_us - st->o.delay_min_us + 1;
    uint64_t d_us = st->o.delay_min_us + next_rand(&st->rng) % span;
    heap_push(st, (held){.at_ns = now_ns() + d_us * 1000u, .seq = seq, .id = id});
    st->delayed++;
    return 0;
}

/* ---- options and setup ----------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: " PROG " --queue Q [--loss P] [--dup P] [--delay MIN-MAX (ms)] [--seed S]\n"
                    "       [--mark M] [--max-held N] [--ready FILE]\n");
    return 2;
}

static int parse_prob(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= 0 && v <= 1))
        return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

/* MIN-MAX in milliseconds, decimals allowed (e.g. 1-5, 0.5-2). */
static int parse_delay(const char *s, nfq_opts *o)
{
    char *end;
    double lo = strtod(s, &end), hi;
    if (end == s || *end != '-')
        return -1;
    const char *h = end + 1;
    hi = strtod(h, &end);
    if (end == h || *end || !(lo >= 0 && hi >= lo && hi <= 10000))
        return -1;
    o->delay_min_us = (uint64_t)(lo * 1000 + 0.5);
    o->delay_max_us = (uint64_t)(hi * 1000 + 0.5);
    return 0;
}

static int parse_opts(int argc, char **argv, nfq_opts *o)
{
    uint64_t v;
    int have_queue = 0;
    *o = (nfq_opts){.mark = 0x5e, .max_held = 16384, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val)
            return usage();
        i++;
        int bad = 0;
        if (!strcmp(a, "--queue")) {
            bad = parse_u64(val, 65535, &v);
            o->queue = (unsigned)v;
            have_queue = !bad;
        } else if (!strcmp(a, "--loss")) {
            bad = parse_prob(val, &o->loss);
        } else if (!strcmp(a, "--dup")) {
            bad = parse_prob(val, &o->dup);
        } else if (!strcmp(a, "--delay")) {
            bad = parse_delay(val, o);
        } else if (!strcmp(a, "--seed")) {
            bad = parse_u64(val, UINT64_MAX, &o->seed);
        } else if (!strcmp(a, "--mark")) {
            bad = parse_u64(val, UINT32_MAX, &v) || v == 0;
            o->mark = (uint32_t)v;
        } else if (!strcmp(a, "--max-held")) {
            bad = parse_u64(val, 1u << 20, &v) || v == 0;
            o->max_held = (unsigned)v;
        } else if (!strcmp(a, "--ready")) {
            o->ready = val;
        } else {
            return usage();
        }
        if (bad) {
            fprintf(stderr, PROG ": bad value '%s' for %s\n", val, a);
            return 2;
        }
    }
    return have_queue ? 0 : usage();
}

static int open_queue(nfq_state *st)
{
    st->h = nfq_open();
    if (!st->h) {
        perror(PROG ": nfq_open");
        return 1;
    }
    st->qh = nfq_create_queue(st->h, (uint16_t)st->o.queue, on_packet, st);
    if (!st->qh) {
        fprintf(stderr, PROG ": cannot bind NFQUEUE %u: %s\n", st->o.queue, strerror(errno));
        return 1;
    }
    if (nfq_set_mode(st->qh, NFQNL_COPY_PACKET, MAX_PKT) < 0 ||
        nfq_set_queue_maxlen(st->qh, st->o.max_held + 4096) < 0) {
        perror(PROG ": nfq_set_mode/maxlen");
        return 1;
    }
    nfnl_rcvbufsiz(nfq_nfnlh(st->h), 8u << 20);
    st->raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    if (st->raw < 0 || setsockopt(st->raw, SOL_SOCKET, SO_MARK, &st->o.mark, sizeof st->o.mark)) {
        perror(PROG ": raw socket with SO_MARK");
        return 1;
    }
    st->heap = calloc(st->o.max_held, sizeof *st->heap);
    if (!st->heap) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    if (st->o.ready) {
        int fd = open(st->o.ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            perror(PROG ": --ready");
            return 1;
        }
        close(fd);
    }
    return 0;
}

/* The loop: packets in, held packets out when due, until a signal. */
static void serve(nfq_state *st)
{
    static char buf[MAX_PKT + 4096];
    struct pollfd p = {.fd = nfq_fd(st->h), .events = POLLIN};
    fcntl(p.fd, F_SETFL, fcntl(p.fd, F_GETFL) | O_NONBLOCK);
    while (!stop) {
        uint64_t wait_ns = 100000000u; /* 100 ms: a signal is seen at once anyway */
        if (st->nheld) {
            uint64_t t = now_ns(), at = st->heap[0].at_ns;
            wait_ns = at <= t ? 0 : at - t < wait_ns ? at - t : wait_ns;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)wait_ns};
        if (ppoll(&p, 1, &ts, NULL) > 0) {
            for (int k = 0; k < 256; k++) {
                ssize_t n = recv(p.fd, buf, sizeof buf, 0);
                if (n < 0) {
                    if (errno == ENOBUFS)
                        st->rx_lost++;
                    break;
                }
                nfq_handle_packet(st->h, buf, (int)n);
            }
        }
        release_due(st, 0);
    }
    release_due(st, 1);
}

int main(int argc, char **argv)
{
    nfq_state st = {0};
    int rc = parse_opts(argc, argv, &st.o);
    if (rc)
        return rc;
    st.rng = st.o.seed;
    st.raw = -1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (open_queue(&st)) {
        rc = 1;
    } else {
        serve(&st);
        fprintf(stderr,
                PROG ": queue=%u seen=%llu dropped=%llu duplicated=%llu dup_failed=%llu delayed=%llu "
                     "reordered=%llu held_full=%llu rx_lost=%llu\n",
                st.o.queue, (unsigned long long)st.seen, (unsigned long long)st.dropped,
                (unsigned long long)st.duplicated, (unsigned long long)st.dup_failed,
                (unsigned long long)st.delayed, (unsigned long long)st.reordered,
                (unsigned long long)st.held_full, (unsigned long long)st.rx_lost);
    }
    if (st.qh)
        nfq_destroy_queue(st.qh);
    if (st.h)
        nfq_close(st.h);
    if (st.raw >= 0)
        close(st.raw);
    free(st.heap);
    return rc;
}
