/* SPDX-License-Identifier: Apache-2.0 */
/* config.h - validation of a serene_config (see config.c). */
#ifndef SERENE_CORE_CONFIG_H
#define SERENE_CORE_CONFIG_H

#include "common/log.h"
#include "serene/serene.h"

/* 0, or SERENE_ERR_CONFIG after logging which field is wrong and why. */
int sr_config_validate(const serene_config *cfg, const sr_log *log);

#endif /* SERENE_CORE_CONFIG_H */
