/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allreduce.h - the streaming allreduce module: its state and its op class
 * (allreduce.c says how it works). The public calls serene_allreduce and
 * serene_allreduce_start live in allreduce.c too.
 */
#ifndef SERENE_ALLREDUCE_ALLREDUCE_H
#define SERENE_ALLREDUCE_ALLREDUCE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "reliab/window.h"
#include "engine/engine.h"
#include "proto/wire.h"

/* Worker-side state of one switch slot (one packet in flight at most). */
typedef struct sr_ar_slot {
    uint8_t next_ver;    /* shadow bit of the slot's next new round; persists across calls */
    uint8_t next_round;  /* its round number mod 256, from 1: the request's status (wire.h) */
    uint8_t ver;         /* shadow bit of the round in flight */
    uint8_t busy;        /* a round is in flight */
    uint8_t held;        /* the switch answered AR_HELD for it: it waited for a peer */
    uint8_t resent;      /* the switch answered AR_NAK: it was resent whole */
    uint8_t done_ver;    /* the last round done, probed, never held nor resent: shadow bit, */
    uint16_t count;      /* words of the round in flight (0: exponent-hint round) */
    uint32_t offset;     /* element offset of the round in flight */
    uint32_t next_chunk; /* chunk this slot sends after the answer */
    int8_t wait_exp;     /* exponent of its next round, ready and waiting for the window */
    uint32_t done_seq, done_offset; /* ... call, offset, */
    uint64_t done_delay_ns;         /* ... answer delay (0: none) */
    uint64_t done_probe_ns;         /* ... and first probe */
    uint64_t sent_ns;               /* when the round in flight was sent */
    uint64_t probe_ns;              /* when its timer first fired (0: never): its first probe */
    uint64_t probe_out_ns;          /* when its last probe went, unanswered yet (0: none) */
    uint8_t probe[SR_WIRE_HDR_LEN]; /* the round's AR_PROBE, queued when its timer expires */
} sr_ar_slot;

typedef struct sr_ar {
    /* An allreduce failed in a way that leaves the switch's slots out of
     * step with this worker: later ones are refused. Any thread reads it. */
    _Atomic int broken;
    /* --- engine only ------------------------------------------------------ */
    int bits;           /* B of the 32-bit fixed-point scheme for this job (quant.h) */
    int bits16;         /* B of the 16-bit one (quant16.h) */
    float *scratch;     /* 2 * elems_per_pkt floats: a 16-bit float chunk as float32 */
    uint32_t aux;       /* the current call's aux: its count, and SR_WIRE_AUX_V16 */
    sr_ar_slot *slots;  /* the engine's window of slots */
    uint32_t call_seq;  /* calls started; the switch pairs calls by it */
    uint32_t n_chunks, chunks_done, w_eff;
    /* The window the last call's last result announced (its status: a
     * shared job's switch memory; 0: every slot), before the first call
     * the JOIN_ACK's. Every worker reads the same result (and the switch
     * gives an incarnation's JOIN_ACKs one window), so a call uses the
     * same slots on all. */
    uint32_t lease_w;
    sr_arw win;        /* which ready round goes next (window.h); persists across calls */
    int nonfinite; /* the current call met a NaN/Inf chunk (own or reduced) */
    int stream;    /* the current call's result is decoded with decode_stream */
    /* --- the thread inside a blocking call (one at a time) ----------------- */
    int8_t *call_exps; /* its chunks' exponents (serene_op.exps) */
    size_t call_exps_cap;
} sr_ar;

/* A result at least this large is decoded around the cache
 * (sr_quant_kernels.decode_stream, decode_avg_stream): by the time the
 * call ends, most of it has left a core's L2 (1-2 MiB on today's servers)
 * and much of a shared L3, so ordinary stores would read every line in
 * only to write it back. */
#define SR_AR_STREAM_MIN_BYTES (8u << 20)

extern const sr_op_class sr_allreduce_class;

/* Validate and queue an allreduce, as serene_allreduce_typed_start does,
 * inside the caller's sr_call_enter: *h = its handle. Returns 0 or that
 * call's errors. announce (may be NULL) is incremented once the op can no
 * longer fail, just before it is queued. (The stream mode, lib/ssp/stale.c,
 * starts its clocks' allreduces with it, announce its clock counter.) */
int sr_allreduce_submit(sr_engine *e, const void *sendbuf, void *recvbuf, size_t count,
                        serene_dtype dtype, serene_reduce_op op, unsigned flags, serene_op **h,
                        _Atomic uint32_t *announce);

#endif /* SERENE_ALLREDUCE_ALLREDUCE_H */
