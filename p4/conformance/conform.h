/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conform.h - conformance traces of the aggregator: scripted scenarios run
 * through the software switch's pipeline (the reference semantics), and the
 * frames in and out of it as pcap files, which a P4 target must reproduce.
 *
 * Addressing of the traces (the P4 program's egress follows the same rules,
 * see p4/README.md):
 * - worker r sends from MAC 02:53:45:00:00:(r+1) and the IPv4 address and
 *   UDP port of its `worker.r` line in the job file, to the switch at MAC
 *   CF_SWITCH_MAC, CF_SWITCH_IP, UDP port SR_WIRE_UDP_PORT;
 * - a unicast answer swaps the request's Ethernet, IPv4 and UDP addresses;
 * - a multicast copy (AR_RESULT, RELEASE) to rank r goes from the request's
 *   destination to rank r's address from the job file, Ethernet destination
 *   broadcast (the job file names no MAC; each rank has its own port);
 * - every frame is built by sr_frame_pack: IPv4 id 0, DF, TTL 64;
 * - a RoCEv2 frame (UDP port 4791, lib/proto/roce.h) goes through the
 *   switch's RoCE port (p4/swswitch/roce.h); a replica to a worker bound
 *   over RoCE is a RoCEv2 frame from UDP port SR_ROCE_SPORT_BASE | the
 *   switch QP's low bits to port 4791, addressed as above otherwise.
 * Comparisons ignore the UDP checksum (a P4 switch may send 0, which IPv4
 * allows) and nothing else.
 */
#ifndef SERENE_CONFORM_H
#define SERENE_CONFORM_H

#include <stdint.h>

#include "pcap.h"
#include "pipeline.h"
#include "roce.h"
#include "serene/ctl.h"

#define CF_SWITCH_IP 0x0a0000feu /* 10.0.0.254 */
#define CF_STEP_US 20000u        /* input frames 20 ms apart: simple_switch --use-files
                                    merges the per-port files in timestamp order */
#define CF_T0_US 1000000000000000ull /* first timestamp: fixed, so traces are reproducible */

/* A conformance run: one fresh pipeline holding the job of the job file,
 * with the policy installed through the same control commands
 * `serene-ctl compile --target sw` emits. */
/* A control-plane step in a scenario, before the input frame with
 * timestamp ts: the software switch's control command and the BMv2
 * simple_switch_CLI command that does the same ("-": none there). Kept
 * as NAME.ctl beside the traces, one "TS<TAB>SW<TAB>BMV2" line each. */
#define CF_MAX_CTL 8
typedef struct cf_ctl {
    uint64_t ts;
    char sw[64], bmv2[96];
} cf_ctl;

typedef struct cf_ctx {
    sr_pipe *pipe;
    serene_ctl_job job;
    uint32_t elems, slots; /* the P4 program's lanes and slots per job */
    uint32_t max_jobs;     /* its register blocks (SR_P4_MAX_JOBS) */
    sr_pipe_out *out;
    sr_roce_sw *roce; /* frames to UDP 4791: RoCEv2 in, RoCEv2 answers out */
    cf_frames in;  /* frames given to the switch */
    cf_frames res; /* frames the switch sent, in order */
    uint64_t ts;   /* timestamp of the next input frame */
    cf_ctl ctl[CF_MAX_CTL]; /* the scenario's control steps, in order */
    unsigned n_ctl;
} cf_ctx;

/* Set up c from a job file, a policy file and the P4 program's constants
 * file (its `#define SR_P4_ELEMS` and `SR_P4_SLOTS` lines). Returns 0, or
 * -1 with a message on stderr. */
int cf_ctx_init(cf_ctx *c, const char *job_path, const char *policy_path,
                const char *constants_path);
void cf_ctx_fini(cf_ctx *c);

/* Give one input frame to the switch: appended to c->in (when record is
 * nonzero) and every resulting frame to c->res. Returns 0 or -ENOMEM. */
int cf_step(cf_ctx *c, const uint8_t *frame, size_t len, uint64_t ts, int record);

/* A control step now (before the next input frame): sw run on the
 * software switch ("ok" expected) unless "-", and both recorded. Returns 0,
 * -ENOSPC (too many), -EINVAL (too long) or -EIO (the switch refused). */
int cf_control(cf_ctx *c, const char *sw, const char *bmv2);
/* Write c's control steps to path, or read them from it into c (a missing
 * file: none). Return 0, or -1 with a message on stderr. */
int cf_ctl_write(const char *path, const cf_ctx *c);
int cf_ctl_read(const char *path, cf_ctx *c);
/* Run the software-switch command of every control step at or before ts
 * not run yet (*next: the first not run). Returns 0 or -EIO. */
int cf_ctl_apply(cf_ctx *c, uint64_t ts, unsigned *next);

/* The contents of path, NUL-terminated (free it); NULL with a message. */
char *cf_slurp(const char *path, size_t *len);

/* The value of `#define NAME V` in a P4 constants file's text; 0 if none. */
uint32_t cf_p4_define(const char *text, const char *name);

/* The scenarios: each runs on a fresh context, with the job of the job
 * file given, or with its own (job: a file beside it, e.g. share.job). */
typedef struct cf_scenario {
    const char *name;
    int (*run)(cf_ctx *c);
    const char *job;
} cf_scenario;
extern const cf_scenario cf_scenarios[];
extern const unsigned cf_n_scenarios;

/* In a scenario: return the first nonzero status of the steps. */
#define TRY(x)                                                                                    \
    do {                                                                                          \
        int rc_ = (x);                                                                            \
        if (rc_)                                                                                  \
            return rc_;                                                                           \
    } while (0)

/* Frame builders used by the scenarios (scenarios.c). src_ip 0 means worker
 * `rank`'s address from the job file. */
int cf_send(cf_ctx *c, unsigned rank, uint32_t src_ip, uint16_t dst_port, const sr_hdr *h,
            const uint32_t *vals, unsigned nvals);
/* A request header of c's job: version, op, worker w and seq set, the rest
 * zero. */
sr_hdr cf_req(const cf_ctx *c, unsigned op, unsigned w, uint32_t seq);
/* The scenario of the RoCEv2 port (scenarios_roce.c). */
int cf_run_roce(cf_ctx *c);

#endif /* SERENE_CONFORM_H */
