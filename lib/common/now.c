/* SPDX-License-Identifier: Apache-2.0 */
/* now.c - the monotonic clock (see now.h). */
#include "common/now.h"

#include <time.h>

uint64_t sr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
