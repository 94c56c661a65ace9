/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_int.h - libserene-ctl internals shared by its files: the compiled
 * policy (schedule rules plus reactive rules) and small helpers. Not
 * installed.
 */
#ifndef SERENE_CTL_INT_H
#define SERENE_CTL_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "serene/ctl.h"

#define CTL_MAX_RULES 64    /* compiled static rules */
#define CTL_MAX_REACTIVE 32 /* `when` rules */
#define CTL_RING_MAX 4096u  /* serene-switch's largest ring (SR_BARRIER_RING_MAX) */

enum ctl_cond {
    CTL_COND_WAIT,    /* wait_fraction OP X for K clocks */
    CTL_COND_CLOCK,   /* clock >= N */
    CTL_COND_PLATEAU, /* loss_plateau for K clocks */
    CTL_COND_SPREAD,  /* spread OP N for K clocks */
};

enum ctl_op { CTL_OP_GT, CTL_OP_GE, CTL_OP_LT, CTL_OP_LE };

enum ctl_act {
    CTL_ACT_MODE, /* set (mode, s) */
    CTL_ACT_INC,  /* staleness += delta [max bound] */
    CTL_ACT_DEC,  /* staleness -= delta [min bound] */
};

typedef struct ctl_reactive {
    enum ctl_cond cond;
    enum ctl_op op;
    double threshold;    /* wait_fraction; spread: N */
    uint32_t clocks;     /* K of "for K clocks", or N of "clock >= N" */
    enum ctl_act act;
    serene_ctl_mode mode; /* CTL_ACT_MODE */
    uint32_t s;
    uint32_t delta;
    int has_bound;
    uint32_t bound;
    int line, col;
} ctl_reactive;

struct serene_ctl_policy {
    unsigned n_rules;
    serene_ctl_rule rules[CTL_MAX_RULES];
    unsigned n_reactive;
    ctl_reactive reactive[CTL_MAX_REACTIVE];
    int has_stop;
    uint32_t stop;
    uint32_t s_max; /* R - 2 for the ring given, or CTL_RING_MAX - 2 */
    uint32_t fixed_from; /* first `when clock >= N` clock; UINT32_MAX if none */
};

/* snprintf into err[cap] when err is not NULL. */
__attribute__((format(printf, 3, 4))) void ctl_errf(char *err, size_t cap, const char *fmt, ...);

const char *ctl_op_name(enum ctl_op op);

#endif /* SERENE_CTL_INT_H */
