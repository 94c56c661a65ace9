/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - serene-switch: the software aggregator over UDP or DPDK ports.
 *
 * Parses the command line (options.c), creates the jobs, opens its I/O
 * (sw_io.h: the UDP socket, or the DPDK ports with --dpdk), chosen once
 * here, and the control socket with --control, then runs one loop: wait
 * for messages, control connections or the next timer; feed each message
 * through the fault injector and the pipeline, send what the pipeline asks
 * for; serve the control connections (bounded, non-blocking: ctl_sock.h).
 * An I/O without a descriptor to wait on (DPDK) is polled: when nothing
 * arrives the loop sleeps in the same ppoll for a period that doubles from
 * POLLED_IDLE_MIN_NS up to POLLED_BUSY_MAX_NS within POLLED_RECENT_NS of
 * the last message, else up to POLLED_IDLE_MAX_NS, so the switch never
 * spins a core the workers need.
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
 *   line, a job spec out of its limits included. A crash (SIGSEGV, SIGBUS,
 *   SIGFPE, SIGILL) writes its stack to stderr and ends by the signal.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
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

#include <sys/prctl.h>
#include <sys/random.h>

#include "chaos.h"
#include "ctl_sock.h"
#include "options.h"
#include "pipeline.h"
#include "sw_io.h"

#define IDLE_WAIT_NS 1000000000ull /* wake up at least once a second */
#define BURSTS_PER_WAKEUP 8        /* then look at timers again */
#define POLLED_IDLE_MIN_NS 5000ull    /* first sleep once the I/O is idle */
#define POLLED_BUSY_MAX_NS 50000ull   /* longest within POLLED_RECENT_NS of traffic */
#define POLLED_IDLE_MAX_NS 1000000ull /* longest: reaction time of an idle switch */
#define POLLED_RECENT_NS 10000000ull

static volatile sig_atomic_t stop_signal; /* the one global: set by the handler */

typedef struct sw {
    const sw_opts *o;
    sr_pipe *pipe;
    sr_pipe_out *out;
    const sw_io_ops *io; /* the UDP socket or the DPDK ports, chosen once */
    void *io_state;      /* NULL until opened */
    sr_chaos chaos;
    int chaos_on; /* a fault is injected: every copy goes through chaos */
    sr_ctls ctl;  /* inactive without --control */
} sw;

__attribute__((format(printf, 3, 4))) static void sw_log(const sw_opts *o, int level,
                                                         const char *fmt, ...)
{
    va_list ap;

    if (level > o->log_level)
        return;
    fprintf(stderr, PROG ": %s: ", sw_log_names[level]);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
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

/* A crash (in this thread or one of DPDK's): its signal and the stack to
 * stderr, frames as module(+offset) for addr2line, then the default action
 * (a core where the system keeps them). backtrace() was called once at
 * setup, so its library is loaded and this path does not allocate. */
static void on_fatal(int sig)
{
    static const char head[] = "serene-switch: fatal signal, stack:\n";
    void *frames[32];
    int n = backtrace(frames, 32);

    if (write(STDERR_FILENO, head, sizeof head - 1) > 0)
        backtrace_symbols_fd(frames, n, STDERR_FILENO);
    raise(sig); /* the default action now (SA_RESETHAND), also for a kill -SEGV */
}

/* Sanitizer builds keep the sanitizer's own report of a crash. */
#if defined(__SANITIZE_ADDRESS__)
#define SW_OWN_FATAL_HANDLER 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SW_OWN_FATAL_HANDLER 0
#endif
#endif
#ifndef SW_OWN_FATAL_HANDLER
#define SW_OWN_FATAL_HANDLER 1
#endif

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
    /* Fatal signals: report the stack once, then die of the signal. */
    if (SW_OWN_FATAL_HANDLER) {
        void *probe[1];

        (void)backtrace(probe, 1);
        sa.sa_handler = on_fatal;
        sa.sa_flags = (int)SA_RESETHAND | SA_NODEFER;
        if (sigaction(SIGSEGV, &sa, NULL) < 0 || sigaction(SIGBUS, &sa, NULL) < 0 ||
            sigaction(SIGFPE, &sa, NULL) < 0 || sigaction(SIGILL, &sa, NULL) < 0)
            return -errno;
    }
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
        char line[2048];

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
    const sr_chaos_counters *cc = &s->chaos.c;
    const sr_ctls_counters *ctl = &s->ctl.c;
    char rej[512], io[512];
    size_t used = 0;

    sr_pipe_counters_get(s->pipe, &pc);
    s->io->counters(s->io_state, io, sizeof io);
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
                 " answers_dropped=%" PRIu64 "%s%s chaos_rx_dropped=%" PRIu64
                 " chaos_tx_dropped=%" PRIu64 " chaos_tx_duplicated=%" PRIu64
                 " chaos_tx_delayed=%" PRIu64 " chaos_hold_full=%" PRIu64 " ctl_accepted=%" PRIu64
                 " ctl_commands=%" PRIu64 " ctl_timeouts=%" PRIu64 " ctl_too_long=%" PRIu64
                 " ctl_refused=%" PRIu64 " ctl_evicted=%" PRIu64 "\n",
            what, pc.rx_total, pc.tx_total, pc.unknown_job, pc.answers_dropped, rej, io,
            cc->rx_dropped, cc->tx_dropped, cc->tx_duplicated, cc->tx_delayed, cc->hold_full,
            ctl->accepted, ctl->commands, ctl->timeouts, ctl->too_long, ctl->refused,
            ctl->evicted);
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
    sw *s = cookie;

    s->io->send(s->io_state, dst, hdr, hlen, payload, plen);
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

/* Process one received message and queue the replicas it asks for: all of
 * an action's at once (its payload copied once), or, while a fault is
 * injected, copy by copy through the fault injector. */
static void handle(sw *s, const sr_peer *src, const uint8_t *msg, size_t len, uint64_t now)
{
    uint8_t hdr[SR_WIRE_HDR_LEN];

    if (sr_chaos_drop_rx(&s->chaos))
        return;
    sr_pipe_process(s->pipe, src, msg, len, s->out);
    if (s->io->learn)
        s->io->learn(s->io_state, msg, s->out);
    if (s->o->log_level >= LOG_DEBUG)
        log_packet(s, src, msg, len);
    for (unsigned i = 0; i < s->out->n; i++) {
        sr_pipe_action *a = &s->out->act[i];

        if (!s->chaos_on) {
            s->io->send_replicas(s->io_state, a);
            continue;
        }
        sr_pipe_payload_flatten(a); /* held copies outlive the slot's sums */
        for (unsigned k = 0; k < a->n_dests; k++) {
            sr_pipe_replica_hdr(a, k, hdr);
            sr_chaos_tx(&s->chaos, &a->dests[k].peer, hdr, sizeof hdr, a->payload,
                        a->payload_len, now);
        }
    }
}

/* Up to BURSTS_PER_WAKEUP bursts from the I/O, each message handled and
 * what a burst's messages asked for sent before the next burst is read.
 * Returns how many messages arrived. */
static int receive(sw *s, uint64_t now)
{
    int got = 0;

    for (int b = 0; b < BURSTS_PER_WAKEUP && !stop_signal; b++) {
        int full = 0, n = s->io->recv(s->io_state, &full);

        if (n < 0)
            sw_log(s->o, LOG_WARN, "recvmmsg: %s", strerror(-n));
        for (int i = 0; i < n; i++) {
            sr_peer src;
            size_t len;
            const uint8_t *msg = s->io->rx(s->io_state, (unsigned)i, &len, &src);

            handle(s, &src, msg, len, now);
        }
        if (n > 0) {
            s->io->flush(s->io_state);
            got += n;
        }
        if (!full)
            break;
    }
    return got;
}

/* How long ppoll may sleep from now: until the next timer (held copies,
 * control deadlines, stats), at most IDLE_WAIT_NS, and at most idle_ns
 * when the I/O is polled. */
static struct timespec wait_time(const sw *s, uint64_t now, uint64_t next_stats, int polled,
                                 uint64_t idle_ns)
{
    uint64_t wake = now + IDLE_WAIT_NS, due = sr_chaos_next_due(&s->chaos);
    uint64_t ctl_due = sr_ctls_next_due(&s->ctl);

    if (due < wake)
        wake = due;
    if (ctl_due < wake)
        wake = ctl_due;
    if (next_stats < wake)
        wake = next_stats;
    wake = wake > now ? wake - now : 0;
    if (polled && idle_ns < wake)
        wake = idle_ns;
    return (struct timespec){.tv_sec = (time_t)(wake / 1000000000ull),
                             .tv_nsec = (long)(wake % 1000000000ull)};
}

static int run(sw *s, const sigset_t *wait_mask)
{
    const sw_opts *o = s->o;
    uint64_t stats_ns = (uint64_t)(o->stats_interval * 1e9);
    uint64_t next_stats = stats_ns ? now_ns() + stats_ns : UINT64_MAX;
    /* [0]: the I/O's descriptor (-1 when it is polled); then the control
     * socket's listener and open connections, packed. */
    struct pollfd pfd[1 + SR_CTLS_NFDS];
    int io_fd = s->io->fd(s->io_state), polled = io_fd < 0;
    uint64_t idle_ns = 0; /* polled: the next idle sleep; 0 while busy */
    uint64_t last_rx = 0; /* polled: when a message last arrived */

    while (!stop_signal) {
        struct timespec ts = wait_time(s, now_ns(), next_stats, polled, idle_ns);
        uint64_t now;
        unsigned nfds;
        int r;

        pfd[0] = (struct pollfd){.fd = io_fd, .events = POLLIN};
        nfds = 1 + sr_ctls_pollfds(&s->ctl, pfd + 1);
        r = ppoll(pfd, nfds, &ts, wait_mask);
        if (r < 0 && errno != EINTR) {
            sw_log(o, LOG_ERROR, "ppoll: %s", strerror(errno));
            return -1;
        }
        if (r <= 0)
            for (unsigned i = 0; i < nfds; i++)
                pfd[i].revents = 0;
        now = now_ns();
        sr_pipe_tick(s->pipe, now / 1000000u);
        if (polled || (pfd[0].revents & POLLIN)) {
            int got = receive(s, now);
            /* Busy: poll again at once. Idle: sleep longer each time. */
            uint64_t cap = now - last_rx < POLLED_RECENT_NS ? POLLED_BUSY_MAX_NS
                                                             : POLLED_IDLE_MAX_NS;

            if (got)
                last_rx = now;
            idle_ns = got         ? 0
                      : idle_ns ? (idle_ns * 2 > cap ? cap : idle_ns * 2)
                                : POLLED_IDLE_MIN_NS;
        }
        sr_chaos_release(&s->chaos, now, 0);
        s->io->flush(s->io_state);
        /* Between bursts, so a policy change lands between two packets. */
        sr_ctls_service(&s->ctl, pfd + 1, now, s->pipe);
        if (now >= next_stats) {
            print_switch_line(s, "stats");
            next_stats = now + stats_ns;
        }
    }
    return 0;
}

/* ---- setup ---------------------------------------------------------------- */

static int add_jobs(sw *s)
{
    const sw_opts *o = s->o;

    for (unsigned i = 0; i < o->n_jobs; i++) {
        const sw_job_opt *j = &o->jobs[i];
        const sr_pipe_job_params *jp = &j->params;
        int err = sr_pipe_job_add(s->pipe, j->id, jp);

        if (err) {
            sw_log(o, LOG_ERROR, "--job %s: %s", j->arg,
                   err == -EEXIST ? "job id given twice" : strerror(-err));
            return -1;
        }
        sw_log(o, LOG_INFO,
               "job %u: %" PRIu32 " workers, %" PRIu32 " elements per packet, %" PRIu32
               " slots, store of %" PRIu32 " words, ring %" PRIu32 ", policy %s s=%" PRIu32,
               j->id, jp->n_workers, jp->elems_per_pkt, jp->pool_slots, jp->store_words,
               jp->ring, sr_sync_mode_name(jp->mode), jp->s);
    }
    return 0;
}

/* The I/O the command line asks for (options.c refused --dpdk when this
 * build has no DPDK), opened. */
static int open_io(sw *s)
{
    const sw_opts *o = s->o;
    const sw_io_params par = {
        .ip = o->ip,
        .port = o->port,
        .listen = o->listen,
        .dpdk_eal = o->dpdk_eal,
        .dpdk_ports = o->dpdk_ports,
        .n_dpdk_ports = o->n_dpdk_ports,
    };
    char why[SW_IO_WHY_MAX];

    s->io = sw_io_find(o->dpdk_eal ? "dpdk" : "udp");
    if (!s->io || s->io->open(&s->io_state, &par, why) < 0) {
        s->io_state = NULL;
        sw_log(o, LOG_ERROR, "%s", s->io ? why : "no such I/O in this build");
        return -1;
    }
    /* Idle sleeps of microseconds need a timer slack below 50 us. */
    if (s->io->fd(s->io_state) < 0)
        (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    return 0;
}

static int open_chaos(sw *s)
{
    const sw_opts *o = s->o;
    int err = sr_chaos_init(&s->chaos, o->loss, o->dup, o->reorder, o->seed, send_cb, s);

    if (err) {
        sw_log(o, LOG_ERROR, "fault injection setup: %s", strerror(-err));
        return -1;
    }
    s->chaos_on = o->loss > 0 || o->dup > 0 || o->reorder > 0;
    if (s->chaos_on)
        sw_log(o, LOG_INFO, "fault injection: loss %g, dup %g, reorder %g, seed %" PRIu64,
               o->loss, o->dup, o->reorder, o->seed);
    return 0;
}

static int open_control(sw *s)
{
    const sw_opts *o = s->o;
    int err;

    if (!o->control)
        return 0;
    err = sr_ctls_open(&s->ctl, o->control, &o->ctl_access);
    if (err) {
        sw_log(o, LOG_ERROR, "--control %s: %s", o->control,
               err == -EADDRINUSE ? "in use by a running process"
               : err == -EEXIST   ? "exists and is not a socket"
               : err == -EPERM    ? "cannot give the socket to the --ctl-group group (not a "
                                    "member of it)"
                                  : strerror(-err));
        return -1;
    }
    if (o->ctl_access.use_group)
        sw_log(o, LOG_INFO, "control socket %s (mode 0660, group %u)", o->control,
               (unsigned)o->ctl_access.group);
    else
        sw_log(o, LOG_INFO, "control socket %s (mode 0600)", o->control);
    return 0;
}

/* Everything the loop needs, in order; then the "listening" line. Returns
 * 0, or -1 after logging why (teardown releases what was set up). */
static int setup(sw *s, sigset_t *wait_mask)
{
    const sw_opts *o = s->o;
    char where[640];
    uint64_t key[2];
    uint32_t ip;
    uint16_t port;
    int err;

    if (setup_signals(wait_mask) < 0) {
        sw_log(o, LOG_ERROR, "signal setup: %s", strerror(errno));
        return -1;
    }
    s->out = calloc(1, sizeof *s->out);
    if (!s->out || sr_pipe_create(&s->pipe) < 0) {
        sw_log(o, LOG_ERROR, "out of memory");
        return -1;
    }
    sr_pipe_set_lease(s->pipe, (uint64_t)(o->lease * 1e3));
    if (o->pool_blocks) {
        err = sr_pipe_set_pool(s->pipe, o->pool_blocks, o->pool_elems, o->pool_policy);
        if (err) {
            sw_log(o, LOG_ERROR, "--pool: %s", strerror(-err));
            return -1;
        }
        if (o->pool_idle >= 0)
            sr_pipe_pool_set_idle(s->pipe, (uint64_t)(o->pool_idle * 1e3));
    }
    /* The cookies' key: a fresh secret per run of the switch. */
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
        sw_log(o, LOG_ERROR, "getrandom: %s", strerror(errno));
        return -1;
    }
    sr_pipe_set_proof(s->pipe, key);
    /* Results go from the slot into the I/O's frames in one pass (every
     * I/O writes payloads with sr_pipe_payload_write; the fault injector's
     * path flattens them first). */
    sr_pipe_set_lazy_payload(s->pipe, 1);
    sr_pipe_tick(s->pipe, now_ns() / 1000000u);
    if (add_jobs(s) < 0 || open_io(s) < 0 || open_chaos(s) < 0)
        return -1;
    if (open_control(s) < 0)
        return -1;
    s->io->describe(s->io_state, where, sizeof where);
    fprintf(stderr, PROG ": listening %s\n", where);
    /* Last: whoever waits for the port file finds the switch ready, its
     * control socket open and the "listening" line written. */
    s->io->local(s->io_state, &ip, &port);
    if (o->port_file && (err = write_port_file(o->port_file, port)) < 0) {
        sw_log(o, LOG_ERROR, "--port-file %s: %s", o->port_file, strerror(-err));
        return -1;
    }
    return 0;
}

static void teardown(sw *s)
{
    sr_ctls_close(&s->ctl);
    sr_chaos_fini(&s->chaos);
    if (s->io)
        s->io->close(s->io_state);
    sr_pipe_destroy(&s->pipe);
    free(s->out);
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    sw_opts o;
    sw s;
    sigset_t wait_mask;
    int status = 1;

    memset(&o, 0, sizeof o);
    memset(&s, 0, sizeof s);
    sw_parse_args(&o, argc, argv);
    s.o = &o;
    if (setup(&s, &wait_mask) == 0) {
        if (run(&s, &wait_mask) == 0) {
            sw_log(&o, LOG_INFO, "%s: shutting down", strsignal(stop_signal));
            status = 0;
        }
        print_job_lines(&s);
        print_switch_line(&s, "switch");
    }
    teardown(&s);
    sw_opts_free(&o);
    return status;
}
