/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - the context's log sink: a {cookie, fn} callback and a threshold.
 * The default sink writes "serene[rank]: LEVEL: msg" lines to stderr.
 * Never called per packet: the data path counts instead of logging.
 * Every layer of the library may use it (lib/common depends on nothing).
 */
#ifndef SERENE_COMMON_LOG_H
#define SERENE_COMMON_LOG_H

#include "serene/serene.h"

typedef struct sr_log {
    serene_log_fn fn;
    void *cookie;
    serene_log_level level;
    int rank;
} sr_log;

void sr_log_init(sr_log *log, const serene_config *cfg);
void sr_logf(const sr_log *log, serene_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define SR_ERR(log, ...) sr_logf((log), SERENE_LOG_ERROR, __VA_ARGS__)
#define SR_WARN(log, ...) sr_logf((log), SERENE_LOG_WARN, __VA_ARGS__)
#define SR_INFO(log, ...) sr_logf((log), SERENE_LOG_INFO, __VA_ARGS__)
#define SR_DEBUG(log, ...) sr_logf((log), SERENE_LOG_DEBUG, __VA_ARGS__)

#endif /* SERENE_COMMON_LOG_H */
