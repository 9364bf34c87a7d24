#!/usr/bin/env bash
# Trains the shipped policy's recipe (policies/gdp_any_cluster.pt): GDP with
# the device-scoring head, trained without the start probes (--start-bias 0,
# so that the network itself must place), on three graphs cycled through
# twelve generated clusters of the mixed profile, 2-8 devices (seeds 1-12 of
# `generate cluster`; the held-out benchmark, bench/issue50/held_out.sh,
# uses 9-device presets and seeds 9001-9002).
# Usage: SECONDS_BUDGET=600 bash bench/issue50/train_shipped.sh [OUT.pt]
# IMITATE=N adds `--imitate-search N` (distilling search: docs/rl.md), and
# IMITATION_WEIGHT=W `--imitation-weight W`.
set -euo pipefail
devplace=${DEVPLACE:-build/devplace}
budget=${SECONDS_BUDGET:-600}
out=${OUT:-runs/issue50_train}
policy=${1:-$out/gdp_any_cluster.pt}
extra=()
[ -n "${IMITATE:-}" ] && extra+=(--imitate-search "$IMITATE")
[ -n "${IMITATION_WEIGHT:-}" ] && extra+=(--imitation-weight "$IMITATION_WEIGHT")
mkdir -p "$out"
"$devplace" generate synthetic --ops 600 --seed 2 --width 4 -o "$out/synthetic600.json" > /dev/null
"$devplace" generate rnnlm --layers 4 --steps 10 --hidden 2048 -o "$out/rnnlm_4x10.json" > /dev/null
"$devplace" generate nmt --layers 2 --length 12 --hidden 768 -o "$out/nmt_2x12.json" > /dev/null
clusters=()
for seed in $(seq 1 12); do
  "$devplace" generate cluster --seed "$seed" --profile mixed --max-devices 8 -o "$out/cluster$seed.json" > /dev/null
  clusters+=("$out/cluster$seed.json")
done
"$devplace" train --graphs "$out/synthetic600.json,$out/rnnlm_4x10.json,$out/nmt_2x12.json" \
  --cluster "$(IFS=,; echo "${clusters[*]}")" --gdp-head devices --start-bias 0 \
  -o "$policy" --max-seconds "$budget" --workers 1 --seed 1 --overwrite "${extra[@]}"
