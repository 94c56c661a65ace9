/* SPDX-License-Identifier: Apache-2.0 */
/*
 * now.h - the library's clock: monotonic nanoseconds. Timers, deadlines and
 * statistics all read this one clock, so their times compare.
 */
#ifndef SERENE_COMMON_NOW_H
#define SERENE_COMMON_NOW_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds; never goes back. */
uint64_t sr_now_ns(void);

#endif /* SERENE_COMMON_NOW_H */
