/* SPDX-License-Identifier: Apache-2.0 */
/*
 * services.c - what every control of the pipeline uses (see services.h):
 * the binding check, the actions a control emits and their counting, and
 * the ERROR reply. In the P4 program these are the ingress's worker_ok
 * metadata (membership.p4), its routes (ingress.p4) and its error path.
 */
#include <string.h>

#include "services.h"

int sr_svc_peer_eq(const sr_peer *a, const sr_peer *b)
{
    return a->ip == b->ip && a->port == b->port;
}

/* Isolation: a request counts only from a worker id bound in this
 * incarnation and from the address it joined from, so another tenant or a
 * spoofer can neither touch the job's state nor learn anything from it. */
int sr_svc_worker_ok(const sr_pipe_job *j, uint16_t w, const sr_peer *src)
{
    return w < j->n && (j->bound & ~j->left & (UINT64_C(1) << w)) &&
           sr_svc_peer_eq(&j->peer[w], src);
}

void sr_pipe_set_lazy_payload(sr_pipe *p, int on)
{
    p->lazy_payload = on != 0;
}

sr_pipe_action *sr_svc_action_new(sr_pipe_out *out)
{
    sr_pipe_action *a;

    if (out->n >= SR_PIPE_MAX_ACTIONS)
        return NULL;
    a = &out->act[out->n++];
    a->multicast = 0;
    a->dest_seq = 0;
    a->n_dests = 0;
    a->payload_len = 0;
    a->words = NULL;
    memset(&a->hdr, 0, sizeof a->hdr);
    a->hdr.version = SR_WIRE_VERSION;
    return a;
}

void sr_svc_unicast(sr_pipe_action *a, const sr_peer *src, uint16_t worker)
{
    a->multicast = 0;
    a->n_dests = 1;
    a->dests[0].peer = *src;
    a->dests[0].worker = worker;
}

void sr_svc_multicast(sr_pipe_action *a, const sr_pipe_job *j)
{
    a->multicast = 1;
    a->n_dests = 0;
    for (uint32_t i = 0; i < j->n; i++) {
        if (!(j->bound & ~j->left & (UINT64_C(1) << i)))
            continue;
        a->dests[a->n_dests].peer = j->peer[i];
        a->dests[a->n_dests].worker = (uint16_t)i;
        a->n_dests++;
    }
}

void sr_svc_count_tx(sr_pipe *p, sr_pipe_job *j, const sr_pipe_action *a)
{
    p->c.tx_total += a->n_dests;
    if (j)
        j->c.tx += a->n_dests;
}

void sr_svc_reply_error(sr_pipe *p, sr_pipe_job *j, const sr_peer *src, const sr_hdr *req,
                        unsigned status, sr_pipe_out *out)
{
    sr_pipe_action *a = sr_svc_action_new(out);

    if (!a)
        return;
    a->hdr = *req;
    a->hdr.version = SR_WIRE_VERSION;
    a->hdr.op = SR_OP_ERROR;
    a->hdr.status = (uint8_t)status;
    a->hdr.aux = req->op;
    a->hdr.count = 0;
    sr_svc_unicast(a, src, req->worker);
    sr_svc_count_tx(p, j, a);
    if (j)
        j->c.errors_sent++;
}
