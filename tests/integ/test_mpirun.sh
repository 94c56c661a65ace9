#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_mpirun.sh ALLREDUCE_HELLO - a C program launched by Open MPI's
# mpirun alone, with no serene-run: serene-switch started by hand
# ($SERENE_SWITCH_BIN, --listen 127.0.0.1:0 --job 0:3 --port-file), then
#     mpirun -np 3 -x SERENE_SWITCH -x SERENE_JOB_NONCE ALLREDUCE_HELLO
# twice, each run with a fresh nonce (a new incarnation of job 0). Each
# rank takes its rank and world size from OMPI_COMM_WORLD_RANK/SIZE
# through serene_config_from_env (SERENE_RANK and SERENE_WORLD_SIZE are
# removed from the environment first); the program does not link MPI.
# Passes when every run exits 0 and prints "rank R of 3: ... correct" for
# R = 0, 1, 2.
#
# Skips (77) without mpirun on PATH. Each run is bounded (60 s, then
# SIGKILL); the switch is stopped by its PID; as root, mpirun gets
# --allow-run-as-root; --oversubscribe lets 3 ranks share fewer cores.
set -uo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 ALLREDUCE_HELLO" >&2
    exit 2
fi
HELLO=$1
N=3

# shellcheck source=../common/harness.sh
. "$(dirname "$0")/../common/harness.sh"
harness_init mpirun-hello
HARNESS_LOGS=(switch.log mpirun.log)

MPIRUN=$(command -v mpirun) || skip "no mpirun on PATH (Debian: apt-get install openmpi-bin)"
unset SERENE_RANK SERENE_WORLD_SIZE SERENE_SWITCH SERENE_JOB SERENE_JOB_NONCE \
    RANK WORLD_SIZE SLURM_PROCID SLURM_NTASKS
mpi_args=(--oversubscribe -np "$N")
[ "$(id -u)" -eq 0 ] && mpi_args=(--allow-run-as-root "${mpi_args[@]}")

start_switch 127.0.0.1:0 --job "0:$N" || fail "serene-switch exited at startup"
export SERENE_SWITCH=127.0.0.1:$port SERENE_TIMEOUT_MS=20000

for run in 1 2; do
    export SERENE_JOB_NONCE
    SERENE_JOB_NONCE=$(nonce)
    echo "run $run: mpirun ${mpi_args[*]} -x SERENE_SWITCH=$SERENE_SWITCH" \
        "-x SERENE_JOB_NONCE=$SERENE_JOB_NONCE $HELLO"
    timeout -k 5 60 "$MPIRUN" "${mpi_args[@]}" -x SERENE_SWITCH -x SERENE_JOB_NONCE \
        -x SERENE_TIMEOUT_MS "$HELLO" >"$work/mpirun.log" 2>&1
    rc=$?
    show "$work/mpirun.log" mpirun
    [ "$rc" -eq 0 ] || fail "run $run: mpirun exited with status $rc"
    for r in $(seq 0 $((N - 1))); do
        grep -q "^rank $r of $N: .* correct\$" "$work/mpirun.log" ||
            fail "run $run: no 'rank $r of $N: ... correct' line"
    done
done
stop_switch
echo "PASS: mpirun -np $N ran allreduce_hello twice against a hand-started serene-switch"
