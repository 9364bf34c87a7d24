#!/usr/bin/env bash
# Samples a second of the learned placers (rl, hdp, gdp, mars) beside mcmc
# and guided, and where a learned placer's time goes (issue 49). Each run is
# `devplace place --json` under /usr/bin/time with DEVPLACE_PROFILE=1 (the
# training loop's per-phase table, learned/training/step_profile.h). Prints
# one markdown row per (row, method): samples, search seconds, samples a
# second (wall: what a user sees, and what a loaded machine halves), the
# run's CPU seconds (user + system) and CPU milliseconds a sample (what
# hardly depends on the machine's load), and for the learned placers the
# phases' shares of their steps' CPU time.
#
#   bash bench/learned_throughput.sh
#   ROWS="nmt:k80x4" METHODS="rl hdp" SAMPLES=96 DEVPLACE=build-old/devplace bash bench/learned_throughput.sh
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
rows=${ROWS:-"nmt:k80x4 rnnlm:p100x2 inception_v3:p100x2 gnmt4:p100x4"}
methods=${METHODS:-"rl hdp gdp mars mcmc guided"}
samples=${SAMPLES:-64}               # learned placers' sample budget
search_samples=${SEARCH_SAMPLES:-2000}  # mcmc's and guided's evaluations
seed=${SEED:-1}
[ -x "$devplace" ] || { echo "no $devplace: build it first (scripts/build.sh)" >&2; exit 1; }
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

echo "| model | cluster | method | samples | search s | samples/s | CPU s | CPU ms/sample | encode | sample | measure | score | backward | optimizer |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in $rows; do
  model=${row%%:*}
  cluster=${row##*:}
  for method in $methods; do
    budget=$samples
    case $method in mcmc|guided) budget=$search_samples ;; esac
    out="$runs/$model-$cluster-$method"
    DEVPLACE_PROFILE=1 /usr/bin/time -f "%U %S" -o "$out.time" "$devplace" place --overwrite --json --method "$method" \
      --graph "$model" --cluster "$cluster" --max-samples "$budget" --seed "$seed" --out "$out" > "$out.json" 2> "$out.err"
    cpu=$(awk '{print $1 + $2}' "$out.time")
    n=$(jq .samples "$out.json")
    secs=$(jq .search_seconds "$out.json")
    rate=$(jq .samples_per_second "$out.json")
    # The profile's shares (percent of the steps' process CPU time), if any.
    share() { awk -v p="$1" '$0 ~ "^"p" " {print $NF}' "$out.err"; }
    printf '| %s | %s | %s | %s | %.1f | %.1f | %.2f | %.2f | %s | %s | %s | %s | %s | %s |\n' "$model" "$cluster" "$method" "$n" \
      "$secs" "$rate" "$cpu" "$(awk -v c="$cpu" -v n="$n" 'BEGIN {print 1000 * c / n}')" \
      "$(share encode)" "$(share sample)" "$(share measure)" "$(share score)" "$(share backward)" "$(share optimizer)"
  done
done
