#!/usr/bin/env bash
# `place --controllers` across processes (issue 51; BENCHMARKS.md, "Across
# processes"): the same learned run in one process, then over PROCS
# processes (scripts/launch_local.sh) with one controller and with two
# sharing the parameters. Prints each run's wall time and --json summary,
# and the load average before and after: on a shared host the ratios within
# one run of the script mean more than the absolute numbers.
#   bench/controllers_across_processes.sh [GRAPH=nmt] [CLUSTER=k80x4] [METHOD=rl] [STEPS=20] [K=8] [PROCS=4] [SEED=1]
# Needs build/devplace.
set -euo pipefail
cd "$(dirname "$0")/.."
graph=${1:-nmt}
cluster=${2:-k80x4}
method=${3:-rl}
steps=${4:-20}
k=${5:-8}
procs=${6:-4}
seed=${7:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(place --graph "$graph" --cluster "$cluster" --method "$method" --max-steps "$steps" --samples-per-step "$k"
      --seed "$seed" --workers 1 --json)
summary() {
  python3 -c 'import json, sys; t = sys.stdin.read(); r = json.loads(t[t.index("{"):])
print("  step_time_s %.6f  samples %d  controllers %s  controller_samples %s" % (r["step_time_s"], r["samples"],
      r.get("controllers", 1), r.get("controller_samples", [r["samples"]])))'
}
run() {
  local name=$1
  shift
  local start end
  start=$(date +%s.%N)
  "$@" > "$dir/$name.out" 2> "$dir/$name.err"
  end=$(date +%s.%N)
  echo "$name: $(python3 -c "print('%.1f s wall' % ($end - $start))")"
  summary < "$dir/$name.out"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
run "1 process" build/devplace "${args[@]}" --out "$dir/one"
run "$procs processes, 1 controller" env DEVPLACE_DIST_TIMEOUT_S=300 scripts/launch_local.sh "$procs" build/devplace "${args[@]}" --out "$dir/c1"
run "$procs processes, 2 controllers" env DEVPLACE_DIST_TIMEOUT_S=300 scripts/launch_local.sh "$procs" build/devplace "${args[@]}" --controllers 2 --out "$dir/c2"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
