/* SPDX-License-Identifier: Apache-2.0 */
/*
 * switch_proc.c - see switch_proc.h. The switch writes the port it bound to
 * a file (--port-file), so tests never guess a free port.
 */
#include "switch_proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define SW_MAX_ARGS 32

int sw_start(sw_proc *sw, const char *const *args)
{
    const char *bin = getenv("SERENE_SWITCH_BIN");
    const char *argv[SW_MAX_ARGS + 6];
    int n = 0;

    sw->pid = -1;
    if (!bin)
        return -1;
    snprintf(sw->port_file, sizeof sw->port_file, "/tmp/serene-test-%d.port", (int)getpid());
    unlink(sw->port_file);
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--port-file";
    argv[n++] = sw->port_file;
    for (int i = 0; args[i] && i < SW_MAX_ARGS; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    sw->pid = fork();
    if (sw->pid < 0)
        return -1;
    if (sw->pid == 0) {
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) { /* bounded: 10 s */
        FILE *f = fopen(sw->port_file, "r");
        int port = 0;
        if (f) {
            int ok = fscanf(f, "%d", &port) == 1;
            fclose(f);
            if (ok && port > 0) {
                snprintf(sw->addr, sizeof sw->addr, "127.0.0.1:%d", port);
                return 0;
            }
        }
        usleep(50000);
    }
    sw_stop(sw);
    return -1;
}

void sw_stop(sw_proc *sw)
{
    if (sw->pid > 0) {
        kill(sw->pid, SIGTERM);
        waitpid(sw->pid, NULL, 0);
        sw->pid = -1;
    }
    unlink(sw->port_file);
}
