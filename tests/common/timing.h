/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timing.h - clocks and sleeps of the test programs. Every time is
 * CLOCK_MONOTONIC, one clock for every process of the host, so that times
 * printed by different processes (a worker's failed call, the kill of a
 * peer) can be compared. Sleeps resume after a signal.
 */
#ifndef SERENE_TESTS_TIMING_H
#define SERENE_TESTS_TIMING_H

#include <stdint.h>

uint64_t tc_now_ns(void);
double tc_now_ms(void);
void tc_sleep_us(long us);
void tc_sleep_ms(long ms);

/* Wait, limit_ms at most (polling every 10 ms), until path exists. 0, or
 * -1 when it did not appear in time. */
int tc_wait_file(const char *path, int limit_ms);

#endif /* SERENE_TESTS_TIMING_H */
