/* SPDX-License-Identifier: Apache-2.0 */
/*
 * switch_proc.h - start a real serene-switch ($SERENE_SWITCH_BIN) on an
 * ephemeral loopback port for a C test, and stop it by its pid.
 */
#ifndef SERENE_TESTS_SWITCH_PROC_H
#define SERENE_TESTS_SWITCH_PROC_H

#include <sys/types.h>

typedef struct sw_proc {
    pid_t pid;
    char addr[64];      /* "127.0.0.1:PORT" once started */
    char port_file[64];
} sw_proc;

/* Start the switch with the given extra arguments (NULL-terminated, e.g.
 * "--job", "1:2", NULL) and wait, 10 s at most, for its port. 0 or -1. */
int sw_start(sw_proc *sw, const char *const *args);

/* SIGTERM the switch this test started, reap it, remove its port file. */
void sw_stop(sw_proc *sw);

#endif /* SERENE_TESTS_SWITCH_PROC_H */
