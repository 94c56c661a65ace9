/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launcher_child.c - the rank program of tests/integ/test_launcher.sh.
 *
 * It shows what serene-run gave it and misbehaves on request, so the test
 * can check the launcher's environment, output relay and supervision
 * without a switch or libserene:
 *
 *   stdout: "env pid=P SERENE_RANK=.. SERENE_LOCAL_RANK=.. SERENE_WORLD_SIZE=..
 *            SERENE_JOB=.. SERENE_JOB_NONCE=.. SERENE_SWITCH=.."
 *           "args <a>|<b>..."           (its arguments after "--", if any)
 *   stderr: "stderr of rank R"
 *
 *   --lines K        K more stdout lines "line I of rank R"
 *   --long BYTES     one stdout line of BYTES 'x' characters
 *   --partial        end stdout with "partial R", no newline
 *   --sleep-rank R   rank R (-1: every rank but --fail-rank) sleeps --ms
 *   --ms MS          sleep length (default 100000)
 *   --ignore-term    sleepers ignore SIGTERM (tests the SIGKILL escalation)
 *   --leave-rank R   rank R exits 0 at once, before any sleep or failure: a
 *                    rank that finishes early while its peers still work
 *   --fail-rank R    rank R exits with --code (default 1) or dies by --signal,
 *                    after --fail-after MS (default 0: at once)
 *   --code C, --signal SIG
 *
 * A missing or malformed SERENE_RANK makes it exit 99: the launcher must set it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *env_or(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "<unset>";
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) != 0)
        ;
}

static int int_arg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "launcher_child: %s needs a value\n", argv[*i]);
        exit(98);
    }
    return atoi(argv[++*i]);
}

int main(int argc, char **argv)
{
    int lines = 0, long_len = 0, partial = 0, sleep_rank = -2, ms = 100000;
    int ignore_term = 0, fail_rank = -2, fail_after = 0, code = 1, sig = 0, args_at = 0;
    int leave_rank = -2;
    for (int i = 1; i < argc && !args_at; i++) {
        if (!strcmp(argv[i], "--lines")) lines = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--long")) long_len = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--partial")) partial = 1;
        else if (!strcmp(argv[i], "--sleep-rank")) sleep_rank = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--ms")) ms = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--ignore-term")) ignore_term = 1;
        else if (!strcmp(argv[i], "--leave-rank")) leave_rank = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--fail-rank")) fail_rank = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--fail-after")) fail_after = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--code")) code = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--signal")) sig = int_arg(argc, argv, &i);
        else if (!strcmp(argv[i], "--")) args_at = i + 1;
        else {
            fprintf(stderr, "launcher_child: unknown argument %s\n", argv[i]);
            return 98;
        }
    }

    const char *rank_s = getenv("SERENE_RANK");
    char *end;
    long rank = rank_s ? strtol(rank_s, &end, 10) : -1;
    if (!rank_s || *end || rank < 0)
        return 99;

    printf("env pid=%d SERENE_RANK=%s SERENE_LOCAL_RANK=%s SERENE_WORLD_SIZE=%s SERENE_JOB=%s "
           "SERENE_JOB_NONCE=%s SERENE_SWITCH=%s\n",
           (int)getpid(), rank_s, env_or("SERENE_LOCAL_RANK"), env_or("SERENE_WORLD_SIZE"),
           env_or("SERENE_JOB"), env_or("SERENE_JOB_NONCE"), env_or("SERENE_SWITCH"));
    printf("token SERENE_JOB_TOKEN=%s\n", env_or("SERENE_JOB_TOKEN"));
    if (args_at) {
        printf("args ");
        for (int i = args_at; i < argc; i++)
            printf("%s<%s>", i > args_at ? "|" : "", argv[i]);
        printf("\n");
    }
    for (int i = 0; i < lines; i++)
        printf("line %d of rank %ld\n", i, rank);
    if (long_len > 0) {
        for (int i = 0; i < long_len; i++)
            putchar('x');
        putchar('\n');
    }
    if (partial)
        printf("partial %ld", rank);
    fflush(stdout);
    fprintf(stderr, "stderr of rank %ld\n", rank);

    if (rank == leave_rank)
        return 0;
    if (rank == fail_rank) {
        sleep_ms(fail_after);
        if (sig) {
            signal(sig, SIG_DFL);
            raise(sig);
        }
        return code;
    }
    if (rank == sleep_rank || sleep_rank == -1) {
        if (ignore_term)
            signal(SIGTERM, SIG_IGN);
        sleep_ms(ms);
    }
    return 0;
}
