#!/usr/bin/env bash
# GDP-batch on GDP's twelve settings: one policy per device count, trained
# by `devplace train` on that count's graphs together, each graph getting
# SAMPLES sampled placements (the GDP-one and HDP rows' budget: updates =
# SAMPLES / samples per update). Prints, per graph, the best step time
# training reached, beside the GDP-one and HDP columns the caller pastes in.
#
#   SAMPLES=2000 bash bench/gdp_batch_table.sh
#
# Groups (GDP's Table 1): p100x2 rnnlm, gnmt2, transformer_xl2,
# inception_v3, wavenet2x18; p100x4 rnnlm4, gnmt4, transformer_xl4,
# amoebanet, wavenet4x36; p100x8 gnmt8, transformer_xl8.
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh
samples=${SAMPLES:-2000}
per_update=${SAMPLES_PER_STEP:-16}
updates=$(( samples / per_update ))
groups=${GROUPS_SPEC:-"p100x2:rnnlm,gnmt2,transformer_xl2,inception_v3,wavenet2x18 p100x4:rnnlm4,gnmt4,transformer_xl4,amoebanet,wavenet4x36 p100x8:gnmt8,transformer_xl8"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| cluster | graph | GDP-batch best s | training wall s (whole group) |"
echo "|---|---|---|---|"
for spec in $groups; do
  cluster=${spec%%:*}
  graphs=${spec#*:}
  start=$(date +%s.%N)
  "$devplace" train --overwrite --method gdp --graphs "$graphs" --cluster "$cluster" --max-steps "$updates" \
    --samples-per-step "$per_update" --quiet -o "$work/$cluster.pt" > "$work/$cluster.log" 2>&1
  wall=$(python3 -c "print('%.0f' % ($(date +%s.%N) - $start))")
  # "  GRAPH: best T s while training", one line per graph.
  sed -n 's/^  \(.*\): best \([0-9.]*\) s while training$/\1 \2/p' "$work/$cluster.log" | while read -r graph best; do
    printf "| %s | %s | %.3f | %s |\n" "$cluster" "$graph" "$best" "$wall"
  done
done
