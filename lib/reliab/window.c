/* SPDX-License-Identifier: Apache-2.0 */
/* window.c - the congestion window of allreduce rounds, step pieces and store
 * requests (see window.h). */
#include <errno.h>
#include <stdlib.h>

#include "reliab/window.h"

int sr_arw_init(sr_arw *w, uint32_t slots)
{
    if (!w || slots == 0)
        return -EINVAL;
    w->heap = calloc(slots, sizeof *w->heap);
    w->ndone = calloc(slots, sizeof *w->ndone);
    if (!w->heap || !w->ndone) {
        sr_arw_fini(w);
        return -ENOMEM;
    }
    w->cap = slots;
    w->cwnd_max = w->ssthresh = slots;
    w->cwnd = slots < SR_ARW_INIT ? slots : SR_ARW_INIT;
    w->cwnd_min = slots / SR_ARW_FLOOR_DIV > 2 ? slots / SR_ARW_FLOOR_DIV : slots < 2 ? slots : 2;
    w->cwnd_acc = 0;
    w->min_rtt_ns = w->min_cur_ns = w->min_prev_ns = 0;
    w->period_ns = w->srtt_ns = 0;
    sr_arw_begin(w);
    return 0;
}

void sr_arw_fini(sr_arw *w)
{
    free(w->heap);
    free(w->ndone);
    w->heap = NULL;
    w->ndone = NULL;
    w->cap = w->n = 0;
}

void sr_arw_begin(sr_arw *w)
{
    w->n = 0;
    w->inflight = 0;
    w->base = w->sent_hi = w->recover = 0;
}

void sr_arw_call(sr_arw *w, uint32_t units, uint32_t slots)
{
    sr_arw_begin(w);
    w->units = units;
    w->slots = slots;
    for (uint32_t s = 0; s < slots; s++) {
        w->ndone[s] = 0;
        sr_arw_ready(w, s, s);
    }
}

void sr_arw_done(sr_arw *w, uint32_t unit)
{
    uint32_t s = unit % w->slots, b = w->base;
    w->ndone[s]++;
    while (b < w->units && b / w->slots < w->ndone[b % w->slots])
        b++;
    sr_arw_answered(w, b, w->srtt_ns);
    if (unit + w->slots < w->units)
        sr_arw_ready(w, unit + w->slots, s);
}

void sr_arw_ready(sr_arw *w, uint32_t unit, uint32_t slot)
{
    uint64_t key = (uint64_t)unit << 32 | slot;
    uint32_t i = w->n++; /* cap = slots, one entry per slot at most */

    while (i > 0 && w->heap[(i - 1) / 2] > key) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = key;
}

static void heap_pop(sr_arw *w)
{
    uint64_t last = w->heap[--w->n];
    uint32_t i = 0;

    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= w->n)
            break;
        if (c + 1 < w->n && w->heap[c + 1] < w->heap[c])
            c++;
        if (w->heap[c] >= last)
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->n)
        w->heap[i] = last;
}

/* The smoothed delay shows a queue: twice the base delay and more. */
static int queueing(const sr_arw *w, uint64_t srtt_ns)
{
    return w->min_rtt_ns && srtt_ns >= 2 * w->min_rtt_ns + SR_ARW_QUEUE_NS;
}

int sr_arw_next(sr_arw *w, uint32_t *unit, uint32_t *slot)
{
    if (w->n == 0)
        return 0;
    uint32_t u = (uint32_t)(w->heap[0] >> 32);
    if (w->inflight >= w->cwnd && u != w->base)
        return 0;
    *unit = u;
    *slot = (uint32_t)w->heap[0];
    heap_pop(w);
    w->inflight++;
    if (u >= w->sent_hi)
        w->sent_hi = u + 1;
    return 1;
}

void sr_arw_answered(sr_arw *w, uint32_t base, uint64_t srtt_ns)
{
    if (w->inflight)
        w->inflight--;
    w->base = base;
    if (w->cwnd >= w->cwnd_max)
        return;
    if (w->cwnd < w->ssthresh && queueing(w, srtt_ns))
        w->ssthresh = w->cwnd; /* the path queues: slow start ends here */
    if (w->cwnd < w->ssthresh) { /* slow start: doubles per round trip */
        w->cwnd++;
    } else if (++w->cwnd_acc >= w->cwnd) {
        w->cwnd++;
        w->cwnd_acc = 0;
    }
}

void sr_arw_rtt(sr_arw *w, uint64_t rtt_ns, uint64_t now_ns)
{
    if (rtt_ns == 0)
        rtt_ns = 1;
    w->srtt_ns = w->srtt_ns ? (7 * w->srtt_ns + rtt_ns) / 8 : rtt_ns;
    if (w->min_cur_ns == 0 || now_ns - w->period_ns >= SR_ARW_MIN_PERIOD_NS) {
        int two = w->min_cur_ns && now_ns - w->period_ns >= 2 * SR_ARW_MIN_PERIOD_NS;
        w->min_prev_ns = two ? 0 : w->min_cur_ns;
        w->min_cur_ns = rtt_ns;
        w->period_ns = now_ns;
    } else if (rtt_ns < w->min_cur_ns) {
        w->min_cur_ns = rtt_ns;
    }
    w->min_rtt_ns = w->min_prev_ns && w->min_prev_ns < w->min_cur_ns ? w->min_prev_ns
                                                                     : w->min_cur_ns;
}

int sr_arw_delay(sr_arw *w, uint32_t unit, uint64_t srtt_ns)
{
    uint32_t floor = w->cwnd_max < 2 ? w->cwnd_max : 2;
    if (unit < w->recover || w->cwnd <= floor || !queueing(w, srtt_ns))
        return 0;
    w->cwnd = w->ssthresh = w->cwnd / 2 > floor ? w->cwnd / 2 : floor;
    w->cwnd_acc = 0;
    w->recover = w->sent_hi;
    return 1;
}

int sr_arw_loss(sr_arw *w, uint32_t unit, uint64_t srtt_ns)
{
    if (unit < w->recover || w->cwnd <= w->cwnd_min || !queueing(w, srtt_ns))
        return 0;
    w->cwnd = w->ssthresh = w->cwnd / 2 > w->cwnd_min ? w->cwnd / 2 : w->cwnd_min;
    w->cwnd_acc = 0;
    w->recover = w->sent_hi;
    return 1;
}
