/* SPDX-License-Identifier: Apache-2.0 */
/*
 * control.h - the text commands of serene-switch's control socket, as a
 * pure function over a pipeline, so unit tests drive it without a socket
 * (the socket itself is ctl_sock.c).
 *
 * One command per line, words separated by blanks; every reply is one line
 * that starts with "ok" or "error":
 *
 *   jobs
 *     -> ok ID ID ...                      (ascending; "ok" alone if none)
 *   status JOB
 *     -> ok job=J workers=N low=L high=H mode=M s=S rules=R clocks=C holds=H
 *        proceeds=P advances=A pushes=U push_dups=D pulls=Q bound=B nonce=X
 *        ring=R store=W clock_ahead=K range_errors=E leaves=L
 *        in_use_refused=U live=V lapsed=A denied=D bytes=B slots_open=O
 *        ring_entries=G
 *        (one line; mode and s: the policy for clock high + 1, s as applied;
 *        rules: FROM-TO:MODE:S,... oldest first, TO "inf" on the last;
 *        clocks .. range_errors: the job's counters since it was added;
 *        low and high are uint32 serial clocks, 4294967295 before clock 0
 *        completes; slots_open and ring_entries: what the incarnation
 *        holds, sr_pipe_job_held, both 0 once its calls all completed)
 *   policy JOB bsp|asp|ssp [S] [from CLOCK]
 *     -> ok job=J effective=E
 *        (S is required for ssp and ignored for bsp and asp; without from,
 *        as soon as possible. E > high at the time: the first clock the new
 *        policy governs. One rule bounds CLOCK: it must lie within 2^30
 *        (SR_BARRIER_MAX_AHEAD) clocks of low in serial arithmetic,
 *        |(int32_t)(CLOCK - low)| <= 2^30. Ahead of low, E = max(CLOCK,
 *        high + 1); behind it, as soon as possible; further away either
 *        way: "error from F is more than 2^30 clocks past|before low L".)
 *   reset JOB
 *     -> ok job=J reset
 *        (unbind the job's workers, e.g. a dead run's, so a new run can
 *        join; its policy rules stay)
 *   job add ID:N[:ELEMS[:SLOTS]][,store=WORDS][,ring=R][,policy=MODE][,token=T]
 *     -> ok job=J added workers=N elems=E slots=S store=W ring=R mode=M s=S
 *        token=set|none bytes=B
 *        (the spec of --job, job_spec.h, but token=env: is refused; B: the
 *        memory allocated for the job, as status shows it)
 *   job remove JOB [force]
 *     -> ok job=J removed freed=B live=K
 *        (refused while a worker is live: bound, not left, lease not
 *        lapsed: "error job J has K live workers ..."; force removes it
 *        anyway. Frees all of the job's state; its packets then get
 *        UNKNOWN_JOB)
 *   help
 *     -> ok commands: ...
 *
 * Anything else, or a bad argument, gets "error <what is wrong>"; a job id
 * that is not in the switch gets "error unknown job J". Modes are written
 * in lower case; input modes and keywords are case-insensitive.
 */
#ifndef SERENE_SWSWITCH_CONTROL_H
#define SERENE_SWSWITCH_CONTROL_H

#include <stddef.h>

#include "pipeline.h"

#define SR_CTL_LINE_MAX 256   /* longest command, newline included */
#define SR_CTL_REPLY_MAX 4096 /* longest reply (a status with 32 rules fits) */

/* Run the command in line (NUL-terminated; a trailing "\n" or "\r\n" is
 * allowed) on p, and write the reply, without a newline, NUL-terminated,
 * to reply[cap] (truncated if cap is short; SR_CTL_REPLY_MAX never is).
 * Returns the length of the reply written. line is only read. */
size_t sr_ctl_exec(sr_pipe *p, const char *line, char *reply, size_t cap);

#endif /* SERENE_SWSWITCH_CONTROL_H */
