/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emit.c - job setup plus compiled rules for each target:
 *
 * - a tree (serene_ctl_emit_tree): each serene-switch's --job arguments:
 *       the root's job of the N workers (store, barrier) and its job of the
 *       leaves, and each leaf's job with its ranks and its way up. The
 *       policy's rules then go to the root (target sw).
 * - sw: serene-switch control-socket commands, one per rule in order,
 *       `policy J MODE [S] from FROM`. The switch answers with the clock E
 *       the rule takes effect at: E = max(FROM, high + 1) (a rule never
 *       changes a clock a worker may already have been answered for), and
 *       each command drops the rules it overtakes, so sending the lines in
 *       order installs exactly the schedule on an idle job and the rest of
 *       it on a running one. The switch takes its jobs at start (--job), so
 *       there is no job-setup command.
 * - bmv2: a simple_switch_CLI command file: the multicast group, one
 *       clone session per worker port (mirroring_add P P: the CLOCK answer
 *       that goes with a RELEASE multicast), the job's STEP_RESP session
 *       (mirroring_add_mc S G, S = 512 + job id mod 4), the job_table,
 *       worker_table, rank_table (egress: a rank's address for its
 *       multicast copy) and policy_table entries, and low_reg / high_reg
 *       set to first_clock - 1.
 *       mc_node_create handles are assumed to be handed out from 0 (a
 *       freshly started switch).
 * - tofino: a bfrt_python script with the same entries through
 *       bfrt.serene.pipe.Ingress / .Egress and bfrt.pre; a clock range is
 *       the ternary prefixes that tile it (Tofino has no 32-bit range key);
 *       first the job's register block (job id mod 4) cleared to the
 *       program's power-on state (tofino_clear_block).
 *
 * The tables and actions are the contract the P4 program must meet; they
 * are listed in lib/ctl/README.md. Range keys are inclusive [from, to-1];
 * the last rule, closed or not, ends at 4294967295 (a switch always has a
 * policy; the end of a closed schedule only stops serene-ctl run). The ranges never overlap, so the
 * priorities (rule index + 1) only satisfy the CLI's syntax.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl_int.h"

#define TOFINO_MAX_WORKERS 32u /* one 32-bit bitmap word per ring entry */
#define TOFINO_POLICY_ENTRIES 1024u /* policy_table's size in p4/tna/tna_ingress.p4 */
/* p4/tna/tna_headers.p4: register blocks (low_reg, high_reg, the ring, the
 * cells and the rows are indexed by job id mod this); a block's store is
 * SR_TNA_STORE_ROWS rows of SR_TNA_ELEMS words (a word per lane). */
#define TOFINO_MAX_JOBS 4u
/* A block's entries (tna_headers.p4): its allreduce cells ((blk *
 * SR_TNA_AR_SLOTS + slot) * 2 + shadow: round_*, nexp_reg and the lanes),
 * its store rows (the lanes from 2048 + blk * SR_TNA_STORE_ROWS; push
 * numbers per row and worker in push_last_reg) and its ring. */
#define TOFINO_CELLS (256u * 2u)
#define TOFINO_ROWS 512u
#define TOFINO_ROW0 2048u
#define TOFINO_RING 64u
#define TOFINO_LANES 32u
#define TOFINO_STORE_WORDS (TOFINO_ROWS * TOFINO_LANES)
/* A cell's round before any (SR_TNA_ROUND_IDLE: lo, hi = 0) and ar_ctr's
 * events per block (SR_TNA_EV_*: 1 done, 2 duplicate, 3 mismatch). */
#define TOFINO_ROUND_IDLE 2u
#define TOFINO_EVENTS 4u

int serene_ctl_target_parse(const char *name, serene_ctl_target *t)
{
    if (!name || !t)
        return -EINVAL;
    if (!strcmp(name, "sw"))
        *t = SERENE_CTL_TARGET_SW;
    else if (!strcmp(name, "bmv2"))
        *t = SERENE_CTL_TARGET_BMV2;
    else if (!strcmp(name, "tofino"))
        *t = SERENE_CTL_TARGET_TOFINO;
    else
        return -EINVAL;
    return 0;
}

static void ipv4(uint32_t a, char *buf, size_t cap)
{
    snprintf(buf, cap, "%u.%u.%u.%u", (unsigned)(a >> 24), (unsigned)(a >> 16 & 255),
             (unsigned)(a >> 8 & 255), (unsigned)(a & 255));
}

/* The inclusive end of rule i: the last rule stays in force for ever,
 * closed or not (a schedule's end only stops serene-ctl run). */
static uint32_t rule_last(const serene_ctl_policy *p, unsigned i, uint32_t first)
{
    const serene_ctl_rule *r = &p->rules[i];

    return r->open || i + 1 == p->n_rules ? UINT32_MAX : r->to - 1 + first;
}

static uint64_t full_mask(uint32_t n)
{
    return n >= 64 ? UINT64_MAX : (1ull << n) - 1;
}

static void emit_sw(FILE *f, const serene_ctl_policy *p, const serene_ctl_job *j)
{
    for (unsigned i = 0; i < p->n_rules; i++) {
        const serene_ctl_rule *r = &p->rules[i];
        fprintf(f, "policy %u %s", (unsigned)j->id, serene_ctl_mode_name(r->mode));
        if (r->mode == SERENE_CTL_SSP)
            fprintf(f, " %" PRIu32, r->s);
        fprintf(f, " from %" PRIu32 "\n", r->from + j->first_clock);
    }
}

/* BMv2: job j's policy rows (clock ranges from its first clock) and its
 * barrier's low and high registers, one clock before the first. */
static void bmv2_barrier(FILE *f, const serene_ctl_policy *p, const serene_ctl_job *j)
{
    for (unsigned i = 0; i < p->n_rules; i++) {
        const serene_ctl_rule *r = &p->rules[i];
        fprintf(f, "table_add policy_table set_policy %u %" PRIu32 "->%" PRIu32 " => %d %" PRIu32
                   " %u\n",
                (unsigned)j->id, r->from + j->first_clock, rule_last(p, i, j->first_clock),
                (int)r->mode, r->s, i + 1);
    }
    fprintf(f, "register_write low_reg %u %" PRIu32 "\n", (unsigned)j->id, j->first_clock - 1);
    fprintf(f, "register_write high_reg %u %" PRIu32 "\n", (unsigned)j->id, j->first_clock - 1);
}

/* The P4 program's STEP_RESP mirror sessions (p4/include/constants.p4:
 * SR_P4_STEP_SESSION0 + job id mod SR_P4_MAX_JOBS, its register block;
 * conformance-contract-* check the formula against the program). */
#define P4_STEP_SESSION0 512u
#define P4_MAX_JOBS 4u

/* BMv2: job j's STEP answers its row with an ingress clone to this
 * session: the copies go to the job's multicast group. */
static void bmv2_step_session(FILE *f, const serene_ctl_job *j)
{
    fprintf(f, "mirroring_add_mc %u %u\n", P4_STEP_SESSION0 + (unsigned)j->id % P4_MAX_JOBS,
            (unsigned)j->mcast_group);
}

/* The P4 program's fallback clone sessions and slots per job
 * (p4/include/constants.p4: SR_P4_FB_SESSION0 + job id mod SR_P4_MAX_JOBS,
 * SR_P4_SLOTS). */
#define P4_FB_SESSION0 516u
#define P4_SLOTS 64u

/* BMv2: a shared job's way to its fallback (share_table, and the clone
 * session that takes it a copy of each JOIN), the fallback's answers
 * (fallback_table) and where they go on to (down_table), and the lease of
 * each slot: lease_reg[blk * 64 + s] = its block + 1 (lease_first + s), or
 * 0 for a slot whose rounds go to the fallback. The answers' window
 * (status) is the blocks leased when fewer than the slots, as
 * serene-switch's first-come pool stamps them. */
static void bmv2_shared(FILE *f, const serene_ctl_job *j)
{
    unsigned blk = (unsigned)j->id % P4_MAX_JOBS;
    uint32_t lease = j->lease < P4_SLOTS ? j->lease : P4_SLOTS;
    uint32_t first = j->lease_first == SERENE_CTL_LEASE_ALL ? blk * P4_SLOTS : j->lease_first;
    char a[16];

    ipv4(j->fb_addr, a, sizeof a);
    fprintf(f, "mirroring_add %u %u\n", P4_FB_SESSION0 + blk, (unsigned)j->fb_sw_port);
    fprintf(f, "table_add share_table set_share %u => %s %u %u %" PRIu32 "\n", (unsigned)j->id, a,
            (unsigned)j->fb_udp_port, (unsigned)j->fb_sw_port, lease < P4_SLOTS ? lease : 0);
    fprintf(f, "table_add fallback_table set_from_fallback %s %u %u =>\n", a,
            (unsigned)j->fb_udp_port, (unsigned)j->id);
    for (uint32_t w = 0; w < j->n_workers; w++) {
        ipv4(j->workers[w].addr, a, sizeof a);
        fprintf(f, "table_add down_table to_rank %u %" PRIu32 " => %s %u %u\n", (unsigned)j->id, w,
                a, (unsigned)j->workers[w].udp_port, (unsigned)j->workers[w].sw_port);
    }
    for (uint32_t s = 0; s < P4_SLOTS; s++)
        fprintf(f, "register_write lease_reg %" PRIu32 " %" PRIu32 "\n", blk * P4_SLOTS + s,
                s < lease ? first + s + 1 : 0);
}

static void emit_bmv2(FILE *f, const serene_ctl_policy *p, const serene_ctl_job *j)
{
    char a[16];

    fprintf(f, "mc_mgrp_create %u\n", (unsigned)j->mcast_group);
    for (uint32_t w = 0; w < j->n_workers; w++)
        fprintf(f, "mc_node_create %" PRIu32 " %u\n", w, (unsigned)j->workers[w].sw_port);
    for (uint32_t w = 0; w < j->n_workers; w++)
        fprintf(f, "mc_node_associate %u %" PRIu32 "\n", (unsigned)j->mcast_group, w);
    /* Clone session P -> port P for every worker port: a CLOCK that
     * releases the job is multicast as RELEASE and its answer goes back to
     * the sender's port in an ingress clone. */
    for (uint32_t w = 0; w < j->n_workers; w++) {
        uint32_t q;
        for (q = 0; q < w && j->workers[q].sw_port != j->workers[w].sw_port; q++)
            ;
        if (q == w)
            fprintf(f, "mirroring_add %u %u\n", (unsigned)j->workers[w].sw_port,
                    (unsigned)j->workers[w].sw_port);
    }
    bmv2_step_session(f, j);
    fprintf(f, "table_add job_table set_job %u => %" PRIu32 " %" PRIu64 " %" PRIu32 " %" PRIu32
               " %u %" PRIu64 "\n",
            (unsigned)j->id, j->n_workers, full_mask(j->n_workers), j->ring - 1, j->store_words,
            (unsigned)j->mcast_group, j->token);
    for (uint32_t w = 0; w < j->n_workers; w++) {
        ipv4(j->workers[w].addr, a, sizeof a);
        fprintf(f, "table_add worker_table set_worker %s %u => %u %" PRIu32 "\n", a,
                (unsigned)j->workers[w].udp_port, (unsigned)j->id, w);
    }
    for (uint32_t w = 0; w < j->n_workers; w++) {
        ipv4(j->workers[w].addr, a, sizeof a);
        fprintf(f, "table_add rank_table set_rank_addr %u %" PRIu32 " => %s %u\n", (unsigned)j->id,
                w, a, (unsigned)j->workers[w].udp_port);
    }
    if (j->fb_addr)
        bmv2_shared(f, j);
    bmv2_barrier(f, p, j);
}

/* One rule as the ternary entries of Tofino's policy_table: the aligned
 * power-of-two blocks that tile [lo, hi] (value, mask = ~(size - 1)), at
 * most 62 for 32 bits. A range key of 32 bits does not fit Tofino's TCAM
 * (p4/tna/tna_ingress.p4). */
static unsigned tofino_rule(FILE *f, const serene_ctl_job *j, const serene_ctl_rule *r,
                            unsigned i, uint32_t hi)
{
    uint64_t lo = (uint64_t)r->from + j->first_clock;
    unsigned n = 0;

    for (; lo <= hi; n++) {
        uint64_t size = lo ? lo & -lo : 1ull << 32; /* the alignment of lo */
        while (lo + size - 1 > hi)
            size >>= 1;
        if (f)
            fprintf(f, "p.Ingress.policy_table.add_with_set_policy(job=%u, clock=0x%08" PRIx64
                       ", clock_mask=0x%08" PRIx64 ", MATCH_PRIORITY=%u, mode=%d, s=%" PRIu32 ")\n",
                    (unsigned)j->id, lo, ~(size - 1) & UINT32_MAX, i + 1, (int)r->mode, r->s);
        lo += size;
    }
    return n;
}

/* policy_table entries the job's rules take on Tofino (f NULL: counts). */
static unsigned tofino_policy(FILE *f, const serene_ctl_policy *p, const serene_ctl_job *j)
{
    unsigned n = 0;

    for (unsigned i = 0; i < p->n_rules; i++)
        n += tofino_rule(f, j, &p->rules[i], i, rule_last(p, i, j->first_clock));
    return n;
}

/* First, on the switch: no other job's job_table entry in the block (the
 * program indexes its registers by job id mod 4, so two such jobs would
 * share cells, rows and the barrier): the script stops with the reason
 * before it changes anything. */
static void tofino_guard(FILE *f, unsigned blk, unsigned job)
{
    fprintf(f, "def block_free(blk, job):\n"
               "    for e in p.Ingress.job_table.get(regex=True, return_ents=True, "
               "print_ents=False) or []:\n"
               "        other = e.key.get(b'job', e.key.get('job'))\n"
               "        if other != job and other %% %u == blk:\n"
               "            raise SystemExit('serene: job %%d would share register block %%d "
               "with job %%d, set up on this switch: remove job %%d first, or give job %%d an "
               "id that differs from %%d mod %u' %% (job, blk, other, other, job, other))\n",
            TOFINO_MAX_JOBS, TOFINO_MAX_JOBS);
    fprintf(f, "block_free(%u, %u)\n", blk, job);
}

/* The job's register block back to the program's power-on state (every
 * entry 0, but a cell's round: SR_TNA_ROUND_IDLE), so that a job set up
 * after another in the same block starts clean: no rounds left in its
 * cells, no sums in its lanes, no push numbers that would take new pushes
 * for repeats, no ring bits that would release its barrier early, its
 * event counters at 0. low_reg and high_reg follow (first_clock - 1).
 * clear(REG, FIRST, COUNT, FIELD=VALUE...) is one loop of mod calls;
 * check_bfrt.py checks that every register's block is covered with the
 * program's initial values. */
static void tofino_clear_block(FILE *f, unsigned blk)
{
    fprintf(f, "def clear(reg, first, count, **zero):\n"
               "    for i in range(first, first + count):\n"
               "        reg.mod(REGISTER_INDEX=i, **zero)\n");
    static const char *const rounds[] = {"round_a", "round_b", "round_c"};
    for (unsigned k = 0; k < sizeof rounds / sizeof rounds[0]; k++)
        fprintf(f, "clear(p.Ingress.%s, %u, %u, lo=%u, hi=0)\n", rounds[k], blk * TOFINO_CELLS,
                TOFINO_CELLS, TOFINO_ROUND_IDLE);
    fprintf(f, "clear(p.Ingress.nexp_reg, %u, %u, f1=0)\n", blk * TOFINO_CELLS, TOFINO_CELLS);
    for (unsigned k = 0; k < TOFINO_EVENTS; k++)
        fprintf(f, "p.Ingress.ar_ctr.mod(COUNTER_INDEX=%u, **{'$COUNTER_SPEC_PKTS': 0})\n",
                blk * TOFINO_EVENTS + k);
    for (unsigned l = 0; l < TOFINO_LANES; l++) {
        fprintf(f, "clear(p.Ingress.lane_reg_%u, %u, %u, f1=0)\n", l, blk * TOFINO_CELLS,
                TOFINO_CELLS);
        fprintf(f, "clear(p.Ingress.lane_reg_%u, %u, %u, f1=0)\n", l,
                TOFINO_ROW0 + blk * TOFINO_ROWS, TOFINO_ROWS);
    }
    fprintf(f, "clear(p.Ingress.push_last_reg, %u, %u, f1=0)\n",
            blk * TOFINO_ROWS * TOFINO_MAX_WORKERS, TOFINO_ROWS * TOFINO_MAX_WORKERS);
    fprintf(f, "clear(p.Ingress.ring_reg, %u, %u, f1=0)\n", blk * TOFINO_RING, TOFINO_RING);
}

/* The barrier's low and high: first_clock - 1 (no clock complete). */
static void tofino_barrier_start(FILE *f, const serene_ctl_job *j)
{
    fprintf(f, "p.Ingress.low_reg.mod(REGISTER_INDEX=%u, f1=%" PRIu32 ")\n",
            (unsigned)j->id % TOFINO_MAX_JOBS, j->first_clock - 1);
    fprintf(f, "p.Ingress.high_reg.mod(REGISTER_INDEX=%u, f1=%" PRIu32 ")\n",
            (unsigned)j->id % TOFINO_MAX_JOBS, j->first_clock - 1);
}

static void emit_tofino(FILE *f, const serene_ctl_policy *p, const serene_ctl_job *j)
{
    char a[16];
    uint32_t node0 = (uint32_t)j->id * SERENE_CTL_MAX_WORKERS;

    fprintf(f, "# bfrt_python script for Serene job %u (generated by serene-ctl)\n"
               "p = bfrt.serene.pipe\n",
            (unsigned)j->id);
    tofino_guard(f, (unsigned)j->id % TOFINO_MAX_JOBS, (unsigned)j->id);
    tofino_clear_block(f, (unsigned)j->id % TOFINO_MAX_JOBS); /* before its entries */
    fprintf(f, "p.Ingress.job_table.add_with_set_job(job=%u, n_workers=%" PRIu32
               ", full_mask=0x%" PRIx64 ", ring_mask=%" PRIu32 ", store_words=%" PRIu32
               ", mgrp=%u)\n",
            (unsigned)j->id, j->n_workers, full_mask(j->n_workers), j->ring - 1, j->store_words,
            (unsigned)j->mcast_group);
    for (uint32_t w = 0; w < j->n_workers; w++) {
        ipv4(j->workers[w].addr, a, sizeof a);
        fprintf(f, "p.Ingress.worker_table.add_with_set_worker(src_addr='%s', src_port=%u, "
                   "job=%u, rank=%" PRIu32 ")\n",
                a, (unsigned)j->workers[w].udp_port, (unsigned)j->id, w);
    }
    tofino_policy(f, p, j);
    for (uint32_t w = 0; w < j->n_workers; w++) {
        ipv4(j->workers[w].addr, a, sizeof a);
        fprintf(f, "p.Egress.rank_table.add_with_set_rank_addr(job=%u, rank=%" PRIu32
                   ", addr='%s', port=%u)\n",
                (unsigned)j->id, w, a, (unsigned)j->workers[w].udp_port);
    }
    tofino_barrier_start(f, j);
    for (uint32_t w = 0; w < j->n_workers; w++)
        fprintf(f, "bfrt.pre.node.add(MULTICAST_NODE_ID=%" PRIu32 ", MULTICAST_RID=%" PRIu32
                   ", MULTICAST_LAG_ID=[], DEV_PORT=[%u])\n",
                node0 + w, w, (unsigned)j->workers[w].sw_port);
    fprintf(f, "bfrt.pre.mgid.add(MGID=%u, MULTICAST_NODE_ID=[", (unsigned)j->mcast_group);
    for (uint32_t w = 0; w < j->n_workers; w++)
        fprintf(f, "%s%" PRIu32, w ? ", " : "", node0 + w);
    fprintf(f, "], MULTICAST_NODE_L1_XID_VALID=[");
    for (uint32_t w = 0; w < j->n_workers; w++)
        fprintf(f, "%sFalse", w ? ", " : "");
    fprintf(f, "], MULTICAST_NODE_L1_XID=[");
    for (uint32_t w = 0; w < j->n_workers; w++)
        fprintf(f, "%s0", w ? ", " : "");
    fprintf(f, "])\nbfrt.complete_operations()\n");
}

/* One --job spec of serene-switch (p4/swswitch/job_spec.h). */
static void job_spec(FILE *f, unsigned id, uint32_t n, const serene_ctl_job *j, uint32_t store,
                     int ring)
{
    fprintf(f, " --job %u:%" PRIu32 ":%" PRIu32 ":%" PRIu32 ",store=%" PRIu32, id, n, j->elems,
            j->slots, store);
    if (ring)
        fprintf(f, ",ring=%" PRIu32, j->ring);
    if (j->token)
        fprintf(f, ",token=%" PRIx64, j->token);
}

/* The P4 program's relay ports (p4/include/constants.p4) and Serene port. */
#define P4_RELAY_PORT0 49000u
#define P4_SERENE_PORT 48200u

/* The leaf serving rank r. */
static uint32_t leaf_of(const serene_ctl_job *j, uint32_t r)
{
    uint32_t k = 0;

    while (k + 1 < j->n_leaves && !(r >= j->leaves[k].first && r < j->leaves[k].first +
                                                                      j->leaves[k].count))
        k++;
    return k;
}

/* The root's simple_switch_CLI commands: port K + 1 leads to leaf K. Job
 * id's group holds one node per rank (toward its leaf: RELEASE copies),
 * upjob's group (upjob + 1) one per leaf (AR_RESULT copies); the ranks are
 * bound at their leaf's relay ports, the leaves at their Serene port, and
 * the leaves' bindings are written (they never JOIN upjob). */
static void tree_bmv2_root(FILE *f, const serene_ctl_policy *p, const serene_ctl_job *j)
{
    uint32_t n = j->n_workers, nl = j->n_leaves, g2 = (uint32_t)j->up_job + 1u;
    char a[16];

    fprintf(f, "# switch root\nmc_mgrp_create %u\n", (unsigned)j->mcast_group);
    for (uint32_t r = 0; r < n; r++)
        fprintf(f, "mc_node_create %" PRIu32 " %" PRIu32 "\n", r, leaf_of(j, r) + 1);
    for (uint32_t r = 0; r < n; r++)
        fprintf(f, "mc_node_associate %u %" PRIu32 "\n", (unsigned)j->mcast_group, r);
    fprintf(f, "mc_mgrp_create %" PRIu32 "\n", g2 & 0xffff);
    for (uint32_t k = 0; k < nl; k++)
        fprintf(f, "mc_node_create %" PRIu32 " %" PRIu32 "\n", k, k + 1);
    for (uint32_t k = 0; k < nl; k++)
        fprintf(f, "mc_node_associate %" PRIu32 " %" PRIu32 "\n", g2 & 0xffff, n + k);
    for (uint32_t k = 0; k < nl; k++)
        fprintf(f, "mirroring_add %" PRIu32 " %" PRIu32 "\n", k + 1, k + 1);
    bmv2_step_session(f, j); /* the store is the root's: so is the step */
    fprintf(f, "table_add job_table set_job %u => %" PRIu32 " %" PRIu64 " %" PRIu32 " %" PRIu32
               " %u %" PRIu64 "\n",
            (unsigned)j->id, n, full_mask(n), j->ring - 1, j->store_words,
            (unsigned)j->mcast_group, j->token);
    fprintf(f, "table_add job_table set_job %u => %" PRIu32 " %" PRIu64 " 1 0 %" PRIu32
               " %" PRIu64 "\n",
            (unsigned)j->up_job, nl, full_mask(nl), g2 & 0xffff, j->token);
    for (uint32_t r = 0; r < n; r++) {
        ipv4(j->leaves[leaf_of(j, r)].addr, a, sizeof a);
        fprintf(f, "table_add worker_table set_worker %s %" PRIu32 " => %u %" PRIu32 "\n", a,
                P4_RELAY_PORT0 + r, (unsigned)j->id, r);
        fprintf(f, "table_add rank_table set_rank_addr %u %" PRIu32 " => %s %" PRIu32 "\n",
                (unsigned)j->id, r, a, P4_RELAY_PORT0 + r);
    }
    for (uint32_t k = 0; k < nl; k++) {
        ipv4(j->leaves[k].addr, a, sizeof a);
        fprintf(f, "table_add worker_table set_worker %s %u => %u %" PRIu32 "\n", a,
                P4_SERENE_PORT, (unsigned)j->up_job, k);
        fprintf(f, "table_add rank_table set_rank_addr %u %" PRIu32 " => %s %u\n",
                (unsigned)j->up_job, k, a, P4_SERENE_PORT);
    }
    bmv2_barrier(f, p, j);
    fprintf(f, "register_write bound_reg %u %" PRIu64 "\n", (unsigned)j->up_job, full_mask(nl));
}

/* Leaf K's commands: port i + 1 leads to its i-th rank, port count + 1 to
 * the root. */
static void tree_bmv2_leaf(FILE *f, const serene_ctl_job *j, uint32_t k)
{
    const serene_ctl_leaf *lf = &j->leaves[k];
    char a[16], self[16], up[16];

    ipv4(lf->addr, self, sizeof self);
    ipv4(lf->up_addr, up, sizeof up);
    fprintf(f, "# switch leaf.%" PRIu32 "\nmc_mgrp_create %u\n", k, (unsigned)j->mcast_group);
    for (uint32_t i = 0; i < lf->count; i++)
        fprintf(f, "mc_node_create %" PRIu32 " %" PRIu32 "\n", lf->first + i, i + 1);
    for (uint32_t i = 0; i < lf->count; i++)
        fprintf(f, "mc_node_associate %u %" PRIu32 "\n", (unsigned)j->mcast_group, i);
    fprintf(f, "table_add job_table set_job %u => %" PRIu32 " %" PRIu64 " %" PRIu32 " 0 %u %" PRIu64
               "\n",
            (unsigned)j->id, j->n_workers, full_mask(j->n_workers), j->ring - 1,
            (unsigned)j->mcast_group, j->token);
    fprintf(f, "table_add upstream_table set_upstream %u => %" PRIu32 " %s %u %u %" PRIu32
               " %s %" PRIu32 "\n",
            (unsigned)j->id, lf->count + 1, up, (unsigned)lf->up_port, (unsigned)j->up_job, k,
            self, lf->count);
    fprintf(f, "table_add parent_table set_from_parent %s %u %u %" PRIu32 " => %u\n", up,
            (unsigned)lf->up_port, (unsigned)j->up_job, k, (unsigned)j->id);
    for (uint32_t i = 0; i < lf->count; i++) {
        const serene_ctl_worker *w = &j->workers[lf->first + i];

        ipv4(w->addr, a, sizeof a);
        fprintf(f, "table_add worker_table set_worker %s %u => %u %" PRIu32 "\n", a,
                (unsigned)w->udp_port, (unsigned)j->id, lf->first + i);
        fprintf(f, "table_add rank_table set_rank_addr %u %" PRIu32 " => %s %u\n",
                (unsigned)j->id, lf->first + i, a, (unsigned)w->udp_port);
        fprintf(f, "table_add relay_table relay_down %s %" PRIu32 " => %s %u %" PRIu32 "\n", self,
                P4_RELAY_PORT0 + lf->first + i, a, (unsigned)w->udp_port, i + 1);
    }
}

/* What a BMv2 tree needs beyond a serene-switch tree: every address. */
static int tree_bmv2_check(const serene_ctl_policy *p, const serene_ctl_job *j, char *err,
                           size_t errcap)
{
    if (!p) {
        ctl_errf(err, errcap, "bmv2: a tree's root needs the policy");
        return -EINVAL;
    }
    for (uint32_t r = 0; r < j->n_workers; r++)
        if (!j->workers[r].addr) {
            ctl_errf(err, errcap, "bmv2: worker %" PRIu32 " has no address (worker.%" PRIu32
                                  " = A.B.C.D:PORT)",
                     r, r);
            return -EINVAL;
        }
    for (uint32_t k = 0; k < j->n_leaves; k++)
        if (!j->leaves[k].port || j->leaves[k].port != P4_SERENE_PORT) {
            ctl_errf(err, errcap, "bmv2: leaf %" PRIu32 " needs leaf.%" PRIu32
                                  ".addr = A.B.C.D:%u (its address, the program's port)",
                     k, k, P4_SERENE_PORT);
            return -EINVAL;
        }
    for (unsigned i = 0; i < p->n_rules; i++)
        if (p->rules[i].s > j->ring - 2) {
            ctl_errf(err, errcap, "rule %u: s %" PRIu32 " is above %" PRIu32 ", the most job %u's "
                                  "ring of %" PRIu32 " allows",
                     i + 1, p->rules[i].s, j->ring - 2, (unsigned)j->id, j->ring);
            return -EINVAL;
        }
    return 0;
}

/* The end of an emit: 0 once f is flushed without error, else -EIO with
 * a message. */
static int emit_flushed(FILE *f, char *err, size_t errcap)
{
    if (fflush(f) || ferror(f)) {
        ctl_errf(err, errcap, "write failed");
        return -EIO;
    }
    return 0;
}

int serene_ctl_emit_tree(FILE *f, serene_ctl_target t, const serene_ctl_policy *p,
                         const serene_ctl_job *j, char *err, size_t errcap)
{
    char a[16];
    int rc;

    if (!f || !j || j->n_leaves == 0 || j->n_leaves > SERENE_CTL_MAX_WORKERS) {
        ctl_errf(err, errcap, "job %u is not a tree (no leaf.K = A-B lines)",
                 j ? (unsigned)j->id : 0u);
        return -EINVAL;
    }
    if (t == SERENE_CTL_TARGET_BMV2) {
        if ((rc = tree_bmv2_check(p, j, err, errcap)))
            return rc;
        tree_bmv2_root(f, p, j);
        for (uint32_t k = 0; k < j->n_leaves; k++)
            tree_bmv2_leaf(f, j, k);
        goto done;
    }
    if (t != SERENE_CTL_TARGET_SW) {
        ctl_errf(err, errcap, "a tree is set up for serene-switch (sw) or BMv2 (bmv2) only");
        return -EINVAL;
    }
    fprintf(f,
            "# job %u: %" PRIu32 " workers under %" PRIu32 " leaves; store and barrier at the "
            "root (generated by serene-ctl)\nroot",
            (unsigned)j->id, j->n_workers, j->n_leaves);
    job_spec(f, j->id, j->n_workers, j, j->store_words, 1);
    job_spec(f, j->up_job, j->n_leaves, j, 0, 0);
    fputc('\n', f);
    for (uint32_t k = 0; k < j->n_leaves; k++) {
        const serene_ctl_leaf *lf = &j->leaves[k];

        ipv4(lf->up_addr, a, sizeof a);
        fprintf(f, "leaf.%" PRIu32, k);
        job_spec(f, j->id, j->n_workers, j, 0, 0);
        fprintf(f, ",local=%" PRIu32 "-%" PRIu32 ",up=%s:%u,upjob=%u,member=%" PRIu32 "\n",
                lf->first, lf->first + lf->count - 1, a, (unsigned)lf->up_port,
                (unsigned)j->up_job, k);
    }
    for (uint32_t k = 0; k < j->n_leaves; k++) {
        const serene_ctl_leaf *lf = &j->leaves[k];

        ipv4(lf->addr, a, sizeof a);
        for (uint32_t r = lf->first; lf->port && r < lf->first + lf->count; r++)
            fprintf(f, "rank.%" PRIu32 " SERENE_SWITCH=%s:%u\n", r, a, (unsigned)lf->port);
    }
done:
    return emit_flushed(f, err, errcap);
}

int serene_ctl_emit_counters(FILE *f, const serene_ctl_job *job, char *err, size_t errcap)
{
    if (!f || !job) {
        ctl_errf(err, errcap, "bad arguments");
        return -EINVAL;
    }
    unsigned id = job->id, blk = id % TOFINO_MAX_JOBS;
    fprintf(f,
            "# bfrt_python script: Serene job %u's counters (generated by serene-ctl counters)\n"
            "p = bfrt.serene.pipe\n"
            "def pkts(e):\n"
            "    return e.data.get(b'$COUNTER_SPEC_PKTS', e.data.get('$COUNTER_SPEC_PKTS'))\n"
            "ev = [pkts(p.Ingress.ar_ctr.get(COUNTER_INDEX=%u + k, from_hw=True, "
            "print_ents=False)) for k in range(%u)]\n"
            "print('serene job %u: packets %%d, rounds completed %%d, duplicates %%d, "
            "mismatches %%d' %% (pkts(p.Ingress.job_table.get(job=%u, from_hw=True, "
            "print_ents=False)), ev[%u], ev[%u], ev[%u]))\n",
            id, blk * TOFINO_EVENTS, TOFINO_EVENTS, id, id, 1u, 2u, 3u);
    return emit_flushed(f, err, errcap);
}

int serene_ctl_emit_reset(FILE *f, const serene_ctl_job *job, char *err, size_t errcap)
{
    if (!f || !job) {
        ctl_errf(err, errcap, "bad arguments");
        return -EINVAL;
    }
    unsigned id = job->id, blk = id % TOFINO_MAX_JOBS;
    fprintf(f,
            "# bfrt_python script: reset Serene job %u's register block for a new run "
            "(generated by serene-ctl reset)\n"
            "p = bfrt.serene.pipe\n",
            id);
    tofino_guard(f, blk, id);
    tofino_clear_block(f, blk);
    tofino_barrier_start(f, job);
    fprintf(f, "bfrt.complete_operations()\n");
    return emit_flushed(f, err, errcap);
}

int serene_ctl_emit(FILE *f, serene_ctl_target t, const serene_ctl_policy *p,
                    const serene_ctl_job *job, char *err, size_t errcap)
{
    if (!f || !p || !job || job->n_workers == 0 || job->n_workers > SERENE_CTL_MAX_WORKERS ||
        job->ring < 2 || job->ring > CTL_RING_MAX) {
        ctl_errf(err, errcap, "bad arguments");
        return -EINVAL;
    }
    for (unsigned i = 0; i < p->n_rules; i++) {
        if (p->rules[i].s > job->ring - 2) {
            ctl_errf(err, errcap,
                     "rule %u: s %" PRIu32 " is above %" PRIu32 ", the most job %u's ring of %" PRIu32
                     " allows",
                     i + 1, p->rules[i].s, job->ring - 2, (unsigned)job->id, job->ring);
            return -EINVAL;
        }
    }
    if (job->n_leaves && t != SERENE_CTL_TARGET_SW) {
        ctl_errf(err, errcap,
                 "job %u is a tree: its switches' setup comes from serene-ctl tree --target sw|bmv2 "
                 "(lib/ctl/README.md, \"Trees\")",
                 (unsigned)job->id);
        return -EINVAL;
    }
    if (job->fb_addr && t == SERENE_CTL_TARGET_BMV2 && job->lease &&
        job->lease_first != SERENE_CTL_LEASE_ALL &&
        (uint64_t)job->lease_first + (job->lease < P4_SLOTS ? job->lease : P4_SLOTS) >
            P4_MAX_JOBS * P4_SLOTS) {
        ctl_errf(err, errcap,
                 "job %u's leased blocks %" PRIu32 ".. end past the program's %u",
                 (unsigned)job->id, job->lease_first, P4_MAX_JOBS * P4_SLOTS);
        return -EINVAL;
    }
    if (job->fb_addr && t == SERENE_CTL_TARGET_TOFINO) {
        ctl_errf(err, errcap,
                 "job %u is shared (fallback): the Tofino program has no pool (p4/README.md's "
                 "targets table)",
                 (unsigned)job->id);
        return -EINVAL;
    }
    if (t == SERENE_CTL_TARGET_TOFINO && job->n_workers > TOFINO_MAX_WORKERS) {
        ctl_errf(err, errcap,
                 "job %u has %" PRIu32 " workers, more than the %u of one bitmap word",
                 (unsigned)job->id, job->n_workers, TOFINO_MAX_WORKERS);
        return -EINVAL;
    }
    if (t == SERENE_CTL_TARGET_TOFINO && job->store_words > TOFINO_STORE_WORDS) {
        ctl_errf(err, errcap,
                 "job %u has a store of %" PRIu32 " words, more than the %u of a Tofino job's "
                 "register block",
                 (unsigned)job->id, job->store_words, TOFINO_STORE_WORDS);
        return -EINVAL;
    }
    if (t == SERENE_CTL_TARGET_TOFINO && tofino_policy(NULL, p, job) > TOFINO_POLICY_ENTRIES) {
        ctl_errf(err, errcap,
                 "the policy's %u rules take %u policy_table entries (clock prefixes), "
                 "more than its %u",
                 p->n_rules, tofino_policy(NULL, p, job), TOFINO_POLICY_ENTRIES);
        return -EINVAL;
    }
    switch (t) {
    case SERENE_CTL_TARGET_SW: emit_sw(f, p, job); break;
    case SERENE_CTL_TARGET_BMV2: emit_bmv2(f, p, job); break;
    case SERENE_CTL_TARGET_TOFINO: emit_tofino(f, p, job); break;
    default:
        ctl_errf(err, errcap, "unknown target %d", (int)t);
        return -EINVAL;
    }
    return emit_flushed(f, err, errcap);
}
