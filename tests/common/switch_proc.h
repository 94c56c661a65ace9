/* SPDX-License-Identifier: Apache-2.0 */
/*
 * switch_proc.h - the C tests' one way to run a real serene-switch: start
 * it on an ephemeral loopback port with its port file, control socket and
 * log in a temporary directory of its own, talk to its control socket
 * through libserene-ctl's client, read the counters it logs at exit, and
 * stop it by the PID this process started (SIGTERM, SIGKILL after 5 s).
 * Also fills a serene_config for an in-process worker of that switch.
 *
 * Every wait is bounded. Functions return 0 or -1 unless said otherwise;
 * on -1 they have printed "switch_proc: ..." on stdout saying why.
 */
#ifndef SERENE_TESTS_SWITCH_PROC_H
#define SERENE_TESTS_SWITCH_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "serene/serene.h"

#define SW_CTL_TIMEOUT_MS 2000 /* a control command answers within this */

typedef struct sw_proc {
    pid_t pid;          /* -1 when not running */
    int port;           /* the UDP port it bound */
    char addr[64];      /* "127.0.0.1:PORT" once started */
    char dir[64];       /* its temporary directory ("" when removed) */
    char port_path[96]; /* DIR/port */
    char ctl_path[96];  /* DIR/ctl: the control socket */
    char log_path[96];  /* DIR/switch.log: its stdout and stderr */
} sw_proc;

/* Start serene-switch (bin, or $SERENE_SWITCH_BIN when bin is NULL) with
 * --listen 127.0.0.1:0, --port-file, --control and the extra arguments
 * args (NULL-terminated, e.g. "--job", "1:2", NULL; at most 32). Waits,
 * 10 s at most, for its port file and control socket. On failure nothing
 * is left running and the directory is removed. */
int sw_start(sw_proc *sw, const char *bin, const char *const *args);

/* SIGTERM the switch (it prints its counters to its log), SIGKILL if it
 * still runs 5 s later, reap it. The directory, and so the log, stays.
 * Does nothing when the switch is not running. */
void sw_stop(sw_proc *sw);

/* sw_stop, then remove the directory. Safe to call twice. */
void sw_cleanup(sw_proc *sw);

/* One control command (one line, no newline) to the control socket at
 * ctl_path, through libserene-ctl's serene_ctl_sw_command, bounded by
 * SW_CTL_TIMEOUT_MS; the reply's line goes to reply[cap]. 0 when the reply
 * starts with "ok"; otherwise -1 with the error reply, or what went wrong,
 * in reply. */
int sw_command(const char *ctl_path, const char *cmd, char *reply, size_t cap);

/* sw_command to this switch's control socket. */
int sw_control(const sw_proc *sw, const char *cmd, char *reply, size_t cap);

/* The first line of the switch's log that starts with prefix, newline
 * included, into line[cap]. 0, or -1 when there is none. */
int sw_log_line(const sw_proc *sw, const char *prefix, char *line, size_t cap);

/* The number after " key=" in line (a status reply or a counter line).
 * 0, or -1 when the key is absent or has no number. */
int sw_field(const char *line, const char *key, uint64_t *out);

/* serene_config_init, then a worker of this switch: job, rank, world size
 * and the switch's address; the other fields keep their defaults. */
void sw_worker_config(const sw_proc *sw, serene_config *cfg, int job, int rank, int world);

/* A serene_log_fn that drops every message (for tests of error paths). */
void sw_quiet_log(void *cookie, serene_log_level level, const char *msg);

#endif /* SERENE_TESTS_SWITCH_PROC_H */
