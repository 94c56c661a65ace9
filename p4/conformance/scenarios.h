/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scenarios.h - what the scenario files share (scenarios.c, and
 * scenarios_share.c for a shared job): the job's incarnation and context
 * tokens, the request builders, and each file's scenarios.
 */
#ifndef SERENE_CONFORM_SCENARIOS_H
#define SERENE_CONFORM_SCENARIOS_H

#include "conform.h"

#define NONCE 0x5e4e0001u            /* the job's incarnation in every scenario */
#define TOKEN(w) (0x70000000u + (w)) /* worker w's context token */
#define RUN2 0x01000000u             /* added to TOKEN(w) in a scenario's second run */
/* The total count of call seq, as every worker's AR_DATA of the call
 * carries it in aux (any value per call will do here). */
#define CALL_TOTAL(seq) (4096u + (seq))
/* The rank that stands for a shared job's fallback aggregator (the job
 * file's fallback address and port) in cf_send. */
#define FB_RANK 0xffffu

/* A header op of worker w about its round (slot, shadow bit, call seq,
 * offset, exponent exp), the other fields zero. */
sr_hdr cf_round_req(const cf_ctx *c, unsigned op, unsigned w, unsigned slot, unsigned shadow,
                    uint32_t seq, uint32_t off, int exp);
/* Request h with n payload words v from worker w to the switch's port. */
int cf_send_to(cf_ctx *c, unsigned w, const sr_hdr *h, const uint32_t *v, unsigned n);
/* JOIN of worker w with context token seq, nonce and admission token adm
 * (sr_join_req's 4 words); every worker's with TOKEN(w), NONCE, the job's. */
int cf_join(cf_ctx *c, unsigned w, uint32_t seq, uint32_t nonce, uint64_t adm);
int cf_join_all(cf_ctx *c);
/* AR_DATA of worker w: slot, shadow bit, call seq (total CALL_TOTAL(seq)),
 * offset, exponents and n values base + i * step. */
int cf_ar(cf_ctx *c, unsigned w, unsigned slot, unsigned shadow, uint32_t seq, uint32_t off,
          int exp, int next_exp, unsigned n, uint32_t base, uint32_t step);
/* AR_PROBE of worker w for its contribution to (slot, shadow) in call seq
 * at offset with exponents exp and next_exp. */
int cf_probe(cf_ctx *c, unsigned w, unsigned slot, unsigned shadow, uint32_t seq, uint32_t off,
             int exp, int next_exp);

/* The shared job's scenarios (scenarios_share.c). */
int cf_run_share(cf_ctx *c);
int cf_run_share_take(cf_ctx *c);

#endif /* SERENE_CONFORM_SCENARIOS_H */
