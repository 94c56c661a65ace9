#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# bmv2_job.sh - add a job to a running simple_switch (p4/serene.p4), or
# remove one, without disturbing the jobs it already serves.
#
#   p4/bmv2_job.sh add    --thrift-port P --job-file JOB.conf [--policy POLICY]
#                         --state FILE [--ctl SERENE_CTL]
#   p4/bmv2_job.sh remove --thrift-port P --state FILE [--force]
#   p4/bmv2_job.sh check-json SERENE.json
#
# add compiles the job with `serene-ctl compile --target bmv2` (policy: BSP
# unless --policy) and loads it through simple_switch_CLI. serene-ctl
# assumes a fresh switch (multicast node handles 0..N-1); here the nodes
# are created first and the group is built from the handles the switch
# hands out. The job is refused when the switch has it already, has a job
# in the same register block (job id mod SR_P4_MAX_JOBS), or has its
# multicast group. Every entry, node and group it made goes to FILE, the
# state remove needs; on any error, what was made is taken out again.
#
# remove refuses a job with a live worker (bound_reg and not left_reg; the
# software switch's `job remove` refuses the same) unless --force. It
# deletes the job's table entries, multicast nodes and group, and writes
# zero over the job's registers: its id's (nonce, epoch, bindings, low,
# high) and its block's (slots, store rows and push sequence numbers, the
# rows' step state, ring, their incarnation tags, context tokens, step
# counters and RoCE QPs). A new incarnation
# of the same job clears its block lazily (the tags, ingress.p4); another
# job id in the block counts its incarnations from its own epoch, which
# could equal the tags left there, so this is what makes the block clean
# for the next job. Clone sessions (mirroring_add P P) are
# per switch port and shared by the jobs on it: they stay; the job's
# STEP_RESP session (mirroring_add_mc, per register block) and a shared
# job's fallback session (mirroring_add 516 + block) go, and its leases
# (lease_reg) are cleared with its block.
#
# check-json lists the program's register arrays that remove would not
# clear (exit 1 if any): a new register must be given its class here.
#
# The tools come from PATH, or $SIMPLE_SWITCH_CLI; run the script in the
# switch's network namespace (ip netns exec NS p4/bmv2_job.sh ...). Exit
# status: 0 done, 1 refused or failed (state unchanged), 2 bad usage.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CONSTANTS=$HERE/include/constants.p4
CLI=${SIMPLE_SWITCH_CLI:-simple_switch_CLI}

die() { echo "bmv2_job: $*" >&2; exit 1; }
# usage [RC]: the synopsis to stderr with status 2 (a usage error), or with
# RC 0 (--help) the whole header to stdout.
usage() {
    if [ "${1:-2}" = 0 ]; then
        sed -n '3,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
    fi
    sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
define() { sed -n "s/^#define $1 \([0-9]*\).*/\1/p" "$CONSTANTS"; }

# The register classes: by id, and per block of job id mod SR_P4_MAX_JOBS
# with that many entries per block.
JOBS=$(define SR_P4_MAX_JOBS) SLOTS=$(define SR_P4_SLOTS) ROWS=$(define SR_P4_STORE_ROWS)
WORKERS=$(define SR_P4_MAX_WORKERS) RING=$(define SR_P4_RING) ELEMS=$(define SR_P4_ELEMS)
BY_ID="nonce_reg epoch_reg bound_reg left_reg low_reg high_reg fb_bound_reg"
CELL_REGS="seen_reg cnt_reg mseq_reg moff_reg mtotal_reg mcount_reg mexp_reg nexp_reg upwait_reg upts_reg relay_reg"
ROW_REGS="row_epoch_reg step_epoch_reg step_on_reg step_wait_reg step_low_reg"
VAL_REGS="" SLOT_REGS="slot_epoch_reg lease_reg take_reg want_reg slot_ts_reg"
for i in $(seq 0 $((ELEMS - 1))); do
    VAL_REGS+=" SereneIngress.allreduce.val_reg_$i"
    ROW_REGS+=" SereneIngress.store.st_reg_$i"
done
PUSH_REGS="push_last_reg push_epoch_reg step_last_reg step_pol_reg" RING_REGS="ring_reg ring_epoch_reg"
STEP_CNT_REGS="step_cnt_reg step_cnt_epoch_reg"
WORKER_REGS="token_reg roce_qp_reg roce_psn_reg step_clk_reg step_n_reg step_wk_epoch_reg"

# reg_clears J: register_write ... 0 for everything job J's id and block hold.
# shellcheck disable=SC2086 # the register lists split into names
reg_clears() {
    local j=$1 b=$(($1 % JOBS)) r
    for r in $BY_ID; do echo "register_write $r $j 0"; done
    span $((b * 2 * SLOTS)) $((2 * SLOTS)) $CELL_REGS $VAL_REGS
    span $((b * SLOTS)) "$SLOTS" $SLOT_REGS
    span $((b * ROWS)) "$ROWS" $ROW_REGS
    span $((b * ROWS * WORKERS)) $((ROWS * WORKERS)) $PUSH_REGS
    span $((b * RING)) "$RING" $RING_REGS
    span $((b * ROWS * RING)) $((ROWS * RING)) $STEP_CNT_REGS
    span $((b * WORKERS)) "$WORKERS" $WORKER_REGS
}
span() {
    local from=$1 n=$2 r
    shift 2
    for r in "$@"; do
        awk -v r="$r" -v f="$from" -v n="$n" 'BEGIN { for (i = f; i < f + n; i++) print "register_write " r " " i " 0" }'
    done
}

# cli FILE OUT: run FILE's commands; OUT gets one line per command: its
# output (the CLI's prompt separates them), newlines as " | ".
cli() {
    "$CLI" --thrift-port "$PORT" <"$1" >"$2.raw" 2>&1 || { cat "$2.raw" >&2; return 1; }
    awk 'BEGIN { RS = "RuntimeCmd: " } NR > 1 { gsub(/\n/, " | "); print }' "$2.raw" | head -n "$(wc -l <"$1")" >"$2"
    [ "$(wc -l <"$2")" -eq "$(wc -l <"$1")" ] || { echo "simple_switch_CLI: fewer answers than commands" >&2; return 1; }
}
# failed OUT: the first answer that reports an error, if any.
failed() { grep -m1 -i 'error\|invalid\|exception' "$1"; }

cmd_check_json() {
    local json=$1 known
    [ -r "$json" ] || die "$json: not readable"
    known=" $BY_ID $CELL_REGS $VAL_REGS $SLOT_REGS $ROW_REGS $PUSH_REGS $RING_REGS $STEP_CNT_REGS $WORKER_REGS "
    python3 -c 'import json, sys; [print(r["name"]) for r in json.load(open(sys.argv[1]))["register_arrays"]]' \
        "$json" | while read -r r; do case $known in *" $r "*) ;; *) echo "$r" ;; esac; done >"$TMP/unknown"
    if [ -s "$TMP/unknown" ]; then
        echo "bmv2_job: registers remove would not clear (give them a class in $0):" >&2
        sed 's/^/  /' "$TMP/unknown" >&2
        exit 1
    fi
    echo "bmv2_job: every register array of $json has a class"
}

cmd_add() {
    local ctl=${CTL:-serene-ctl} j g ids k h n=0 line
    [ -n "$JOBFILE" ] && [ -n "$STATE" ] || usage
    [ -e "$STATE" ] && die "$STATE exists: that job was added and not removed"
    if [ -z "$POLICY" ]; then POLICY=$TMP/policy.conf; echo bsp >"$POLICY"; fi
    "$ctl" compile --target bmv2 --job-file "$JOBFILE" "$POLICY" >"$TMP/all.txt" || exit 1
    j=$(sed -n 's/^table_add job_table set_job \([0-9]*\) =>.*/\1/p' "$TMP/all.txt")
    g=$(sed -n 's/^mc_mgrp_create \([0-9]*\)$/\1/p' "$TMP/all.txt")
    [ -n "$j" ] && [ -n "$g" ] || die "serene-ctl's output has no job_table entry or group"
    printf 'table_dump job_table\nmc_dump\n' >"$TMP/dump.txt"
    cli "$TMP/dump.txt" "$TMP/dump.out" || die "cannot reach simple_switch on thrift port $PORT"
    # simple_switch creates a group that exists without complaint: the job
    # would join another job's group (and its removal destroy it).
    grep -q "mgrp($g)" "$TMP/dump.out" &&
        die "multicast group $g is in use on the switch (the job file's mcast_group; default job + 1)"
    ids=$(grep -o 'serene.job *: EXACT *[0-9a-f]*' "$TMP/dump.out" | awk '{print $NF}')
    for k in $ids; do
        k=$((16#$k))
        [ "$k" = "$j" ] && die "job $j is on the switch already"
        [ $((k % JOBS)) = $((j % JOBS)) ] &&
            die "job $j would share register block $((j % JOBS)) with job $k (job ids mod $JOBS must differ)"
    done
    # Nodes first, then the group from the handles the switch gave them.
    grep '^mc_mgrp_create \|^mc_node_create ' "$TMP/all.txt" >"$TMP/a.txt"
    cli "$TMP/a.txt" "$TMP/a.out" || exit 1
    : >"$TMP/undo_grp"
    : >"$TMP/undo_assoc"
    : >"$TMP/undo_node"
    # Answer 1 is the group's (a.txt starts with it).
    sed -n 1p "$TMP/a.out" | grep -qi 'error\|invalid' || echo "mc_mgrp_destroy $g" >"$TMP/undo_grp"
    while read -r line; do
        case $line in *"node was created with handle"*)
            h=${line##*handle }; h=${h%% *}
            echo "mc_node_associate $g $h" >>"$TMP/b.txt"
            echo "mc_node_dissociate $g $h" >>"$TMP/undo_assoc"
            echo "mc_node_destroy $h" >>"$TMP/undo_node"
            n=$((n + 1)) ;;
        esac
    done <"$TMP/a.out"
    if failed "$TMP/a.out" >/dev/null || [ "$n" -ne "$(grep -c '^mc_node_create ' "$TMP/a.txt")" ]; then
        rollback undo_node undo_grp
        die "multicast setup refused: $(failed "$TMP/a.out")"
    fi
    grep -v '^mc_mgrp_create \|^mc_node_create \|^mc_node_associate ' "$TMP/all.txt" >>"$TMP/b.txt"
    cli "$TMP/b.txt" "$TMP/b.out" || { rollback undo_assoc undo_node undo_grp; exit 1; }
    # table_add answers "Entry has been added with handle H": undo by handle;
    # the job's STEP_RESP session (mirroring_add_mc, its register block's)
    # goes with it.
    awk 'NR == FNR { cmd[FNR] = $0; next }
         cmd[FNR] ~ /^table_add / && /added with handle/ {
             split(cmd[FNR], c, " "); h = $0; sub(/.*with handle /, "", h); sub(/ .*/, "", h)
             print "table_delete " c[2] " " h }' "$TMP/b.txt" "$TMP/b.out" >"$TMP/undo_tab"
    sed -n 's/^mirroring_add_mc \([0-9]*\) .*/mirroring_delete \1/p' "$TMP/b.txt" >>"$TMP/undo_tab"
    # and a shared job's fallback session (share.p4: SR_P4_FB_SESSION0 + block).
    awk -v s0="$(define SR_P4_FB_SESSION0)" -v jobs="$JOBS" '$1 == "mirroring_add" && $2 >= s0 && $2 < s0 + jobs {
        print "mirroring_delete " $2 }' "$TMP/b.txt" >>"$TMP/undo_tab"
    {
        echo "# job $j group $g (p4/bmv2_job.sh add: remove with p4/bmv2_job.sh remove)"
        tac "$TMP/undo_tab"
        cat "$TMP/undo_assoc" "$TMP/undo_node" "$TMP/undo_grp"
    } >"$STATE.new"
    if line=$(failed "$TMP/b.out"); then
        undo "$STATE.new"
        die "simple_switch refused job $j: $line"
    fi
    mv "$STATE.new" "$STATE"
    echo "bmv2_job: job $j added ($n ranks, group $g, $(grep -c '^table_delete' "$TMP/undo_tab")" \
        "table entries; state in $STATE)"
}

# rollback NAME...: undo what the undo lists $TMP/NAME... name (an add that
# failed before its state was written).
rollback() {
    local f
    for f in "$@"; do cat "$TMP/$f"; done >"$STATE.new"
    undo "$STATE.new"
}

# undo FILE: its commands and the register clears, errors reported.
undo() {
    local j
    j=$(sed -n 's/^# job \([0-9]*\) .*/\1/p' "$1")
    { grep -v '^#' "$1"; [ -n "$j" ] && reg_clears "$j"; } >"$TMP/undo.txt"
    cli "$TMP/undo.txt" "$TMP/undo.out" || return 1
    if failed "$TMP/undo.out"; then return 1; fi
    rm -f "$1"
}

cmd_remove() {
    local j live bound left
    [ -n "$STATE" ] || usage
    [ -r "$STATE" ] || die "$STATE: no such state (was the job added with bmv2_job.sh add?)"
    j=$(sed -n 's/^# job \([0-9]*\) .*/\1/p' "$STATE")
    [ -n "$j" ] || die "$STATE: not a bmv2_job.sh state file"
    printf 'register_read bound_reg %s\nregister_read left_reg %s\n' "$j" "$j" >"$TMP/live.txt"
    cli "$TMP/live.txt" "$TMP/live.out" || die "cannot reach simple_switch on thrift port $PORT"
    # Answers "... <name>[J]= V".
    live=$(sed 's/.*= *\([0-9]*\).*/\1/' "$TMP/live.out" | paste -sd' ')
    read -r bound left <<<"$live"
    [ -n "$bound" ] && [ -n "$left" ] || die "cannot read job $j's bindings: $(cat "$TMP/live.out")"
    [ $((bound & ~left)) -ne 0 ] && [ -z "$FORCE" ] &&
        die "job $j has live workers (bound and not left); --force removes it anyway"
    local n
    n=$(grep -vc '^#' "$STATE")
    undo "$STATE" || die "simple_switch refused part of the removal of job $j (state kept in $STATE)"
    echo "bmv2_job: job $j removed ($n entries, nodes and groups; its registers cleared)"
}

[ $# -ge 1 ] || usage
case $1 in -h | --help) usage 0 ;; esac
ACTION=$1
shift
PORT=9090 JOBFILE= POLICY= STATE= CTL= FORCE=
while [ $# -gt 0 ]; do
    case $1 in
    --thrift-port) PORT=${2:?}; shift ;;
    --job-file) JOBFILE=${2:?}; shift ;;
    --policy) POLICY=${2:?}; shift ;;
    --state) STATE=${2:?}; shift ;;
    --ctl) CTL=${2:?}; shift ;;
    --force) FORCE=1 ;;
    -h | --help) usage 0 ;;
    *) [ "$ACTION" = check-json ] && [ -z "$JOBFILE" ] && JOBFILE=$1 || usage ;;
    esac
    shift
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
case $ACTION in
add) cmd_add ;;
remove) cmd_remove ;;
check-json) [ -n "$JOBFILE" ] || usage; cmd_check_json "$JOBFILE" ;;
*) usage ;;
esac
