/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - serene-switch: the software aggregator over UDP.
 *
 * Parses the command line, creates the jobs, binds the socket (and the
 * control socket, with --control), then runs one loop: wait for datagrams,
 * control connections or the next timer; feed each datagram through the
 * fault injector and the pipeline, send what the pipeline asks for; serve
 * the control connections (bounded, non-blocking: ctl_sock.h).
 *
 * - One thread. The only global is the signal flag; everything else lives
 *   in struct sw (the switch) and struct sw_opts (the command line).
 * - No allocation per packet: the pipeline's output, the socket's buffers
 *   and the fault injector's hold buffer are all allocated at startup.
 * - SIGINT and SIGTERM are blocked except inside ppoll, so a signal can
 *   neither be lost between the flag check and the wait nor interrupt a
 *   send half-way; the loop then ends, counters are printed, exit 0.
 * - Exit status: 0 after a signal or --help; 1 on a setup failure (bind,
 *   port file, control socket, out of memory); 2 on a malformed command
 *   line, a job spec out of its limits included.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chaos.h"
#include "ctl_sock.h"
#include "pipeline.h"
#include "udp_io.h"

#define PROG "serene-switch"
#define DEFAULT_LISTEN "127.0.0.1:48200"
#define IDLE_WAIT_NS 1000000000ull /* wake up at least once a second */
#define BURSTS_PER_WAKEUP 8        /* then look at timers again */
#define MAX_STATS_INTERVAL 86400.0 /* seconds */

_Static_assert(SR_WIRE_UDP_PORT == 48200u, "DEFAULT_LISTEN follows wire.h");

static volatile sig_atomic_t stop_signal; /* the one global: set by the handler */

enum { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };
static const char *const log_names[] = {"error", "warn", "info", "debug"};

typedef struct sw_job_opt {
    uint16_t id;
    sr_pipe_job_params params;
    const char *arg; /* as given, for messages */
} sw_job_opt;

typedef struct sw_opts {
    uint32_t ip;
    uint16_t port;
    const char *listen; /* as given */
    sw_job_opt *jobs;   /* argc entries: there cannot be more --job options */
    unsigned n_jobs;
    const char *port_file;
    const char *control; /* control socket path, or NULL */
    double loss, dup, reorder;
    uint64_t seed;
    double stats_interval; /* seconds; 0: off */
    int log_level;
} sw_opts;

typedef struct sw {
    const sw_opts *o;
    sr_pipe *pipe;
    sr_pipe_out *out;
    sr_udp *udp;
    sr_chaos chaos;
    sr_ctls ctl; /* inactive without --control */
} sw;

/* ---- messages ----------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [--listen ADDR:PORT] --job SPEC... [options]\n"
            "\n"
            "Software switch for Serene: aggregates workers' packets like the P4 program.\n"
            "\n"
            "  --listen ADDR:PORT     IPv4 address and UDP port to bind (default " DEFAULT_LISTEN
            ";\n"
            "                         port 0 picks a free one)\n"
            "  --job ID:N[:ELEMS[:SLOTS]][,store=WORDS][,ring=R][,policy=MODE]\n"
            "                         add job ID (0..65535) of N workers (1..%u), ELEMS\n"
            "                         elements per packet (1..%u, default %u; also the SSP\n"
            "                         store's row length) and SLOTS slots (1..%u, default\n"
            "                         %u); repeatable, at least one. Options:\n"
            "                           store=WORDS  SSP store words, 0..%u\n"
            "                                        (default %u)\n"
            "                           ring=R       barrier ring, a power of 2 in 2..%u\n"
            "                                        (default %u)\n"
            "                           policy=MODE  bsp (default), asp or ssp:S with\n"
            "                                        S <= R - 2: the policy from clock 0\n"
            "  --port-file PATH       once bound, write the port and a newline to PATH\n"
            "                         (written to a temporary file, then renamed)\n"
            "  --control PATH         serve a Unix stream socket at PATH (a stale one is\n"
            "                         replaced; removed at exit): one command line per\n"
            "                         connection, one reply line:\n"
            "                           jobs\n"
            "                           status JOB\n"
            "                           policy JOB bsp|asp|ssp [S] [from CLOCK]\n"
            "  --loss P               drop each received datagram and each sent copy with\n"
            "                         probability P (0..1; for tests)\n"
            "  --dup P                send each copy twice with probability P\n"
            "  --reorder P            hold each copy back with probability P until after the\n"
            "                         next one (or %u ms)\n"
            "  --seed S               seed of the fault injector (default 1)\n"
            "  --stats-interval SEC   print a line of counters to stderr every SEC seconds\n"
            "                         (0 = off, the default)\n"
            "  --log-level LEVEL      error, warn (default), info or debug\n"
            "  -h, --help             print this help and exit\n"
            "\n"
            "SIGINT or SIGTERM stops the switch; it prints one line of counters per job to\n"
            "stderr and exits 0. Exit status 1: setup failure; 2: bad command line.\n",
            SR_WIRE_MAX_WORKERS, SR_WIRE_MAX_ELEMS, SR_WIRE_DEF_ELEMS, SR_WIRE_MAX_SLOTS,
            SR_WIRE_DEF_SLOTS, SR_PIPE_STORE_MAX, SR_PIPE_STORE_DEFAULT, SR_BARRIER_RING_MAX,
            SR_BARRIER_RING_DEFAULT, (unsigned)(SR_CHAOS_HOLD_NS / 1000000u));
}

__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try '" PROG " --help')\n", stderr);
    exit(2);
}

__attribute__((format(printf, 3, 4))) static void sw_log(const sw_opts *o, int level,
                                                         const char *fmt, ...)
{
    va_list ap;

    if (level > o->log_level)
        return;
    fprintf(stderr, PROG ": %s: ", log_names[level]);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- command line ------------------------------------------------------- */

/* Strict unsigned decimal (or 0x hex if hex): digits only, no sign, no
 * spaces, nothing after, at most max. */
static int parse_u64(const char *s, uint64_t max, int hex, uint64_t *out)
{
    int base = 10;
    unsigned long long v;
    char *end;

    if (hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!(base == 16 ? isxdigit((unsigned char)*s) : isdigit((unsigned char)*s)))
        return -1;
    errno = 0;
    v = strtoull(s, &end, base);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

static double parse_real(const char *opt, const char *s, double max, const char *what)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (!*s || end == s || *end || errno || !(v >= 0.0 && v <= max))
        usage_error("%s: '%s' is not %s", opt, s, what);
    return v;
}

static void parse_listen(sw_opts *o, const char *s)
{
    const char *colon = strrchr(s, ':');
    char addr[INET_ADDRSTRLEN];
    struct in_addr in;
    uint64_t port;

    if (!colon || (size_t)(colon - s) >= sizeof addr)
        usage_error("--listen: '%s' is not ADDR:PORT", s);
    memcpy(addr, s, (size_t)(colon - s));
    addr[colon - s] = '\0';
    if (inet_pton(AF_INET, addr, &in) != 1)
        usage_error("--listen: '%s' is not an IPv4 address in '%s'", addr, s);
    if (parse_u64(colon + 1, 65535, 0, &port))
        usage_error("--listen: '%s' is not a port (0..65535) in '%s'", colon + 1, s);
    o->ip = ntohl(in.s_addr);
    o->port = (uint16_t)port;
    o->listen = s;
}

/* One "key=value" option of a --job spec (opt, of len bytes, inside s). */
static void parse_job_option(sw_job_opt *j, const char *s, const char *opt, size_t len,
                             unsigned *seen)
{
    static const char *const keys[] = {"store", "ring", "policy"};
    sr_pipe_job_params *jp = &j->params;
    char buf[48], *val;
    unsigned k;
    uint64_t v;

    if (len == 0)
        usage_error("--job: empty option in '%s'", s);
    if (len >= sizeof buf || !memchr(opt, '=', len))
        usage_error("--job: '%.*s' in '%s' is not store=WORDS, ring=R or policy=MODE", (int)len,
                    opt, s);
    memcpy(buf, opt, len);
    buf[len] = '\0';
    val = strchr(buf, '=');
    *val++ = '\0';
    for (k = 0; k < 3 && strcmp(buf, keys[k]); k++)
        ;
    if (k == 3)
        usage_error("--job: unknown option '%s' in '%s' (store=, ring= or policy=)", buf, s);
    if (*seen & 1u << k)
        usage_error("--job: '%s' given twice in '%s'", buf, s);
    *seen |= 1u << k;
    if (k == 0) {
        if (parse_u64(val, SR_PIPE_STORE_MAX, 0, &v))
            usage_error("--job: store '%s' in '%s' is not a number of words in 0..%u", val, s,
                        SR_PIPE_STORE_MAX);
        jp->store_words = (uint32_t)v;
    } else if (k == 1) {
        if (parse_u64(val, SR_BARRIER_RING_MAX, 0, &v) || v < 2 || (v & (v - 1)))
            usage_error("--job: ring '%s' in '%s' is not a power of 2 in 2..%u", val, s,
                        SR_BARRIER_RING_MAX);
        jp->ring = (uint32_t)v;
    } else {
        char *colon = strchr(val, ':');

        if (colon)
            *colon++ = '\0';
        if (!strcmp(val, "bsp"))
            jp->mode = SR_SYNC_BSP;
        else if (!strcmp(val, "asp"))
            jp->mode = SR_SYNC_ASP;
        else if (!strcmp(val, "ssp") && colon)
            jp->mode = SR_SYNC_SSP;
        else
            usage_error("--job: policy '%.*s' in '%s' is not bsp, asp or ssp:S", (int)len - 7,
                        opt + 7, s);
        jp->s = 0;
        if (jp->mode == SR_SYNC_SSP) {
            if (parse_u64(colon, SR_BARRIER_RING_MAX - 2, 0, &v))
                usage_error("--job: s '%s' of policy ssp in '%s' is not a number in 0..%u",
                            colon, s, SR_BARRIER_RING_MAX - 2);
            jp->s = (uint32_t)v;
        } else if (colon) {
            usage_error("--job: policy %s in '%s' takes no :S (only ssp does)", val, s);
        }
    }
}

/* ID:N[:ELEMS[:SLOTS]][,store=WORDS][,ring=R][,policy=bsp|asp|ssp:S], each
 * field within its limits (wire.h, pipeline.h, barrier.h). */
static void parse_job(sw_opts *o, const char *s)
{
    static const char *const names[] = {"ID", "N", "ELEMS", "SLOTS"};
    const uint64_t lo[] = {0, 1, 1, 1};
    const uint64_t hi[] = {65535, SR_WIRE_MAX_WORKERS, SR_WIRE_MAX_ELEMS, SR_WIRE_MAX_SLOTS};
    uint64_t v[4] = {0, 0, SR_WIRE_DEF_ELEMS, SR_WIRE_DEF_SLOTS};
    sw_job_opt *j = &o->jobs[o->n_jobs];
    const char *end = s + strcspn(s, ","), *p = s, *why;
    unsigned k = 0, seen = 0;

    for (;;) {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        size_t len = colon ? (size_t)(colon - p) : (size_t)(end - p);
        char field[24];

        if (k == 4)
            usage_error("--job: '%s' has more than ID:N:ELEMS:SLOTS", s);
        if (len >= sizeof field || (memcpy(field, p, len), field[len] = '\0',
                                    parse_u64(field, UINT64_MAX, 0, &v[k])) ||
            v[k] < lo[k] || v[k] > hi[k])
            usage_error("--job: %s '%.*s' in '%s' is not in %" PRIu64 "..%" PRIu64, names[k],
                        (int)len, p, s, lo[k], hi[k]);
        k++;
        if (!colon)
            break;
        p = colon + 1;
    }
    if (k < 2)
        usage_error("--job: '%s' is not ID:N[:ELEMS[:SLOTS]][,OPTION=VALUE...]", s);
    sr_pipe_job_params_init(&j->params);
    j->id = (uint16_t)v[0];
    j->params.n_workers = (uint32_t)v[1];
    j->params.elems_per_pkt = (uint32_t)v[2];
    j->params.pool_slots = (uint32_t)v[3];
    j->arg = s;
    for (p = end; *p == ',';) {
        const char *q = p + 1, *next = q + strcspn(q, ",");

        parse_job_option(j, s, q, (size_t)(next - q), &seen);
        p = next;
    }
    if (j->params.mode == SR_SYNC_SSP && j->params.s > j->params.ring - 2)
        usage_error("--job: policy ssp:%" PRIu32 " in '%s' needs ring >= %" PRIu32
                    " (s + 2; ring is %" PRIu32 ")",
                    j->params.s, s, j->params.s + 2, j->params.ring);
    if (sr_pipe_job_params_check(&j->params, &why))
        usage_error("--job: '%s': %s", s, why);
    o->n_jobs++;
}

static int parse_level(const char *s)
{
    for (int i = 0; i < (int)(sizeof log_names / sizeof log_names[0]); i++)
        if (!strcmp(s, log_names[i]))
            return i;
    usage_error("--log-level: '%s' is not error, warn, info or debug", s);
}

static void parse_args(sw_opts *o, int argc, char **argv)
{
    enum {
        O_LISTEN = 256,
        O_JOB,
        O_PORT_FILE,
        O_CONTROL,
        O_LOSS,
        O_DUP,
        O_REORDER,
        O_SEED,
        O_STATS,
        O_LOG
    };
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"job", required_argument, NULL, O_JOB},
        {"port-file", required_argument, NULL, O_PORT_FILE},
        {"control", required_argument, NULL, O_CONTROL},
        {"loss", required_argument, NULL, O_LOSS},
        {"dup", required_argument, NULL, O_DUP},
        {"reorder", required_argument, NULL, O_REORDER},
        {"seed", required_argument, NULL, O_SEED},
        {"stats-interval", required_argument, NULL, O_STATS},
        {"log-level", required_argument, NULL, O_LOG},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    o->jobs = calloc((size_t)argc, sizeof *o->jobs);
    if (!o->jobs) {
        fputs(PROG ": out of memory\n", stderr);
        exit(1);
    }
    o->seed = 1;
    o->log_level = LOG_WARN;
    parse_listen(o, DEFAULT_LISTEN);
    opterr = 0; /* our messages, not getopt's */
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_LISTEN: parse_listen(o, optarg); break;
        case O_JOB: parse_job(o, optarg); break;
        case O_PORT_FILE:
            if (!*optarg)
                usage_error("--port-file: empty path");
            o->port_file = optarg;
            break;
        case O_CONTROL:
            if (!*optarg)
                usage_error("--control: empty path");
            if (strlen(optarg) > SR_CTLS_PATH_MAX)
                usage_error("--control: '%s' is longer than %u bytes (a Unix socket path)",
                            optarg, SR_CTLS_PATH_MAX);
            o->control = optarg;
            break;
        case O_LOSS: o->loss = parse_real("--loss", optarg, 1.0, "a probability in [0,1]"); break;
        case O_DUP: o->dup = parse_real("--dup", optarg, 1.0, "a probability in [0,1]"); break;
        case O_REORDER:
            o->reorder = parse_real("--reorder", optarg, 1.0, "a probability in [0,1]");
            break;
        case O_SEED:
            if (parse_u64(optarg, UINT64_MAX, 1, &o->seed))
                usage_error("--seed: '%s' is not an unsigned 64-bit integer", optarg);
            break;
        case O_STATS:
            o->stats_interval = parse_real("--stats-interval", optarg, MAX_STATS_INTERVAL,
                                           "a number of seconds in [0,86400]");
            break;
        case O_LOG: o->log_level = parse_level(optarg); break;
        case 'h':
            usage(stdout);
            exit(0);
        case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            /* A long option given a value it does not take comes back
             * with optopt set to its code, like an unknown short one. */
            if (!strncmp(argv[optind - 1], "--", 2) && strchr(argv[optind - 1], '=') && optopt)
                usage_error("option '%.*s' takes no value",
                            (int)(strchr(argv[optind - 1], '=') - argv[optind - 1]),
                            argv[optind - 1]);
            if (!strncmp(argv[optind - 1], "--", 2))
                usage_error("unknown or ambiguous option '%.*s'",
                            (int)strcspn(argv[optind - 1], "="), argv[optind - 1]);
            usage_error("unknown option '-%c'", optopt);
        }
    }
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (o->n_jobs == 0)
        usage_error("at least one --job ID:N[:ELEMS[:SLOTS]][,...] is required");
}

/* ---- setup ---------------------------------------------------------------- */

/* Write "PORT\n" to a temporary file next to path, then rename it over
 * path, so a reader never sees a partial number. Returns 0 or -errno. */
static int write_port_file(const char *path, uint16_t port)
{
    char tmp[4096], text[8];
    int fd, len, err = 0;

    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return -ENAMETOOLONG;
    len = snprintf(text, sizeof text, "%u\n", (unsigned)port);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    if (write(fd, text, (size_t)len) != len)
        err = errno ? -errno : -EIO;
    if (close(fd) < 0 && !err)
        err = -errno;
    if (!err && rename(tmp, path) < 0)
        err = -errno;
    if (err)
        unlink(tmp);
    return err;
}

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* Handlers without SA_RESTART, and both signals blocked except in ppoll:
 * *wait_mask is the mask ppoll waits with. */
static int setup_signals(sigset_t *wait_mask)
{
    struct sigaction sa;
    sigset_t block;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &block, wait_mask) < 0 || sigaction(SIGINT, &sa, NULL) < 0 ||
        sigaction(SIGTERM, &sa, NULL) < 0)
        return -errno;
    sigdelset(wait_mask, SIGINT);
    sigdelset(wait_mask, SIGTERM);
    return 0;
}

/* ---- counters ------------------------------------------------------------- */

/* One line per job, "key=value" pairs in a fixed order:
 *   serene-switch: job=ID workers=N elems=E slots=S store=W ring=R nonce=X
 *   low=L high=H rx=... (see SR_PIPE_JOB_COUNTERS for the rest, in order). */
static void print_job_lines(const sw *s)
{
    unsigned n = sr_pipe_job_list(s->pipe, NULL, 0);
    uint16_t *ids = calloc(n ? n : 1, sizeof *ids);

    if (!ids)
        return;
    n = sr_pipe_job_list(s->pipe, ids, n);
    for (unsigned i = 0; i < n; i++) {
        sr_pipe_job_counters c;
        sr_pipe_job_info info;
        sr_pipe_sync_state st;
        char line[1024];

        if (sr_pipe_job_counters_get(s->pipe, ids[i], &c) ||
            sr_pipe_job_info_get(s->pipe, ids[i], &info) || sr_pipe_sync_get(s->pipe, ids[i], &st))
            continue;
        sr_pipe_job_counters_format(line, sizeof line, &c);
        fprintf(stderr,
                PROG ": job=%u workers=%" PRIu32 " elems=%" PRIu32 " slots=%" PRIu32
                     " store=%" PRIu32 " ring=%" PRIu32 " nonce=%" PRIu32 " low=%" PRIu32
                     " high=%" PRIu32 " %s\n",
                info.job, info.n_workers, info.elems_per_pkt, info.pool_slots, info.store_words,
                info.ring, info.nonce, st.low, st.high, line);
    }
    free(ids);
}

/* The switch-wide counters on one line, prefixed by what (e.g. "stats"). */
static void print_switch_line(const sw *s, const char *what)
{
    sr_pipe_counters pc;
    sr_udp_counters uc;
    const sr_chaos_counters *cc = &s->chaos.c;
    char rej[512];
    size_t used = 0;

    sr_pipe_counters_get(s->pipe, &pc);
    sr_udp_counters_get(s->udp, &uc);
    rej[0] = '\0';
    for (int r = 1; r < SR_PARSE_NREASONS; r++) {
        int k = snprintf(rej + used, sizeof rej - used, " rejected_%s=%" PRIu64,
                         sr_parse_result_name(-r), pc.rejected[r]);
        if (k < 0 || (size_t)k >= sizeof rej - used)
            break;
        used += (size_t)k;
    }
    fprintf(stderr,
            PROG ": %s rx_total=%" PRIu64 " tx_total=%" PRIu64 " unknown_job=%" PRIu64
                 " answers_dropped=%" PRIu64 "%s udp_rx=%" PRIu64 " udp_rx_oversize=%" PRIu64
                 " udp_rx_errors=%" PRIu64 " udp_tx=%" PRIu64 " udp_tx_errors=%" PRIu64
                 " chaos_rx_dropped=%" PRIu64 " chaos_tx_dropped=%" PRIu64
                 " chaos_tx_duplicated=%" PRIu64 " chaos_tx_delayed=%" PRIu64
                 " chaos_hold_full=%" PRIu64 "\n",
            what, pc.rx_total, pc.tx_total, pc.unknown_job, pc.answers_dropped, rej, uc.rx,
            uc.rx_oversize, uc.rx_errors, uc.tx, uc.tx_errors, cc->rx_dropped, cc->tx_dropped,
            cc->tx_duplicated, cc->tx_delayed, cc->hold_full);
}

/* ---- the loop --------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The fault injector's way out. */
static void send_cb(void *cookie, const sr_peer *dst, const uint8_t *hdr, size_t hlen,
                    const uint8_t *payload, size_t plen)
{
    sr_udp_send(cookie, dst, hdr, hlen, payload, plen);
}

static void log_packet(const sw *s, const sr_peer *src, const uint8_t *msg, size_t len)
{
    struct in_addr in = {htonl(src->ip)};
    char addr[INET_ADDRSTRLEN];
    sr_hdr h;
    int r = sr_msg_parse(msg, len, &h, NULL);

    inet_ntop(AF_INET, &in, addr, sizeof addr);
    if (r != SR_PARSE_OK) {
        sw_log(s->o, LOG_DEBUG, "from %s:%u: %zu bytes rejected: %s", addr, src->port, len,
               sr_parse_result_name(r));
        return;
    }
    for (unsigned i = 0; i < s->out->n; i++) {
        const sr_pipe_action *a = &s->out->act[i];

        sw_log(s->o, LOG_DEBUG,
               "from %s:%u: %s job %u worker %u seq %u slot %u/%u offset %u -> %s%s%s to %u %s",
               addr, src->port, sr_op_name(h.op), h.job, h.worker, h.seq, h.slot, h.shadow,
               h.offset,
               sr_op_name(a->hdr.op), a->hdr.op == SR_OP_ERROR ? " " : "",
               a->hdr.op == SR_OP_ERROR ? sr_status_name(a->hdr.status) : "", a->n_dests,
               a->multicast ? "workers" : "peer");
    }
    if (s->out->n == 0)
        sw_log(s->o, LOG_DEBUG,
               "from %s:%u: %s job %u worker %u seq %u slot %u/%u offset %u -> nothing", addr,
               src->port, sr_op_name(h.op), h.job, h.worker, h.seq, h.slot, h.shadow, h.offset);
}

/* Process one received datagram and send the replicas it asks for. */
static void handle(sw *s, const sr_peer *src, const uint8_t *msg, size_t len, uint64_t now)
{
    uint8_t hdr[SR_WIRE_HDR_LEN];

    if (sr_chaos_drop_rx(&s->chaos))
        return;
    sr_pipe_process(s->pipe, src, msg, len, s->out);
    if (s->o->log_level >= LOG_DEBUG)
        log_packet(s, src, msg, len);
    for (unsigned i = 0; i < s->out->n; i++) {
        const sr_pipe_action *a = &s->out->act[i];

        for (unsigned k = 0; k < a->n_dests; k++) {
            sr_pipe_replica_hdr(a, k, hdr);
            sr_chaos_tx(&s->chaos, &a->dests[k].peer, hdr, sizeof hdr, a->payload,
                        a->payload_len, now);
        }
    }
}

static int run(sw *s, const sigset_t *wait_mask)
{
    const sw_opts *o = s->o;
    uint64_t stats_ns = (uint64_t)(o->stats_interval * 1e9);
    uint64_t next_stats = stats_ns ? now_ns() + stats_ns : UINT64_MAX;
    /* [0]: the UDP socket; then the control socket's (fd -1 when unused). */
    struct pollfd pfd[1 + SR_CTLS_NFDS];

    while (!stop_signal) {
        uint64_t now = now_ns(), wake = now + IDLE_WAIT_NS, due = sr_chaos_next_due(&s->chaos);
        uint64_t ctl_due = sr_ctls_next_due(&s->ctl);
        struct timespec ts;
        int r;

        if (due < wake)
            wake = due;
        if (ctl_due < wake)
            wake = ctl_due;
        if (next_stats < wake)
            wake = next_stats;
        wake = wake > now ? wake - now : 0;
        ts.tv_sec = (time_t)(wake / 1000000000ull);
        ts.tv_nsec = (long)(wake % 1000000000ull);
        pfd[0] = (struct pollfd){.fd = sr_udp_fd(s->udp), .events = POLLIN};
        sr_ctls_pollfds(&s->ctl, pfd + 1);
        r = ppoll(pfd, 1 + SR_CTLS_NFDS, &ts, wait_mask);
        if (r < 0 && errno != EINTR) {
            sw_log(o, LOG_ERROR, "ppoll: %s", strerror(errno));
            return -1;
        }
        if (r <= 0)
            for (unsigned i = 0; i < 1 + SR_CTLS_NFDS; i++)
                pfd[i].revents = 0;
        now = now_ns();
        if (pfd[0].revents & POLLIN) {
            for (int b = 0; b < BURSTS_PER_WAKEUP && !stop_signal; b++) {
                int n = sr_udp_recv(s->udp);

                if (n < 0)
                    sw_log(o, LOG_WARN, "recvmmsg: %s", strerror(-n));
                for (int i = 0; i < n; i++) {
                    sr_peer src;
                    size_t len;
                    const uint8_t *msg = sr_udp_rx(s->udp, (unsigned)i, &len, &src);

                    handle(s, &src, msg, len, now);
                }
                if (n < SR_UDP_BURST)
                    break;
            }
        }
        sr_chaos_release(&s->chaos, now, 0);
        sr_udp_flush(s->udp);
        /* Between bursts, so a policy change lands between two packets. */
        sr_ctls_service(&s->ctl, pfd + 1, now, s->pipe);
        if (now >= next_stats) {
            print_switch_line(s, "stats");
            next_stats = now + stats_ns;
        }
    }
    return 0;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    sw_opts o;
    sw s;
    sigset_t wait_mask;
    uint32_t ip;
    uint16_t port;
    char addr[INET_ADDRSTRLEN];
    struct in_addr in;
    int err, status = 1;

    memset(&o, 0, sizeof o);
    memset(&s, 0, sizeof s);
    parse_args(&o, argc, argv);
    s.o = &o;

    if (setup_signals(&wait_mask) < 0) {
        sw_log(&o, LOG_ERROR, "signal setup: %s", strerror(errno));
        goto out;
    }
    s.out = calloc(1, sizeof *s.out);
    if (!s.out || sr_pipe_create(&s.pipe) < 0) {
        sw_log(&o, LOG_ERROR, "out of memory");
        goto out;
    }
    for (unsigned i = 0; i < o.n_jobs; i++) {
        const sw_job_opt *j = &o.jobs[i];

        const sr_pipe_job_params *jp = &j->params;

        err = sr_pipe_job_add(s.pipe, j->id, jp);
        if (err) {
            sw_log(&o, LOG_ERROR, "--job %s: %s", j->arg,
                   err == -EEXIST ? "job id given twice" : strerror(-err));
            goto out;
        }
        sw_log(&o, LOG_INFO,
               "job %u: %" PRIu32 " workers, %" PRIu32 " elements per packet, %" PRIu32
               " slots, store of %" PRIu32 " words, ring %" PRIu32 ", policy %s s=%" PRIu32,
               j->id, jp->n_workers, jp->elems_per_pkt, jp->pool_slots, jp->store_words,
               jp->ring, sr_sync_mode_name(jp->mode), jp->s);
    }
    err = sr_udp_open(&s.udp, o.ip, o.port);
    if (err) {
        sw_log(&o, LOG_ERROR, "cannot bind udp %s: %s", o.listen, strerror(-err));
        goto out;
    }
    err = sr_chaos_init(&s.chaos, o.loss, o.dup, o.reorder, o.seed, send_cb, s.udp);
    if (err) {
        sw_log(&o, LOG_ERROR, "fault injection setup: %s", strerror(-err));
        goto out;
    }
    if (o.loss > 0 || o.dup > 0 || o.reorder > 0)
        sw_log(&o, LOG_INFO, "fault injection: loss %g, dup %g, reorder %g, seed %" PRIu64,
               o.loss, o.dup, o.reorder, o.seed);
    err = sr_udp_local(s.udp, &ip, &port);
    if (err) {
        sw_log(&o, LOG_ERROR, "getsockname: %s", strerror(-err));
        goto out;
    }
    in.s_addr = htonl(ip);
    inet_ntop(AF_INET, &in, addr, sizeof addr);
    if (o.port_file && (err = write_port_file(o.port_file, port)) < 0) {
        sw_log(&o, LOG_ERROR, "--port-file %s: %s", o.port_file, strerror(-err));
        goto out;
    }
    if (o.control) {
        err = sr_ctls_open(&s.ctl, o.control);
        if (err) {
            sw_log(&o, LOG_ERROR, "--control %s: %s", o.control,
                   err == -EADDRINUSE ? "in use by a running process"
                   : err == -EEXIST   ? "exists and is not a socket"
                                      : strerror(-err));
            goto out;
        }
        sw_log(&o, LOG_INFO, "control socket %s", o.control);
    }
    fprintf(stderr, PROG ": listening on udp %s:%u\n", addr, (unsigned)port);

    if (run(&s, &wait_mask) == 0) {
        sw_log(&o, LOG_INFO, "%s: shutting down", strsignal(stop_signal));
        status = 0;
    }
    print_job_lines(&s);
    print_switch_line(&s, "switch");
out:
    sr_ctls_close(&s.ctl);
    sr_chaos_fini(&s.chaos);
    sr_udp_close(&s.udp);
    sr_pipe_destroy(&s.pipe);
    free(s.out);
    free(o.jobs);
    return status;
}
