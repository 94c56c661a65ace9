/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - formatting and the default stderr sink (see log.h). */
#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static void stderr_sink(void *cookie, serene_log_level level, const char *msg)
{
    const sr_log *log = cookie;
    /* One fprintf per line keeps lines whole when ranks share a terminal. */
    fprintf(stderr, "serene[%d]: %s: %s\n", log ? log->rank : -1,
            level_names[(unsigned)level < 4 ? level : 3], msg);
}

void sr_log_init(sr_log *log, const serene_config *cfg)
{
    log->fn = cfg->log_fn;
    log->cookie = cfg->log_cookie;
    log->level = cfg->log_level;
    log->rank = cfg->rank;
}

void sr_logf(const sr_log *log, serene_log_level level, const char *fmt, ...)
{
    if (!log || level > log->level)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log->fn)
        log->fn(log->cookie, level, msg);
    else
        stderr_sink((void *)log, level, msg);
}
