/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.h - serene-switch's command line: what it holds and its parser
 * (options.c), apart from the loop in main.c.
 */
#ifndef SERENE_SWSWITCH_OPTIONS_H
#define SERENE_SWSWITCH_OPTIONS_H

#include <stdint.h>

#include "ctl_sock.h"
#include "pipeline.h"

#define PROG "serene-switch"
#define DEFAULT_LISTEN "127.0.0.1:48200"
#define MAX_STATS_INTERVAL 86400.0 /* seconds */

enum { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };
extern const char *const sw_log_names[4]; /* indexed by LOG_* */

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
    const char *ctl_group; /* --ctl-group as given, or NULL */
    sr_ctls_access ctl_access; /* the group, if --ctl-group */
    double loss, dup, reorder;
    uint64_t seed;
    double stats_interval; /* seconds; 0: off */
    double lease;          /* seconds (sr_pipe_set_lease); 0: never lapse */
    uint32_t pool_blocks;  /* --pool: 0 no pool (sr_pipe_set_pool) */
    uint32_t pool_elems;
    enum sr_pool_policy pool_policy;
    double pool_idle;      /* seconds; < 0: the default */
    int log_level;
    const char *dpdk_eal;     /* DPDK mode: EAL arguments; NULL: UDP mode */
    const char **dpdk_ports;  /* argc entries at most */
    unsigned n_dpdk_ports;
} sw_opts;

/* Parse argv into o (zeroed by the caller). --help prints the usage and
 * exits 0; a malformed command line prints why and exits 2; out of memory
 * exits 1. sw_opts_free releases what it allocated. */
void sw_parse_args(sw_opts *o, int argc, char **argv);
void sw_opts_free(sw_opts *o);

#endif /* SERENE_SWSWITCH_OPTIONS_H */
