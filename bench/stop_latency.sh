#!/usr/bin/env bash
# Seconds from SIGTERM to a command's exit (BENCHMARKS.md, "Stopping on
# SIGTERM"): starts `devplace ARGS... --out RUN`, sends SIGTERM after DELAY
# seconds, waits for it, and prints its exit status, the seconds the stop
# took and whether best_placement.json was written.
#
#   bash bench/stop_latency.sh 60 place --graph g1m.json --cluster k80x2 --method mcmc --seed 1
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bench/stop_latency.sh DELAY_S DEVPLACE_ARGS..." >&2
  exit 2
fi
delay=$1
shift
binary="$(dirname "$0")/../build/devplace"
run=$(mktemp -d)
"$binary" "$@" --out "$run/out" > "$run/log" 2>&1 &
pid=$!
sleep "$delay"
start=$(date +%s.%N)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
end=$(date +%s.%N)
written=no
[ -f "$run/out/best_placement.json" ] && written=yes
echo "exit $rc, stop to exit $(echo "$end - $start" | bc) s, best_placement.json written: $written"
tail -n 3 "$run/log"
rm -rf "$run"
