/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tna_model_cli.c - the C model (tna_model.h) on stdin and stdout, one
 * line each way, for a test that runs the same packets through the
 * executed program (p4/tna/exec) and compares. Numbers are decimal.
 *
 *   J id full_mask store_words   the job the next requests are of
 *   C blk                        clear a register block
 *   P op worker seq shadow slot count exp next_exp flags status offset aux
 *     v0 .. v31                  one request of the job: tna_model_ar
 *                                (AR_DATA, AR_PROBE) or tna_model_store
 *     -> O verdict err op job worker seq shadow slot count exp next_exp
 *          flags status offset aux vals[0 .. count)
 *   R cell                       -> R lo hi nexp
 *   L idx                        -> L lane_0[idx] .. lane_31[idx]
 *   U idx                        -> U push_last[idx]
 *   E blk                        -> E ar_ctr[blk * 4 .. blk * 4 + 3]
 * A line it cannot read ends it with status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tna_model.h"

static int fields(char *line, unsigned long *v, int max)
{
    int n = 0;
    for (char *s = strtok(line, " \t\n"); s && n < max; s = strtok(NULL, " \t\n")) {
        char *end;
        v[n++] = strtoul(s, &end, 10);
        if (*end)
            return -1;
    }
    return n;
}

static void print_out(const tna_out *o)
{
    const sr_hdr *h = &o->hdr;
    printf("O %d %u %u %u %u %u %u %u %u %d %d %u %u %u %u", (int)o->verdict, o->err, h->op,
           h->job, h->worker, h->seq, h->shadow, h->slot, h->count, h->exp, h->next_exp,
           h->flags, h->status, h->offset, h->aux);
    for (unsigned i = 0; o->verdict != TNA_ERROR && i < h->count && i < TNA_ELEMS; i++)
        printf(" %u", o->vals[i]);
    printf("\n");
}

static int request(tna_model *m, const tna_job *j, const unsigned long *v, int n)
{
    if (n != 12 + (int)TNA_ELEMS)
        return -1;
    sr_hdr h = {.version = SR_WIRE_VERSION, .op = (uint8_t)v[0], .job = j->id,
                .worker = (uint16_t)v[1], .seq = (uint32_t)v[2], .shadow = (uint8_t)v[3],
                .slot = (uint16_t)v[4], .count = (uint16_t)v[5], .exp = (int8_t)v[6],
                .next_exp = (int8_t)v[7], .flags = (uint8_t)v[8], .status = (uint8_t)v[9],
                .offset = (uint32_t)v[10], .aux = (uint32_t)v[11]};
    uint32_t vals[TNA_ELEMS];
    for (unsigned i = 0; i < TNA_ELEMS; i++)
        vals[i] = (uint32_t)v[12 + i];
    tna_out o;
    if (h.op == SR_OP_PUSH || h.op == SR_OP_PULL)
        tna_model_store(m, j, &h, vals, &o);
    else
        tna_model_ar(m, j, &h, vals, &o);
    print_out(&o);
    return 0;
}

static int command(tna_model *m, tna_job *j, char *line)
{
    char c = line[0];
    unsigned long v[64];
    int n = fields(line + 1, v, 64);
    if (n < 0)
        return -1;
    if (c == 'J' && n == 3) {
        *j = (tna_job){(uint16_t)v[0], (uint32_t)v[1], (uint16_t)v[2]};
    } else if (c == 'C' && n == 1 && v[0] < TNA_MAX_JOBS) {
        tna_model_clear_block(m, (unsigned)v[0]);
    } else if (c == 'P') {
        return request(m, j, v, n);
    } else if (c == 'R' && n == 1 && v[0] < TNA_CELLS) {
        printf("R %u %u %u\n", m->round[v[0]].lo, m->round[v[0]].hi, m->nexp[v[0]]);
    } else if (c == 'L' && n == 1 && v[0] < TNA_LANE_ENTRIES) {
        printf("L");
        for (unsigned i = 0; i < TNA_ELEMS; i++)
            printf(" %u", m->lane[i][v[0]]);
        printf("\n");
    } else if (c == 'U' && n == 1 && v[0] < TNA_MAX_JOBS * TNA_STORE_ROWS * TNA_MAX_WORKERS) {
        printf("U %u\n", m->push_last[v[0]]);
    } else if (c == 'E' && n == 1 && v[0] < TNA_MAX_JOBS) {
        printf("E %llu %llu %llu %llu\n", (unsigned long long)m->ev[v[0] * 4],
               (unsigned long long)m->ev[v[0] * 4 + 1], (unsigned long long)m->ev[v[0] * 4 + 2],
               (unsigned long long)m->ev[v[0] * 4 + 3]);
    } else {
        return -1;
    }
    return 0;
}

int main(void)
{
    tna_model *m = malloc(sizeof *m);
    tna_job j = {0, 1, 0};
    char line[1024];
    if (!m)
        return 1;
    tna_model_init(m, 0);
    while (fgets(line, sizeof line, stdin)) {
        if (command(m, &j, line) < 0) {
            fprintf(stderr, "tna_model_cli: cannot read: %s", line);
            free(m);
            return 2;
        }
        fflush(stdout);
    }
    free(m);
    return 0;
}
