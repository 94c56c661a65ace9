/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.c - serene-switch's command line (options.h): usage text, strict
 * number parsing, --listen, --job specs within the pipeline's limits, and
 * the fault-injection, control, stats and DPDK options.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chaos.h"
#include "ctl_sock.h"
#include "job_spec.h"
#include "options.h"
#include "sw_io.h"

_Static_assert(SR_WIRE_UDP_PORT == 48200u, "DEFAULT_LISTEN follows wire.h");

const char *const sw_log_names[4] = {"error", "warn", "info", "debug"};

/* ---- messages ----------------------------------------------------------- */

static void usage_jobs(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [--listen ADDR:PORT] --job SPEC... [options]\n"
            "\n"
            "Software switch for Serene: aggregates workers' packets like the P4 program.\n"
            "\n"
            "  --listen ADDR:PORT     IPv4 address and UDP port to bind (default " DEFAULT_LISTEN
            ";\n"
            "                         port 0 picks a free one)\n"
            "  --job ID:N[:ELEMS[:SLOTS]][,store=WORDS][,ring=R][,policy=MODE][,token=T]\n"
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
            "                           token=T      admission token a JOIN must carry: 1\n"
            "                                        to 16 hex digits, or env:NAME to read\n"
            "                                        them from variable NAME (not shown by\n"
            "                                        ps); default none: any JOIN is admitted\n"
            "                           local=A-B,up=ADDR:PORT,upjob=J,member=K\n"
            "                                        a leaf of a tree: serves worker ids A..B\n"
            "                                        of the N; its rounds go to job J at\n"
            "                                        ADDR:PORT as member K, JOIN, LEAVE,\n"
            "                                        PUSH, PULL, CLOCK to job ID there\n"
            "                                        (p4/README.md, Trees; serene-ctl tree)\n"
            "                           fallback=ADDR:PORT[,prio=P]\n"
            "                                        a shared job: its rounds take blocks of\n"
            "                                        the --pool; one that gets none goes to\n"
            "                                        the job's host aggregator at ADDR:PORT\n"
            "                                        (a serene-switch with job ID); P 0..255\n"
            "                                        ranks it under --pool's priority\n"
            "                           rows=whole   the store takes whole rows only, as\n"
            "                                        the Tofino program (JOIN_ACK says so;\n"
            "                                        the library pads its requests)\n"
            "                           model=tna    its allreduce and store run on the\n"
            "                                        Tofino program's model (p4/tna/model):\n"
            "                                        ELEMS 32, at most 256 slots, 32 workers\n"
            "                                        and store=16384\n"
            "  --dpdk EAL_ARGS        DPDK mode: start EAL with these arguments (split at\n"
            "                         blanks, e.g. \"--no-huge -m 256 --no-pci --no-shconf\n"
            "                         --vdev=net_memif0,role=server,socket=S0\"): workers'\n"
            "                         frames arrive on DPDK ports, addressed to the --listen\n"
            "                         address (port 0: %u); answers go back out of the port\n"
            "                         each worker was heard on, to its Ethernet address;\n"
            "                         RoCEv2 frames to that address (UDP 4791, workers on\n"
            "                         the rdma transport) are answered in RoCEv2\n"
            "  --dpdk-port PORT       a DPDK port for workers: port id, device name or vdev\n"
            "                         spec to probe (repeatable; default: every port)\n"
            "  --port-file PATH       once ready, write the port and a newline to PATH\n"
            "                         (written to a temporary file, then renamed)\n",
            SR_WIRE_MAX_WORKERS, SR_WIRE_MAX_ELEMS, SR_WIRE_DEF_ELEMS, SR_WIRE_MAX_SLOTS,
            SR_WIRE_DEF_SLOTS, SR_PIPE_STORE_MAX, SR_PIPE_STORE_DEFAULT, SR_BARRIER_RING_MAX,
            SR_BARRIER_RING_DEFAULT, SR_WIRE_UDP_PORT);
}

/* The control socket's part of the usage, and the rest. */
static void usage_control(FILE *f)
{
    /* Pieces: each string literal is kept under C's 4095 bytes. */
    fprintf(f,
            "  --control PATH         serve a Unix stream socket at PATH (a stale one is\n"
            "                         replaced; removed at exit), mode 0600: only root and\n"
            "                         this uid may connect (peer credentials checked). One\n"
            "                         command line (at most 255 bytes, within 1 s) per\n"
            "                         connection, one reply line (\"ok ...\" or \"error ...\"):\n"
            "                           jobs                list the job ids\n"
            "                           status JOB          clocks, low, high, policy rules,\n"
            "                                               counters\n"
            "                           reset JOB           unbind a dead run's workers so a\n"
            "                                               new run can join\n"
            "                           policy JOB bsp|asp|ssp [S] [from CLOCK]\n"
            "                                               change the barrier from CLOCK\n"
            "                                               (default: the next clock); CLOCK\n"
            "                                               must lie within 2^30 clocks of\n"
            "                                               low, before or after it (serial\n"
            "                                               arithmetic); answers the clock it\n"
            "                                               applies from\n"
            "                           job add SPEC        add a job while the switch runs,\n"
            "                                               SPEC as for --job (but not\n"
            "                                               token=env:); answers its bytes\n"
            "                           job remove JOB [force]\n"
            "                                               remove a job and free its memory;\n"
            "                                               refused while a worker of it is\n"
            "                                               live (bound, not left, lease not\n"
            "                                               lapsed) unless forced\n"
            "                           pool [policy static|first|fair|priority]\n"
            "                                               the shared pool: blocks free,\n"
            "                                               taken back, held per job; or\n"
            "                                               its policy changed\n"
            "                           help                list the commands\n"
            "                         At most %u connections at once: a newcomer closes the\n"
            "                         oldest (\"error busy\")\n",
            SR_CTLS_MAX_CONNS);
    fprintf(f,
            "  --ctl-group GROUP      with --control: mode 0660 and group GROUP (a name or a\n"
            "                         gid), whose members may connect too\n"
            "  --loss P               drop each received datagram and each sent copy with\n"
            "                         probability P (0..1; for tests)\n"
            "  --dup P                send each copy twice with probability P\n"
            "  --reorder P            hold each copy back with probability P until after the\n"
            "                         next one (or %u ms)\n"
            "  --seed S               seed of the fault injector (default 1)\n"
            "  --stats-interval SEC   print a line of counters to stderr every SEC seconds\n"
            "                         (0 = off, the default)\n"
            "  --lease SEC            a worker's binding lapses after SEC seconds without a\n"
            "                         packet from it, unless its job waits for it in a\n"
            "                         call; a lapsed binding no longer keeps a new run\n"
            "                         (JOIN with another nonce) out (default %u; 0: never)\n"
            "  --pool BLOCKS:ELEMS[:POLICY]\n"
            "                         a pool of BLOCKS slots of ELEMS accumulators each\n"
            "                         (two cells), leased at run time to the jobs with\n"
            "                         fallback= as their rounds start; a round that gets\n"
            "                         none goes to the job's fallback aggregator. POLICY:\n"
            "                         static, first (default), fair or priority\n"
            "                         (p4/swswitch/README.md, \"Sharing the switch\")\n"
            "  --pool-idle SEC        a shared job without an allreduce packet for SEC\n"
            "                         seconds returns its blocks (default %.1f)\n"
            "  --log-level LEVEL      error, warn (default), info or debug\n"
            "  -h, --help             print this help and exit\n"
            "\n"
            "SIGINT or SIGTERM stops the switch; it prints one line of counters per job to\n"
            "stderr and exits 0. Exit status 1: setup failure; 2: bad command line.\n",
            (unsigned)(SR_CHAOS_HOLD_NS / 1000000u),
            SR_PIPE_LEASE_DEFAULT_MS / 1000u, SR_POOL_IDLE_DEFAULT_MS / 1000.0);
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

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

/* One --job spec (job_spec.h); token=env:NAME reads our environment. */
static void parse_job(sw_opts *o, const char *s)
{
    sw_job_opt *j = &o->jobs[o->n_jobs];
    char why[SW_JOB_SPEC_WHY_MAX];

    if (sw_job_spec_parse(s, env_lookup, &j->id, &j->params, why, sizeof why))
        usage_error("--job: %s", why);
    j->arg = s;
    o->n_jobs++;
}

static int parse_level(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, sw_log_names[i]))
            return i;
    usage_error("--log-level: '%s' is not error, warn, info or debug", s);
}

enum {
    O_LISTEN = 256,
    O_JOB,
    O_PORT_FILE,
    O_CONTROL,
    O_CTL_GROUP,
    O_LOSS,
    O_DUP,
    O_REORDER,
    O_SEED,
    O_STATS,
    O_LEASE,
    O_POOL,
    O_POOL_IDLE,
    O_LOG,
    O_DPDK,
    O_DPDK_PORT
};

/* What getopt_long could not take: arg is the word it stopped at. */
__attribute__((noreturn)) static void bad_option(const char *arg)
{
    /* A long option given a value it does not take comes back with optopt
     * set to its code, like an unknown short one. */
    if (!strncmp(arg, "--", 2) && strchr(arg, '=') && optopt)
        usage_error("option '%.*s' takes no value", (int)(strchr(arg, '=') - arg), arg);
    if (!strncmp(arg, "--", 2))
        usage_error("unknown or ambiguous option '%.*s'", (int)strcspn(arg, "="), arg);
    usage_error("unknown option '-%c'", optopt);
}

static void parse_control(sw_opts *o, const char *path)
{
    if (!*path)
        usage_error("--control: empty path");
    if (strlen(path) > SR_CTLS_PATH_MAX)
        usage_error("--control: '%s' is longer than %u bytes (a Unix socket path)", path,
                    SR_CTLS_PATH_MAX);
    o->control = path;
}

/* --ctl-group: a group name, else a decimal gid. */
static void parse_ctl_group(sw_opts *o, const char *val)
{
    const struct group *g = *val ? getgrnam(val) : NULL;
    uint64_t gid;

    if (g)
        gid = g->gr_gid;
    else if (!*val || parse_u64(val, UINT32_MAX - 1, 0, &gid))
        usage_error("--ctl-group: '%s' is not a group name or gid", val);
    o->ctl_group = val;
    o->ctl_access.use_group = 1;
    o->ctl_access.group = (gid_t)gid;
}

/* --dpdk or --dpdk-port (c), given as opt. */
static void parse_dpdk(sw_opts *o, int c, const char *opt, const char *val)
{
    if (!sw_io_find("dpdk"))
        usage_error("%s: this serene-switch was built without DPDK (meson -Ddpdk=enabled)", opt);
    if (!*val)
        usage_error("%s: empty value", c == O_DPDK ? "--dpdk" : "--dpdk-port");
    if (c == O_DPDK)
        o->dpdk_eal = val;
    else
        o->dpdk_ports[o->n_dpdk_ports++] = val;
}

/* --pool BLOCKS:ELEMS[:POLICY] */
static void parse_pool(sw_opts *o, const char *val)
{
    char buf[64], *e = NULL, *pol;
    uint64_t b, n;

    snprintf(buf, sizeof buf, "%s", val);
    pol = strchr(buf, ':');
    if (pol && (e = strchr(pol + 1, ':')))
        *e++ = '\0';
    if (pol)
        *pol++ = '\0';
    if (!pol || parse_u64(buf, SR_POOL_MAX_BLOCKS, 1, &b) ||
        parse_u64(pol, SR_WIRE_MAX_ELEMS, 1, &n) || b == 0 || n == 0)
        usage_error("--pool: '%s' is not BLOCKS:ELEMS[:POLICY] (blocks 1..%u, elements per "
                    "packet 1..%u)", val, SR_POOL_MAX_BLOCKS, SR_WIRE_MAX_ELEMS);
    if (b * 2u * n * 4u > (UINT64_C(1) << 30))
        usage_error("--pool: '%s' is more than 1 GiB of accumulators", val);
    o->pool_policy = SR_POOL_FIRST;
    if (e && sr_pool_policy_parse(e, &o->pool_policy))
        usage_error("--pool: policy '%s' is not static, first, fair or priority", e);
    o->pool_blocks = (uint32_t)b;
    o->pool_elems = (uint32_t)n;
}

/* One option c with its value val (getopt's optarg); opt is the word that
 * named it, for messages. */
static void parse_option(sw_opts *o, int c, const char *val, const char *opt)
{
    switch (c) {
    case O_LISTEN: parse_listen(o, val); break;
    case O_JOB: parse_job(o, val); break;
    case O_PORT_FILE:
        if (!*val)
            usage_error("--port-file: empty path");
        o->port_file = val;
        break;
    case O_CONTROL: parse_control(o, val); break;
    case O_CTL_GROUP: parse_ctl_group(o, val); break;
    case O_LOSS: o->loss = parse_real("--loss", val, 1.0, "a probability in [0,1]"); break;
    case O_DUP: o->dup = parse_real("--dup", val, 1.0, "a probability in [0,1]"); break;
    case O_REORDER: o->reorder = parse_real("--reorder", val, 1.0, "a probability in [0,1]"); break;
    case O_SEED:
        if (parse_u64(val, UINT64_MAX, 1, &o->seed))
            usage_error("--seed: '%s' is not an unsigned 64-bit integer", val);
        break;
    case O_STATS:
        o->stats_interval = parse_real("--stats-interval", val, MAX_STATS_INTERVAL,
                                       "a number of seconds in [0,86400]");
        break;
    case O_LEASE:
        o->lease = parse_real("--lease", val, MAX_STATS_INTERVAL,
                              "a number of seconds in [0,86400]");
        break;
    case O_POOL: parse_pool(o, val); break;
    case O_POOL_IDLE:
        o->pool_idle = parse_real("--pool-idle", val, MAX_STATS_INTERVAL,
                                  "a number of seconds in [0,86400]");
        break;
    case O_LOG: o->log_level = parse_level(val); break;
    case O_DPDK:
    case O_DPDK_PORT: parse_dpdk(o, c, opt, val); break;
    case 'h':
        usage_jobs(stdout);
        usage_control(stdout);
        exit(0);
    case ':': usage_error("option '%s' needs a value", opt);
    default: bad_option(opt);
    }
}

void sw_parse_args(sw_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"job", required_argument, NULL, O_JOB},
        {"port-file", required_argument, NULL, O_PORT_FILE},
        {"control", required_argument, NULL, O_CONTROL},
        {"ctl-group", required_argument, NULL, O_CTL_GROUP},
        {"loss", required_argument, NULL, O_LOSS},
        {"dup", required_argument, NULL, O_DUP},
        {"reorder", required_argument, NULL, O_REORDER},
        {"seed", required_argument, NULL, O_SEED},
        {"stats-interval", required_argument, NULL, O_STATS},
        {"lease", required_argument, NULL, O_LEASE},
        {"pool", required_argument, NULL, O_POOL},
        {"pool-idle", required_argument, NULL, O_POOL_IDLE},
        {"log-level", required_argument, NULL, O_LOG},
        {"dpdk", required_argument, NULL, O_DPDK},
        {"dpdk-port", required_argument, NULL, O_DPDK_PORT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    o->jobs = calloc((size_t)argc, sizeof *o->jobs);
    o->dpdk_ports = calloc((size_t)argc, sizeof *o->dpdk_ports);
    if (!o->jobs || !o->dpdk_ports) {
        fputs(PROG ": out of memory\n", stderr);
        exit(1);
    }
    o->seed = 1;
    o->lease = SR_PIPE_LEASE_DEFAULT_MS / 1000.0;
    o->pool_idle = -1;
    o->log_level = LOG_WARN;
    parse_listen(o, DEFAULT_LISTEN);
    opterr = 0; /* our messages, not getopt's */
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1)
        parse_option(o, c, optarg, argv[optind - 1]);
    if (optind < argc)
        usage_error("unexpected argument '%s'", argv[optind]);
    if (o->n_jobs == 0)
        usage_error("at least one --job ID:N[:ELEMS[:SLOTS]][,...] is required");
    if (o->ctl_group && !o->control)
        usage_error("--ctl-group needs --control PATH");
    for (unsigned i = 0; i < o->n_jobs; i++)
        if (o->jobs[i].params.fallback && o->jobs[i].params.elems_per_pkt != o->pool_elems)
            usage_error("--job %s: a shared job (fallback=) needs --pool BLOCKS:%" PRIu32
                        "[:POLICY] (the pool's blocks are of the job's elements per packet)",
                        o->jobs[i].arg, o->jobs[i].params.elems_per_pkt);
    if (o->pool_idle >= 0 && !o->pool_blocks)
        usage_error("--pool-idle needs --pool");
    if (o->n_dpdk_ports && !o->dpdk_eal)
        usage_error("--dpdk-port needs --dpdk EAL_ARGS");
    /* The DPDK ports send only to peers whose Ethernet address they learnt
     * from their frames, and a parent never speaks first. */
    for (unsigned i = 0; o->dpdk_eal && i < o->n_jobs; i++)
        if (o->jobs[i].params.up)
            usage_error("--job %s: a leaf (up=) needs the UDP I/O, not --dpdk", o->jobs[i].arg);
    for (unsigned i = 0; o->dpdk_eal && i < o->n_jobs; i++)
        if (o->jobs[i].params.fallback)
            usage_error("--job %s: a shared job (fallback=) needs the UDP I/O, not --dpdk",
                        o->jobs[i].arg);
}

void sw_opts_free(sw_opts *o)
{
    free(o->jobs);
    free(o->dpdk_ports);
}
