/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iso_status.c - the isolation test's view of the switch's state: `status
 * JOB` on its control socket (through libserene-ctl's client), whose stable
 * fields no forged packet may move, and the counters the switch logs at
 * exit, which must account exactly for every forged datagram.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "isolation.h"

expect_counts expected;

/* The fields of `status JOB` that no forged packet may move. The others
 * (clocks, holds, proceeds) also count the CLOCKs a held worker resends. */
static const char *const stable_keys[NSTABLE] = {
    "low", "high", "advances", "pushes", "push_dups", "pulls", "bound", "nonce", "range_errors",
    "clock_ahead"};

int status_get(int job, ctl_status *st)
{
    char cmd[32];

    snprintf(cmd, sizeof cmd, "status %d", job);
    if (sw_control(&iso_sw, cmd, st->line, sizeof st->line)) {
        fail("control '%s' -> '%s'", cmd, st->line);
        return -1;
    }
    for (size_t i = 0; i < NSTABLE; i++) {
        if (sw_field(st->line, stable_keys[i], &st->v[i])) {
            fail("control '%s': no %s= in '%s'", cmd, stable_keys[i], st->line);
            return -1;
        }
    }
    return 0;
}

uint64_t status_val(const ctl_status *st, const char *key)
{
    for (size_t i = 0; i < NSTABLE; i++)
        if (!strcmp(stable_keys[i], key))
            return st->v[i];
    return UINT64_MAX;
}

void status_same(int job, const char *when, const ctl_status *a, const ctl_status *b)
{
    for (size_t i = 0; i < NSTABLE; i++)
        if (a->v[i] != b->v[i])
            fail("job %d: status %s changed %s: %" PRIu64 " -> %" PRIu64 "\n    before: %s\n"
                 "    after:  %s",
                 job, stable_keys[i], when, a->v[i], b->v[i], a->line, b->line);
}

/* ---- the switch's counters at exit ---------------------------------------------------- */

static void expect_counter(const char *line, const char *what, const char *key, uint64_t want)
{
    uint64_t got;

    if (sw_field(line, key, &got))
        fail("%s: no %s= in the counter line: %s", what, key, line);
    else if (got != want)
        fail("%s: %s=%" PRIu64 ", want %" PRIu64 " (one per forged datagram)", what, key, got,
             want);
}

void check_exit_counters(void)
{
    char line[2048], prefix[64], what[32];

    for (int j = JOB_A; j <= JOB_C; j++) {
        snprintf(prefix, sizeof prefix, "serene-switch: job=%d ", j);
        snprintf(what, sizeof what, "job %d", j);
        if (sw_log_line(&iso_sw, prefix, line, sizeof line)) {
            fail("no counter line for job %d in the switch's log", j);
            continue;
        }
        expect_counter(line, what, "dropped_unbound", expected.unbound[j]);
        expect_counter(line, what, "errors_sent", expected.errors[j]);
        expect_counter(line, what, "resets", 1);
        expect_counter(line, what, "mismatches", 0);
        expect_counter(line, what, "clock_ahead", 0);
        expect_counter(line, what, "range_errors", 0);
        printf("  %s", line);
    }
    if (sw_log_line(&iso_sw, "serene-switch: switch ", line, sizeof line)) {
        fail("no switch counter line in the switch's log");
        return;
    }
    expect_counter(line, "switch", "unknown_job", expected.unknown_job);
    expect_counter(line, "switch", "answers_dropped", expected.answers_dropped);
    expect_counter(line, "switch", "udp_rx_oversize", expected.oversize);
    for (int r = 1; r < SR_PARSE_NREASONS; r++) {
        char key[48];

        snprintf(key, sizeof key, "rejected_%s", sr_parse_result_name(-r));
        expect_counter(line, "switch", key, expected.rejected[r]);
    }
    printf("  %s", line);
}
