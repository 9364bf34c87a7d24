#!/usr/bin/env bash
# Memory and time of a learned placer's updates against the number of
# groups: `devplace place` for a few policy updates per model, under
# /usr/bin/time -v. Prints one row per model: groups, peak RSS (MiB), wall
# seconds per update (from the run's curve.csv), and the whole run's CPU
# seconds (user + system: what the updates cost on a loaded machine, where
# wall time also counts waiting for a core).
#
#   bash bench/rl_update_cost.sh                          # build/devplace, --method rl
#   DEVPLACE=build-x/devplace METHOD=hdp bash bench/rl_update_cost.sh
#   MODELS="inception_v3 gnmt8" STEPS=3 bash bench/rl_update_cost.sh
#
# A model named syntheticN (e.g. synthetic8000) is `devplace generate
# synthetic --ops N`. Each run's address space is capped at MEM_LIMIT_GIB
# (default 8) so that a placer whose memory explodes fails here instead of
# taking a shared machine down; such a row says "failed".
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
method=${METHOD:-rl}
cluster=${CLUSTER:-k80x4}
steps=${STEPS:-2}
models=${MODELS:-"inception_v3 gnmt8 amoebanet synthetic8000"}
limit_kib=$(( ${MEM_LIMIT_GIB:-8} * 1024 * 1024 ))
[ -x "$devplace" ] || { echo "no $devplace: build it first (scripts/build.sh)" >&2; exit 1; }
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

printf '%-16s %7s %13s %15s %10s  %s\n' model groups peak_rss_mib s_per_update cpu_s status
for model in $models; do
  graph=$model
  if [[ $model =~ ^synthetic([0-9]+)$ ]]; then
    graph="$runs/$model.json"
    "$devplace" generate synthetic --ops "${BASH_REMATCH[1]}" -o "$graph" >/dev/null
  fi
  groups=$("$devplace" info --graph "$graph" --json | sed -n 's/.*"groups": *\([0-9]*\).*/\1/p')
  out="$runs/$model"
  status=ok
  ( ulimit -v "$limit_kib"
    exec /usr/bin/time -v "$devplace" place --overwrite --method "$method" --graph "$graph" --cluster "$cluster" \
      --max-steps "$steps" --workers 1 --out "$out" ) >"$runs/$model.log" 2>&1 || status="failed ($(grep -m1 -iE 'error|what\(\)' "$runs/$model.log" | cut -c1-80))"
  rss_mib=$(awk -F': ' '/Maximum resident set size/ {printf "%d", $2 / 1024}' "$runs/$model.log")
  cpu_s=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.1f", s}' "$runs/$model.log")
  per_update=-
  if [ -f "$out/curve.csv" ]; then
    per_update=$(awk -F, 'NR > 1 {step = $1; seconds = $2} END {if (step > 0) printf "%.2f", seconds / step}' "$out/curve.csv")
  fi
  printf '%-16s %7s %13s %15s %10s  %s\n' "$model" "$groups" "$rss_mib" "$per_update" "$cpu_s" "$status"
done
