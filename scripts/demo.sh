#!/usr/bin/env bash
# Installs what devplace needs, builds it, and runs the main job on a
# built-in example: simulate one training step under different placements
# and write the best one's timeline to out/trace.json.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p out
devplace=build/devplace
graph=${GRAPH:-tiny}
cluster=${CLUSTER:-k80x4}
for placement in single:cpu:0 single:gpu:0; do
  echo "== $graph on $cluster, placement $placement"
  "$devplace" simulate --graph "$graph" --cluster "$cluster" --placement "$placement"
  echo
done
"$devplace" simulate --graph "$graph" --cluster "$cluster" --placement single:gpu:0 --trace out/trace.json > /dev/null
echo "timeline of the single-GPU step: out/trace.json (open it in https://ui.perfetto.dev)"
