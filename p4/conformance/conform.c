/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conform.c - a conformance run (see conform.h): the job set up from the
 * job file, the policy installed through the software switch's own control
 * commands, and one frame at a time through sr_pipe_process, each action
 * turned into frames by the addressing rules of conform.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "control.h"

static const uint8_t bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

char *cf_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
            buf[n] = '\0';
            *len = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
            fprintf(stderr, "%s: read failed\n", path);
        }
    }
    fclose(f);
    return buf;
}

/* The value of `#define NAME V` in the P4 constants file; 0 if absent. */
uint32_t cf_p4_define(const char *text, const char *name)
{
    size_t nl = strlen(name);
    const char *p = text;

    while ((p = strstr(p, "#define ")) != NULL) {
        p += 8;
        if (!strncmp(p, name, nl) && (p[nl] == ' ' || p[nl] == '\t'))
            return (uint32_t)strtoul(p + nl, NULL, 0);
    }
    return 0;
}

/* Install the policy exactly as `serene-ctl compile --target sw` would
 * send it to a running serene-switch. */
static int install_policy(cf_ctx *c, const char *policy_path)
{
    size_t len = 0, blen = 0;
    char *text = cf_slurp(policy_path, &len), *buf = NULL, err[256];
    serene_ctl_policy *pol = NULL;
    FILE *mem;
    int rc = -1;

    if (!text)
        return -1;
    if (serene_ctl_policy_parse(text, len, c->job.ring, &pol, err, sizeof err)) {
        fprintf(stderr, "%s:%s\n", policy_path, err);
        goto out;
    }
    mem = open_memstream(&buf, &blen);
    if (!mem)
        goto out;
    if (serene_ctl_emit(mem, SERENE_CTL_TARGET_SW, pol, &c->job, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", policy_path, err);
        fclose(mem);
        goto out;
    }
    fclose(mem);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char reply[SR_CTL_REPLY_MAX];

        sr_ctl_exec(c->pipe, line, reply, sizeof reply);
        if (strncmp(reply, "ok", 2)) {
            fprintf(stderr, "%s: '%s' refused: %s\n", policy_path, line, reply);
            goto out;
        }
    }
    rc = 0;
out:
    serene_ctl_policy_free(&pol);
    free(buf);
    free(text);
    return rc;
}

int cf_ctx_init(cf_ctx *c, const char *job_path, const char *policy_path,
                const char *constants_path)
{
    size_t len = 0;
    char *text, err[256];
    sr_pipe_job_params jp;
    const char *why = NULL;

    memset(c, 0, sizeof *c);
    c->ts = CF_T0_US;
    text = cf_slurp(constants_path, &len);
    if (!text)
        return -1;
    c->elems = cf_p4_define(text, "SR_P4_ELEMS");
    c->slots = cf_p4_define(text, "SR_P4_SLOTS");
    c->max_jobs = cf_p4_define(text, "SR_P4_MAX_JOBS");
    free(text);
    if (!c->elems || !c->slots || !c->max_jobs) {
        fprintf(stderr, "%s: no #define SR_P4_ELEMS / SR_P4_SLOTS / SR_P4_MAX_JOBS\n",
                constants_path);
        return -1;
    }
    text = cf_slurp(job_path, &len);
    if (!text)
        return -1;
    if (serene_ctl_job_parse(text, len, job_path, &c->job, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        free(text);
        return -1;
    }
    free(text);
    if (c->job.first_clock != 0) {
        fprintf(stderr, "%s: first_clock must be 0: the software switch starts every job there\n",
                job_path);
        return -1;
    }
    sr_pipe_job_params_init(&jp);
    jp.n_workers = c->job.n_workers;
    jp.elems_per_pkt = c->elems;
    jp.pool_slots = c->slots;
    jp.store_words = c->job.store_words;
    jp.ring = c->job.ring;
    jp.token = c->job.token;
    if (c->job.fb_addr) {
        /* A shared job (share.job): a first-come pool of the blocks the
         * job file leases, which the scenario takes for slots 0..L-1 in
         * that order, as serene-ctl's lease_reg entries give them on BMv2. */
        if (c->job.lease == 0) {
            fprintf(stderr, "%s: lease 0: a pool holds at least one block\n", job_path);
            return -1;
        }
        jp.fallback = 1;
        jp.fb_peer.ip = c->job.fb_addr;
        jp.fb_peer.port = c->job.fb_udp_port;
    }
    if (sr_pipe_job_params_check(&jp, &why)) {
        fprintf(stderr, "%s: %s\n", job_path, why);
        return -1;
    }
    c->out = calloc(1, sizeof *c->out);
    c->roce = sr_roce_sw_create();
    if (!c->out || !c->roce || sr_pipe_create(&c->pipe) ||
        (c->job.fb_addr &&
         sr_pipe_set_pool(c->pipe, c->job.lease < c->slots ? c->job.lease : c->slots, c->elems,
                          SR_POOL_FIRST)) ||
        sr_pipe_job_add(c->pipe, c->job.id, &jp)) {
        fprintf(stderr, "cannot set up the pipeline: out of memory\n");
        cf_ctx_fini(c);
        return -1;
    }
    if (install_policy(c, policy_path)) {
        cf_ctx_fini(c);
        return -1;
    }
    return 0;
}

void cf_ctx_fini(cf_ctx *c)
{
    sr_pipe_destroy(&c->pipe);
    sr_roce_sw_destroy(&c->roce);
    free(c->out);
    c->out = NULL;
    cf_frames_free(&c->in);
    cf_frames_free(&c->res);
}

static int ctl_run(cf_ctx *c, const char *sw)
{
    char reply[SR_CTL_REPLY_MAX];

    if (!strcmp(sw, "-"))
        return 0;
    sr_ctl_exec(c->pipe, sw, reply, sizeof reply);
    if (strncmp(reply, "ok", 2)) {
        fprintf(stderr, "control step '%s' refused: %s\n", sw, reply);
        return -EIO;
    }
    return 0;
}

int cf_control(cf_ctx *c, const char *sw, const char *bmv2)
{
    cf_ctl *k = &c->ctl[c->n_ctl];

    if (c->n_ctl == CF_MAX_CTL)
        return -ENOSPC;
    if (strlen(sw) >= sizeof k->sw || strlen(bmv2) >= sizeof k->bmv2 || strchr(sw, '\t') ||
        strchr(bmv2, '\t'))
        return -EINVAL;
    if (ctl_run(c, sw))
        return -EIO;
    k->ts = c->ts;
    strcpy(k->sw, sw);
    strcpy(k->bmv2, bmv2);
    c->n_ctl++;
    return 0;
}

int cf_ctl_write(const char *path, const cf_ctx *c)
{
    FILE *f = fopen(path, "w");

    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "# control steps: before the input frame with timestamp TS (us), the software\n"
               "# switch's command, then BMv2's (simple_switch_CLI); - for none\n");
    for (unsigned i = 0; i < c->n_ctl; i++)
        fprintf(f, "%llu\t%s\t%s\n", (unsigned long long)c->ctl[i].ts, c->ctl[i].sw,
                c->ctl[i].bmv2);
    if (fclose(f)) {
        fprintf(stderr, "%s: write failed\n", path);
        return -1;
    }
    return 0;
}

int cf_ctl_read(const char *path, cf_ctx *c)
{
    FILE *f = fopen(path, "r");
    char line[256];

    c->n_ctl = 0;
    if (!f)
        return errno == ENOENT ? 0 : (fprintf(stderr, "%s: %s\n", path, strerror(errno)), -1);
    while (fgets(line, sizeof line, f)) {
        cf_ctl *k = &c->ctl[c->n_ctl];
        char *sw, *bm, *nl;

        if (line[0] == '#')
            continue;
        if ((nl = strchr(line, '\n')))
            *nl = '\0';
        sw = strchr(line, '\t');
        bm = sw ? strchr(sw + 1, '\t') : NULL;
        if (c->n_ctl == CF_MAX_CTL || !bm || (size_t)(bm - sw - 1) >= sizeof k->sw ||
            strlen(bm + 1) >= sizeof k->bmv2) {
            fprintf(stderr, "%s: bad control step '%.60s'\n", path, line);
            fclose(f);
            return -1;
        }
        k->ts = strtoull(line, NULL, 10);
        memcpy(k->sw, sw + 1, (size_t)(bm - sw - 1));
        k->sw[bm - sw - 1] = '\0';
        strcpy(k->bmv2, bm + 1);
        c->n_ctl++;
    }
    fclose(f);
    return 0;
}

int cf_ctl_apply(cf_ctx *c, uint64_t ts, unsigned *next)
{
    for (; *next < c->n_ctl && c->ctl[*next].ts <= ts; (*next)++)
        if (ctl_run(c, c->ctl[*next].sw))
            return -EIO;
    return 0;
}

/* The frames of one action, replica by replica. */
static int emit_action(cf_ctx *c, const sr_pipe_action *a, const sr_frame_addr *req,
                       const sr_roce_req *rreq, uint64_t ts)
{
    static uint8_t frame[SR_ROCE_FRAME_MAX];

    for (unsigned k = 0; k < a->n_dests; k++) {
        sr_frame_addr o;
        size_t len;
        int rc;

        memcpy(o.src_mac, req->dst_mac, 6);
        o.src_ip = req->dst_ip;
        o.src_port = req->dst_port;
        /* Broadcast to a peer that did not send the request (a multicast
         * copy, a relay to a shared job's fallback or from it): the job
         * file names no MAC. */
        if (a->multicast || a->dests[k].peer.ip != req->src_ip ||
            a->dests[k].peer.port != req->src_port) {
            memcpy(o.dst_mac, bcast_mac, 6);
        } else {
            memcpy(o.dst_mac, req->src_mac, 6);
        }
        o.dst_ip = a->dests[k].peer.ip;
        o.dst_port = a->dests[k].peer.port;
        if (sr_roce_sw_is_roce(c->roce, rreq, a, k)) {
            len = sr_roce_sw_egress(c->roce, rreq, a, k, &o, frame, sizeof frame);
            if (!len) /* no QP to answer on: nothing goes out */
                continue;
        } else {
            sr_pipe_replica_hdr(a, k, frame + SR_FRAME_HLEN);
            memcpy(frame + SR_FRAME_HLEN + SR_WIRE_HDR_LEN, a->payload, a->payload_len);
            len = sr_frame_pack(frame, sizeof frame, &o, SR_WIRE_HDR_LEN + a->payload_len);
        }
        if (!len)
            return -EINVAL;
        rc = cf_frames_add(&c->res, frame, len, ts);
        if (rc)
            return rc;
    }
    return 0;
}

int cf_step(cf_ctx *c, const uint8_t *frame, size_t len, uint64_t ts, int record)
{
    sr_frame_addr a;
    const uint8_t *msg;
    size_t msg_len;
    sr_peer src;
    sr_roce_req req, *rreq = NULL;
    int rc;

    if (record && (rc = cf_frames_add(&c->in, frame, len, ts)))
        return rc;
    /* Not Serene's (not IPv4/UDP, bad checksums, another port): the P4
     * program hands such frames to its forwarding table, which the
     * conformance setup leaves empty, and the software switch never sees
     * them. Either way nothing comes out. */
    if (sr_frame_parse(frame, len, &a, &msg, &msg_len) != SR_FRAME_OK)
        return 0;
    if (a.dst_port == SR_ROCE_UDP_PORT) {
        /* RoCEv2: a frame the port rejects (bad ICRC, another opcode, a
         * SEND naming another binding) is dropped, as by any target. */
        static uint8_t roce_msg[SR_WIRE_MAX_MSG];
        int n = sr_roce_sw_ingress(c->roce, frame, len, roce_msg, &src, &req);

        if (n < 0)
            return 0;
        rreq = &req;
        sr_pipe_process(c->pipe, &src, roce_msg, (size_t)n, c->out);
        sr_roce_sw_learn(c->roce, &req, c->out);
    } else if (a.dst_port == SR_WIRE_UDP_PORT) {
        src.ip = a.src_ip;
        src.port = a.src_port;
        sr_pipe_process(c->pipe, &src, msg, msg_len, c->out);
        sr_roce_sw_learn(c->roce, NULL, c->out);
    } else {
        return 0;
    }
    for (unsigned i = 0; i < c->out->n; i++)
        if ((rc = emit_action(c, &c->out->act[i], &a, rreq, ts)))
            return rc;
    return 0;
}
