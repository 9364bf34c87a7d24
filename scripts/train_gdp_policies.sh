#!/usr/bin/env bash
# Trains the project's reference GDP policies, one per cluster preset (a
# policy places on clusters of its device count and kinds only), from the
# built-in models, with `devplace train` (batch PPO across graphs). The
# policies go to runs/policies/PRESET.pt (with PRESET.pt.checkpoint to
# --resume from, and PRESET.log, the progress), ready for
#   devplace place --overwrite --method gdp --graph G --cluster PRESET --policy runs/policies/PRESET.pt
#
#   bash scripts/train_gdp_policies.sh                      # every preset, 600 s each
#   CLUSTERS="k80x2" SECONDS_EACH=120 bash scripts/train_gdp_policies.sh
#   GRAPHS="rnnlm,nmt" bash scripts/train_gdp_policies.sh   # other training graphs
#
# The training graphs are the three 2017 models and GDP's smallest of each
# family; the sizes held out for generalisation (bench/gdp_generalisation.sh)
# are not among them. BENCHMARKS.md ("GDP") has the command's time and results.
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh
clusters=${CLUSTERS:-"k80x2 k80x4 p100x2 p100x4 p100x8"}
graphs=${GRAPHS:-"rnnlm,nmt,inception_v3,gnmt2,transformer_xl2,wavenet2x18"}
seconds=${SECONDS_EACH:-600}
seed=${SEED:-1}
mkdir -p runs/policies
for cluster in $clusters; do
  start=$(date +%s)
  "$devplace" train --overwrite --graphs "$graphs" --cluster "$cluster" -o "runs/policies/$cluster.pt" \
    --max-seconds "$seconds" --seed "$seed" 2> "runs/policies/$cluster.log" | tee "runs/policies/$cluster.txt"
  echo "$cluster: $(( $(date +%s) - start )) s wall, policy in runs/policies/$cluster.pt"
done
