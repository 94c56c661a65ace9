/* SPDX-License-Identifier: Apache-2.0 */
/* config.h - validation of a serene_config (see config.c). */
#ifndef SERENE_CORE_CONFIG_H
#define SERENE_CORE_CONFIG_H

#include "common/log.h"
#include "serene/serene.h"

/* 0, or SERENE_ERR_CONFIG after logging which field is wrong and why. */
int sr_config_validate(const serene_config *cfg, const sr_log *log);

/* The job's admission token from SERENE_JOB_TOKEN (1 to 16 hex digits; the
 * JOIN carries it), or 0 when the variable is unset. serene_config has no
 * room for 64 more bits (its reserved_ bytes are 4 on LP64), so the
 * context reads it when it is created. Returns 0, or SERENE_ERR_CONFIG
 * after logging why the value is not a token. */
int sr_config_job_token(const sr_log *log, uint64_t *token);

#endif /* SERENE_CORE_CONFIG_H */
