#!/usr/bin/env bash
# Runs `devplace compare` on the 2017 paper's six settings (Table 2: RNNLM,
# NMT and Inception-V3, each on 1 CPU + 2 K80 and on 1 CPU + 4 K80) and
# writes the tables into BENCHMARKS.md between the compare markers.
#
#   bash bench/compare_table2.sh            # after scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=build/devplace
[ -x "$devplace" ] || bash scripts/build.sh

section=$(mktemp)
trap 'rm -f "$section"' EXIT
{
  echo "<!-- compare:begin -->"
  echo "Produced by \`bash bench/compare_table2.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores."
  echo
  for model in rnnlm nmt inception_v3; do
    for cluster in k80x2 k80x4; do
      echo "### $model on $cluster"
      echo
      echo '```'
      "$devplace" compare --graph "$model" --cluster "$cluster" 2>/dev/null
      echo '```'
      echo
    done
  done
  echo "<!-- compare:end -->"
} > "$section"

bash bench/splice_section.sh compare "$section" "Baselines on the 2017 paper's settings"
