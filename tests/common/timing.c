/* SPDX-License-Identifier: Apache-2.0 */
/* timing.c - see timing.h. */
#include "timing.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

uint64_t tc_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double tc_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void tc_sleep_us(long us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L};

    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

void tc_sleep_ms(long ms)
{
    tc_sleep_us(ms * 1000L);
}

int tc_wait_file(const char *path, int limit_ms)
{
    for (int waited = 0; waited < limit_ms; waited += 10) {
        if (access(path, F_OK) == 0)
            return 0;
        tc_sleep_ms(10);
    }
    return -1;
}
