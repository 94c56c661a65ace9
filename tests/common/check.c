/* SPDX-License-Identifier: Apache-2.0 */
/* check.c - failed checks, printed and counted (check.h). */
#include <stdarg.h>
#include <stdio.h>

#include "check.h"

static int failures;

void tc_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

int tc_failures(void)
{
    return failures;
}
