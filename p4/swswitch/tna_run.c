/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_run.c - a job whose allreduce and store run on the Tofino program's
 * model (job option model=tna; p4/tna/model/tna_model.h). The job's
 * workers, bindings, barrier and the checks before these calls stay
 * serene-switch's; its AR_DATA, AR_PROBE, PUSH and PULL then go through
 * the model's registers and tables, one model per switch as one Tofino's
 * registers: the job's block is its id mod 4 (jobs that share a block
 * share cells and rows, as on the Tofino), cleared when the job is added
 * (as serene-ctl's script does). The model's answer becomes the switch's:
 * nothing, the result to every worker or to the sender, HELD, NAK,
 * PUSH_ACK, PULL_RESP, or an ERROR.
 */
#include <stdlib.h>

#include "controls.h"
#include "services.h"

#include "../tna/model/tna_model.h"

int sr_tna_job_check(const sr_pipe_job_params *jp)
{
    return jp->elems_per_pkt == TNA_ELEMS && jp->pool_slots <= TNA_AR_SLOTS &&
           jp->n_workers <= TNA_MAX_WORKERS && !jp->fallback && !jp->up &&
           jp->store_words <= TNA_STORE_ROWS * TNA_ELEMS && jp->store_words % TNA_ELEMS == 0;
}

/* The switch's model, made at its first job. */
static tna_model *model(sr_pipe *p)
{
    if (!p->tna && (p->tna = malloc(sizeof *p->tna)))
        tna_model_init(p->tna, 0);
    return p->tna;
}

int sr_tna_job_added(sr_pipe *p, const sr_pipe_job *j)
{
    if (!model(p))
        return -1;
    tna_model_clear_block(p->tna, j->id % TNA_MAX_JOBS);
    return 0;
}

void sr_tna_free(sr_pipe *p)
{
    free(p->tna);
    p->tna = NULL;
}

void sr_tna_run(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *h,
                const uint8_t *payload, sr_pipe_out *out)
{
    uint32_t vals[TNA_ELEMS] = {0};
    tna_out o;
    if (!model(p))
        return; /* dropped: the worker resends */
    for (unsigned i = 0; payload && i < h->count && i < TNA_ELEMS; i++)
        vals[i] = sr_get_be32(payload + 4u * i);
    tna_job tj = {j->id, j->n >= 32 ? 0xffffffffu : (1u << j->n) - 1u, (uint16_t)j->store_words};
    if (h->op == SR_OP_PUSH || h->op == SR_OP_PULL)
        tna_model_store(p->tna, &tj, h, vals, &o);
    else
        tna_model_ar(p->tna, &tj, h, vals, &o);
    if (o.verdict == TNA_DROP)
        return;
    if (o.verdict == TNA_ERROR) {
        if (o.err == SR_ST_MISMATCH)
            j->c.mismatches++;
        sr_svc_reply_error(p, j, src, h, o.err, out);
        return;
    }
    sr_pipe_action *a = sr_svc_action_new(out);
    if (!a)
        return;
    a->hdr = o.hdr;
    a->payload_len = 4u * (size_t)o.hdr.count;
    for (unsigned i = 0; i < o.hdr.count; i++)
        sr_put_be32(a->payload + 4u * i, o.vals[i]);
    if (o.verdict == TNA_MULTICAST) {
        sr_svc_multicast(a, j);
        j->c.results++;
    } else {
        sr_svc_unicast(a, src, h->worker);
        if (o.hdr.op == SR_OP_AR_HELD)
            j->c.held++;
        else if (o.hdr.op == SR_OP_AR_NAK)
            j->c.naks++;
        else if (o.hdr.op == SR_OP_PUSH_ACK)
            j->c.pushes += o.hdr.aux;
        else if (o.hdr.op == SR_OP_PULL_RESP)
            j->c.pulls++;
    }
    sr_svc_count_tx(p, j, a);
}
