/* SPDX-License-Identifier: Apache-2.0 */
/*
 * switch_proc.c - see switch_proc.h. The switch writes the port it bound
 * to a file (--port-file), so tests never guess a free port; the control
 * socket is there once the switch has bound everything.
 */
#include "switch_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serene/ctl.h"

#define SW_MAX_ARGS 32
#define SW_START_POLLS 200 /* of 50 ms: 10 s */
#define SW_STOP_POLLS 100  /* of 50 ms: 5 s */

static void nap_50ms(void)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 50000000L};

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static void remove_dir(sw_proc *sw)
{
    if (!sw->dir[0])
        return;
    unlink(sw->port_path);
    unlink(sw->ctl_path);
    unlink(sw->log_path);
    rmdir(sw->dir);
    sw->dir[0] = '\0';
}

/* 1 once the port file holds a port and the control socket exists. */
static int is_up(sw_proc *sw)
{
    struct stat sb;
    FILE *f = fopen(sw->port_path, "r");
    int port = 0;

    if (!f)
        return 0;
    if (fscanf(f, "%d", &port) != 1)
        port = 0;
    fclose(f);
    if (port <= 0 || port > 65535 || stat(sw->ctl_path, &sb) || !S_ISSOCK(sb.st_mode))
        return 0;
    sw->port = port;
    snprintf(sw->addr, sizeof sw->addr, "127.0.0.1:%d", port);
    return 1;
}

static pid_t spawn(const sw_proc *sw, const char *bin, const char *const *args)
{
    const char *argv[SW_MAX_ARGS + 8];
    int n = 0;
    pid_t pid;

    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--port-file";
    argv[n++] = sw->port_path;
    argv[n++] = "--control";
    argv[n++] = sw->ctl_path;
    for (int i = 0; args && args[i] && i < SW_MAX_ARGS; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int fd = open(sw->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int sw_start(sw_proc *sw, const char *bin, const char *const *args)
{
    memset(sw, 0, sizeof *sw);
    sw->pid = -1;
    if (!bin)
        bin = getenv("SERENE_SWITCH_BIN");
    if (!bin || !*bin) {
        printf("switch_proc: no serene-switch (SERENE_SWITCH_BIN is not set)\n");
        return -1;
    }
    snprintf(sw->dir, sizeof sw->dir, "%s", "/tmp/serene-sw.XXXXXX");
    if (!mkdtemp(sw->dir)) {
        printf("switch_proc: mkdtemp: %s\n", strerror(errno));
        sw->dir[0] = '\0';
        return -1;
    }
    snprintf(sw->port_path, sizeof sw->port_path, "%s/port", sw->dir);
    snprintf(sw->ctl_path, sizeof sw->ctl_path, "%s/ctl", sw->dir);
    snprintf(sw->log_path, sizeof sw->log_path, "%s/switch.log", sw->dir);
    sw->pid = spawn(sw, bin, args);
    if (sw->pid < 0) {
        printf("switch_proc: fork: %s\n", strerror(errno));
        remove_dir(sw);
        return -1;
    }
    for (int i = 0; i < SW_START_POLLS; i++) {
        int st;

        if (is_up(sw)) {
            printf("serene-switch pid %d on %s:", (int)sw->pid, sw->addr);
            for (int k = 0; args && args[k] && k < SW_MAX_ARGS; k++)
                printf(" %s", args[k]);
            printf("\n");
            return 0;
        }
        if (waitpid(sw->pid, &st, WNOHANG) == sw->pid) {
            printf("switch_proc: serene-switch %s exited at startup (status %d)\n", bin, st);
            sw->pid = -1;
            remove_dir(sw);
            return -1;
        }
        nap_50ms();
    }
    printf("switch_proc: serene-switch wrote no port file and control socket in 10 s\n");
    sw_cleanup(sw);
    return -1;
}

void sw_stop(sw_proc *sw)
{
    int st;

    if (sw->pid <= 0)
        return;
    kill(sw->pid, SIGTERM);
    for (int i = 0; i < SW_STOP_POLLS; i++) {
        if (waitpid(sw->pid, &st, WNOHANG) == sw->pid) {
            sw->pid = -1;
            return;
        }
        nap_50ms();
    }
    printf("serene-switch ignored SIGTERM for 5 s: SIGKILL\n");
    kill(sw->pid, SIGKILL);
    waitpid(sw->pid, &st, 0);
    sw->pid = -1;
}

void sw_cleanup(sw_proc *sw)
{
    sw_stop(sw);
    remove_dir(sw);
}

int sw_command(const char *ctl_path, const char *cmd, char *reply, size_t cap)
{
    int rc = serene_ctl_sw_command(ctl_path, cmd, reply, cap, SW_CTL_TIMEOUT_MS);

    if (rc == 0)
        return 0;
    if (rc != -EPROTO || !reply[0])
        snprintf(reply, cap, "%s: %s", ctl_path, strerror(-rc));
    return -1;
}

int sw_control(const sw_proc *sw, const char *cmd, char *reply, size_t cap)
{
    return sw_command(sw->ctl_path, cmd, reply, cap);
}

int sw_log_line(const sw_proc *sw, const char *prefix, char *line, size_t cap)
{
    FILE *f = fopen(sw->log_path, "r");
    int found = 0;

    if (!f)
        return -1;
    while (!found && fgets(line, (int)cap, f))
        found = !strncmp(line, prefix, strlen(prefix));
    fclose(f);
    return found ? 0 : -1;
}

int sw_field(const char *line, const char *key, uint64_t *out)
{
    char pat[64];
    const char *p;
    char *end;

    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(line, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    *out = strtoull(p, &end, 10);
    return end == p ? -1 : 0;
}

void sw_worker_config(const sw_proc *sw, serene_config *cfg, int job, int rank, int world)
{
    serene_config_init(cfg);
    cfg->job_id = job;
    cfg->rank = rank;
    cfg->world_size = world;
    snprintf(cfg->switch_addr, sizeof cfg->switch_addr, "%s", sw->addr);
}

void sw_quiet_log(void *cookie, serene_log_level level, const char *msg)
{
    (void)cookie;
    (void)level;
    (void)msg;
}
