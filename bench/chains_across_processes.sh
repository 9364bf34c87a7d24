#!/usr/bin/env bash
# Simulated evaluations a second of mcmc's chains: one process (one chain)
# against N processes (scripts/launch_local.sh N: one chain a rank, sharing
# their bests every 100 evaluations), on a synthetic graph of OPS ops
# (BENCHMARKS.md, "Across processes"; issue 51). Each chain gets the same
# evaluation budget, so the world evaluates N times as many; the rate is
# the world's evaluations over rank 0's search seconds (process start not
# included; the wall of the whole command is printed beside).
#   bench/chains_across_processes.sh [OPS=10000] [CLUSTER=k80x4] [EVALUATIONS=6000] [ROUNDS=4] [N=2]
set -euo pipefail
cd "$(dirname "$0")/.."
ops=${1:-10000}
cluster=${2:-k80x4}
evaluations=${3:-6000}
rounds=${4:-4}
n=${5:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
graph="$dir/synthetic_$ops.json"
build/devplace generate synthetic --ops "$ops" --hidden 256 --seed 1 -o "$graph" > /dev/null
args=(place --graph "$graph" --cluster "$cluster" --method mcmc --max-evaluations "$evaluations" --json --overwrite)
rate() {  # the JSON of rank 0 (after any lines before it), chains: evaluations a second
  python3 -c 'import json, sys; t = open(sys.argv[1]).read(); j = json.loads(t[t.index("{"):]); print("%.0f %.2f %.6f" % (int(sys.argv[2]) * j["samples"] / j["search_seconds"], j["search_seconds"], j["step_time_s"]))' "$1" "$2"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "round | 1 process: evaluations/s, search s, step s, wall s | $n processes: evaluations/s, search s, step s, wall s | ratio"
for ((r = 1; r <= rounds; ++r)); do
  t0=$(date +%s.%N)
  env -u RANK -u WORLD_SIZE build/devplace "${args[@]}" --seed "$r" --out "$dir/one" > "$dir/one.json"
  t1=$(date +%s.%N)
  DEVPLACE_DIST_TIMEOUT_S=300 scripts/launch_local.sh "$n" build/devplace "${args[@]}" --seed "$r" --out "$dir/many" > "$dir/many.json"
  t2=$(date +%s.%N)
  read -r one one_s one_step <<< "$(rate "$dir/one.json" 1)"
  read -r many many_s many_step <<< "$(rate "$dir/many.json" "$n")"
  printf '%d | %s %s %s %.2f | %s %s %s %.2f | %.2fx\n' "$r" "$one" "$one_s" "$one_step" "$(echo "$t1 - $t0" | bc)" \
    "$many" "$many_s" "$many_step" "$(echo "$t2 - $t1" | bc)" "$(echo "$many / $one" | bc -l)"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
