#!/usr/bin/env bash
# Starts one distributed devplace run over the hosts of a hostfile, by ssh:
# one rank per line (a host named twice runs two ranks), rank 0 on the first
# line, which is also MASTER_ADDR. Every host needs the same build and input
# files at the same paths (the start's checksums refuse anything else) and
# must reach the first host's MASTER_PORT over TCP. Waits for every rank and
# exits with the first non-zero status among them.
#   scripts/launch_hosts.sh HOSTFILE COMMAND [ARGS...]
#   MASTER_PORT=29500 scripts/launch_hosts.sh hosts.txt /opt/devplace/build/devplace place --graph nmt --cluster k80x4 --method rl
# Blank lines and lines starting with # are skipped. DEVPLACE_DIST_TIMEOUT_S
# passes through (default 60).
set -uo pipefail
if [[ $# -lt 2 || ! -r "$1" ]]; then
  echo "usage: $0 HOSTFILE COMMAND [ARGS...]   (HOSTFILE: one host a line, rank 0 first)" >&2
  exit 2
fi
hostfile=$1
shift
mapfile -t hosts < <(grep -v '^[[:space:]]*\(#\|$\)' "$hostfile" | awk '{print $1}')
if [[ ${#hosts[@]} -eq 0 ]]; then
  echo "$0: $hostfile names no host" >&2
  exit 2
fi
port=${MASTER_PORT:-29500}
timeout_s=${DEVPLACE_DIST_TIMEOUT_S:-60}
command=$(printf '%q ' "$@")
pids=()
for rank in "${!hosts[@]}"; do
  ssh -o BatchMode=yes "${hosts[$rank]}" \
    "cd $(printf '%q' "$PWD") && RANK=$rank WORLD_SIZE=${#hosts[@]} MASTER_ADDR=${hosts[0]} MASTER_PORT=$port DEVPLACE_DIST_TIMEOUT_S=$timeout_s $command" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid"
  code=$?
  if [[ $status -eq 0 && $code -ne 0 ]]; then status=$code; fi
done
exit $status
