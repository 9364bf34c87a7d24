#!/usr/bin/env bash
# Simulated evaluations a second on one host: one process with 1, 2 and 4
# threads against 2 and 4 processes (scripts/launch_local.sh), on a
# synthetic graph of OPS ops (BENCHMARKS.md, "Across processes"; issue 51).
#   bench/across_processes.sh [OPS=10000] [CLUSTER=k80x4] [BATCHES=6] [SAMPLES=16]
# Needs build/devplace and build/bench/distributed_eval_bench. Prints the
# load average before and after: on a shared host the ratios within one run
# mean more than the absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
ops=${1:-10000}
cluster=${2:-k80x4}
batches=${3:-6}
samples=${4:-16}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
graph="$dir/synthetic_$ops.json"
# hidden 256: random placements of the graph fit the cluster's memory, so
# every evaluation runs the whole step.
build/devplace generate synthetic --ops "$ops" --hidden 256 --seed 1 -o "$graph" > /dev/null
bench=build/bench/distributed_eval_bench
args=("$graph" "$cluster" --batches "$batches" --samples "$samples")
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
for t in 1 2 4; do "$bench" "${args[@]}" --threads "$t"; done
for n in 2 4; do DEVPLACE_DIST_TIMEOUT_S=300 scripts/launch_local.sh "$n" "$bench" "${args[@]}" --threads 1; done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
