/* SPDX-License-Identifier: Apache-2.0 */
/*
 * epoch.c - a new incarnation in O(1): incarnation tags on the allreduce
 * slots and the store rows, cleared lazily (see services.h).
 *
 * A job's epoch counts its incarnations. Each slot (both its cells: the
 * allreduce rules read a cell and its other version together) and each
 * store row (its words, its push-table entries and its step state: a PUSH,
 * PULL or STEP stays in one row) carries the epoch it was last cleared in. The dispatch touches
 * the slot or row a request names before its control sees it
 * (ingress.c): a stale tag clears that slot or row and takes the current
 * epoch. So a new incarnation is one increment, whatever the store's or
 * the pool's size, and what a control reads is always what an eager clear
 * would have left. Every 2^32 incarnations the epoch wraps to 0: then,
 * once, everything is cleared eagerly and every tag set to 0, so an old
 * tag can never pass for a current one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controls.h"

int sr_epoch_alloc(sr_pipe_job *j)
{
    j->epoch = 0;
    j->slot_epoch = calloc(j->slots ? j->slots : 1, sizeof *j->slot_epoch);
    j->row_epoch = j->rows ? calloc(j->rows, sizeof *j->row_epoch) : NULL;
    return !j->slot_epoch || (j->rows && !j->row_epoch) ? -ENOMEM : 0;
}

void sr_epoch_free(sr_pipe_job *j)
{
    free(j->slot_epoch);
    free(j->row_epoch);
    j->slot_epoch = NULL;
    j->row_epoch = NULL;
}

void sr_epoch_next(sr_pipe_job *j)
{
    if (++j->epoch != 0)
        return;
    sr_allreduce_clear(j);
    sr_store_clear(j);
    if (j->step_on)
        sr_step_clear(j);
    memset(j->slot_epoch, 0, j->slots * sizeof *j->slot_epoch);
    if (j->row_epoch)
        memset(j->row_epoch, 0, j->rows * sizeof *j->row_epoch);
}

void sr_epoch_touch_slot(sr_pipe_job *j, uint32_t slot)
{
    size_t c = 2u * (size_t)slot;

    if (slot >= j->slots || j->slot_epoch[slot] == j->epoch)
        return;
    for (size_t k = c; k < c + 2; k++) {
        j->seen[k] = 0;
        j->cnt[k] = 0;
        j->m_seq[k] = 0;
        j->m_off[k] = 0;
        j->m_total[k] = 0;
        j->m_count[k] = 0;
        j->m_exp[k] = 0;
        j->nexp[k] = 0;
        j->up_wait[k] = 0;
    }
    /* A shared job's blocks went back to the pool with its incarnation. */
    if (!j->params.fallback)
        memset(j->values + c * j->elems, 0, 2u * j->elems * sizeof *j->values);
    j->slot_epoch[slot] = j->epoch;
}

void sr_epoch_touch_row(sr_pipe_job *j, uint32_t offset)
{
    uint32_t row = offset / j->elems, words;

    if (offset >= j->store_words || j->row_epoch[row] == j->epoch)
        return;
    words = j->store_words - row * j->elems;
    if (words > j->elems)
        words = j->elems;
    memset(j->store + (size_t)row * j->elems, 0, words * sizeof *j->store);
    memset(j->push_last + (size_t)row * j->n, 0, j->n * sizeof *j->push_last);
    sr_step_clear_row(j, row);
    j->row_epoch[row] = j->epoch;
}

int sr_epoch_slot_current(const sr_pipe_job *j, uint32_t slot)
{
    return slot < j->slots && j->slot_epoch[slot] == j->epoch;
}
