#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fabric_rsh.sh HOST COMMAND... - OpenMPI's launch agent on bench/fabric.sh's
# emulated rack (mpirun --mca plm_rsh_agent bench/fabric_rsh.sh): a "host"
# is one of the fabric's network namespaces, and COMMAND (OpenMPI's orted)
# runs in it, in a UTS namespace of its own whose hostname is HOST, so that
# every rank sees a node of its own. It refuses any HOST that is not a
# namespace of a running fabric (FABRIC_TAG-h*).
host=$1
shift
case $host in
"${FABRIC_TAG:?fabric_rsh.sh: no FABRIC_TAG}"-h*) ;;
*) echo "fabric_rsh.sh: '$host' is not a host of fabric $FABRIC_TAG" >&2; exit 1 ;;
esac
[ -e "/run/netns/$host" ] || { echo "fabric_rsh.sh: no namespace $host" >&2; exit 1; }
# shellcheck disable=SC2016 # expanded by the inner shell
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
