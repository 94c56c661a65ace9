/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - defaults, the SERENE_* environment, validation and dump.
 *
 * Every getenv of the library lives in this file. Order of precedence:
 * serene_config_init (defaults) < serene_config_from_env < fields the
 * caller sets afterwards.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config.h"
#include "common/log.h"
#include "proto/wire.h"
#include "trace/trace.h"

/* The ABI: fields are added by taking bytes from reserved_, never by growing
 * the struct (a program built against an older serene.h passes a buffer of
 * this size to serene_config_init). Sizes for LP64 and ILP32. */
_Static_assert(sizeof(serene_config) == (sizeof(void *) == 8 ? 344u : 332u),
               "serene_config changed size: take the bytes from reserved_");
_Static_assert(offsetof(serene_config, reserved_) + sizeof(((serene_config *)0)->reserved_) ==
                   sizeof(serene_config),
               "reserved_ must stay the last member");

SERENE_API void serene_config_init(serene_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->rank = 0;
    cfg->world_size = 1;
    cfg->job_id = 0;
    cfg->job_nonce = 0;
    snprintf(cfg->switch_addr, sizeof cfg->switch_addr, "127.0.0.1:%u", SR_WIRE_UDP_PORT);
    cfg->bind_addr[0] = '\0';
    snprintf(cfg->transport, sizeof cfg->transport, "udp");
    cfg->timeout_ms = 30000;
    cfg->rto_us = 2000;
    cfg->rto_max_us = 100000;
    cfg->retry_limit = 0;
    cfg->window = 0;
    cfg->max_ops = 16;
    cfg->cpu_mask = ~0u;
    cfg->store_frac_bits = 16;
    cfg->log_level = SERENE_LOG_WARN;
    cfg->log_fn = NULL;
    cfg->log_cookie = NULL;
}

int sr_config_job_token(const sr_log *log, uint64_t *token)
{
    const char *v = getenv("SERENE_JOB_TOKEN");
    size_t n = v ? strlen(v) : 0;

    *token = 0;
    if (!v)
        return 0;
    if (n < 1 || n > 16 || strspn(v, "0123456789abcdefABCDEF") != n) {
        SR_ERR(log, "SERENE_JOB_TOKEN: not 1 to 16 hex digits");
        return SERENE_ERR_CONFIG;
    }
    *token = strtoull(v, NULL, 16);
    return 0;
}

/* The one integer syntax of every SERENE_* number: decimal digits only.
 * No sign (no variable has a meaningful negative value), no blank, no 0x,
 * and leading zeros stay decimal ("010" is ten): strtol's base 0 made
 * "010" eight and accepted " 1" and "+1", which nobody means on purpose.
 * Returns 0, PARSE_SYNTAX, or PARSE_RANGE when the digits are outside
 * [lo, hi] (overflow included). */
enum { PARSE_SYNTAX = -1, PARSE_RANGE = -2 };

static int parse_dec(const char *s, long long lo, long long hi, long long *out)
{
    if (!s || !*s)
        return PARSE_SYNTAX;
    long long v = 0;
    int over = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return PARSE_SYNTAX;
        int d = *c - '0';
        if (v > (LLONG_MAX - d) / 10)
            over = 1; /* keep scanning: a later non-digit is the better message */
        else
            v = v * 10 + d;
    }
    if (over || v < lo || v > hi)
        return PARSE_RANGE;
    *out = v;
    return 0;
}

static int parse_level(const char *s, serene_log_level *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, names[i])) {
            *out = (serene_log_level)i;
            return 0;
        }
    }
    long long v;
    if (parse_dec(s, 0, 3, &v))
        return -1;
    *out = (serene_log_level)v;
    return 0;
}

/* "aa:bb:cc:dd:ee:ff" (':' or '-' between the six hex pairs). */
static int parse_mac(const char *s, uint8_t mac[6])
{
    uint8_t m[6];
    for (int i = 0; i < 6; i++, s += 3) {
        char hex[3] = {s[0], s[0] ? s[1] : '\0', '\0'};
        if (!isxdigit((unsigned char)hex[0]) || !isxdigit((unsigned char)hex[1]))
            return -1;
        m[i] = (uint8_t)strtoul(hex, NULL, 16);
        if (i < 5 ? (s[2] != ':' && s[2] != '-') : s[2] != '\0')
            return -1;
    }
    memcpy(mac, m, 6);
    return 0;
}

/* Log through the caller's sink: the message names the variable, since
 * that is what the user typed (the field name would send them looking in
 * code they did not write). */
static int bad_env(const serene_config *cfg, const char *name, const char *val, int why,
                   const char *want)
{
    sr_log log;
    sr_log_init(&log, cfg);
    SR_ERR(&log, "environment: %s=\"%s\" is %s: expected %s", name, val,
           why == PARSE_RANGE ? "out of range" : "invalid", want);
    return SERENE_ERR_CONFIG;
}

/* An address's host part: an IPv4 address or a host name. Anything else
 * (blanks, a second ':', a '+') is a typo that getaddrinfo or strtol
 * would otherwise read as something the user did not write. */
static int host_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

/* SERENE_SWITCH is "host:port", port 1..65535 (a destination).
 * SERENE_BIND is "", "host", "host:port" or ":port", port 0..65535 (0 and
 * an empty host leave the choice to the transport). Ports use parse_dec's
 * syntax. Returns 0, PARSE_SYNTAX or PARSE_RANGE. */
static int parse_addr(const char *v, int bind)
{
    const char *colon = strchr(v, ':');
    size_t hostlen = colon ? (size_t)(colon - v) : strlen(v);
    for (size_t i = 0; i < hostlen; i++)
        if (!host_char(v[i]))
            return PARSE_SYNTAX;
    if (!colon)
        return bind ? 0 : PARSE_SYNTAX;
    if (!hostlen && !bind)
        return PARSE_SYNTAX;
    long long port;
    return parse_dec(colon + 1, bind ? 0 : 1, 65535, &port);
}

struct int_var {
    const char *name;
    long long lo, hi;
    size_t off;
    int u32; /* the field is a uint32_t / unsigned, not an int */
    const char *want;
};
_Static_assert(sizeof(((serene_config *)0)->cpu_mask) == sizeof(uint32_t) &&
                   sizeof(((serene_config *)0)->job_nonce) == sizeof(uint32_t),
               "env_ints stores the unsigned fields as uint32_t");

static int env_ints(serene_config *cfg)
{
    static const struct int_var ints[] = {
        {"SERENE_RANK", 0, SR_WIRE_MAX_WORKERS - 1, offsetof(serene_config, rank), 0,
         "a decimal number in 0..63"},
        {"SERENE_WORLD_SIZE", 1, SR_WIRE_MAX_WORKERS, offsetof(serene_config, world_size), 0,
         "a decimal number in 1..64"},
        {"SERENE_JOB", 0, 65535, offsetof(serene_config, job_id), 0,
         "a decimal number in 0..65535"},
        {"SERENE_TIMEOUT_MS", 1, INT_MAX, offsetof(serene_config, timeout_ms), 0,
         "a decimal number of milliseconds in 1..2147483647"},
        {"SERENE_RTO_US", 1, INT_MAX, offsetof(serene_config, rto_us), 0,
         "a decimal number of microseconds in 1..2147483647"},
        {"SERENE_RTO_MAX_US", 1, INT_MAX, offsetof(serene_config, rto_max_us), 0,
         "a decimal number of microseconds in 1..2147483647"},
        {"SERENE_RETRY_LIMIT", 0, INT_MAX, offsetof(serene_config, retry_limit), 0,
         "0 (no limit) or a decimal count in 1..2147483647"},
        {"SERENE_WINDOW", 0, SR_WIRE_MAX_SLOTS, offsetof(serene_config, window), 0,
         "0 (the switch's pool) or a decimal number in 1..32768"},
        {"SERENE_STORE_FRAC_BITS", 0, 30, offsetof(serene_config, store_frac_bits), 0,
         "a decimal number in 0..30"},
        {"SERENE_JOB_NONCE", 0, UINT32_MAX, offsetof(serene_config, job_nonce), 1,
         "a decimal number in 0..4294967295"},
        {"SERENE_CPU_MASK", 0, UINT32_MAX, offsetof(serene_config, cpu_mask), 1,
         "a decimal bit mask in 0..4294967295 (bit 0 AVX2, bit 1 AVX-512)"},
    };
    int rc = 0, why;
    const char *v;
    long long x;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (!(v = getenv(ints[i].name)))
            continue;
        if ((why = parse_dec(v, ints[i].lo, ints[i].hi, &x))) {
            rc = bad_env(cfg, ints[i].name, v, why, ints[i].want);
        } else if (ints[i].u32) {
            uint32_t u = (uint32_t)x;
            memcpy((char *)cfg + ints[i].off, &u, sizeof u);
        } else {
            int n = (int)x;
            memcpy((char *)cfg + ints[i].off, &n, sizeof n);
        }
    }
    if ((v = getenv("SERENE_WIRE_BITS"))) {
        if ((why = parse_dec(v, 16, 32, &x)) || (x != 16 && x != 32))
            rc = bad_env(cfg, "SERENE_WIRE_BITS", v, why ? why : PARSE_RANGE, "16 or 32");
        else
            cfg->wire_bits = (uint8_t)x;
    }
    if ((v = getenv("SERENE_UDP_GSO"))) {
        if ((why = parse_dec(v, 0, 1, &x)))
            rc = bad_env(cfg, "SERENE_UDP_GSO", v, why, "0 (no UDP GSO trains) or 1");
        else
            cfg->udp_gso_off = x == 0;
    }
    return rc;
}

static int env_strings(serene_config *cfg)
{
    enum { PLAIN, SWITCH, BIND };
    const struct {
        const char *name;
        char *dst;
        size_t cap;
        int kind;
    } strs[] = {
        {"SERENE_SWITCH", cfg->switch_addr, sizeof cfg->switch_addr, SWITCH},
        {"SERENE_BIND", cfg->bind_addr, sizeof cfg->bind_addr, BIND},
        {"SERENE_TRANSPORT", cfg->transport, sizeof cfg->transport, PLAIN},
        {"SERENE_PCAP", cfg->pcap_path, sizeof cfg->pcap_path, PLAIN},
    };
    int rc = 0, why;
    const char *v;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        if (!(v = getenv(strs[i].name)))
            continue;
        if (strlen(v) >= strs[i].cap)
            rc = bad_env(cfg, strs[i].name, v, PARSE_SYNTAX, "a shorter value");
        else if (strs[i].kind == SWITCH && (why = parse_addr(v, 0)))
            rc = bad_env(cfg, strs[i].name, v, why,
                         "HOST:PORT (an IPv4 address or host name; PORT 1..65535 in decimal "
                         "digits; no blanks)");
        else if (strs[i].kind == BIND && (why = parse_addr(v, 1)))
            rc = bad_env(cfg, strs[i].name, v, why,
                         "\"\", HOST, HOST:PORT or :PORT (an IPv4 address or host name; PORT "
                         "0..65535 in decimal digits; no blanks)");
        else
            memcpy(strs[i].dst, v, strlen(v) + 1);
    }
    return rc;
}

/* Launchers' rank and world size, for programs started by torchrun, Open
 * MPI's mpirun or Slurm's srun without serene-run. Used only when neither
 * SERENE_RANK nor SERENE_WORLD_SIZE is set (those keep their meaning, the
 * other keeping its default); otherwise the first family, in this order,
 * that sets either of its two variables provides both. A family that sets
 * only one is a config error: a rank from one launcher and a size from
 * another would describe no job. torchrun's LOCAL_RANK has no field. */
static int env_launcher(serene_config *cfg)
{
    static const char *const fam[][3] = {
        {"torchrun", "RANK", "WORLD_SIZE"},
        {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    };
    if (getenv("SERENE_RANK") || getenv("SERENE_WORLD_SIZE"))
        return 0;
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
        const char *r = getenv(fam[i][1]), *n = getenv(fam[i][2]);
        long long rank, size;
        int why;
        if (!r && !n)
            continue;
        if (!r || !n) {
            sr_log log;
            sr_log_init(&log, cfg);
            SR_ERR(&log, "environment: %s is set but %s is not: rank and world size must come "
                         "from the same launcher (%s), or set SERENE_RANK and SERENE_WORLD_SIZE",
                   r ? fam[i][1] : fam[i][2], r ? fam[i][2] : fam[i][1], fam[i][0]);
            return SERENE_ERR_CONFIG;
        }
        if ((why = parse_dec(r, 0, SR_WIRE_MAX_WORKERS - 1, &rank)))
            return bad_env(cfg, fam[i][1], r, why, "a decimal number in 0..63");
        if ((why = parse_dec(n, 1, SR_WIRE_MAX_WORKERS, &size)))
            return bad_env(cfg, fam[i][2], n, why, "a decimal number in 1..64");
        cfg->rank = (int)rank;
        cfg->world_size = (int)size;
        return 0;
    }
    return 0;
}

SERENE_API int serene_config_from_env(serene_config *cfg)
{
    if (!cfg)
        return SERENE_ERR_INVAL;
    /* Every variable is checked, so one run reports every mistake. */
    int rc = env_ints(cfg) | env_strings(cfg) | env_launcher(cfg);
    const char *v;
    if ((v = getenv("SERENE_LOG_LEVEL")) && parse_level(v, &cfg->log_level))
        rc = bad_env(cfg, "SERENE_LOG_LEVEL", v, PARSE_SYNTAX,
                     "error, warn, info, debug or a decimal number in 0..3");
    /* DPDK: the strings are referred to, not copied (serene.h). */
    if ((v = getenv("SERENE_DPDK_EAL_ARGS")))
        cfg->dpdk_eal_args = v;
    if ((v = getenv("SERENE_DPDK_PORT")))
        cfg->dpdk_port = v;
    if ((v = getenv("SERENE_DPDK_MAC")) && parse_mac(v, cfg->dpdk_mac))
        rc = bad_env(cfg, "SERENE_DPDK_MAC", v, PARSE_SYNTAX,
                     "an Ethernet address aa:bb:cc:dd:ee:ff");
    if ((v = getenv("SERENE_DPDK_PEER_MAC")) && parse_mac(v, cfg->dpdk_peer_mac))
        rc = bad_env(cfg, "SERENE_DPDK_PEER_MAC", v, PARSE_SYNTAX,
                     "an Ethernet address aa:bb:cc:dd:ee:ff");
    return rc ? SERENE_ERR_CONFIG : 0;
}

SERENE_API int serene_config_dump(const serene_config *cfg, char *buf, size_t len)
{
    if (!cfg)
        return SERENE_ERR_INVAL;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const uint8_t *m = cfg->dpdk_mac, *pm = cfg->dpdk_peer_mac;
    return snprintf(buf, buf ? len : 0,
                    "rank = %d\nworld_size = %d\njob_id = %d\njob_nonce = %u\n"
                    "switch_addr = %s\nbind_addr = %s\ntransport = %s\ntimeout_ms = %d\n"
                    "rto_us = %d\nrto_max_us = %d\nretry_limit = %d\nwindow = %d\n"
                    "max_ops = %d\ncpu_mask = 0x%x\nstore_frac_bits = %d\nlog_level = %s\n"
                    "pcap_path = %s\ndpdk_eal_args = %s\ndpdk_port = %s\n"
                    "dpdk_mac = %02x:%02x:%02x:%02x:%02x:%02x\n"
                    "dpdk_peer_mac = %02x:%02x:%02x:%02x:%02x:%02x\nudp_gso_off = %d\nwire_bits = %d\n",
                    cfg->rank, cfg->world_size, cfg->job_id, cfg->job_nonce, cfg->switch_addr,
                    cfg->bind_addr, cfg->transport, cfg->timeout_ms, cfg->rto_us, cfg->rto_max_us,
                    cfg->retry_limit, cfg->window, cfg->max_ops, cfg->cpu_mask, cfg->store_frac_bits,
                    names[(unsigned)cfg->log_level < 4 ? cfg->log_level : 3],
                    memchr(cfg->pcap_path, 0, sizeof cfg->pcap_path) ? cfg->pcap_path : "?",
                    cfg->dpdk_eal_args ? cfg->dpdk_eal_args : "",
                    cfg->dpdk_port ? cfg->dpdk_port : "0", m[0], m[1], m[2], m[3], m[4], m[5],
                    pm[0], pm[1], pm[2], pm[3], pm[4], pm[5], cfg->udp_gso_off,
                    cfg->wire_bits ? cfg->wire_bits : 32);
}

int sr_config_validate(const serene_config *cfg, const sr_log *log)
{
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            SR_ERR(log, "config: " __VA_ARGS__);                                                   \
            return SERENE_ERR_CONFIG;                                                              \
        }                                                                                          \
    } while (0)
    CHECK(cfg->world_size >= 1 && cfg->world_size <= (int)SR_WIRE_MAX_WORKERS,
          "world_size %d is outside 1..%u", cfg->world_size, SR_WIRE_MAX_WORKERS);
    CHECK(cfg->rank >= 0 && cfg->rank < cfg->world_size, "rank %d is outside 0..%d", cfg->rank,
          cfg->world_size - 1);
    CHECK(cfg->job_id >= 0 && cfg->job_id <= 65535, "job_id %d is outside 0..65535", cfg->job_id);
    CHECK(cfg->timeout_ms > 0, "timeout_ms %d must be positive", cfg->timeout_ms);
    CHECK(cfg->rto_us > 0 && cfg->rto_max_us >= cfg->rto_us,
          "rto_us %d and rto_max_us %d must satisfy 0 < rto_us <= rto_max_us", cfg->rto_us,
          cfg->rto_max_us);
    CHECK(cfg->retry_limit >= 0, "retry_limit %d must be >= 0", cfg->retry_limit);
    CHECK(cfg->window >= 0 && cfg->window <= (int)SR_WIRE_MAX_SLOTS,
          "window %d is outside 0..%u", cfg->window, SR_WIRE_MAX_SLOTS);
    CHECK(cfg->max_ops >= 1 && cfg->max_ops <= 1024, "max_ops %d is outside 1..1024",
          cfg->max_ops);
    CHECK(cfg->store_frac_bits >= 0 && cfg->store_frac_bits <= 30,
          "store_frac_bits %d is outside 0..30", cfg->store_frac_bits);
    CHECK((unsigned)cfg->log_level <= SERENE_LOG_DEBUG, "log_level %d is outside 0..3",
          (int)cfg->log_level);
    CHECK(memchr(cfg->switch_addr, 0, sizeof cfg->switch_addr) && cfg->switch_addr[0],
          "switch_addr is empty or not NUL-terminated");
    CHECK(memchr(cfg->bind_addr, 0, sizeof cfg->bind_addr), "bind_addr is not NUL-terminated");
    CHECK(memchr(cfg->transport, 0, sizeof cfg->transport), "transport is not NUL-terminated");
    CHECK(cfg->udp_gso_off <= 1, "udp_gso_off %d is neither 0 nor 1", cfg->udp_gso_off);
    CHECK(cfg->wire_bits == 0 || cfg->wire_bits == 16 || cfg->wire_bits == 32,
          "wire_bits %d is none of 0 (32), 16 and 32", cfg->wire_bits);
    CHECK(memchr(cfg->pcap_path, 0, sizeof cfg->pcap_path), "pcap_path is not NUL-terminated");
    char path[SR_TRACE_PATH_MAX];
    CHECK(!cfg->pcap_path[0] || sr_trace_path(path, sizeof path, cfg->pcap_path, cfg->rank) == 0,
          "pcap_path \"%s\": '%%' must be followed by 'r' (the rank) or '%%'", cfg->pcap_path);
    CHECK(!cfg->dpdk_eal_args || strnlen(cfg->dpdk_eal_args, 4096) < 4096,
          "dpdk_eal_args is 4096 bytes or longer");
    CHECK(!cfg->dpdk_port || strnlen(cfg->dpdk_port, 4096) < 4096,
          "dpdk_port is 4096 bytes or longer");
    for (size_t i = 0; i < sizeof cfg->reserved_; i++)
        CHECK(cfg->reserved_[i] == 0, "reserved bytes must be zero (use serene_config_init)");
#undef CHECK
    return 0;
}
