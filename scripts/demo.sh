#!/usr/bin/env bash
# Installs what devplace needs, builds it, and runs the main job: HDP's
# learned placer (Grouper + Placer, cold: no warm start) on NMT with
# 1 CPU + 4 K80 under a short budget,
# then the baselines on the same graph and cluster for comparison, and a
# report of both (one HTML file that opens offline).
#   GRAPH=rnnlm CLUSTER=k80x2 SECONDS_BUDGET=300 METHOD=rl bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
devplace=build/devplace
graph=${GRAPH:-nmt}
cluster=${CLUSTER:-k80x4}
budget=${SECONDS_BUDGET:-60}
method=${METHOD:-hdp}
out=runs/$graph-$cluster-$method
echo "== learned placer ($method, REINFORCE, ${budget} s, cold) on $graph, $cluster"
"$devplace" place --overwrite --graph "$graph" --cluster "$cluster" --method "$method" --max-seconds "$budget" --out "$out"
echo
echo "== the baselines"
"$devplace" compare --graph "$graph" --cluster "$cluster" 2>/dev/null
echo
"$devplace" simulate --graph "$graph" --cluster "$cluster" --placement "$out/best_placement.json" --trace "$out/trace.json" > /dev/null
"$devplace" report --graph "$graph" --cluster "$cluster" --run "$out" -o "$out/report.html" 2>/dev/null
echo "learned placement: $out/best_placement.json; its timeline: $out/trace.json (open in Perfetto); search curve: $out/curve.csv"
echo "report: $out/report.html (comparison, search curve, per-device load and memory, timeline, graph by device)"
