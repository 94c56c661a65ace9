/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy.c - the policy language of serene-ctl: a hand-written lexer, a
 * recursive-descent parser, and the compiler to clock-range rules.
 *
 * The language (also in lib/ctl/README.md). Statements are separated by
 * ';' or new lines; '#' starts a comment that runs to the end of the line;
 * keywords are lower case; numbers are decimal, clocks and s in 0..2^32-1.
 *
 *   policy    := [stmt] { (';' | NEWLINE) [stmt] }
 *   stmt      := sched | when | stop
 *   sched     := mode [ 'until' 'clock' NUM ]
 *   mode      := 'bsp' | 'asp' | 'ssp' NUM
 *   stop      := 'stop' 'at' 'clock' NUM
 *   when      := 'when' cond ':' action
 *   cond      := 'wait_fraction' cmp REAL 'for' NUM 'clocks'
 *              | 'spread' cmp NUM 'for' NUM 'clocks'
 *              | 'loss_plateau' 'for' NUM 'clocks'
 *              | 'clock' '>=' NUM
 *   cmp       := '>' | '>=' | '<' | '<='
 *   action    := mode
 *              | 'staleness' '+=' NUM [ 'max' NUM ]
 *              | 'staleness' '-=' NUM [ 'min' NUM ]
 *
 * Semantics:
 * - The schedule statements run one after the other from clock 0: each
 *   `until clock U` ends its statement at U (exclusive); the until clocks
 *   must increase; a statement without `until` runs forever and must be the
 *   last schedule statement. No schedule at all means `bsp`. A schedule
 *   whose last statement has an `until` ends there: switches keep its last
 *   (mode, s) in force past it, and `serene-ctl run` stops at that clock.
 * - `when clock >= N: MODE` overrides everything from clock N on (later N
 *   wins); it is compiled into the static rules, and once clock N is reached
 *   the controller makes no more reactive changes (the job converges under
 *   a fixed policy).
 * - `when wait_fraction ...`, `when spread ...` and `when loss_plateau ...` are reactive: only
 *   `serene-ctl run` evaluates them (see controller.c). wait_fraction is the
 *   fraction of the controller's status samples over the last K clocks in
 *   which some worker was held (high - low > s). `spread OP N` holds when
 *   the clock spread high - low (how far the slowest worker trails the
 *   fastest, whatever the policy lets them do) is OP N in every one of
 *   those samples.
 *   loss_plateau needs a loss signal the switch does not have: it comes from
 *   a metrics file (serene-ctl run --metrics FILE); without one it never
 *   fires.
 * - `staleness += D max M` turns BSP into SSP(D) and SSP(s) into
 *   SSP(min(s + D, M)); `staleness -= D min M` lowers s (SSP(0) is written
 *   as BSP). Both leave ASP alone.
 * - s must be <= R - 2 for the job's ring R when one is given, else
 *   <= 4094 (the software switch's largest ring).
 *
 * Errors are "LINE:COL: message", LINE and COL 1-based (COL in bytes), at
 * the token that is wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_int.h"

enum tok_kind {
    T_EOF,
    T_NL,    /* a new line or ';' */
    T_WORD,
    T_NUM,   /* digits, maybe with a fraction */
    T_COLON,
    T_GT,
    T_GE,
    T_LT,
    T_LE,
    T_PLUSEQ,
    T_MINUSEQ,
    T_BAD,   /* a character that starts no token */
};

typedef struct tok {
    enum tok_kind kind;
    const char *p; /* in the text */
    size_t len;
    int line, col;
} tok;

typedef struct parser {
    const char *s, *end;
    int line;
    const char *line_start;
    tok t; /* the current token */
    char *err;
    size_t errcap;
    serene_ctl_policy *pol;
    /* schedule statements as parsed */
    unsigned n_sched;
    struct {
        serene_ctl_mode mode;
        uint32_t s;
        int has_until;
        uint32_t until;
        int line, col;
    } sched[CTL_MAX_RULES];
} parser;

void ctl_errf(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;

    if (!err || !cap)
        return;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

const char *ctl_op_name(enum ctl_op op)
{
    switch (op) {
    case CTL_OP_GT: return ">";
    case CTL_OP_GE: return ">=";
    case CTL_OP_LT: return "<";
    case CTL_OP_LE: return "<=";
    }
    return "?";
}

const char *serene_ctl_mode_name(serene_ctl_mode mode)
{
    switch (mode) {
    case SERENE_CTL_BSP: return "bsp";
    case SERENE_CTL_SSP: return "ssp";
    case SERENE_CTL_ASP: return "asp";
    }
    return "?";
}

/* ---- lexer ---------------------------------------------------------------- */

static int is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

static void next(parser *ps)
{
    const char *s = ps->s;

    for (;;) {
        while (s < ps->end && (*s == ' ' || *s == '\t' || *s == '\r'))
            s++;
        if (s < ps->end && *s == '#') {
            while (s < ps->end && *s != '\n')
                s++;
            continue;
        }
        break;
    }
    ps->t.p = s;
    ps->t.line = ps->line;
    ps->t.col = (int)(s - ps->line_start) + 1;
    ps->t.len = 1;
    if (s >= ps->end) {
        ps->t.kind = T_EOF;
        ps->t.len = 0;
    } else if (*s == '\n' || *s == ';') {
        ps->t.kind = T_NL;
        if (*s == '\n') {
            ps->line++;
            ps->line_start = s + 1;
        }
    } else if (*s >= '0' && *s <= '9') {
        const char *e = s;
        while (e < ps->end && *e >= '0' && *e <= '9')
            e++;
        if (e + 1 < ps->end && *e == '.' && e[1] >= '0' && e[1] <= '9') {
            e++;
            while (e < ps->end && *e >= '0' && *e <= '9')
                e++;
        }
        ps->t.kind = T_NUM;
        ps->t.len = (size_t)(e - s);
    } else if (is_word_char(*s)) {
        const char *e = s;
        while (e < ps->end && is_word_char(*e))
            e++;
        ps->t.kind = T_WORD;
        ps->t.len = (size_t)(e - s);
    } else if (*s == ':') {
        ps->t.kind = T_COLON;
    } else if ((*s == '>' || *s == '<' || *s == '+' || *s == '-') && s + 1 < ps->end &&
               s[1] == '=') {
        ps->t.kind = *s == '>' ? T_GE : *s == '<' ? T_LE : *s == '+' ? T_PLUSEQ : T_MINUSEQ;
        ps->t.len = 2;
    } else if (*s == '>' || *s == '<') {
        ps->t.kind = *s == '>' ? T_GT : T_LT;
    } else {
        ps->t.kind = T_BAD;
    }
    ps->s = s + ps->t.len;
}

/* ---- errors --------------------------------------------------------------- */

/* How a token reads in a message. */
static void tok_desc(const tok *t, char *buf, size_t cap)
{
    if (t->kind == T_EOF)
        snprintf(buf, cap, "end of input");
    else if (t->kind == T_NL && *t->p == '\n')
        snprintf(buf, cap, "end of line");
    else if (t->kind == T_BAD && ((unsigned char)*t->p < 0x20 || (unsigned char)*t->p >= 0x7f))
        snprintf(buf, cap, "byte 0x%02x", (unsigned char)*t->p);
    else
        snprintf(buf, cap, "'%.*s'", t->len > 32 ? 32 : (int)t->len, t->p);
}

__attribute__((format(printf, 3, 4))) static int fail_at(parser *ps, const tok *t,
                                                         const char *fmt, ...)
{
    char msg[SERENE_CTL_ERR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctl_errf(ps->err, ps->errcap, "%d:%d: %s", t->line, t->col, msg);
    return -EINVAL;
}

static int unexpected(parser *ps, const char *expected)
{
    char d[48];

    tok_desc(&ps->t, d, sizeof d);
    return fail_at(ps, &ps->t, "unexpected %s, expected %s", d, expected);
}

static int is_word(const tok *t, const char *w)
{
    return t->kind == T_WORD && t->len == strlen(w) && !memcmp(t->p, w, t->len);
}

/* Expect keyword w. */
static int expect_word(parser *ps, const char *w, const char *after)
{
    char what[64];

    if (is_word(&ps->t, w)) {
        next(ps);
        return 0;
    }
    snprintf(what, sizeof what, "'%s' after '%s'", w, after);
    return unexpected(ps, what);
}

/* A whole number in 0..UINT32_MAX. */
static int number(parser *ps, const char *what, uint32_t *out)
{
    uint64_t v = 0;

    if (ps->t.kind != T_NUM)
        return unexpected(ps, what);
    for (size_t i = 0; i < ps->t.len; i++) {
        if (ps->t.p[i] == '.')
            return fail_at(ps, &ps->t, "%s must be a whole number, not '%.*s'", what,
                           (int)ps->t.len, ps->t.p);
        v = v * 10 + (uint64_t)(ps->t.p[i] - '0');
        if (v > UINT32_MAX)
            return fail_at(ps, &ps->t, "number %.*s is out of range (0..4294967295)",
                           ps->t.len > 24 ? 24 : (int)ps->t.len, ps->t.p);
    }
    *out = (uint32_t)v;
    next(ps);
    return 0;
}

/* ---- parser --------------------------------------------------------------- */

/* s of SSP, within the ring bound. */
static int staleness_value(parser *ps, const char *what, uint32_t *s)
{
    tok at = ps->t;
    int rc = number(ps, what, s);

    if (rc)
        return rc;
    if (*s > ps->pol->s_max)
        return fail_at(ps, &at, "s %" PRIu32 " is above %" PRIu32 ", the most a ring of %" PRIu32
                                " allows",
                       *s, ps->pol->s_max, ps->pol->s_max + 2);
    return 0;
}

/* mode := bsp | asp | ssp NUM. what: the message for a non-mode word. */
static int mode(parser *ps, const char *expected, serene_ctl_mode *m, uint32_t *s)
{
    *s = 0;
    if (is_word(&ps->t, "bsp") || is_word(&ps->t, "asp")) {
        *m = is_word(&ps->t, "bsp") ? SERENE_CTL_BSP : SERENE_CTL_ASP;
        next(ps);
        return 0;
    }
    if (is_word(&ps->t, "ssp")) {
        tok at = ps->t;
        next(ps);
        *m = SERENE_CTL_SSP;
        if (ps->t.kind != T_NUM)
            return fail_at(ps, &at, "ssp needs a staleness: 'ssp S'");
        return staleness_value(ps, "the staleness S of ssp", s);
    }
    if (ps->t.kind == T_WORD)
        return fail_at(ps, &ps->t, "unknown mode '%.*s' (%s)", ps->t.len > 32 ? 32 : (int)ps->t.len,
                       ps->t.p, expected);
    return unexpected(ps, expected);
}

static int sched_stmt(parser *ps)
{
    tok at = ps->t;
    serene_ctl_mode m;
    uint32_t s, until = 0;
    int has_until = 0, rc;

    if (ps->n_sched && !ps->sched[ps->n_sched - 1].has_until)
        return fail_at(ps, &at,
                       "unreachable: the schedule statement at %d:%d has no 'until', so it runs "
                       "forever",
                       ps->sched[ps->n_sched - 1].line, ps->sched[ps->n_sched - 1].col);
    if (ps->n_sched == CTL_MAX_RULES)
        return fail_at(ps, &at, "more than %d schedule statements", CTL_MAX_RULES);
    if ((rc = mode(ps, "bsp, asp, ssp S, when or stop", &m, &s)))
        return rc;
    if (is_word(&ps->t, "until")) {
        next(ps);
        if ((rc = expect_word(ps, "clock", "until")))
            return rc;
        tok ut = ps->t;
        if ((rc = number(ps, "a clock after 'until clock'", &until)))
            return rc;
        uint32_t start = 0;
        for (unsigned i = ps->n_sched; i-- > 0;) {
            start = ps->sched[i].until;
            break;
        }
        if (until <= start) {
            if (ps->n_sched)
                return fail_at(ps, &ut,
                               "until clocks must increase: %" PRIu32
                               " is not above %" PRIu32 ", the until of the statement at %d:%d",
                               until, start, ps->sched[ps->n_sched - 1].line,
                               ps->sched[ps->n_sched - 1].col);
            return fail_at(ps, &ut, "until clock 0 leaves the statement no clocks");
        }
        has_until = 1;
    }
    ps->sched[ps->n_sched].mode = m;
    ps->sched[ps->n_sched].s = s;
    ps->sched[ps->n_sched].has_until = has_until;
    ps->sched[ps->n_sched].until = until;
    ps->sched[ps->n_sched].line = at.line;
    ps->sched[ps->n_sched].col = at.col;
    ps->n_sched++;
    return 0;
}

/* for NUM clocks */
static int for_clocks(parser *ps, const char *after, uint32_t *k)
{
    int rc;
    tok at;

    if ((rc = expect_word(ps, "for", after)))
        return rc;
    at = ps->t;
    if ((rc = number(ps, "a number of clocks after 'for'", k)))
        return rc;
    if (*k == 0)
        return fail_at(ps, &at, "'for' needs at least 1 clock");
    if (is_word(&ps->t, "clocks") || is_word(&ps->t, "clock")) {
        next(ps);
        return 0;
    }
    return unexpected(ps, "'clocks'");
}

static int when_stmt(parser *ps)
{
    ctl_reactive r;
    tok at = ps->t;
    int rc;

    memset(&r, 0, sizeof r);
    r.line = at.line;
    r.col = at.col;
    next(ps); /* when */
    if (ps->pol->n_reactive == CTL_MAX_REACTIVE)
        return fail_at(ps, &at, "more than %d 'when' rules", CTL_MAX_REACTIVE);
    if (is_word(&ps->t, "wait_fraction") || is_word(&ps->t, "spread")) {
        int spread = is_word(&ps->t, "spread");
        r.cond = spread ? CTL_COND_SPREAD : CTL_COND_WAIT;
        next(ps);
        switch (ps->t.kind) {
        case T_GT: r.op = CTL_OP_GT; break;
        case T_GE: r.op = CTL_OP_GE; break;
        case T_LT: r.op = CTL_OP_LT; break;
        case T_LE: r.op = CTL_OP_LE; break;
        default: return unexpected(ps, spread ? "'>', '>=', '<' or '<=' after 'spread'"
                                              : "'>', '>=', '<' or '<=' after 'wait_fraction'");
        }
        next(ps);
        if (spread) {
            uint32_t n;
            if ((rc = number(ps, "a number of clocks after the comparison", &n)))
                return rc;
            r.threshold = n;
        } else {
            if (ps->t.kind != T_NUM)
                return unexpected(ps, "a fraction in 0..1");
            char buf[40];
            snprintf(buf, sizeof buf, "%.*s", ps->t.len > 39 ? 39 : (int)ps->t.len, ps->t.p);
            r.threshold = strtod(buf, NULL);
            if (r.threshold > 1.0 || ps->t.len > 39)
                return fail_at(ps, &ps->t, "wait_fraction threshold %s is outside 0..1", buf);
            next(ps);
        }
        if ((rc = for_clocks(ps, "the threshold", &r.clocks)))
            return rc;
    } else if (is_word(&ps->t, "loss_plateau")) {
        r.cond = CTL_COND_PLATEAU;
        next(ps);
        if ((rc = for_clocks(ps, "loss_plateau", &r.clocks)))
            return rc;
    } else if (is_word(&ps->t, "clock")) {
        r.cond = CTL_COND_CLOCK;
        next(ps);
        if (ps->t.kind != T_GE)
            return unexpected(ps, "'>=' after 'clock'");
        next(ps);
        if ((rc = number(ps, "a clock after 'clock >='", &r.clocks)))
            return rc;
    } else if (ps->t.kind == T_WORD) {
        return fail_at(ps, &ps->t, "unknown condition '%.*s' (wait_fraction, spread, loss_plateau or clock)",
                       ps->t.len > 32 ? 32 : (int)ps->t.len, ps->t.p);
    } else {
        return unexpected(ps, "a condition (wait_fraction, spread, loss_plateau or clock)");
    }
    if (ps->t.kind != T_COLON)
        return unexpected(ps, "':' before the action");
    next(ps);
    if (is_word(&ps->t, "staleness")) {
        tok st = ps->t;
        if (r.cond == CTL_COND_CLOCK)
            return fail_at(ps, &st, "a 'when clock' rule needs a mode (bsp, asp or ssp S), not a "
                                    "staleness change");
        next(ps);
        if (ps->t.kind != T_PLUSEQ && ps->t.kind != T_MINUSEQ)
            return unexpected(ps, "'+=' or '-=' after 'staleness'");
        r.act = ps->t.kind == T_PLUSEQ ? CTL_ACT_INC : CTL_ACT_DEC;
        next(ps);
        tok dt = ps->t;
        if ((rc = number(ps, "a number after 'staleness +=' or '-='", &r.delta)))
            return rc;
        if (r.delta == 0)
            return fail_at(ps, &dt, "a staleness change of 0 does nothing");
        const char *want = r.act == CTL_ACT_INC ? "max" : "min";
        if (is_word(&ps->t, "max") || is_word(&ps->t, "min")) {
            if (!is_word(&ps->t, want))
                return fail_at(ps, &ps->t, "'staleness %s' takes '%s', not '%.*s'",
                               r.act == CTL_ACT_INC ? "+=" : "-=", want, (int)ps->t.len,
                               ps->t.p);
            next(ps);
            r.has_bound = 1;
            if ((rc = staleness_value(ps, r.act == CTL_ACT_INC ? "a bound after 'max'"
                                                               : "a bound after 'min'",
                                      &r.bound)))
                return rc;
        }
    } else {
        r.act = CTL_ACT_MODE;
        if ((rc = mode(ps, "bsp, asp, ssp S or staleness", &r.mode, &r.s)))
            return rc;
    }
    ps->pol->reactive[ps->pol->n_reactive++] = r;
    return 0;
}

static int stop_stmt(parser *ps)
{
    tok at = ps->t;
    int rc;

    next(ps);
    if (ps->pol->has_stop)
        return fail_at(ps, &at, "a second 'stop'");
    if ((rc = expect_word(ps, "at", "stop")) || (rc = expect_word(ps, "clock", "stop at")))
        return rc;
    if ((rc = number(ps, "a clock after 'stop at clock'", &ps->pol->stop)))
        return rc;
    ps->pol->has_stop = 1;
    return 0;
}

static int statement(parser *ps)
{
    if (is_word(&ps->t, "when"))
        return when_stmt(ps);
    if (is_word(&ps->t, "stop"))
        return stop_stmt(ps);
    return sched_stmt(ps);
}

/* ---- compiler ------------------------------------------------------------- */

static int add_rule(serene_ctl_policy *p, uint32_t from, uint32_t to, int open,
                    serene_ctl_mode m, uint32_t s)
{
    if (p->n_rules && p->rules[p->n_rules - 1].mode == m && p->rules[p->n_rules - 1].s == s &&
        !p->rules[p->n_rules - 1].open && p->rules[p->n_rules - 1].to == from) {
        p->rules[p->n_rules - 1].to = to; /* merge equal neighbours */
        p->rules[p->n_rules - 1].open = open;
        return 0;
    }
    if (p->n_rules == CTL_MAX_RULES)
        return -ENOSPC;
    p->rules[p->n_rules++] = (serene_ctl_rule){from, to, open, m, s};
    return 0;
}

/* Cut the rules at clock n and continue from n with (m, s), open. */
static int override_from(serene_ctl_policy *p, uint32_t n, serene_ctl_mode m, uint32_t s)
{
    while (p->n_rules && p->rules[p->n_rules - 1].from >= n)
        p->n_rules--;
    if (p->n_rules) {
        serene_ctl_rule *last = &p->rules[p->n_rules - 1];
        /* A closed schedule's last (mode, s) stays in force up to n. */
        last->to = n;
        last->open = 0;
    }
    /* Never merged into the rule before: the controller installs this
     * boundary again after a reactive change, even when its mode is the
     * same as the schedule's. */
    if (p->n_rules == CTL_MAX_RULES)
        return -ENOSPC;
    p->rules[p->n_rules++] = (serene_ctl_rule){n, 0, 1, m, s};
    return 0;
}

static int compile(parser *ps)
{
    serene_ctl_policy *p = ps->pol;
    uint32_t from = 0;
    int rc = 0;

    p->fixed_from = UINT32_MAX;
    if (ps->n_sched == 0)
        rc = add_rule(p, 0, 0, 1, SERENE_CTL_BSP, 0);
    for (unsigned i = 0; i < ps->n_sched && !rc; i++) {
        rc = add_rule(p, from, ps->sched[i].until, !ps->sched[i].has_until, ps->sched[i].mode,
                      ps->sched[i].s);
        from = ps->sched[i].until;
    }
    /* Clock triggers in clock order (a stable insertion sort: for equal
     * clocks the later one is applied last, so it wins). */
    unsigned idx[CTL_MAX_REACTIVE], n = 0;
    for (unsigned i = 0; i < p->n_reactive; i++) {
        if (p->reactive[i].cond != CTL_COND_CLOCK)
            continue;
        unsigned j = n++;
        while (j > 0 && p->reactive[idx[j - 1]].clocks > p->reactive[i].clocks) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    for (unsigned i = 0; i < n && !rc; i++)
        rc = override_from(p, p->reactive[idx[i]].clocks, p->reactive[idx[i]].mode,
                           p->reactive[idx[i]].s);
    if (rc)
        return fail_at(ps, &ps->t, "the policy compiles to more than %d rules", CTL_MAX_RULES);
    p->fixed_from = n ? p->reactive[idx[0]].clocks : UINT32_MAX;
    if (!p->has_stop && !p->rules[p->n_rules - 1].open) {
        p->has_stop = 1;
        p->stop = p->rules[p->n_rules - 1].to;
    }
    return 0;
}

int serene_ctl_policy_parse(const char *text, size_t len, uint32_t ring,
                            serene_ctl_policy **out, char *err, size_t errcap)
{
    parser *ps;
    int rc = 0;

    if (!out || (!text && len))
        return -EINVAL;
    *out = NULL;
    if (ring && (ring < 2 || ring > CTL_RING_MAX || (ring & (ring - 1)))) {
        ctl_errf(err, errcap, "ring %" PRIu32 " is not a power of 2 in 2..%u", ring,
                 CTL_RING_MAX);
        return -EINVAL;
    }
    ps = calloc(1, sizeof *ps);
    if (!ps)
        return -ENOMEM;
    ps->pol = calloc(1, sizeof *ps->pol);
    if (!ps->pol) {
        free(ps);
        return -ENOMEM;
    }
    ps->pol->s_max = (ring ? ring : CTL_RING_MAX) - 2;
    ps->s = text ? text : "";
    ps->end = ps->s + len;
    ps->line = 1;
    ps->line_start = ps->s;
    ps->err = err;
    ps->errcap = errcap;
    next(ps);
    while (!rc && ps->t.kind != T_EOF) {
        if (ps->t.kind == T_NL) {
            next(ps);
            continue;
        }
        rc = statement(ps);
        if (!rc && ps->t.kind != T_NL && ps->t.kind != T_EOF)
            rc = unexpected(ps, "';' or a new line after the statement");
    }
    if (!rc)
        rc = compile(ps);
    if (rc)
        free(ps->pol);
    else
        *out = ps->pol;
    free(ps);
    return rc;
}

void serene_ctl_policy_free(serene_ctl_policy **p)
{
    if (p) {
        free(*p);
        *p = NULL;
    }
}

unsigned serene_ctl_policy_rules(const serene_ctl_policy *p, serene_ctl_rule *out, unsigned cap)
{
    if (!p)
        return 0;
    for (unsigned i = 0; i < p->n_rules && i < cap; i++)
        out[i] = p->rules[i];
    return p->n_rules;
}

unsigned serene_ctl_policy_reactive_count(const serene_ctl_policy *p)
{
    return p ? p->n_reactive : 0;
}

int serene_ctl_policy_stop(const serene_ctl_policy *p, uint32_t *clock)
{
    if (!p || !p->has_stop)
        return -ENOENT;
    if (clock)
        *clock = p->stop;
    return 0;
}

static void print_mode(FILE *f, serene_ctl_mode m, uint32_t s)
{
    if (m == SERENE_CTL_SSP)
        fprintf(f, "ssp %" PRIu32, s);
    else
        fprintf(f, "%s", serene_ctl_mode_name(m));
}

int serene_ctl_policy_print(const serene_ctl_policy *p, FILE *f)
{
    if (!p || !f)
        return -EINVAL;
    for (unsigned i = 0; i < p->n_rules; i++) {
        const serene_ctl_rule *r = &p->rules[i];
        fprintf(f, "rule %" PRIu32 "-", r->from);
        if (r->open)
            fprintf(f, "inf");
        else
            fprintf(f, "%" PRIu32, r->to);
        fprintf(f, ": ");
        print_mode(f, r->mode, r->s);
        fputc('\n', f);
    }
    for (unsigned i = 0; i < p->n_reactive; i++) {
        const ctl_reactive *r = &p->reactive[i];
        fprintf(f, "when ");
        if (r->cond == CTL_COND_WAIT)
            fprintf(f, "wait_fraction %s %g for %" PRIu32 " clocks", ctl_op_name(r->op),
                    r->threshold, r->clocks);
        else if (r->cond == CTL_COND_SPREAD)
            fprintf(f, "spread %s %g for %" PRIu32 " clocks", ctl_op_name(r->op), r->threshold,
                    r->clocks);
        else if (r->cond == CTL_COND_PLATEAU)
            fprintf(f, "loss_plateau for %" PRIu32 " clocks", r->clocks);
        else
            fprintf(f, "clock >= %" PRIu32, r->clocks);
        fprintf(f, ": ");
        if (r->act == CTL_ACT_MODE)
            print_mode(f, r->mode, r->s);
        else
            fprintf(f, "staleness %s %" PRIu32, r->act == CTL_ACT_INC ? "+=" : "-=", r->delta);
        if (r->act != CTL_ACT_MODE && r->has_bound)
            fprintf(f, " %s %" PRIu32, r->act == CTL_ACT_INC ? "max" : "min", r->bound);
        fputc('\n', f);
    }
    if (p->has_stop)
        fprintf(f, "stop at clock %" PRIu32 "\n", p->stop);
    return ferror(f) ? -EIO : 0;
}
