/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job_spec.h - the job spec, one syntax for serene-switch's --job and the
 * control socket's `job add`:
 *
 *   ID:N[:ELEMS[:SLOTS]][,store=WORDS][,ring=R][,policy=bsp|asp|ssp:S][,token=T]
 *       [,local=A-B,up=ADDR:PORT,upjob=J,member=K][,fallback=ADDR:PORT[,prio=P]]
 *
 * The last four make a leaf of an aggregation tree (pipeline.h,
 * sr_pipe_job_params; p4/README.md, "Trees"): up= needs upjob= and member=,
 * upjob differs from ID, local= is a range of the N ids. fallback= makes
 * a shared job (pipeline.h; the switch needs a pool of the job's ELEMS),
 * prio= its rank under the pool's priority policy (0..255, default 0).
 * each field within the pipeline's limits (wire.h, pipeline.h,
 * barrier.h). token=T is 1 to 16 hex digits (not all zero), or env:NAME
 * to read them from the variable NAME where the caller allows it (the
 * command line does: a token there is visible to every local user; the
 * control socket does not: its lines are private to the switch's owner).
 * Pure: no I/O, no globals; the caller passes its environment lookup.
 */
#ifndef SERENE_SWSWITCH_JOB_SPEC_H
#define SERENE_SWSWITCH_JOB_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

#define SW_JOB_SPEC_WHY_MAX 256 /* room for any message of sw_job_spec_parse */

/* Parse spec s into *id and *jp (filled from sr_pipe_job_params_init
 * first). env looks variables up for token=env:NAME; NULL refuses that
 * form. Returns 0, or -EINVAL after writing why the spec is wrong (one
 * sentence without a prefix, naming s) to why[cap]. */
int sw_job_spec_parse(const char *s, const char *(*env)(const char *name), uint16_t *id,
                      sr_pipe_job_params *jp, char *why, size_t cap);

#endif /* SERENE_SWSWITCH_JOB_SPEC_H */
