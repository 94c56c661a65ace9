/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h - how the test programs that check many things report them: each
 * failed check prints "FAIL: ..." and is counted, the program goes on, and
 * exits 1 at the end when any failed.
 */
#ifndef SERENE_TESTS_CHECK_H
#define SERENE_TESTS_CHECK_H

/* Print "FAIL: " and the message, and count it. */
__attribute__((format(printf, 1, 2))) void tc_fail(const char *fmt, ...);
/* Failed checks so far. */
int tc_failures(void);

#endif /* SERENE_TESTS_CHECK_H */
