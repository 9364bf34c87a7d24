#!/usr/bin/env bash
# FlexFlow's `mcmc` search given the wall time a learned placer spent on the
# same row, so a learned table can say what plain search does in that time.
# A row is model:cluster:seconds; the seconds come from the learned table
# (its sample budget over its samples/s). Prints a markdown table: mcmc's
# step time, the evaluations it made in that time (wall-clock budgets
# depend on the machine's load: read them beside the step time) and the
# fastest baseline.
#
#   ROWS="rnnlm:p100x2:57.3 gnmt2:p100x2:47.7" bash bench/mcmc_equal_time.sh
#   SEED=2 ROWS="..." bash bench/mcmc_equal_time.sh
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh
seed=${SEED:-1}
[ -n "${ROWS:-}" ] || { echo "mcmc_equal_time.sh: set ROWS=\"model:cluster:seconds ...\"" >&2; exit 2; }

runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
source bench/lib/run_json.sh

for row in $ROWS; do
  IFS=: read -r model cluster seconds <<< "$row"
  name="$model-$cluster-$seconds"
  echo "== $name: baselines, then mcmc for $seconds s" >&2
  run_json "$runs/$name.compare.json" compare --graph "$model" --cluster "$cluster" --json
  # No evaluation cap: the wall time is the budget.
  run_json "$runs/$name.mcmc.json" place --overwrite --graph "$model" --cluster "$cluster" --method mcmc \
    --max-seconds "$seconds" --max-samples 1000000000 --seed "$seed" --out "$runs/$name-mcmc" --json
done

python3 - "$runs" $ROWS <<'EOF'
import sys
sys.path.insert(0, "bench/lib")
from bench_results import load
runs, rows = sys.argv[1], sys.argv[2:]
print("| model | cluster | budget s | fastest one-shot baseline | mcmc | mcmc evaluations | mcmc search s |")
print("|---|---|---:|---|---:|---:|---:|")
for row in rows:
    model, cluster, seconds = row.split(":")
    name = f"{runs}/{model}-{cluster}-{seconds}"
    compare = load(f"{name}.compare.json") or []
    # The one-shot baselines: not random, and not the searches (mcmc, and
    # exact, which is a search where it can prove and the best heuristic
    # where it cannot).
    ran = sorted((r["step_time_s"], r["method"]) for r in compare
                 if not r["oom"] and not r["invalid"] and r["method"] not in ("random", "mcmc", "exact"))
    fastest = f"{ran[0][1]} {ran[0][0]:.3f}" if ran else "none"
    out = load(f"{name}.mcmc.json")
    if out is None:
        print(f"| {model} | {cluster} | {seconds} | {fastest} | error | - | - |")
        continue
    step = "OOM" if out["oom"] else f"{out['step_time_s']:.3f}"
    print(f"| {model} | {cluster} | {seconds} | {fastest} | {step} | {out['samples']:,} | {out['search_seconds']:.1f} |")
EOF
