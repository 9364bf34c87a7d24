#!/usr/bin/env bash
# Starts N processes of one distributed devplace run on this host, as
# torchrun would: each with RANK (0..N-1), WORLD_SIZE=N, MASTER_ADDR=127.0.0.1
# and MASTER_PORT (a free port, or $MASTER_PORT if set). Waits for all of
# them; exits with the first non-zero status among them (0 if all succeeded).
#   scripts/launch_local.sh 3 build/devplace place --graph ... --method rl
# DEVPLACE_DIST_TIMEOUT_S (default 60) bounds how long a rank waits for the
# others; it passes through.
set -uo pipefail
if [[ $# -lt 2 || ! "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N COMMAND [ARGS...]   (N processes, N >= 1)" >&2
  exit 2
fi
n=$1
shift
port=${MASTER_PORT:-}
if [[ -z "$port" ]]; then
  # A port the kernel has just handed out and released: free unless another
  # program takes it in between, which rank 0 then reports in one line.
  if command -v python3 > /dev/null; then
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  else
    port=$((20000 + RANDOM % 30000))
  fi
fi
pids=()
for ((rank = 0; rank < n; ++rank)); do
  RANK=$rank WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid"
  code=$?
  if [[ $status -eq 0 && $code -ne 0 ]]; then status=$code; fi
done
exit $status
